// Package ltsf holds the time-warp engine's schedule queues: [Events], the queue of
// pending events a worker takes from, least first, and the lowest-timestamp-first (LTSF)
// queues of LPs that [Schedule] builds one from, as WARPED2 does: priority queues of LPs
// ordered by the key of each LP's earliest pending event (the total order of package
// event). TimeWarpConfig.QueueType names the kind ([QueueTypes]): calendar (the default,
// [github.com/warpedgo/warped/eventset.Calendar], a calendar queue of the events
// themselves), or heap, splay, ladder or parallel-heap (a [Schedule] over that LTSF
// queue). [NewEvents] builds one by name.
//
// An LTSF queue ([Queue]) holds at most one entry per logical process: the LP's id and the key
// (event.Key) of its earliest unprocessed event. Every entry keeps its key inline, so
// ordering compares only the queue's own memory and never touches an event record (the
// queues hold no event pointers at all); a queue can index its entries by LP id, so
// Remove finds an entry through the LP's id. Every implementation is sized at
// construction with the number of LPs and keeps a table indexed by LP id. All of them pop
// in exactly the order of event.KeyLess, which is the order of event.Less on the events'
// keys; two entries with equal keys (which a simulation never produces, since a key names
// its sender and sequence number) are ordered by LP id, smaller first, so the order is
// total and deterministic.
//
// Queues are not safe for concurrent use: a schedule queue is its worker's own, or the
// workers of a group that share it take it under the group's lock (see below).
//
// # Implementations
//
//   - Heap (kind "heap"): an implicit 4-ary min-heap array of (key, LP) entries and a
//     position table. O(log n) Push, Pop and Remove, no allocation once its array has
//     grown, and fast for small queues.
//   - Splay (kind "splay"): a splay tree (as in WARPED2) whose nodes, each holding its
//     key, live in an arena indexed by LP id, with a cached leftmost node, so Min is O(1)
//     and Pop usually O(1); Push and Remove are O(log n) amortized. Push splays only when
//     the insertion path is long, which keeps the bound and makes the hold model markedly
//     cheaper. It suits access patterns with locality (an entry pushed in front of all
//     others costs O(1)) and never allocates, but on random access it is slower than the
//     heap for large queues.
//   - Ladder (kind "ladder"): a ladder queue (Tang, Goh and Thng, 2005): an unsorted
//     Top, rungs of buckets, and a sorted Bottom. O(1) amortized Push and Pop for the
//     usual PDES time distributions; in the hold benchmark it is the fastest, increasingly
//     so for large queues (tens of thousands of LPs and more per queue).
//     Its buckets are intrusive lists threaded through a per-LP node table that holds
//     each key, and Bottom is an array of (key, LP) entries, so it never allocates in
//     steady state. It buckets by the receive time of the key (Key.RecvTime). Many equal
//     receive times (integer-time models: a bucket that cannot be split is sorted into
//     Bottom by the whole key), -Inf and +Inf (kept in a list of their own until nothing
//     finite is left) are handled.
//   - ParallelHeap (kind "parallel-heap"): Prasad's parallel heap, a binary tree of nodes
//     holding r sorted entries each (r = DefaultNodeSize for New; NewParallelHeap takes
//     any), whose root holds the r least entries. Besides the Queue methods it implements
//     BatchQueue: PopN hands out up to n least entries (of distinct LPs) in one
//     operation, which is how a worker forms an offload batch. O(r + log(n/r)) Push and
//     Remove, O(log(n/r)) amortized Pop, no allocation once its array has grown.
//
// All four take Remove of any LP's entry; the heap and the splay tree in O(log n), the
// ladder in O(1) (O(log n) search and a short move when the entry is in Bottom), the
// parallel heap in O(r + log(n/r)).
//
// New builds an LTSF queue by kind name; Kinds lists the names.
//
// # Locks
//
// Workers that share a schedule queue guard it with a lock from package spinlock (a FIFO-fair ticket
// spinlock, or sync.Mutex); BenchmarkLocks here measures both around the hold operation
// of a heap.
package ltsf

import (
	"fmt"

	"github.com/warpedgo/warped/event"
)

// Queue is a schedule queue holding at most one entry per LP: the LP's id and the key of
// its earliest unprocessed event. Entries are ordered by event.KeyLess, and entries with
// equal keys by LP id.
type Queue interface {
	// Push adds lp with key k. The queue must not already hold lp.
	Push(k event.Key, lp event.LPID)
	// Min returns the least entry without removing it; ok is false (and k and lp are
	// zero) when the queue is empty.
	Min() (k event.Key, lp event.LPID, ok bool)
	// Pop removes and returns the least entry; ok is false (and k and lp are zero) when
	// the queue is empty.
	Pop() (k event.Key, lp event.LPID, ok bool)
	// Remove removes lp's entry and reports whether there was one.
	Remove(lp event.LPID) bool
	// Len returns the number of entries.
	Len() int
}

// less reports whether the entry (a, alp) sorts before the entry (b, blp): by key, and by
// LP id when the keys are equal. It is event.KeyLess written out with the LP id as a last
// field, so that one pass decides and the queues' inner loops inline it; the tests check
// it against event.KeyLess.
func less(a *event.Key, alp event.LPID, b *event.Key, blp event.LPID) bool {
	if a.RecvTime != b.RecvTime {
		return a.RecvTime < b.RecvTime
	}
	if a.SendTime != b.SendTime {
		return a.SendTime < b.SendTime
	}
	if a.Depth != b.Depth {
		return a.Depth < b.Depth
	}
	if a.Sender != b.Sender {
		return a.Sender < b.Sender
	}
	if a.SeqSign != b.SeqSign {
		return a.SeqSign < b.SeqSign
	}
	return alp < blp
}

// Kinds returns the names New accepts (the LTSF queues of LPs), in the order of the
// documentation.
func Kinds() []string { return []string{"heap", "splay", "ladder", "parallel-heap"} }

// New returns an empty schedule queue of the named kind ("heap", "splay", "ladder" or
// "parallel-heap", the last with DefaultNodeSize) for LP ids in [0, numLPs).
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
	case "parallel-heap":
		return NewParallelHeap(numLPs, DefaultNodeSize), nil
	}
	return nil, fmt.Errorf("unknown queue type %q (want heap, splay, ladder or parallel-heap)", kind)
}
