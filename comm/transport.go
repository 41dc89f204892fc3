package comm

import "errors"

// Transport moves byte messages between the ranks (processes) of one run. Messages between
// one pair of ranks arrive in the order they were sent; nothing else is promised about
// order. A Transport is used by one goroutine per rank (the process's manager goroutine):
// the MPI implementation requires every call on the OS thread that created it.
type Transport interface {
	// Rank returns this process's rank, 0..Size()-1.
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// Send queues msg for rank to and returns without waiting for delivery. The
	// transport owns msg from then on; the caller must not change it (unless the
	// transport is a Reuser).
	Send(to int, msg []byte) error
	// Poll returns one received message without blocking; ok is false when none is
	// waiting. It also advances pending sends. The message belongs to the caller (a
	// Reuser's is valid until the next Poll).
	Poll() (from int, msg []byte, ok bool, err error)
	// AllGather is a blocking collective: every rank contributes b and receives every
	// rank's contribution in rank order. It is for setup (configuration agreement) and
	// final statistics, not for the event traffic.
	AllGather(b []byte) ([][]byte, error)
	// Close flushes pending sends and releases the transport.
	Close() error
}

// ThreadBound is implemented by a Transport whose goroutine is locked to its OS thread
// (MPI's, which calls MPI from one thread): a goroutine that waits on that thread should
// yield and sleep the thread itself, not through the Go scheduler, which would hand the
// thread's processor to another thread and back at each call.
type ThreadBound interface {
	// ThreadBound reports whether the transport's goroutine is locked to its thread.
	ThreadBound() bool
}

// Reuser is implemented by a Transport that is done with a message when Send returns (it
// copies what it keeps) and whose Poll returns a message that stays valid only until the
// next Poll (a buffer it reuses): its caller may then send from a buffer of its own that it
// reuses, and must copy what it keeps of a message it received. MPI's transport is one, and
// saves the event traffic an allocation a message each way, which kept the garbage
// collector running through a run across processes (docs/PERFORMANCE.md).
type Reuser interface {
	// Reuses reports whether Send and Poll behave so.
	Reuses() bool
}

// ErrClosed is returned by a Transport used after Close.
var ErrClosed = errors.New("comm: transport closed")
