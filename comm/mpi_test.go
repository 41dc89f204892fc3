//go:build mpi

package comm

// Run under a launcher:  go test -c -tags mpi -o comm.test ./comm
//                        mpirun -np 2 ./comm.test -test.run TestMPI -test.v
// (scripts/mpi-test.sh does that with 2 and 4 ranks). Run plainly (go test -tags mpi
// ./comm) it runs as a single rank: every send goes to itself.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// mpiDeadline bounds every waiting loop, so a rank whose peer failed gives up instead
// of hanging.
const mpiDeadline = 20 * time.Second

// mpiMsg builds message seq from `from` to `to`: a 12-byte header and a body whose length
// and bytes follow from the header.
func mpiMsg(from, to, seq, size int) []byte {
	b := make([]byte, 12+size)
	binary.LittleEndian.PutUint32(b[0:], uint32(from))
	binary.LittleEndian.PutUint32(b[4:], uint32(to))
	binary.LittleEndian.PutUint32(b[8:], uint32(seq))
	for i := 12; i < len(b); i++ {
		b[i] = byte(from*31 + to*7 + seq + i)
	}
	return b
}

// mpiSize is the body length of message seq in the many-messages phase: 0..299 bytes.
func mpiSize(from, to, seq int) int { return (from*131 + to*17 + seq*7919) % 300 }

// TestMPI runs every check on one goroutine, locked to its thread by NewMPI, because
// MPI_THREAD_FUNNELED allows MPI calls only from the thread that initialized it (t.Run
// would move each subtest to a new goroutine). A failing rank aborts the whole job.
func TestMPI(t *testing.T) {
	m, err := NewMPI(MPIOptions{})
	if err != nil {
		t.Fatalf("NewMPI: %v", err)
	}
	rank, size := m.Rank(), m.Size()
	fail := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("rank %d of %d: ", rank, size) + fmt.Sprintf(format, args...)
		fmt.Fprintln(os.Stderr, "FAIL:", msg) // t's own log is printed only when the test ends
		t.Fatal(msg)
	}
	defer func() {
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "rank %d: aborting the MPI job\n", rank)
			m.Abort(1)
		}
	}()
	t.Logf("rank %d of %d", rank, size)
	if size < 1 || rank < 0 || rank >= size {
		fail("bad rank/size")
	}
	if n := LaunchedRanks(); n != 0 && n != size {
		fail("LaunchedRanks() = %d, communicator size %d", n, size)
	}

	// Misuse: a bad destination and a call from another thread are refused.
	if err := m.Send(size, nil); err == nil {
		fail("Send to rank %d of %d succeeded", size, size)
	}
	other := make(chan error, 2)
	go func() {
		runtime.LockOSThread() // surely another thread than m's
		defer runtime.UnlockOSThread()
		_, _, _, err := m.Poll()
		other <- err
		other <- m.Send(rank, []byte("x"))
	}()
	for _, call := range []string{"Poll", "Send"} {
		if err := <-other; err != errWrongThread {
			fail("%s from another thread: error %v, want %v", call, err, errWrongThread)
		}
	}
	if n := m.Pending(); n != 0 {
		fail("%d sends pending after a refused one", n)
	}

	// recvAll polls until want[src] messages arrived from every src, checking each.
	recvAll := func(phase string, want []int, check func(src, seq int, msg []byte) error) {
		t.Helper()
		got := make([]int, size)
		need := 0
		for _, w := range want {
			need += w
		}
		deadline := time.Now().Add(mpiDeadline)
		for need > 0 {
			from, msg, ok, err := m.Poll()
			if err != nil {
				fail("%s: Poll: %v", phase, err)
			}
			if !ok {
				if time.Now().After(deadline) {
					fail("%s: timed out after %v; received %v of %v", phase, mpiDeadline, got, want)
				}
				continue
			}
			if from < 0 || from >= size {
				fail("%s: message from rank %d", phase, from)
			}
			if got[from] >= want[from] {
				fail("%s: unexpected extra message from rank %d", phase, from)
			}
			if err := check(from, got[from], msg); err != nil {
				fail("%s: message %d from rank %d: %v", phase, got[from], from, err)
			}
			got[from]++
			need--
		}
	}
	each := func(n int) []int {
		w := make([]int, size)
		for i := range w {
			w[i] = n
		}
		return w
	}

	// 1. Many messages to every rank (self included), sent in bursts with polling in
	// between; per-pair FIFO and contents are checked.
	const many = 3000
	got := make([]int, size)
	seqs := make([]int, size)
	deadline := time.Now().Add(mpiDeadline)
	sent, recvd := 0, 0
	for sent < many*size || recvd < many*size {
		for burst := 0; burst < 50 && sent < many*size; burst++ {
			to := sent % size
			if err := m.Send(to, mpiMsg(rank, to, seqs[to], mpiSize(rank, to, seqs[to]))); err != nil {
				fail("many: Send: %v", err)
			}
			seqs[to]++
			sent++
		}
		for {
			from, msg, ok, err := m.Poll()
			if err != nil {
				fail("many: Poll: %v", err)
			}
			if !ok {
				break
			}
			if want := mpiMsg(from, rank, got[from], mpiSize(from, rank, got[from])); !bytes.Equal(msg, want) {
				fail("many: message %d from rank %d: got %d bytes %x..., want %d bytes (out of order or corrupt)",
					got[from], from, len(msg), msg[:min(len(msg), 12)], len(want))
			}
			got[from]++
			recvd++
		}
		if time.Now().After(deadline) {
			fail("many: timed out after %v; sent %d, received %v of %d each", mpiDeadline, sent, got, many)
		}
	}
	t.Logf("many: sent and received %d messages", many*size)
	// The event traffic allocates nothing once warm: a poll that finds nothing, a send to
	// this rank and its receipt (every poll ran on the heap before: cgo moved the
	// variables whose addresses it passed there).
	self := mpiMsg(rank, rank, 0, 100)
	roundTrip := func() {
		if err := m.Send(rank, self); err != nil {
			fail("alloc: Send: %v", err)
		}
		for {
			_, _, ok, err := m.Poll()
			if err != nil {
				fail("alloc: Poll: %v", err)
			}
			if ok {
				return
			}
		}
	}
	roundTrip()
	if n := testing.AllocsPerRun(100, roundTrip); n != 0 {
		fail("a send to self and its receipt allocate %.1f times", n)
	}
	// A check of the harness itself: a failing rank must end the whole job non-zero.
	if os.Getenv("WARPED_MPITEST_FAIL_RANK") == strconv.Itoa(rank) {
		fail("failure injected by WARPED_MPITEST_FAIL_RANK")
	}
	// Go's own signal handling survives MPI_Init (Open MPI leaves installed handlers).
	func() {
		defer func() {
			if recover() == nil {
				fail("nil dereference did not panic")
			}
		}()
		var p *int
		_ = *p
	}()

	// 2. AllGather of variable-length contributions (rank 0's is empty).
	mine := bytes.Repeat([]byte(fmt.Sprintf("r%d;", rank)), rank)
	all, err := m.AllGather(mine)
	if err != nil {
		fail("AllGather: %v", err)
	}
	if len(all) != size {
		fail("AllGather returned %d parts, want %d", len(all), size)
	}
	for r, b := range all {
		if want := bytes.Repeat([]byte(fmt.Sprintf("r%d;", r)), r); !bytes.Equal(b, want) {
			fail("AllGather part %d = %q, want %q", r, b, want)
		}
	}
	all, err = m.AllGather(nil)
	if err != nil {
		fail("AllGather(nil): %v", err)
	}
	for r, b := range all {
		if len(b) != 0 {
			fail("AllGather(nil) part %d has %d bytes", r, len(b))
		}
	}

	// 3. Variable sizes, empty and 1 MiB included, to every rank.
	sizes := []int{-1, 0, 1, 7, 4096, 65536 + 3, 1 << 20, 0}
	for to := 0; to < size; to++ {
		for seq, n := range sizes {
			var msg []byte
			if n >= 0 {
				msg = mpiMsg(rank, to, seq, n)
			}
			if err := m.Send(to, msg); err != nil {
				fail("sizes: Send %d bytes: %v", n, err)
			}
		}
	}
	recvAll("sizes", each(len(sizes)), func(src, seq int, msg []byte) error {
		var want []byte
		if n := sizes[seq]; n >= 0 {
			want = mpiMsg(src, rank, seq, n)
		}
		if !bytes.Equal(msg, want) {
			return fmt.Errorf("got %d bytes, want %d", len(msg), len(want))
		}
		return nil
	})

	// 4. Every send completes once the receivers have everything.
	for deadline := time.Now().Add(mpiDeadline); m.Pending() > 0; {
		if _, _, ok, err := m.Poll(); err != nil || ok {
			fail("drain: Poll = %v, %v; want nothing", ok, err)
		}
		if time.Now().After(deadline) {
			fail("drain: %d sends still pending after %v", m.Pending(), mpiDeadline)
		}
	}

	// 5. Agree that every rank passed, then close.
	ranksOK, err := m.AllGather([]byte{1})
	if err != nil {
		fail("final AllGather: %v", err)
	}
	if len(ranksOK) != size {
		fail("final AllGather: %d parts", len(ranksOK))
	}
	if err := m.Close(); err != nil {
		fail("Close: %v", err)
	}
	if err := m.Send(0, nil); err != ErrClosed {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if _, err := NewMPI(MPIOptions{}); err == nil {
		t.Error("NewMPI after MPI_Finalize succeeded")
	}
}
