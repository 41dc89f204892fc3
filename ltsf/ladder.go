package ltsf

import (
	"math"
	"math/bits"
	"slices"

	"github.com/warpedgo/warped/event"
)

// Ladder queue parameters (the defaults of Tang, Goh and Thng).
const (
	// ladderThres is the bucket size above which a bucket is split into a new rung
	// rather than sorted into Bottom (THRES in the paper).
	ladderThres = 50
	// ladderMaxRungs bounds the number of rungs (MaxRung in the paper); a bucket that
	// would need another rung is sorted into Bottom instead.
	ladderMaxRungs = 8
)

// Where a ladder node sits (lnode.where); values >= 0 are rung indexes.
const (
	inNone   int32 = -1
	inTop    int32 = -2
	inBottom int32 = -3
	inInf    int32 = -4
)

// lnode is the ladder record of one LP: its key, and where its entry sits. In Top and in
// a rung bucket the nodes form doubly linked lists through next and prev.
type lnode struct {
	// The links come first, so that they and the receive time, which the list walks
	// need, share a cache line more often.
	next, prev int32
	where      int32 // inNone, inTop, inBottom, inInf or a rung index
	bucket     int32 // the bucket index when where is a rung
	k          event.Key
}

// rung is one rung of the ladder: nb buckets covering receive times from start upwards,
// bucket k holding the entries whose receive time t has index(t) == k. The index is a
// monotone (non-decreasing) function of t, so every entry of a bucket is strictly earlier
// than every entry of a later bucket, and equal times always share a bucket.
type rung struct {
	start event.Time
	scale float64 // buckets per unit of time: 1/bucket width
	nb    int
	cur   int     // buckets below cur have been handed down; they are empty
	count int     // entries in the rung
	head  []int32 // first node of each bucket, or nilNode
}

// index returns the bucket of time t: -1 below start, nb-1 for everything past the last
// bucket (+Inf included).
func (r *rung) index(t event.Time) int {
	f := (t - r.start) * r.scale
	if f < 0 {
		return -1
	}
	if !(f < float64(r.nb)) {
		return r.nb - 1
	}
	return int(f)
}

// bentry is one Bottom slot: the key inline, so that comparisons touch only the Bottom
// array, and the LP.
type bentry struct {
	k  event.Key
	lp event.LPID
}

// bless reports whether x sorts before y.
func bless(x, y *bentry) bool { return less(&x.k, x.lp, &y.k, y.lp) }

// bcompare is bless as a three-way comparison for sorting (entries are never equal: each
// LP has one).
func bcompare(x, y bentry) int {
	if bless(&x, &y) {
		return -1
	}
	return 1
}

// Ladder is a ladder queue (Tang, Goh and Thng, "Ladder Queue: An O(1) priority queue
// structure for large-scale discrete event simulation", 2005), bucketing entries by the
// receive time of their keys (Key.RecvTime). Entries above topStart go unsorted into
// Top; when everything below has been consumed, Top is spread over the buckets of a first
// rung. Pop takes the front of Bottom, a sorted array of (key, LP) entries; when Bottom
// is empty, the first non-empty bucket of the lowest rung is either split into a new rung
// (when it holds more than ladderThres entries) or sorted into Bottom by key (and LP id).
//
// Invariants: every entry in Bottom is earlier than every entry in a rung; the entries of
// a lower rung are earlier than those of the buckets at or past cur of a higher rung;
// every entry in the ladder has a receive time <= topStart < the receive times in Top.
// Push walks the rungs from the top and puts an entry in the first one whose current or a
// later bucket covers its time, and in Bottom when none does. Because a rung's bucket
// index is monotone in the receive time, these hold with exact float arithmetic, equal
// times always land together, and Pop follows the queue order exactly.
//
// Departures from the paper: a rung's geometry comes from the entries it is built from
// (their least and greatest time, one bucket per entry) rather than from the parent
// bucket's width, so a bucket whose entries all share one receive time cannot be split:
// it is sorted into Bottom, which is how integer-time models with thousands of equal
// times are served (and why a zero bucket width cannot loop). Bottom is a sorted array
// with free space at both ends (Pop and insertions near either end are cheap); when
// Pushes have made it large it is turned back into a rung. Entries at +Inf are kept in a
// list of their own, outside Top and the rungs, and sorted into Bottom only when nothing
// finite is left (the +Inf phase, during which finite Pushes go to Bottom too), so a
// model that parks LPs at +Inf does not stretch the rungs to infinity. An empty queue
// starts afresh.
//
// Nodes, each holding its LP's key, are kept in a table indexed by LP id and the buckets
// are lists threaded through it, so Remove is O(1) outside Bottom (a binary search in it)
// and nothing is allocated once the arrays have grown to their working size. Neither the
// nodes nor Bottom refer to event records.
type Ladder struct {
	nodes []lnode

	// Top: unsorted list of the finite entries with receive time > topStart.
	topHead  int32
	topN     int
	topStart event.Time

	// The entries at +Inf: an unsorted list, or, in the +Inf phase, Bottom.
	infHead  int32
	infN     int
	infPhase bool

	rungs []rung // rungs[:nr] are in use; rungs[0] is the topmost
	nr    int

	// Bottom: bot[bh:] sorted by bless.
	bot    []bentry
	bh     int
	botIns int // entries pushed into Bottom since it was last filled

	n int

	thres    int
	maxRungs int
}

var _ Queue = (*Ladder)(nil)

// NewLadder returns an empty ladder queue for LP ids in [0, numLPs).
func NewLadder(numLPs int) *Ladder { return newLadder(numLPs, ladderThres, ladderMaxRungs) }

func newLadder(numLPs, thres, maxRungs int) *Ladder {
	l := &Ladder{
		nodes:    make([]lnode, numLPs),
		topHead:  nilNode,
		infHead:  nilNode,
		topStart: math.Inf(-1),
		rungs:    make([]rung, maxRungs),
		thres:    thres,
		maxRungs: maxRungs,
	}
	for i := range l.nodes {
		l.nodes[i].where = inNone
	}
	return l
}

// Len returns the number of entries.
func (l *Ladder) Len() int { return l.n }

// Push adds lp with key k.
func (l *Ladder) Push(k event.Key, lp event.LPID) {
	x := int32(lp)
	nx := &l.nodes[x]
	nx.k = k
	l.n++
	t := k.RecvTime
	if t > l.topStart {
		if math.IsInf(t, 1) {
			nx.where = inInf
			l.link(nx, x, &l.infHead)
			l.infN++
			return
		}
		nx.where = inTop
		l.link(nx, x, &l.topHead)
		l.topN++
		return
	}
	for i := 0; i < l.nr; i++ {
		r := &l.rungs[i]
		if b := r.index(t); b >= r.cur {
			nx.where, nx.bucket = int32(i), int32(b)
			l.link(nx, x, &r.head[b])
			r.count++
			return
		}
	}
	l.botInsert(bentry{k, lp})
	nx.where = inBottom
	l.botIns++
	if l.botIns >= l.thres && 2*l.botIns >= len(l.bot)-l.bh && l.nr < l.maxRungs {
		l.botToRung()
	}
}

// Min returns the least entry without removing it. (It may move entries from the rungs
// or Top into Bottom.)
func (l *Ladder) Min() (k event.Key, lp event.LPID, ok bool) {
	if l.bh == len(l.bot) && !l.refill() {
		return event.Key{}, 0, false
	}
	b := &l.bot[l.bh]
	return b.k, b.lp, true
}

// Pop removes and returns the least entry.
func (l *Ladder) Pop() (k event.Key, lp event.LPID, ok bool) {
	if l.bh == len(l.bot) && !l.refill() {
		return event.Key{}, 0, false
	}
	b := &l.bot[l.bh]
	k, lp = b.k, b.lp
	l.bh++
	if l.bh == len(l.bot) {
		l.bh, l.bot = 0, l.bot[:0]
	}
	l.nodes[lp].where = inNone
	l.n--
	if l.n == 0 {
		l.reset()
	}
	return k, lp, true
}

// reset starts the empty queue afresh: no rungs, no +Inf phase, and everything pushed
// goes to Top until it is spread over a new first rung.
func (l *Ladder) reset() {
	l.nr, l.infPhase, l.topStart = 0, false, math.Inf(-1)
	l.bh, l.bot, l.botIns = 0, l.bot[:0], 0
}

// Remove removes lp's entry and reports whether there was one.
func (l *Ladder) Remove(lp event.LPID) bool {
	nx := &l.nodes[lp]
	switch w := nx.where; {
	case w == inNone:
		return false
	case w == inTop:
		l.unlink(nx, &l.topHead)
		l.topN--
	case w == inInf:
		l.unlink(nx, &l.infHead)
		l.infN--
	case w == inBottom:
		l.botRemove(nx, lp)
	default:
		r := &l.rungs[w]
		l.unlink(nx, &r.head[nx.bucket])
		r.count--
	}
	nx.where = inNone
	l.n--
	if l.n == 0 {
		l.reset()
	}
	return true
}

// link puts node x (nx) at the front of the list starting at *head.
func (l *Ladder) link(nx *lnode, x int32, head *int32) {
	h := *head
	nx.prev, nx.next = nilNode, h
	if h >= 0 {
		l.nodes[h].prev = x
	}
	*head = x
}

// unlink takes nx out of the list starting at *head.
func (l *Ladder) unlink(nx *lnode, head *int32) {
	if nx.prev >= 0 {
		l.nodes[nx.prev].next = nx.next
	} else {
		*head = nx.next
	}
	if nx.next >= 0 {
		l.nodes[nx.next].prev = nx.prev
	}
}

// listStats walks the list from h and returns its length and its least and greatest
// times. (Lists in Top and the rungs hold no +Inf.)
func (l *Ladder) listStats(h int32) (n int, lo, hi event.Time) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for x := h; x >= 0; {
		nx := &l.nodes[x]
		t := nx.k.RecvTime
		n++
		if t < lo {
			lo = t
		}
		if t > hi {
			hi = t
		}
		x = nx.next
	}
	return n, lo, hi
}

// newRung sets up rung i for n entries with least time lo and greatest time hi, one
// bucket per entry. It reports false, leaving the rung unused, when those times cannot
// be spread over buckets (all equal, or not finite, or a width that does not fit a
// float64).
func (l *Ladder) newRung(i, n int, lo, hi event.Time) bool {
	if !(lo < hi) || math.IsInf(lo, -1) || math.IsInf(hi, 1) || n < 2 {
		return false
	}
	scale := float64(n) / (hi - lo)
	if !(scale > 0) || math.IsInf(scale, 1) {
		return false
	}
	r := &l.rungs[i]
	r.start, r.scale, r.nb, r.cur, r.count = lo, scale, n, 0, 0
	if cap(r.head) < n {
		r.head = make([]int32, n)
	}
	r.head = r.head[:n]
	for k := range r.head {
		r.head[k] = nilNode
	}
	return true
}

// spread moves the nodes of the list from h into rung i, which newRung has set up.
func (l *Ladder) spread(h int32, i int) {
	r := &l.rungs[i]
	for x := h; x >= 0; {
		nx := &l.nodes[x]
		next := nx.next
		b := r.index(nx.k.RecvTime)
		nx.where, nx.bucket = int32(i), int32(b)
		l.link(nx, x, &r.head[b])
		r.count++
		x = next
	}
}

// fillBottom sorts the nodes of the list from h into the empty Bottom.
func (l *Ladder) fillBottom(h int32) {
	bot := l.bot[:0]
	for x := h; x >= 0; {
		nx := &l.nodes[x]
		nx.where = inBottom
		bot = append(bot, bentry{nx.k, event.LPID(x)})
		x = nx.next
	}
	sortBottom(bot)
	l.bot, l.bh, l.botIns = bot, 0, 0
}

// sortBottom sorts a by bless: a quicksort with the comparison inlined and insertion sort
// for short runs, which falls back to slices.SortFunc (pdqsort) when it recurses too deep,
// so that the worst case stays O(n log n).
func sortBottom(a []bentry) { sortBottomDepth(a, 2*bits.Len(uint(len(a)))) }

// sortInsertionMax is the longest run that sortBottom sorts by insertion.
const sortInsertionMax = 12

func sortBottomDepth(a []bentry, depth int) {
	for len(a) > sortInsertionMax {
		if depth == 0 {
			slices.SortFunc(a, bcompare)
			return
		}
		depth--
		p := partitionBottom(a)
		// Recurse into the shorter side, loop on the longer.
		if p < len(a)-1-p {
			sortBottomDepth(a[:p], depth)
			a = a[p+1:]
		} else {
			sortBottomDepth(a[p+1:], depth)
			a = a[:p]
		}
	}
	for i := 1; i < len(a); i++ {
		y := a[i]
		j := i
		for ; j > 0 && bless(&y, &a[j-1]); j-- {
			a[j] = a[j-1]
		}
		a[j] = y
	}
}

// partitionBottom partitions a (at least three entries, all distinct) around the median of
// its first, middle and last entries, and returns the pivot's final index: the entries
// before it sort before it and those after it sort after it.
func partitionBottom(a []bentry) int {
	n := len(a)
	m, z := n/2, n-1
	if bless(&a[m], &a[0]) {
		a[m], a[0] = a[0], a[m]
	}
	if bless(&a[z], &a[m]) {
		a[z], a[m] = a[m], a[z]
		if bless(&a[m], &a[0]) {
			a[m], a[0] = a[0], a[m]
		}
	}
	// a[0] <= a[m] <= a[z]: move the median to the front; a[z] stops the upward scan.
	a[0], a[m] = a[m], a[0]
	pv := &a[0]
	i, j := 1, z
	for {
		for bless(&a[i], pv) {
			i++
		}
		for bless(pv, &a[j]) {
			j--
		}
		if i >= j {
			break
		}
		a[i], a[j] = a[j], a[i]
		i++
		j--
	}
	a[0], a[j] = a[j], a[0]
	return j
}

// refill fills the empty Bottom from the lowest rung, or from Top when there are no
// rungs, and reports whether the queue holds anything.
func (l *Ladder) refill() bool {
	for {
		if l.nr == 0 {
			if l.topN == 0 {
				if l.infN == 0 {
					return false
				}
				// Only +Inf entries are left: sort them into Bottom, where the
				// +Inf and finite entries pushed from now on go too.
				h := l.infHead
				l.infHead, l.infN = nilNode, 0
				l.infPhase, l.topStart = true, math.Inf(1)
				l.fillBottom(h)
				return true
			}
			h, n := l.topHead, l.topN
			l.topHead, l.topN = nilNode, 0
			_, lo, hi := l.listStats(h)
			l.topStart = hi
			if n > l.thres && l.newRung(0, n, lo, hi) {
				l.nr = 1
				l.spread(h, 0)
				continue
			}
			l.fillBottom(h)
			return true
		}
		r := &l.rungs[l.nr-1]
		if r.count == 0 {
			l.nr--
			continue
		}
		for r.head[r.cur] < 0 {
			r.cur++
		}
		h := r.head[r.cur]
		r.head[r.cur] = nilNode
		r.cur++
		n, lo, hi := l.listStats(h)
		r.count -= n
		if n > l.thres && l.nr < l.maxRungs && l.newRung(l.nr, n, lo, hi) {
			l.nr++
			l.spread(h, l.nr-1)
			continue
		}
		l.fillBottom(h)
		return true
	}
}

// botSearch returns the first position in bot[bh:] whose entry does not sort before y.
func (l *Ladder) botSearch(y *bentry) int {
	lo, hi := l.bh, len(l.bot)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bless(&l.bot[m], y) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// botInsert puts y into its place in Bottom, moving the shorter side of the array.
func (l *Ladder) botInsert(y bentry) {
	p := l.botSearch(&y)
	if l.bh > 0 && p-l.bh < len(l.bot)-p {
		copy(l.bot[l.bh-1:p-1], l.bot[l.bh:p])
		l.bh--
		l.bot[p-1] = y
		return
	}
	l.bot = append(l.bot, bentry{})
	copy(l.bot[p+1:], l.bot[p:])
	l.bot[p] = y
}

// botRemove takes the entry of lp (node nx) out of Bottom, moving the shorter side of the
// array.
func (l *Ladder) botRemove(nx *lnode, lp event.LPID) {
	y := bentry{nx.k, lp}
	p := l.botSearch(&y)
	if l.bot[p].lp != lp { // entries are unique in the order of bless
		panic("ltsf: ladder entry missing from Bottom")
	}
	if p-l.bh < len(l.bot)-1-p {
		copy(l.bot[l.bh+1:p+1], l.bot[l.bh:p])
		l.bh++
	} else {
		copy(l.bot[p:], l.bot[p+1:])
		l.bot = l.bot[:len(l.bot)-1]
	}
	if l.bh == len(l.bot) {
		l.bh, l.bot = 0, l.bot[:0]
	}
}

// botToRung turns a Bottom that Pushes have made large into a new lowest rung, if its
// times can be spread over buckets. In the +Inf phase the +Inf entries go back to their
// list, which ends the phase.
func (l *Ladder) botToRung() {
	l.botIns = 0
	bot := l.bot[l.bh:]
	j := len(bot) // bot[:j] are the finite entries
	for j > 0 && math.IsInf(bot[j-1].k.RecvTime, 1) {
		j--
	}
	if j == 0 {
		return
	}
	hi := bot[j-1].k.RecvTime
	if !l.newRung(l.nr, j, bot[0].k.RecvTime, hi) {
		return
	}
	i := l.nr
	l.nr++
	r := &l.rungs[i]
	for k := range bot {
		x := int32(bot[k].lp)
		nx := &l.nodes[x]
		if k >= j {
			nx.where = inInf
			l.link(nx, x, &l.infHead)
			l.infN++
			continue
		}
		b := r.index(nx.k.RecvTime)
		nx.where, nx.bucket = int32(i), int32(b)
		l.link(nx, x, &r.head[b])
		r.count++
	}
	l.bh, l.bot = 0, l.bot[:0]
	if l.infPhase {
		// There were no rungs and Top was empty: the new rung is the whole ladder.
		l.infPhase, l.topStart = false, hi
	}
}
