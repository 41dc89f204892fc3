package ltsf

import "github.com/warpedgo/warped/event"

// Entry is a schedule-queue entry: an LP and the key of its earliest unprocessed event.
type Entry struct {
	Key event.Key
	LP  event.LPID
}

// BatchQueue is a schedule queue that also hands out its least entries several at a time.
type BatchQueue interface {
	Queue
	// PopN removes the min(n, Len()) least entries and appends them to dst in order
	// (the order of Pop), returning the extended slice. The entries are of distinct LPs,
	// since a queue holds one entry per LP.
	PopN(dst []Entry, n int) []Entry
}

// DefaultNodeSize is the node size (items per node) of New("parallel-heap", n).
const DefaultNodeSize = 16

// ParallelHeap is Prasad's parallel heap (Deo and Prasad, 1992; used for the event queues
// of many-core PDES) as a schedule queue: a binary tree of nodes that each hold up to r
// entries, sorted, with the heap property between nodes (every entry of a node sorts
// before every entry of its children). The root holds the r least entries, so PopN hands
// out up to r of them in one operation, and a batch costs one descent of the tree per r
// entries.
//
// Nodes are numbered level by level (node i's children are 2i+1 and 2i+2) and stored in
// one array of r slots each; every node but the root and the last is full. The root may
// hold fewer than r entries (they are taken from its front); when it runs empty it is
// refilled with r entries from the end of the tree and sifted down by merging it with its
// children: the node keeps the least r, the child with the greater maximum the next ones
// (they cannot exceed that maximum, so its subtree stays ordered), and the other child the
// greatest ones, and the descent continues there. Push walks the path from the root to
// the last node, swapping the new entry with each node's maximum it sorts before. Remove
// fills the hole with an entry from the last node and moves it up or sifts the node down.
// Push and Remove are O(r + log(n/r)); Pop is O(log(n/r)) amortized (O(r log(n/r)) once
// every r pops); it never allocates once its array has grown.
type ParallelHeap struct {
	r   int
	a   []entry // node i's slots are a[i*r : (i+1)*r]
	cnt []int32 // entries held by each node
	nn  int     // nodes in use
	rh  int     // the root's first entry is a[rh]
	n   int
	pos []int32 // pos[lp] is the slot of lp's entry, or -1
	buf []entry // merge scratch: three nodes
}

var _ BatchQueue = (*ParallelHeap)(nil)

// NewParallelHeap returns an empty parallel heap with nodes of r entries (r >= 1;
// DefaultNodeSize is a good choice) for LP ids in [0, numLPs).
func NewParallelHeap(numLPs, r int) *ParallelHeap {
	if r < 1 {
		r = 1
	}
	h := &ParallelHeap{r: r, pos: make([]int32, numLPs), buf: make([]entry, 3*r)}
	for i := range h.pos {
		h.pos[i] = -1
	}
	h.grow(min(4, numLPs/r+2))
	return h
}

// NodeSize returns r, the number of entries a node holds.
func (h *ParallelHeap) NodeSize() int { return h.r }

// Len returns the number of entries.
func (h *ParallelHeap) Len() int { return h.n }

// grow makes room for at least nodes nodes.
func (h *ParallelHeap) grow(nodes int) {
	if len(h.cnt) >= nodes {
		return
	}
	nodes = max(nodes, 2*len(h.cnt))
	a := make([]entry, nodes*h.r)
	copy(a, h.a)
	h.a = a
	cnt := make([]int32, nodes)
	copy(cnt, h.cnt)
	h.cnt = cnt
}

// lo returns the slot of node i's first entry.
func (h *ParallelHeap) lo(i int) int {
	if i == 0 {
		return h.rh
	}
	return i * h.r
}

// hi returns the slot after node i's last entry.
func (h *ParallelHeap) hi(i int) int { return h.lo(i) + int(h.cnt[i]) }

// set puts e in slot s.
func (h *ParallelHeap) set(s int, e entry) {
	h.a[s] = e
	h.pos[e.lp] = int32(s)
}

// Min returns the least entry without removing it.
func (h *ParallelHeap) Min() (k event.Key, lp event.LPID, ok bool) {
	if h.n == 0 {
		return event.Key{}, 0, false
	}
	e := &h.a[h.rh]
	return e.k, e.lp, true
}

// Pop removes and returns the least entry.
func (h *ParallelHeap) Pop() (k event.Key, lp event.LPID, ok bool) {
	if h.n == 0 {
		return event.Key{}, 0, false
	}
	e := h.a[h.rh]
	h.pos[e.lp] = -1
	h.rh++
	h.cnt[0]--
	h.n--
	if h.cnt[0] == 0 {
		h.refill()
	}
	return e.k, e.lp, true
}

// PopN removes the min(n, Len()) least entries and appends them to dst in order.
func (h *ParallelHeap) PopN(dst []Entry, n int) []Entry {
	for n > 0 && h.n > 0 {
		take := min(n, int(h.cnt[0]))
		for _, e := range h.a[h.rh : h.rh+take] {
			h.pos[e.lp] = -1
			dst = append(dst, Entry{e.k, e.lp})
		}
		h.rh += take
		h.cnt[0] -= int32(take)
		h.n -= take
		n -= take
		if h.cnt[0] == 0 {
			h.refill()
		}
	}
	return dst
}

// refill refills the empty root with up to r entries from the end of the tree and sifts it
// down.
func (h *ParallelHeap) refill() {
	h.rh = 0
	if h.nn <= 1 {
		h.nn = 0
		return
	}
	c := 0 // the root's entries
	for c < h.r && h.nn > 1 {
		t := h.nn - 1
		take := min(h.r-c, int(h.cnt[t]))
		end := t*h.r + int(h.cnt[t])
		for s := end - take; s < end; s++ {
			h.set(c, h.a[s])
			c++
		}
		h.cnt[t] -= int32(take)
		if h.cnt[t] == 0 {
			h.nn--
		}
	}
	h.cnt[0] = int32(c)
	// At most two sorted runs: insertion sort.
	for i := 1; i < c; i++ {
		x := h.a[i]
		j := i
		for j > 0 && eless(&x, &h.a[j-1]) {
			h.set(j, h.a[j-1])
			j--
		}
		h.set(j, x)
	}
	h.down(0)
}

// down restores the heap property below node i, whose entries are sorted and whose
// children's subtrees are ordered; node i is full if it has children.
func (h *ParallelHeap) down(i int) {
	r := h.r
	for {
		c1 := 2*i + 1
		if c1 >= h.nn {
			return
		}
		c2 := c1 + 1
		two := c2 < h.nn
		mx := &h.a[h.hi(i)-1]
		if !eless(&h.a[c1*r], mx) && (!two || !eless(&h.a[c2*r], mx)) {
			return // already ordered
		}
		// Merge the three sorted runs into buf.
		buf := h.buf[:0]
		x, xe := h.lo(i), h.hi(i)
		y, ye := c1*r, h.hi(c1)
		z, ze := c2*r, c2*r
		if two {
			ze = h.hi(c2)
		}
		for x < xe || y < ye || z < ze {
			var p *int
			switch {
			case x < xe:
				p = &x
			case y < ye:
				p = &y
			default:
				p = &z
			}
			if y < ye && eless(&h.a[y], &h.a[*p]) {
				p = &y
			}
			if z < ze && eless(&h.a[z], &h.a[*p]) {
				p = &z
			}
			buf = append(buf, h.a[*p])
			*p++
		}
		// The child with the greater maximum takes the entries after the node's: they
		// sort before its old maximum, hence before its children's entries. The other
		// child takes the greatest entries and the descent goes on there.
		a, b := c1, c2
		if two && eless(&h.a[ye-1], &h.a[ze-1]) {
			a, b = c2, c1
		}
		k := 0
		for s := h.lo(i); s < xe; s++ {
			h.set(s, buf[k])
			k++
		}
		for s := a * r; s < h.hi(a); s++ {
			h.set(s, buf[k])
			k++
		}
		if !two {
			return
		}
		for s := b * r; s < h.hi(b); s++ {
			h.set(s, buf[k])
			k++
		}
		i = b
	}
}

// Push adds lp with key k.
func (h *ParallelHeap) Push(k event.Key, lp event.LPID) {
	x := entry{k, lp}
	h.n++
	if h.nn == 0 {
		h.nn, h.rh, h.cnt[0] = 1, 0, 1
		h.set(0, x)
		return
	}
	t := h.nn - 1
	if t == 0 {
		if int(h.cnt[0]) < h.r {
			if h.rh+int(h.cnt[0]) == h.r { // compact the root to the front of its slots
				for s := range int(h.cnt[0]) {
					h.set(s, h.a[h.rh+s])
				}
				h.rh = 0
			}
			h.insert(0, x)
			return
		}
	} else if int(h.cnt[t]) < h.r {
		h.pathInsert(t, x)
		return
	}
	// A new last node.
	t = h.nn
	h.grow(t + 1)
	h.cnt[t] = 0
	h.nn++
	h.pathInsert(t, x)
}

// pathInsert walks from the root to node t (which has room), swapping x with the maximum
// of each node it sorts before, and inserts what it carries into t.
func (h *ParallelHeap) pathInsert(t int, x entry) {
	// The path's nodes are the prefixes of t+1's binary digits.
	d := 0
	for v := t + 1; v > 1; v >>= 1 {
		d++
	}
	for l := d; l >= 1; l-- {
		v := (t+1)>>l - 1
		m := h.hi(v) - 1
		if !eless(&x, &h.a[m]) {
			continue
		}
		mx := h.a[m]
		h.replaceMax(v, x)
		x = mx
	}
	h.insert(t, x)
}

// insert inserts x into node i, which has a free slot after its last entry.
func (h *ParallelHeap) insert(i int, x entry) {
	lo, s := h.lo(i), h.hi(i)
	for s > lo && eless(&x, &h.a[s-1]) {
		h.set(s, h.a[s-1])
		s--
	}
	h.set(s, x)
	h.cnt[i]++
}

// replaceMax drops node i's maximum (its last entry) and inserts x, which sorts before it.
func (h *ParallelHeap) replaceMax(i int, x entry) {
	lo, s := h.lo(i), h.hi(i)-1
	for s > lo && eless(&x, &h.a[s-1]) {
		h.set(s, h.a[s-1])
		s--
	}
	h.set(s, x)
}

// Remove removes lp's entry and reports whether there was one.
func (h *ParallelHeap) Remove(lp event.LPID) bool {
	p := h.pos[lp]
	if p < 0 {
		return false
	}
	s := int(p)
	h.pos[lp] = -1
	h.n--
	j := s / h.r
	t := h.nn - 1
	if j == 0 || j == t {
		// Close the gap; the node stays sorted and ordered against its children.
		for e := h.hi(j) - 1; s < e; s++ {
			h.set(s, h.a[s+1])
		}
		h.cnt[j]--
		if h.cnt[j] == 0 {
			if j == 0 {
				h.refill()
			} else {
				h.nn--
			}
		}
		return true
	}
	// Fill the gap with the last node's greatest entry y, keeping node j sorted.
	y := h.a[h.hi(t)-1]
	h.cnt[t]--
	if h.cnt[t] == 0 {
		h.nn--
	}
	lo, e := h.lo(j), h.hi(j)
	for ; s+1 < e && eless(&h.a[s+1], &y); s++ {
		h.set(s, h.a[s+1])
	}
	for ; s > lo && eless(&y, &h.a[s-1]); s-- {
		h.set(s, h.a[s-1])
	}
	h.set(s, y)
	if s == lo && h.up(j) {
		return true
	}
	h.down(j)
	return true
}

// up moves node j's least entry y up while it sorts before its parent's maximum (each
// parent's maximum moving down in its place) and reports whether it moved.
func (h *ParallelHeap) up(j int) bool {
	moved := false
	for j > 0 {
		p := (j - 1) / 2
		m := h.hi(p) - 1
		lo := h.lo(j)
		if !eless(&h.a[lo], &h.a[m]) {
			break
		}
		// y sorts before every other entry of node j, and the parent's maximum sorts
		// before all of them too: it takes y's place at the front.
		y, mx := h.a[lo], h.a[m]
		h.set(lo, mx)
		h.replaceMax(p, y)
		moved = true
		j = p
	}
	return moved
}
