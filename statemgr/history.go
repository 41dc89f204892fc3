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
}

// History is a worker's history log: the events its LPs processed and that are not yet
// committed, in processing order, each with an absolute index that stays its own while it
// is in the log. An LP's entries are chained from its newest one by Entry.Prev; an index
// below Base() means none (dropped, or never). Entries are pushed at the back, dropped
// from the front (fossil collection) and from anywhere by Compact; a rolled-back entry is
// marked Dead and stays until then. The ring starts with 1024 slots and doubles when full.
//
// An entry's scratch words (the model's Context.Scratch, kept from the event's Handle for
// its Reverse and Commit) are kept beside the ring, slot for slot, and only once a model
// has used them (KeepScratch): an entry stays two cache lines, and a model that never uses
// them pays nothing for them. A slot of the side array that holds no entry is zero, so an
// entry pushed holds zero words until KeepScratch.
//
// History also keeps the pool of Saved states no longer needed (Free, NewSaved), so that
// periodic state saving allocates nothing once the pool has reached its working size. Not
// safe for concurrent use.
type History struct {
	entries ring.Ring[Entry]
	scratch []event.Words // the entries' scratch words by slot, or nil: see KeepScratch
	base    int64         // absolute index of entries.At(0)
	free    []*Saved      // saved states no longer needed, for reuse
	remap   []int64       // Compact's scratch
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
		head, old := r.Head, len(r.Buf)
		r.Grow(historyMin)
		h.regrowScratch(head, old)
	}
	r.N++
	return &r.Buf[(r.Head+r.N-1)&(len(r.Buf)-1)]
}

// slot returns the ring slot of the entry with absolute index i.
func (h *History) slot(i int64) int {
	return (h.entries.Head + int(i-h.base)) & (len(h.entries.Buf) - 1)
}

// KeepScratch sets the scratch words of the entry with absolute index i (Base() <= i <
// Next()) to w, making the side array on the first call.
func (h *History) KeepScratch(i int64, w event.Words) {
	if h.scratch == nil {
		h.scratch = make([]event.Words, len(h.entries.Buf))
	}
	h.scratch[h.slot(i)] = w
}

// Scratch returns the scratch words of the entry with absolute index i (Base() <= i <
// Next()), or nil while no entry has had any kept (they are all zero then). The caller
// may change them.
func (h *History) Scratch(i int64) *event.Words {
	if h.scratch == nil {
		return nil
	}
	return &h.scratch[h.slot(i)]
}

// ScratchNth is Scratch for the n-th entry of the log, oldest first (0 <= n < Len()).
func (h *History) ScratchNth(n int) *event.Words {
	if h.scratch == nil {
		return nil
	}
	return &h.scratch[(h.entries.Head+n)&(len(h.entries.Buf)-1)]
}

// regrowScratch lays the side array out again as the ring's grow did its entries (oldHead
// and oldLen were the ring's head and length before): item n at slot n.
func (h *History) regrowScratch(oldHead, oldLen int) {
	if h.scratch == nil {
		return
	}
	side := make([]event.Words, len(h.entries.Buf))
	for n := range oldLen {
		side[n] = h.scratch[(oldHead+n)&(oldLen-1)]
	}
	h.scratch = side
}

// clearScratchFront zeroes the scratch words of the n oldest entries, which are leaving.
func (h *History) clearScratchFront(n int) {
	if h.scratch == nil {
		return
	}
	for k := range n {
		h.scratch[(h.entries.Head+k)&(len(h.scratch)-1)] = event.Words{}
	}
}

// DropFront drops the n oldest entries (n <= Len()). They are not cleared (see
// ring.Ring.DropFront): the caller lets go of what they hold that it must.
func (h *History) DropFront(n int) {
	h.clearScratchFront(n)
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
			if h.scratch != nil {
				h.scratch[h.slot(old)] = event.Words{}
			}
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
			if h.scratch != nil { // slot k's entry was dropped or has moved: it is zero
				from, to := h.slot(old), h.slot(h.base+int64(k))
				h.scratch[to], h.scratch[from] = h.scratch[from], event.Words{}
			}
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
