package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seqMsg is a test message: sender and per-pair sequence number.
func seqMsg(from, seq int) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(from)), uint64(seq))
}

func parseSeqMsg(b []byte) (int, int) {
	return int(binary.BigEndian.Uint32(b)), int(binary.BigEndian.Uint64(b[4:]))
}

// TestLoopbackFIFOUnderFaults runs one goroutine per rank; each sends numbered messages
// to random ranks (itself included) while polling, and checks that every pair's
// messages arrive complete and in order, whatever the delays and reordering.
func TestLoopbackFIFOUnderFaults(t *testing.T) {
	for _, opts := range []LoopbackOptions{
		{},
		{Seed: 1, MaxDelay: 5, Reorder: true},
		{Seed: 2, MaxDelay: 20, Slow: map[int]int{0: 50, 3: 7}},
		{Seed: 3, Reorder: true, Slow: map[int]int{1: 3}},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			const ranks, perRank = 6, 1500
			ts := NewLoopback(ranks, opts)
			var wg sync.WaitGroup
			errs := make([]error, ranks)
			for r := range ranks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = runFIFORank(ts[r], perRank, uint64(r))
				}()
			}
			wg.Wait()
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
			for _, tr := range ts {
				require.NoError(t, tr.Close())
			}
		})
	}
}

func runFIFORank(tr Transport, perRank int, seed uint64) error {
	size, me := tr.Size(), tr.Rank()
	next := make([]int, size) // next sequence number to send, per destination
	want := make([]int, size) // next sequence number expected, per sender
	x := seed*2654435761 + 1
	rnd := func(n int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(n)) }
	poll := func() (bool, error) {
		from, msg, ok, err := tr.Poll()
		if err != nil || !ok {
			return false, err
		}
		src, seq := parseSeqMsg(msg)
		if src != from {
			return true, fmt.Errorf("rank %d: message says sender %d, Poll says %d", me, src, from)
		}
		if seq != want[from] {
			return true, fmt.Errorf("rank %d: from %d got message %d, want %d", me, from, seq, want[from])
		}
		want[from]++
		return true, nil
	}
	for range perRank {
		to := rnd(size)
		if err := tr.Send(to, seqMsg(me, next[to])); err != nil {
			return err
		}
		next[to]++
		if _, err := poll(); err != nil {
			return err
		}
	}
	// Tell everyone how many to expect, then drain. The counts go through AllGather,
	// with data messages still in flight.
	counts := make([]byte, 0, 8*size)
	for _, n := range next {
		counts = binary.BigEndian.AppendUint64(counts, uint64(n))
	}
	all, err := tr.AllGather(counts)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for from := range size {
		expect := int(binary.BigEndian.Uint64(all[from][8*me:]))
		for want[from] < expect {
			got, err := poll()
			if err != nil {
				return err
			}
			if !got {
				if time.Now().After(deadline) {
					return fmt.Errorf("rank %d: from %d got %d of %d messages", me, from, want[from], expect)
				}
				runtime.Gosched()
			}
		}
	}
	// Nobody sends any more once everyone has drained.
	if _, err := tr.AllGather(nil); err != nil {
		return err
	}
	for range 200 { // outlast any delay
		if got, err := poll(); got || err != nil {
			return fmt.Errorf("rank %d: unexpected message after drain (err %v)", me, err)
		}
	}
	return nil
}

// receiveOrder sends perSender messages from each of ranks 1..n-1 to rank 0, interleaved
// sender by sender, and returns the senders in the order rank 0 received them.
func receiveOrder(t *testing.T, opts LoopbackOptions, ranks, perSender int) (sent, got []int) {
	ts := NewLoopback(ranks, opts)
	for i := range perSender {
		for s := 1; s < ranks; s++ {
			require.NoError(t, ts[s].Send(0, seqMsg(s, i)))
			sent = append(sent, s)
		}
	}
	want := make([]int, ranks)
	for len(got) < len(sent) {
		from, msg, ok, err := ts[0].Poll()
		require.NoError(t, err)
		if !ok {
			continue
		}
		src, seq := parseSeqMsg(msg)
		require.Equal(t, from, src)
		require.Equal(t, want[from], seq, "per-pair FIFO")
		want[from]++
		got = append(got, from)
	}
	return sent, got
}

func TestLoopbackReorder(t *testing.T) {
	sent, got := receiveOrder(t, LoopbackOptions{}, 5, 50)
	require.Equal(t, sent, got, "without faults, oldest first")

	sent, got = receiveOrder(t, LoopbackOptions{Seed: 7, Reorder: true}, 5, 50)
	require.NotEqual(t, sent, got, "Reorder shuffles senders")

	sent, got = receiveOrder(t, LoopbackOptions{Seed: 7, MaxDelay: 10}, 5, 50)
	require.NotEqual(t, sent, got, "delays shuffle senders")

	// The same seed and call order make the same choices.
	_, again := receiveOrder(t, LoopbackOptions{Seed: 7, MaxDelay: 10}, 5, 50)
	require.Equal(t, got, again)
}

func TestLoopbackDelays(t *testing.T) {
	ts := NewLoopback(2, LoopbackOptions{Slow: map[int]int{1: 5}})
	require.NoError(t, ts[0].Send(1, []byte("a")))
	for i := range 5 {
		_, _, ok, err := ts[1].Poll()
		require.NoError(t, err)
		require.False(t, ok, "slow rank sees nothing at poll %d", i)
	}
	from, msg, ok, err := ts[1].Poll()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 0, from)
	require.Equal(t, "a", string(msg))

	// Not slow: delivered at the next poll.
	require.NoError(t, ts[1].Send(0, []byte("b")))
	_, msg, ok, err = ts[0].Poll()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "b", string(msg))
	_, _, ok, err = ts[0].Poll()
	require.NoError(t, err)
	require.False(t, ok)
}

func TestLoopbackAllGather(t *testing.T) {
	for size := 1; size <= 5; size++ {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			ts := NewLoopback(size, LoopbackOptions{Seed: 1, MaxDelay: 3, Reorder: true})
			var wg sync.WaitGroup
			results := make([][][][]byte, size)
			errs := make([]error, size)
			for r := range size {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for round := range 3 {
						// Traffic in flight around the collective.
						if err := ts[r].Send((r+1)%size, []byte("x")); err != nil {
							errs[r] = err
							return
						}
						contrib := []byte(fmt.Sprintf("r%d-%d", r, round))
						if r == 2 && round == 1 {
							contrib = nil // an empty contribution
						}
						got, err := ts[r].AllGather(contrib)
						if err != nil {
							errs[r] = err
							return
						}
						results[r] = append(results[r], got)
						ts[r].Poll()
					}
				}()
			}
			wg.Wait()
			for r := range size {
				require.NoError(t, errs[r])
				require.Len(t, results[r], 3)
				for round, got := range results[r] {
					require.Len(t, got, size)
					for i, b := range got {
						want := fmt.Sprintf("r%d-%d", i, round)
						if i == 2 && round == 1 {
							want = ""
						}
						require.Equal(t, want, string(b), "rank %d round %d slot %d", r, round, i)
					}
				}
			}
			// Results belong to the caller.
			results[0][0][0][0] = 'X'
			if size > 1 {
				require.Equal(t, byte('r'), results[1][0][0][0])
			}
		})
	}
}

func TestLoopbackClose(t *testing.T) {
	ts := NewLoopback(3, LoopbackOptions{})
	require.NoError(t, ts[0].Send(1, []byte("pending")))
	require.NoError(t, ts[1].Close())

	_, _, _, err := ts[1].Poll()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, ts[1].Send(0, nil), ErrClosed)
	_, err = ts[1].AllGather(nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, ts[1].Close(), ErrClosed)
	require.Equal(t, 1, ts[1].Rank())
	require.Equal(t, 3, ts[1].Size())

	require.ErrorIs(t, ts[0].Send(1, nil), ErrPeerClosed)
	require.NoError(t, ts[0].Send(2, nil), "other pairs still work")
	require.ErrorContains(t, ts[0].Send(3, nil), "out of range")
	require.ErrorContains(t, ts[0].Send(-1, nil), "out of range")

	// A collective cannot complete once a rank has closed: error, not a hang.
	_, err = ts[0].AllGather([]byte("a"))
	require.ErrorIs(t, err, ErrPeerClosed)
}

func TestLoopbackCloseWakesAllGather(t *testing.T) {
	ts := NewLoopback(3, LoopbackOptions{})
	errc := make(chan error, 2)
	for r := range 2 {
		go func() {
			_, err := ts[r].AllGather([]byte{byte(r)})
			errc <- err
		}()
	}
	// Until both have contributed (and so wait in the collective), not for a while: had
	// they not, they would meet the closed rank on the way in, and the test would pass
	// without a wake-up to test.
	n := ts[0].(*loopback).net
	for arrived := 0; arrived < 2; runtime.Gosched() {
		n.gmu.Lock()
		arrived = n.round.arrived
		n.gmu.Unlock()
	}
	require.NoError(t, ts[2].Close())
	for range 2 { // still blocked after a rank closed: a hang, caught by go test -timeout
		err := <-errc
		require.True(t, errors.Is(err, ErrPeerClosed), "got %v", err)
	}
}

func TestLoopbackNewPanicsOnZeroRanks(t *testing.T) {
	require.Panics(t, func() { NewLoopback(0, LoopbackOptions{}) })
}
