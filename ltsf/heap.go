package ltsf

import "github.com/warpedgo/warped/event"

// arity is the number of children per heap node: the tree is half as deep as a binary
// heap's, and the four children of a node are adjacent in memory.
const arity = 4

// entry is one heap slot: the event's key inline, so that comparisons touch only the heap
// array, and the LP whose event it is (the record is in Heap.ev).
type entry struct {
	k  event.Key
	lp event.LPID
}

// Heap is a 4-ary min-heap schedule queue. Because it holds at most one event per LP, the
// event records and heap positions live in tables indexed by LP id, and the heap array
// itself holds only (key, LP) entries. It is sized for the number of LPs.
type Heap struct {
	a   []entry
	ev  []*event.Event // ev[lp] is the event held for lp, or nil
	pos []int32        // pos[lp] is lp's index in a, or -1
}

var _ Queue = (*Heap)(nil)

// NewHeap returns an empty heap for LP ids in [0, numLPs).
func NewHeap(numLPs int) *Heap {
	h := &Heap{pos: make([]int32, numLPs), ev: make([]*event.Event, numLPs), a: make([]entry, 0, 64)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *Heap) less(x, y *entry) bool { return event.KeyLess(&x.k, &y.k) }

// Push adds e.
func (h *Heap) Push(e *event.Event) {
	h.ev[e.Receiver] = e
	h.a = append(h.a, entry{event.KeyOf(e), e.Receiver})
	h.up(len(h.a) - 1)
}

// Peek returns the least event, or nil.
func (h *Heap) Peek() *event.Event {
	if len(h.a) == 0 {
		return nil
	}
	return h.ev[h.a[0].lp]
}

// Pop removes and returns the least event, or nil.
func (h *Heap) Pop() *event.Event {
	if len(h.a) == 0 {
		return nil
	}
	return h.removeAt(0)
}

// Remove removes and returns the event held for lp, or nil.
func (h *Heap) Remove(lp event.LPID) *event.Event {
	i := h.pos[lp]
	if i < 0 {
		return nil
	}
	return h.removeAt(int(i))
}

// Len returns the number of events held.
func (h *Heap) Len() int { return len(h.a) }

func (h *Heap) removeAt(i int) *event.Event {
	lp := h.a[i].lp
	ev := h.ev[lp]
	h.pos[lp] = -1
	h.ev[lp] = nil
	last := len(h.a) - 1
	if i != last {
		h.a[i] = h.a[last]
		h.pos[h.a[i].lp] = int32(i)
	}
	h.a = h.a[:last]
	if i < last {
		if !h.down(i) {
			h.up(i)
		}
	}
	return ev
}

func (h *Heap) up(i int) {
	a := h.a
	x := a[i]
	for i > 0 {
		p := (i - 1) / arity
		if !h.less(&x, &a[p]) {
			break
		}
		a[i] = a[p]
		h.pos[a[i].lp] = int32(i)
		i = p
	}
	a[i] = x
	h.pos[x.lp] = int32(i)
}

// down sifts a[i0] down and reports whether it moved.
func (h *Heap) down(i0 int) bool {
	a := h.a
	n := len(a)
	x := a[i0]
	i := i0
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		// Find the least of up to four children.
		m := c
		end := min(c+arity, n)
		for j := c + 1; j < end; j++ {
			if h.less(&a[j], &a[m]) {
				m = j
			}
		}
		if !h.less(&a[m], &x) {
			break
		}
		a[i] = a[m]
		h.pos[a[i].lp] = int32(i)
		i = m
	}
	a[i] = x
	h.pos[x.lp] = int32(i)
	return i > i0
}
