//go:build mpi

package comm

// The project's own thin cgo binding to the system MPI C library.
//
// Build: go build -tags mpi            Open MPI, found by pkg-config ompi-c (libopenmpi-dev)
//        go build -tags mpi,mpich      MPICH, found by pkg-config mpich (libmpich-dev)
//        go build -tags mpi,mpicustom  any MPI, flags from the environment, e.g.
//          CGO_CFLAGS="$(mpicc --showme:compile)" CGO_LDFLAGS="$(mpicc --showme:link)"
//          (MPICH: mpicc -compile-info / -link-info, minus the compiler name)

// The compiler and linker flags come from mpi_openmpi.go or mpi_mpich.go (pkg-config), or
// with mpicustom from the environment. They are in files of their own so that each MPI
// builds from a different set of files: the go command's build cache does not tell apart
// two builds of one file set whose #cgo lines differ only by build tag, and would link a
// binary built for one MPI against the other.

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <mpi.h>

// wp_mpi_dummy is the buffer of empty transfers (MPI wants a valid address).
static void *wp_mpi_dummy(void) { static char d[1]; return d; }

static int wp_mpi_state(int *initialized, int *finalized) {
	int rc = MPI_Initialized(initialized);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Finalized(finalized);
}

static int wp_mpi_init(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
}

static int wp_mpi_funneled(void) { return MPI_THREAD_FUNNELED; }
static int wp_mpi_serialized(void) { return MPI_THREAD_SERIALIZED; }

static MPI_Comm wp_mpi_world(void) { return MPI_COMM_WORLD; }

// wp_mpi_f2c converts a Fortran handle; it returns 0 when the handle is MPI_COMM_NULL.
static int wp_mpi_f2c(int f, MPI_Comm *c) {
	*c = MPI_Comm_f2c((MPI_Fint)f);
	return *c != MPI_COMM_NULL;
}

static int wp_mpi_errors_return(MPI_Comm c) {
	return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
}

// The event traffic's calls each check the thread, then do in one cgo call what would
// otherwise take several (a cgo call costs the Go runtime a system call's bookkeeping):
// they return WP_WRONG_THREAD when called from a thread other than owner, and
// WP_NO_MEMORY when malloc fails; MPI's codes are never negative.
#define WP_WRONG_THREAD (-1)
#define WP_NO_MEMORY (-2)

// wp_wrong_thread reports whether the calling thread is not owner (wp_link_wrong_thread,
// wp_mpi_send, wp_mpi_poll).
static int wp_wrong_thread(pthread_t owner) { return !pthread_equal(pthread_self(), owner); }

// wp_link is the event traffic's state, in C memory and passed to C as an integer: Go's
// cgo pointer checks would otherwise examine each pointer argument of every call (and
// walk every element of a Go array of Open MPI's requests, which are pointers). owner is
// the one thread that may call MPI; reqs[i] is the request of the pending send from
// bufs[i], which malloc gave; idx is MPI_Testsome's scratch. The arrays hold cap.
typedef struct {
	pthread_t owner;
	MPI_Comm comm;
	int n, cap;
	MPI_Request *reqs;
	void **bufs;
	int *idx;
} wp_link;

#define WP_TAG 7 // the one tag of the kernel's messages, on its own communicator

static uintptr_t wp_link_new(pthread_t owner, MPI_Comm c) {
	wp_link *l = calloc(1, sizeof(wp_link));
	if (l == NULL) return 0;
	l->owner = owner;
	l->comm = c;
	return (uintptr_t)l;
}

static int wp_link_pending(uintptr_t h) { return ((wp_link *)h)->n; }

// wp_link_wrong_thread reports whether the calling thread is not l's owner (MPI.check).
static int wp_link_wrong_thread(uintptr_t h) { return wp_wrong_thread(((wp_link *)h)->owner); }

// wp_link_room makes room for one more send; it returns 0 when realloc fails.
static int wp_link_room(wp_link *l) {
	if (l->n < l->cap) return 1;
	int c = l->cap < 16 ? 16 : 2 * l->cap;
	MPI_Request *r = realloc(l->reqs, (size_t)c * sizeof *r);
	if (r == NULL) return 0;
	l->reqs = r;
	void **b = realloc(l->bufs, (size_t)c * sizeof *b);
	if (b == NULL) return 0;
	l->bufs = b;
	int *x = realloc(l->idx, (size_t)c * sizeof *x);
	if (x == NULL) return 0;
	l->idx = x;
	l->cap = c;
	return 1;
}

// wp_mpi_send copies the n bytes at msg into C memory (freed when the send completes:
// wp_mpi_poll) and starts sending them to rank to (MPI_Isend), adding the send to l.
static int wp_mpi_send(uintptr_t h, const void *msg, int n, int to) {
	wp_link *l = (wp_link *)h;
	if (wp_wrong_thread(l->owner)) return WP_WRONG_THREAD;
	if (!wp_link_room(l)) return WP_NO_MEMORY;
	void *b = malloc((size_t)n + 1); // +1: never malloc(0)
	if (b == NULL) return WP_NO_MEMORY;
	if (n > 0) memcpy(b, msg, (size_t)n);
	int rc = MPI_Isend(b, n, MPI_BYTE, to, WP_TAG, l->comm, &l->reqs[l->n]);
	if (rc != MPI_SUCCESS) {
		free(b);
		return rc;
	}
	l->bufs[l->n++] = b;
	return MPI_SUCCESS;
}

// MPICH's MPI_STATUSES_IGNORE is the address 1, which GCC's -Wstringop-overflow takes for
// an array of no size: the status arguments below are never written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

// wp_mpi_waitall waits for the n requests: in MPI_Waitall, or, with yield, testing them
// and giving the core away between tests (a crowded node, where the library's own idle
// yields are off: see quietIdleYields).
static int wp_mpi_waitall(int n, MPI_Request *reqs, int yield) {
	if (!yield) return MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
	for (;;) {
		int done = 0;
		int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS || done) return rc;
		sched_yield();
	}
}

// The collectives below block in the library, or, with yield, start the nonblocking form
// and wait in wp_mpi_waitall.

static int wp_mpi_comm_dup(MPI_Comm c, MPI_Comm *dup, int yield) {
	if (!yield) return MPI_Comm_dup(c, dup);
	MPI_Request r;
	int rc = MPI_Comm_idup(c, dup, &r);
	return rc != MPI_SUCCESS ? rc : wp_mpi_waitall(1, &r, 1);
}

// wp_mpi_barrier_yielding is MPI_Barrier waiting in wp_mpi_waitall's yielding loop (only
// where the library's idle yields are off).
static int wp_mpi_barrier_yielding(MPI_Comm c) {
	MPI_Request r;
	int rc = MPI_Ibarrier(c, &r);
	return rc != MPI_SUCCESS ? rc : wp_mpi_waitall(1, &r, 1);
}

// wp_poll is wp_mpi_poll's result, returned by value: pointers to Go variables passed to
// C would move those variables to the heap, an allocation on every poll. rc is
// WP_WRONG_THREAD or the failed call's code, stage which call that was (0 MPI_Testsome,
// 1 MPI_Iprobe, 2 MPI_Get_count); flag says whether a message waits, from src, of count
// bytes.
typedef struct {
	int rc, stage, flag, src, count;
} wp_poll;

// wp_mpi_poll advances the pending sends of l (MPI_Testsome; those that completed have
// their buffers freed and leave l, the others keep their order), then probes for a
// message from any source.
static wp_poll wp_mpi_poll(uintptr_t h) {
	wp_link *l = (wp_link *)h;
	wp_poll p = {0};
	if (wp_wrong_thread(l->owner)) {
		p.rc = WP_WRONG_THREAD;
		return p;
	}
	if (l->n > 0) {
		int out = 0;
		p.rc = MPI_Testsome(l->n, l->reqs, &out, l->idx, MPI_STATUSES_IGNORE);
		if (p.rc != MPI_SUCCESS) return p;
		if (out > 0) { // out is MPI_UNDEFINED (negative) only with no active request
			for (int i = 0; i < out; i++) {
				free(l->bufs[l->idx[i]]);
				l->bufs[l->idx[i]] = NULL;
			}
			int k = 0;
			for (int i = 0; i < l->n; i++)
				if (l->bufs[i] != NULL) {
					l->reqs[k] = l->reqs[i];
					l->bufs[k++] = l->bufs[i];
				}
			l->n = k;
		}
	}
	p.stage = 1;
	MPI_Status st;
	p.rc = MPI_Iprobe(MPI_ANY_SOURCE, WP_TAG, l->comm, &p.flag, &st);
	if (p.rc != MPI_SUCCESS || !p.flag) return p;
	p.src = st.MPI_SOURCE;
	p.stage = 2;
	p.rc = MPI_Get_count(&st, MPI_BYTE, &p.count);
	return p;
}

// wp_mpi_recv receives the message wp_mpi_poll found (n bytes from src) into buf (NULL
// for an empty message).
static int wp_mpi_recv(uintptr_t h, void *buf, int n, int src) {
	return MPI_Recv(buf != NULL ? buf : wp_mpi_dummy(), n, MPI_BYTE, src, WP_TAG, ((wp_link *)h)->comm, MPI_STATUS_IGNORE);
}

// wp_link_close waits for the pending sends (wp_mpi_waitall) and frees l, and the sends'
// buffers unless the wait failed (MPI may still read them then: they leak).
static int wp_link_close(uintptr_t h, int yield) {
	wp_link *l = (wp_link *)h;
	int rc = l->n > 0 ? wp_mpi_waitall(l->n, l->reqs, yield) : MPI_SUCCESS;
	if (rc == MPI_SUCCESS)
		for (int i = 0; i < l->n; i++) free(l->bufs[i]);
	free(l->reqs);
	free(l->bufs);
	free(l->idx);
	free(l);
	return rc;
}

static int wp_mpi_allgather_int(int v, int *out, MPI_Comm c, int yield) {
	if (!yield) return MPI_Allgather(&v, 1, MPI_INT, out, 1, MPI_INT, c);
	MPI_Request r;
	int rc = MPI_Iallgather(&v, 1, MPI_INT, out, 1, MPI_INT, c, &r);
	return rc != MPI_SUCCESS ? rc : wp_mpi_waitall(1, &r, 1);
}

static int wp_mpi_allgatherv(void *sb, int sn, void *rb, int *counts, int *displs, MPI_Comm c, int yield) {
	if (!yield) return MPI_Allgatherv(sb, sn, MPI_BYTE, rb, counts, displs, MPI_BYTE, c);
	MPI_Request r;
	int rc = MPI_Iallgatherv(sb, sn, MPI_BYTE, rb, counts, displs, MPI_BYTE, c, &r);
	return rc != MPI_SUCCESS ? rc : wp_mpi_waitall(1, &r, 1);
}

static void wp_mpi_errstr(int code, char *buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"
)

// MPIEnabled reports whether this binary was built with the `mpi` build tag.
const MPIEnabled = true

// CheckLaunch returns nil in a build with the `mpi` tag (see the build without it).
func CheckLaunch() error { return nil }

// MPI is the Transport between the ranks of an MPI communicator. Every method must be
// called from the goroutine that called NewMPI, which NewMPI locks to its OS thread
// (MPI_THREAD_FUNNELED); a call from another thread returns an error and does nothing.
type MPI struct {
	comm     C.MPI_Comm // the kernel's duplicate of the options' communicator
	rank     int
	size     int
	ownsInit bool // this transport called MPI_Init_thread, so Close finalizes
	closed   bool
	// yield is 1 where quietIdleYields turned the library's idle yields off: the
	// transport's own waits (collectives, Close) then give the core away between tests.
	yield C.int

	link C.uintptr_t // the event traffic's state and pending sends: a wp_link, freed by Close
	rbuf []byte      // where Poll receives, reused (Reuses)
}

var _ Transport = (*MPI)(nil)

// MPIError is a failed MPI call.
type MPIError struct {
	Call string // the MPI function, e.g. "MPI_Isend"
	Code int    // its return code
	Text string // MPI_Error_string of the code
}

func (e *MPIError) Error() string {
	return fmt.Sprintf("comm: %s failed: %s (code %d)", e.Call, e.Text, e.Code)
}

func mpiErr(call string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	C.wp_mpi_errstr(rc, &buf[0])
	return &MPIError{Call: call, Code: int(rc), Text: C.GoString(&buf[0])}
}

// NewMPI joins the MPI job. It locks the calling goroutine to its OS thread
// (runtime.LockOSThread; Close unlocks it) and that goroutine must make every later call
// on the transport: it is the one thread that calls MPI.
//
// If MPI is not initialized yet, NewMPI calls MPI_Init_thread asking for
// MPI_THREAD_FUNNELED and fails if the library provides less; Close then calls
// MPI_Finalize, after which MPI cannot be initialized again in this process. If a host
// program already initialized MPI, NewMPI neither initializes it nor does Close
// finalize it; the calling thread must then be the one that initialized MPI, or the
// library must provide MPI_THREAD_SERIALIZED or more (and the host must not call MPI
// while the kernel runs unless it provides MPI_THREAD_MULTIPLE).
//
// The transport runs on a duplicate (MPI_Comm_dup) of opts.Comm whose error handler is
// MPI_ERRORS_RETURN, so failures come back as *MPIError naming the call.
func NewMPI(opts MPIOptions) (m *MPI, err error) {
	runtime.LockOSThread()
	defer func() {
		if err != nil {
			runtime.UnlockOSThread()
		}
	}()

	var initialized, finalized C.int
	if err := mpiErr("MPI_Initialized/MPI_Finalized", C.wp_mpi_state(&initialized, &finalized)); err != nil {
		return nil, err
	}
	if finalized != 0 {
		return nil, errors.New("comm: MPI was already finalized in this process; it can be initialized only once")
	}
	thread := C.pthread_self() // the owner of the link
	m = &MPI{}
	if initialized == 0 {
		if quietIdleYields() {
			m.yield = 1
		}
		var provided C.int
		if err := mpiErr("MPI_Init_thread", C.wp_mpi_init(&provided)); err != nil {
			return nil, err
		}
		m.ownsInit = true
		if provided < C.wp_mpi_funneled() {
			C.MPI_Finalize()
			return nil, fmt.Errorf("comm: MPI_Init_thread provided thread level %d, below MPI_THREAD_FUNNELED", int(provided))
		}
	} else {
		var provided, isMain C.int
		if err := mpiErr("MPI_Query_thread", C.MPI_Query_thread(&provided)); err != nil {
			return nil, err
		}
		if err := mpiErr("MPI_Is_thread_main", C.MPI_Is_thread_main(&isMain)); err != nil {
			return nil, err
		}
		if isMain == 0 && provided < C.wp_mpi_serialized() {
			return nil, fmt.Errorf("comm: MPI was initialized by the host program with thread level %d on another thread; "+
				"call NewMPI on the thread that initialized MPI, or initialize with MPI_THREAD_SERIALIZED or more", int(provided))
		}
	}
	fail := func(e error) (*MPI, error) {
		if m.ownsInit {
			C.MPI_Finalize()
		}
		return nil, e
	}

	parent := C.wp_mpi_world()
	if h, ok := opts.Comm.Fortran(); ok {
		if C.wp_mpi_f2c(C.int(h), &parent) == 0 {
			return fail(fmt.Errorf("comm: Fortran communicator handle %d is MPI_COMM_NULL", h))
		}
	}
	var dup C.MPI_Comm
	if err := mpiErr("MPI_Comm_dup", C.wp_mpi_comm_dup(parent, &dup, m.yield)); err != nil {
		return fail(err)
	}
	m.comm = dup
	if err := mpiErr("MPI_Comm_set_errhandler", C.wp_mpi_errors_return(dup)); err != nil {
		C.MPI_Comm_free(&dup)
		return fail(err)
	}
	var rank, size C.int
	if err := mpiErr("MPI_Comm_rank", C.MPI_Comm_rank(dup, &rank)); err != nil {
		C.MPI_Comm_free(&dup)
		return fail(err)
	}
	if err := mpiErr("MPI_Comm_size", C.MPI_Comm_size(dup, &size)); err != nil {
		C.MPI_Comm_free(&dup)
		return fail(err)
	}
	if m.link = C.wp_link_new(thread, dup); m.link == 0 {
		C.MPI_Comm_free(&dup)
		return fail(errors.New("comm: out of C memory for the table of pending sends"))
	}
	m.rank, m.size = int(rank), int(size)
	return m, nil
}

// check refuses calls after Close and from a thread other than NewMPI's.
func (m *MPI) check() error {
	if m.closed {
		return ErrClosed
	}
	if C.wp_link_wrong_thread(m.link) != 0 {
		return errWrongThread
	}
	return nil
}

// errWrongThread is the error of a call from a thread other than NewMPI's.
var errWrongThread = errors.New("comm: MPI transport used from a thread other than the one that called NewMPI")

// ThreadBound reports true: NewMPI locks its goroutine to its OS thread.
func (m *MPI) ThreadBound() bool { return true }

// Rank returns this process's rank in the communicator.
func (m *MPI) Rank() int { return m.rank }

// Size returns the number of ranks in the communicator.
func (m *MPI) Size() int { return m.size }

// Send starts a non-blocking send (MPI_Isend) of a copy of msg, made in C memory and
// freed when Poll or Close sees the send complete. Messages are limited to 2^31-1 bytes.
func (m *MPI) Send(to int, msg []byte) error {
	if m.closed {
		return ErrClosed
	}
	if to < 0 || to >= m.size {
		return fmt.Errorf("comm: send to rank %d of %d", to, m.size)
	}
	if len(msg) > math.MaxInt32 {
		return fmt.Errorf("comm: message of %d bytes exceeds the MPI limit of %d", len(msg), math.MaxInt32)
	}
	var p unsafe.Pointer
	if len(msg) > 0 {
		p = unsafe.Pointer(&msg[0])
	}
	switch rc := C.wp_mpi_send(m.link, p, C.int(len(msg)), C.int(to)); rc {
	case C.MPI_SUCCESS:
		return nil
	case C.WP_WRONG_THREAD:
		return errWrongThread
	case C.WP_NO_MEMORY:
		return fmt.Errorf("comm: out of C memory for a %d-byte message", len(msg))
	default:
		return mpiErr("MPI_Isend", rc)
	}
}

// Pending returns the number of sends not yet seen complete.
func (m *MPI) Pending() int {
	if m.closed {
		return 0
	}
	return int(C.wp_link_pending(m.link))
}

// Poll advances pending sends, then receives one waiting message if there is one
// (MPI_Iprobe from any source, MPI_Get_count: one cgo call, wp_mpi_poll; then MPI_Recv)
// into a buffer it reuses.
func (m *MPI) Poll() (from int, msg []byte, ok bool, err error) {
	if m.closed {
		return 0, nil, false, ErrClosed
	}
	r := C.wp_mpi_poll(m.link)
	if r.rc == C.WP_WRONG_THREAD {
		return 0, nil, false, errWrongThread
	}
	if r.rc != C.MPI_SUCCESS {
		return 0, nil, false, mpiErr([...]string{"MPI_Testsome", "MPI_Iprobe", "MPI_Get_count"}[r.stage], r.rc)
	}
	src, count := r.src, r.count
	if r.flag == 0 {
		return 0, nil, false, nil
	}
	if count < 0 {
		return 0, nil, false, fmt.Errorf("comm: MPI_Get_count returned %d", int(count))
	}
	if cap(m.rbuf) < int(count) {
		m.rbuf = make([]byte, max(int(count), 2*cap(m.rbuf)))
	}
	msg = m.rbuf[:count] // valid until the next Poll (Reuser)
	var p unsafe.Pointer // NULL for an empty message: wp_mpi_recv passes MPI its dummy
	if count > 0 {
		p = unsafe.Pointer(&msg[0])
	}
	// The probed message is the first from src with this tag, and only this thread
	// receives, so this MPI_Recv matches exactly it.
	if err := mpiErr("MPI_Recv", C.wp_mpi_recv(m.link, p, count, src)); err != nil {
		return 0, nil, false, err
	}
	return int(src), msg, true, nil
}

// AllGather gathers every rank's b in rank order: MPI_Allgather of the sizes, then
// MPI_Allgatherv of the bytes. The total must stay under 2^31 bytes. It does not
// advance pending sends beyond what MPI does on its own.
func (m *MPI) AllGather(b []byte) ([][]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if len(b) > math.MaxInt32 {
		return nil, fmt.Errorf("comm: AllGather of %d bytes exceeds the MPI limit", len(b))
	}
	counts := make([]C.int, m.size)
	if err := mpiErr("MPI_Allgather", C.wp_mpi_allgather_int(C.int(len(b)), &counts[0], m.comm, m.yield)); err != nil {
		return nil, err
	}
	displs := make([]C.int, m.size)
	total := 0
	for i, c := range counts {
		displs[i] = C.int(total)
		total += int(c)
		if total > math.MaxInt32 {
			return nil, fmt.Errorf("comm: AllGather of %d bytes in all exceeds the MPI limit", total)
		}
	}
	all := make([]byte, total)
	sp, rp := C.wp_mpi_dummy(), C.wp_mpi_dummy()
	if len(b) > 0 {
		sp = unsafe.Pointer(&b[0])
	}
	if total > 0 {
		rp = unsafe.Pointer(&all[0])
	}
	if err := mpiErr("MPI_Allgatherv", C.wp_mpi_allgatherv(sp, C.int(len(b)), rp, &counts[0], &displs[0], m.comm, m.yield)); err != nil {
		return nil, err
	}
	out := make([][]byte, m.size)
	for i := range out {
		d := int(displs[i])
		out[i] = all[d : d+int(counts[i]) : d+int(counts[i])]
	}
	return out, nil
}

// Close waits for the pending sends (MPI_Waitall: the receivers must keep polling until
// they have everything, or this blocks), frees the duplicated communicator, finalizes
// MPI if NewMPI initialized it, and unlocks the goroutine from its thread. Messages sent
// to this rank and not yet received are dropped.
func (m *MPI) Close() error {
	if err := m.check(); err != nil {
		return err
	}
	m.closed = true
	first := mpiErr("MPI_Waitall", C.wp_link_close(m.link, m.yield))
	m.link = 0
	if err := mpiErr("MPI_Comm_free", C.MPI_Comm_free(&m.comm)); err != nil && first == nil {
		first = err
	}
	if m.ownsInit {
		if m.yield != 0 { // the ranks meet here rather than spin in MPI_Finalize's own wait
			if err := mpiErr("MPI_Barrier", C.wp_mpi_barrier_yielding(C.wp_mpi_world())); err != nil && first == nil {
				first = err
			}
		}
		if err := mpiErr("MPI_Finalize", C.MPI_Finalize()); err != nil && first == nil {
			first = err
		}
	}
	runtime.UnlockOSThread()
	return first
}

// Reuses reports that Send copies msg (into C memory, for MPI_Isend) and that Poll's
// message is valid until the next Poll (comm.Reuser).
func (m *MPI) Reuses() bool { return true }

// Abort ends every rank of the communicator with code (MPI_Abort). Use it when one
// rank fails and the others could wait for it forever. It does not return.
func (m *MPI) Abort(code int) {
	if m == nil || m.closed {
		os.Exit(code)
	}
	C.MPI_Abort(m.comm, C.int(code))
	panic("comm: MPI_Abort returned")
}
