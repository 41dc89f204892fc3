package statemgr

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/warpedgo/warped/event"
)

// TestEntryLayout keeps a history log entry to two cache lines (its scratch words are
// beside the ring), with what fossil collection reads of an entry in its first line (see
// Entry).
func TestEntryLayout(t *testing.T) {
	var h Entry
	if n := unsafe.Sizeof(h); n > 128 {
		t.Errorf("Entry is %d bytes, more than two 64-byte cache lines", n)
	}
	for name, end := range map[string]uintptr{
		"OutTo":       unsafe.Offsetof(h.OutTo) + 8,
		"Dead":        unsafe.Offsetof(h.Dead) + 1,
		"Ev.RecvTime": unsafe.Offsetof(h.Ev) + unsafe.Offsetof(h.Ev.RecvTime) + 8,
		"Ev.SendTime": unsafe.Offsetof(h.Ev) + unsafe.Offsetof(h.Ev.SendTime) + 8,
		"Ev.Seq":      unsafe.Offsetof(h.Ev) + unsafe.Offsetof(h.Ev.Seq) + 8,
		"Ev.Payload":  unsafe.Offsetof(h.Ev) + unsafe.Offsetof(h.Ev.Payload) + unsafe.Sizeof(h.Ev.Payload),
	} {
		if end > 64 {
			t.Errorf("Entry.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}

// model is the reference for a History: a slice of the entries in the log (identified by
// their events' Seq) with their absolute indexes.
type model struct {
	base int64
	seqs []uint64
	prev []int64
	// scratch says that scratch words have been kept: from step scratchFrom on, for
	// entries from scratchSeq on.
	scratch    bool
	scratchSeq uint64
}

// scratchFrom is the step from which TestHistoryAgainstSlice keeps scratch words, with
// entries already in the log.
const scratchFrom = 3000

// checkAgainst checks every entry of h against m.
func checkAgainst(t *testing.T, step int, h *History, m *model) {
	t.Helper()
	if h.Len() != len(m.seqs) || h.Base() != m.base || h.Next() != m.base+int64(len(m.seqs)) {
		t.Fatalf("step %d: len %d base %d next %d, want len %d base %d", step, h.Len(), h.Base(), h.Next(), len(m.seqs), m.base)
	}
	for j := range m.seqs {
		i := m.base + int64(j)
		if !h.Holds(i) || h.At(i) != h.Nth(j) {
			t.Fatalf("step %d: At(%d) is not Nth(%d), or not held", step, i, j)
		}
		if e := h.At(i); e.Ev.Seq != m.seqs[j] || e.Prev != m.prev[j] {
			t.Fatalf("step %d: entry %d holds seq %d prev %d, want seq %d prev %d", step, i, e.Ev.Seq, e.Prev, m.seqs[j], m.prev[j])
		}
	}
	if h.Holds(m.base - 1) {
		t.Fatalf("step %d: holds %d, below the base %d", step, m.base-1, m.base)
	}
	for j, s := range m.seqs {
		got, nth := h.Scratch(m.base+int64(j)), h.ScratchNth(j)
		if !m.scratch {
			if got != nil || nth != nil {
				t.Fatalf("step %d: entry %d has scratch words before any was kept", step, s)
			}
			continue
		}
		if want := m.wordsOf(s); got != nth || *got != want {
			t.Fatalf("step %d: entry %d (seq %d) has scratch words %v, want %v", step, m.base+int64(j), s, *got, want)
		}
	}
	// A slot that holds no entry is zero, so that the next entry pushed there is.
	inUse, want := 0, 0
	for _, w := range h.scratch {
		if w != (event.Words{}) {
			inUse++
		}
	}
	for _, s := range m.seqs {
		if m.wordsOf(s) != (event.Words{}) {
			want++
		}
	}
	if inUse != want {
		t.Fatalf("step %d: %d slots hold scratch words, want %d (the entries')", step, inUse, want)
	}
}

// wordsOf is the scratch words the test keeps for the entry of seq: for one in two of
// those pushed from step scratchFrom on, zero (never kept) for the others.
func (m *model) wordsOf(seq uint64) event.Words {
	if m.scratch && seq >= m.scratchSeq && seq%2 == 0 {
		return event.Words{seq, ^seq, 0, seq}
	}
	return event.Words{}
}

// TestHistoryAgainstSlice pushes, drops and compacts at random, entries chained by Prev
// in a few chains, keeping scratch words for some from step scratchFrom on, and checks
// indexes, contents, chains and scratch words against a slice.
func TestHistoryAgainstSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h History
	m := &model{}
	const chains = 3
	last := [chains]int64{-1, -1, -1} // absolute index of each chain's newest entry
	seq := uint64(0)
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 6: // push, now and then a burst that makes the log grow
			n := 1
			if step%4000 == scratchFrom+1 {
				n = 2 * historyMin
			}
			for range n {
				c := r.IntN(chains)
				e := h.Push()
				i := h.Next() - 1
				seq++
				*e = Entry{Ev: event.Event{Seq: seq, Receiver: uint32(c), Payload: seq}, Prev: last[c]}
				if step >= scratchFrom && m.scratchSeq == 0 {
					m.scratchSeq = seq
				}
				if m.scratchSeq != 0 && seq%2 == 0 {
					m.scratch = true
					h.KeepScratch(i, m.wordsOf(seq))
				}
				m.seqs, m.prev = append(m.seqs, seq), append(m.prev, last[c])
				last[c] = i
			}
		case op < 8: // drop from the front
			n := r.IntN(h.Len() + 1)
			h.DropFront(n)
			m.base += int64(n)
			m.seqs, m.prev = m.seqs[n:], m.prev[n:]
		default: // compact: drop one entry in three
			newBase := m.base + int64(len(m.seqs))
			remap := map[int64]int64{}
			var seqs []uint64
			var prevs []int64
			for j, s := range m.seqs {
				if s%3 == 0 {
					continue
				}
				to := newBase + int64(len(seqs))
				remap[m.base+int64(j)] = to
				p := m.prev[j]
				if p >= m.base {
					if q, ok := remap[p]; ok {
						p = q
					} else {
						p = -1
					}
				}
				seqs, prevs = append(seqs, s), append(prevs, p)
			}
			var dropped []*Entry
			h.Compact(func(i int64, e *Entry) bool {
				if w := h.Scratch(i); m.scratch && *w != m.wordsOf(e.Ev.Seq) {
					t.Fatalf("step %d: compaction's drop sees scratch words %v for seq %d", step, *w, e.Ev.Seq)
				}
				if e.Ev.Seq%3 == 0 {
					dropped = append(dropped, e)
					return true
				}
				return false
			}, func(e *Entry, old, to int64) {
				if remap[old] != to || e.Ev.Seq != m.seqs[old-m.base] {
					t.Fatalf("step %d: kept %d (seq %d) as %d, want %d (seq %d)", step, old, e.Ev.Seq, to, remap[old], m.seqs[old-m.base])
				}
			})
			for c := range last {
				if q, ok := remap[last[c]]; ok {
					last[c] = q
				} else if last[c] >= m.base {
					last[c] = -1
				}
			}
			m.base, m.seqs, m.prev = newBase, seqs, prevs
			for _, e := range dropped {
				if e.Ev.Payload != nil && e.Ev.Seq%3 == 0 {
					// the slot may hold a kept entry moved there since
					t.Fatalf("step %d: dropped entry %d kept its payload", step, e.Ev.Seq)
				}
			}
		}
		checkAgainst(t, step, &h, m)
	}
	if c := h.entries.Cap(); c <= historyMin {
		t.Fatalf("the log never grew (%d slots): the side array's regrowth went unchecked", c)
	}
}

// TestSavedPool checks that freed saved states are reused and a new one is made otherwise.
func TestSavedPool(t *testing.T) {
	var h History
	a := h.NewSaved()
	a.Model = 7
	h.Free(a)
	if b := h.NewSaved(); b != a || b.Model != 7 {
		t.Fatalf("NewSaved returned %p (model %v), want the freed %p", b, b.Model, a)
	}
	if c := h.NewSaved(); c == a || c.Model != nil {
		t.Fatalf("NewSaved on an empty pool returned %p (model %v), want a new state", c, c.Model)
	}
}

// TestPushAllocatesNothingInSteadyState checks that pushing and dropping allocates nothing
// once the ring has its working size.
func TestPushAllocatesNothingInSteadyState(t *testing.T) {
	var h History
	for range 2048 {
		h.Push()
	}
	h.DropFront(h.Len())
	allocs := testing.AllocsPerRun(100, func() {
		for range 512 {
			e := h.Push()
			e.Ev.Seq = 1
		}
		h.Free(h.NewSaved())
		h.DropFront(512)
	})
	if allocs != 0 {
		t.Fatalf("steady state allocates %v times a run", allocs)
	}
}
