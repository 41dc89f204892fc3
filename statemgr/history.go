package statemgr

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/ring"
)

// historyMin is the number of slots a History's ring starts with (a power of two).
const historyMin = 1024

// Saved is a copy of an LP's state taken by periodic state saving: the model's Snapshot
// and the kernel's per-LP Core.
type Saved struct {
	Model any
	Core  Core
}

// Entry is one processed event in a [History]. It takes two cache lines
// (TestEntryLayout): writing it is most of what logging an event costs.
type Entry struct {
	// The first cache line holds what fossil collection reads of most entries: OutTo, Dead
	// and the event's receive time and payload (its send time and sequence number too, for
	// ties with the commit horizon), so that it reads one line an entry, not two.

	// OutTo and OutFrom (below) delimit the event's sends in the worker's output log
	// (absolute indexes of an outputmgr.Log).
	OutTo int64
	Dead  bool // rolled back
	// Draws is the number of generator draws the event made (reverse computation only;
	// the LP's send sequence number before the event is its number after less the sends,
	// OutTo - OutFrom).
	Draws uint32
	Ev    event.Event
	// Prev is the absolute index of the LP's previous entry (below Base(): none).
	Prev    int64
	OutFrom int64
	Saved   *Saved // periodic state saving: the LP's state after the event, or nil
	// Scratch is the event's scratch words (the model's Context.Scratch), kept from its
	// Handle for its Reverse.
	Scratch event.Words
}

// History is a worker's history log: the events its LPs processed and that are not yet
// committed, in processing order, each with an absolute index that stays its own while it
// is in the log. An LP's entries are chained from its newest one by Entry.Prev; an index
// below Base() means none (dropped, or never). Entries are pushed at the back, dropped
// from the front (fossil collection) and from anywhere by Compact; a rolled-back entry is
// marked Dead and stays until then. The ring starts with 1024 slots and doubles when full.
//
// History also keeps the pool of Saved states no longer needed (Free, NewSaved), so that
// periodic state saving allocates nothing once the pool has reached its working size. Not
// safe for concurrent use.
type History struct {
	entries ring.Ring[Entry]
	base    int64    // absolute index of entries.At(0)
	free    []*Saved // saved states no longer needed, for reuse
	remap   []int64  // Compact's scratch
}

// Len returns the number of entries in the log.
func (h *History) Len() int { return h.entries.N }

// Base returns the absolute index of the oldest entry in the log.
func (h *History) Base() int64 { return h.base }

// Next returns the absolute index the next Push takes.
func (h *History) Next() int64 { return h.base + int64(h.entries.N) }

// Holds reports whether absolute index i, at most that of the newest entry, is in the log:
// whether it is at or above Base().
func (h *History) Holds(i int64) bool { return i >= h.base }

// At returns the entry with absolute index i (Base() <= i < Next()).
func (h *History) At(i int64) *Entry {
	r := &h.entries // indexed here, not by r.At: see ring.Ring
	return &r.Buf[(r.Head+int(i-h.base))&(len(r.Buf)-1)]
}

// Nth returns the n-th entry of the log, oldest first (0 <= n < Len()).
func (h *History) Nth(n int) *Entry {
	r := &h.entries
	return &r.Buf[(r.Head+n)&(len(r.Buf)-1)]
}

// Push appends an entry, with absolute index Next(), and returns it holding whatever its
// slot held: the caller sets every field.
func (h *History) Push() *Entry {
	r := &h.entries
	if r.N == len(r.Buf) {
		r.Grow(historyMin)
	}
	r.N++
	return &r.Buf[(r.Head+r.N-1)&(len(r.Buf)-1)]
}

// DropFront drops the n oldest entries (n <= Len()). They are not cleared (see
// ring.Ring.DropFront): the caller lets go of what they hold that it must.
func (h *History) DropFront(n int) {
	h.entries.DropFront(n)
	h.base += int64(n)
}

// Compact drops from anywhere in the log the entries for which drop(i, e) reports true
// (i is the absolute index of entry e; drop may change e). It lets go of the dropped
// entries' payloads. The entries kept move towards the front in order and are renumbered
// from the absolute index Next() had before: an index that still refers to a dropped entry
// is then below Base(), which reads as none, as it does after DropFront. Compact renumbers
// the kept entries' Prev, and calls kept(e, old, to) for each kept entry e, once moved,
// with its old and new absolute indexes, for the caller to renumber what else refers to it.
func (h *History) Compact(drop func(i int64, e *Entry) bool, kept func(e *Entry, old, to int64)) {
	n := h.entries.Len()
	newBase := h.base + int64(n)
	if cap(h.remap) < n {
		h.remap = make([]int64, n)
	}
	remap := h.remap[:n]
	k := 0 // entries kept so far
	for i := range n {
		e := h.entries.At(i)
		old := h.base + int64(i)
		if drop(old, e) {
			remap[i] = -1
			e.Ev.Payload = nil
			continue
		}
		to := newBase + int64(k)
		remap[i] = to
		if e.Prev >= h.base {
			e.Prev = remap[e.Prev-h.base]
		}
		if k != i {
			*h.entries.At(k) = *e
			e.Ev.Payload = nil
			e = h.entries.At(k)
		}
		kept(e, old, to)
		k++
	}
	h.entries.Truncate(k)
	h.base = newBase
}

// NewSaved returns a Saved state from the pool, or a new one: its Model is a value an
// earlier Snapshot returned (to pass to Snapshot as dst), or nil.
func (h *History) NewSaved() *Saved {
	if n := len(h.free); n > 0 {
		s := h.free[n-1]
		h.free[n-1] = nil
		h.free = h.free[:n-1]
		return s
	}
	return new(Saved)
}

// Free returns a saved state no longer needed to the pool.
func (h *History) Free(s *Saved) { h.free = append(h.free, s) }

// Spare returns the slot the next Push will return when the log need not grow for it, else
// nil: for prefetching. It changes nothing.
func (h *History) Spare() *Entry { return h.entries.Spare() }
