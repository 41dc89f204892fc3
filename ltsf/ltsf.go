// Package ltsf holds lowest-timestamp-first (LTSF) schedule queues: priority queues of
// events in the total order of package event, from which dispatchers take the next event,
// and the locks that guard them.
//
// A schedule queue holds at most one event per logical process (that LP's earliest
// unprocessed event), so a queue can index its entries by receiver: Remove finds an entry
// through the receiver's id rather than through the event record, and no event field is
// written.
// Every implementation is sized at construction with the number of LPs and keeps a table
// indexed by LP id. All of them pop in exactly the order of event.Less, ties included.
//
// Queues are not safe for concurrent use; the time-warp workers guard each queue with a
// lock (see below).
//
// # Implementations
//
//   - Heap (kind "heap"): an implicit 4-ary min-heap array with each event's key kept
//     inline and a position table. O(log n) Push, Pop and Remove, no allocation once its
//     array has grown, and fast for small and medium queues. It is the default.
//   - Splay (kind "splay"): a splay tree (as in WARPED2) whose nodes live in an arena
//     indexed by LP id, with a cached leftmost node, so Peek is O(1) and Pop usually
//     O(1); Push and Remove are O(log n) amortized. Push splays only when the insertion
//     path is long, which keeps the bound and makes the hold model markedly cheaper. It
//     suits access patterns with locality (an event pushed in front of all others costs
//     O(1)) and never allocates, but on random access it is slower than the heap for
//     large queues.
//   - Ladder (kind "ladder"): a ladder queue (Tang, Goh and Thng, 2005): an unsorted
//     Top, rungs of buckets, and a sorted Bottom. O(1) amortized Push and Pop for the
//     usual PDES time distributions; in the hold benchmark it is the fastest, increasingly
//     so for large queues (tens of thousands of LPs and more per queue).
//     Its buckets are intrusive lists threaded through a per-LP node table, so it never
//     allocates in steady state. Many equal receive times (integer-time models: a bucket
//     that cannot be split is sorted into Bottom with event.Less), -Inf and +Inf (kept
//     in a list of their own until nothing finite is left) are handled.
//
// All three take Remove of any LP's event; the heap and the splay tree in O(log n), the
// ladder in O(1) (O(log n) search and a short move when the event is in Bottom).
//
// New builds a queue by kind name for configuration; Kinds lists the names.
//
// # Locks
//
// TicketLock is a FIFO-fair ticket spinlock, padded so that it has a cache line to itself.
// Waiters yield the processor (the next in line after a short spin), so it tolerates more
// goroutines than cores, but it is at its best when lock holders are not descheduled
// (workers at most GOMAXPROCS). Its strength is a bounded, first-come first-served wait;
// its cost is a cache-line hand-off on every contended acquisition. sync.Mutex is the
// alternative: unfair (a releasing goroutine may take it straight back, and waiters are
// parked), which gives it the higher throughput under contention (see BenchmarkLocks).
// Both satisfy sync.Locker; NewLock builds one by kind name ("ticket" or "mutex") and
// LockKinds lists the names.
package ltsf

import (
	"fmt"

	"github.com/warpedgo/warped/event"
)

// Queue is a schedule queue holding at most one event per receiving LP.
type Queue interface {
	// Push adds e. The queue must not already hold an event for e.Receiver.
	Push(e *event.Event)
	// Pop removes and returns the least event, or nil when the queue is empty.
	Pop() *event.Event
	// Peek returns the least event without removing it, or nil when the queue is empty.
	Peek() *event.Event
	// Remove removes the event held for lp and returns it, or nil when there is none.
	Remove(lp event.LPID) *event.Event
	// Len returns the number of events held.
	Len() int
}

// Kinds returns the names New accepts, in the order of the documentation.
func Kinds() []string { return []string{"heap", "splay", "ladder"} }

// New returns an empty schedule queue of the named kind ("heap", "splay" or "ladder")
// for LP ids in [0, numLPs).
func New(kind string, numLPs int) (Queue, error) {
	if numLPs < 0 {
		return nil, fmt.Errorf("negative number of LPs %d", numLPs)
	}
	switch kind {
	case "heap":
		return NewHeap(numLPs), nil
	case "splay":
		return NewSplay(numLPs), nil
	case "ladder":
		return NewLadder(numLPs), nil
	}
	return nil, fmt.Errorf("unknown queue type %q (want heap, splay or ladder)", kind)
}
