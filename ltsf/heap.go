package ltsf

import "github.com/warpedgo/warped/event"

// arity is the number of children per heap node: the tree is half as deep as a binary
// heap's, and the four children of a node are adjacent in memory.
const arity = 4

// entry is one heap slot: the key inline, so that comparisons touch only the heap array,
// and the LP whose entry it is.
type entry struct {
	k  event.Key
	lp event.LPID
}

// Heap is a 4-ary min-heap schedule queue. Its array holds (key, LP) entries, and because
// it holds at most one entry per LP, the heap positions live in a table indexed by LP id.
// It is sized for the number of LPs.
type Heap struct {
	a   []entry
	pos []int32 // pos[lp] is lp's index in a, or -1
}

var _ Queue = (*Heap)(nil)

// NewHeap returns an empty heap for LP ids in [0, numLPs).
func NewHeap(numLPs int) *Heap {
	h := &Heap{pos: make([]int32, numLPs), a: make([]entry, 0, 64)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

// eless reports whether entry x sorts before entry y.
func eless(x, y *entry) bool { return less(&x.k, x.lp, &y.k, y.lp) }

// Push adds lp with key k.
func (h *Heap) Push(k event.Key, lp event.LPID) {
	h.a = append(h.a, entry{k, lp})
	h.up(len(h.a) - 1)
}

// Min returns the least entry without removing it.
func (h *Heap) Min() (k event.Key, lp event.LPID, ok bool) {
	if len(h.a) == 0 {
		return event.Key{}, 0, false
	}
	return h.a[0].k, h.a[0].lp, true
}

// Pop removes and returns the least entry.
func (h *Heap) Pop() (k event.Key, lp event.LPID, ok bool) {
	if len(h.a) == 0 {
		return event.Key{}, 0, false
	}
	k, lp = h.a[0].k, h.a[0].lp
	h.removeAt(0)
	return k, lp, true
}

// Remove removes lp's entry and reports whether there was one.
func (h *Heap) Remove(lp event.LPID) bool {
	i := h.pos[lp]
	if i < 0 {
		return false
	}
	h.removeAt(int(i))
	return true
}

// Len returns the number of entries.
func (h *Heap) Len() int { return len(h.a) }

func (h *Heap) removeAt(i int) {
	h.pos[h.a[i].lp] = -1
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
}

func (h *Heap) up(i int) {
	a := h.a
	x := a[i]
	for i > 0 {
		p := (i - 1) / arity
		if !eless(&x, &a[p]) {
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
			if eless(&a[j], &a[m]) {
				m = j
			}
		}
		if !eless(&a[m], &x) {
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
