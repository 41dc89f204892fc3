package ltsf

import (
	"math"
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

// lnode is the ladder record of one LP: its event, and where the event sits. In Top and
// in a rung bucket the nodes form doubly linked lists through next and prev.
type lnode struct {
	t          event.Time
	ev         *event.Event
	next, prev int32
	where      int32 // inNone, inTop, inBottom, inInf or a rung index
	bucket     int32 // the bucket index when where is a rung
}

// rung is one rung of the ladder: nb buckets covering receive times from start upwards,
// bucket k holding the times t with index(t) == k. The index is a monotone
// (non-decreasing) function of t, so every event of a bucket is strictly earlier than
// every event of a later bucket, and equal times always share a bucket.
type rung struct {
	start event.Time
	scale float64 // buckets per unit of time: 1/bucket width
	nb    int
	cur   int     // buckets below cur have been handed down; they are empty
	count int     // events in the rung
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

// bentry is one Bottom slot: the receive time inline, so that most comparisons touch only
// the Bottom array, and the event.
type bentry struct {
	t  event.Time
	ev *event.Event
}

// bless reports whether x sorts before y.
func bless(x, y *bentry) bool {
	if x.t != y.t {
		return x.t < y.t
	}
	return event.Less(x.ev, y.ev)
}

// Ladder is a ladder queue (Tang, Goh and Thng, "Ladder Queue: An O(1) priority queue
// structure for large-scale discrete event simulation", 2005). Events above topStart go
// unsorted into Top; when everything below has been consumed, Top is spread over the
// buckets of a first rung. Pop takes the front of Bottom, a sorted array; when Bottom is
// empty, the first non-empty bucket of the lowest rung is either split into a new rung
// (when it holds more than ladderThres events) or sorted into Bottom with event.Less.
//
// Invariants: every event in Bottom is earlier than every event in a rung; the events of
// a lower rung are earlier than those of the buckets at or past cur of a higher rung;
// every event in the ladder has a receive time <= topStart < the receive times in Top.
// Push walks the rungs from the top and puts an event in the first one whose current or a
// later bucket covers its time, and in Bottom when none does. Because a rung's bucket
// index is monotone in the receive time, these hold with exact float arithmetic, equal
// times always land together, and Pop follows event.Less exactly.
//
// Departures from the paper: a rung's geometry comes from the events it is built from
// (their least and greatest time, one bucket per event) rather than from the parent
// bucket's width, so a bucket whose events all share one receive time cannot be split:
// it is sorted into Bottom, which is how integer-time models with thousands of equal
// times are served (and why a zero bucket width cannot loop). Bottom is a sorted array
// with free space at both ends (Pop and insertions near either end are cheap); when
// Pushes have made it large it is turned back into a rung. Events at +Inf are kept in a
// list of their own, outside Top and the rungs, and sorted into Bottom only when nothing
// finite is left (the +Inf phase, during which finite Pushes go to Bottom too), so a
// model that parks LPs at +Inf does not stretch the rungs to infinity. An empty queue
// starts afresh.
//
// Nodes are kept in a table indexed by LP id and the buckets are lists threaded through
// it, so Remove is O(1) outside Bottom (a binary search in it) and nothing is allocated
// once the arrays have grown to their working size.
type Ladder struct {
	nodes []lnode

	// Top: unsorted list of the finite events with receive time > topStart.
	topHead  int32
	topN     int
	topStart event.Time

	// The events at +Inf: an unsorted list, or, in the +Inf phase, Bottom.
	infHead  int32
	infN     int
	infPhase bool

	rungs []rung // rungs[:nr] are in use; rungs[0] is the topmost
	nr    int

	// Bottom: bot[bh:] sorted by event.Less.
	bot    []bentry
	bh     int
	botIns int // events pushed into Bottom since it was last filled

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

// Len returns the number of events held.
func (l *Ladder) Len() int { return l.n }

// Push adds e.
func (l *Ladder) Push(e *event.Event) {
	x := int32(e.Receiver)
	nx := &l.nodes[x]
	nx.t, nx.ev = e.RecvTime, e
	l.n++
	t := e.RecvTime
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
		if k := r.index(t); k >= r.cur {
			nx.where, nx.bucket = int32(i), int32(k)
			l.link(nx, x, &r.head[k])
			r.count++
			return
		}
	}
	l.botInsert(bentry{t, e})
	nx.where = inBottom
	l.botIns++
	if l.botIns >= l.thres && 2*l.botIns >= len(l.bot)-l.bh && l.nr < l.maxRungs {
		l.botToRung()
	}
}

// Peek returns the least event, or nil.
func (l *Ladder) Peek() *event.Event {
	if l.bh == len(l.bot) && !l.refill() {
		return nil
	}
	return l.bot[l.bh].ev
}

// Pop removes and returns the least event, or nil.
func (l *Ladder) Pop() *event.Event {
	if l.bh == len(l.bot) && !l.refill() {
		return nil
	}
	ev := l.bot[l.bh].ev
	l.bot[l.bh] = bentry{}
	l.bh++
	if l.bh == len(l.bot) {
		l.bh, l.bot = 0, l.bot[:0]
	}
	l.nodes[ev.Receiver].where = inNone
	l.nodes[ev.Receiver].ev = nil
	l.n--
	if l.n == 0 {
		l.reset()
	}
	return ev
}

// reset starts the empty queue afresh: no rungs, no +Inf phase, and everything pushed
// goes to Top until it is spread over a new first rung.
func (l *Ladder) reset() {
	l.nr, l.infPhase, l.topStart = 0, false, math.Inf(-1)
	l.bh, l.bot, l.botIns = 0, l.bot[:0], 0
}

// Remove removes and returns the event held for lp, or nil.
func (l *Ladder) Remove(lp event.LPID) *event.Event {
	nx := &l.nodes[lp]
	ev := nx.ev
	switch w := nx.where; {
	case w == inNone:
		return nil
	case w == inTop:
		l.unlink(nx, &l.topHead)
		l.topN--
	case w == inInf:
		l.unlink(nx, &l.infHead)
		l.infN--
	case w == inBottom:
		l.botRemove(nx)
	default:
		r := &l.rungs[w]
		l.unlink(nx, &r.head[nx.bucket])
		r.count--
	}
	nx.where, nx.ev = inNone, nil
	l.n--
	if l.n == 0 {
		l.reset()
	}
	return ev
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
		t := nx.t
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

// newRung sets up rung i for n events with least time lo and greatest time hi, one
// bucket per event. It reports false, leaving the rung unused, when those times cannot
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
		k := r.index(nx.t)
		nx.where, nx.bucket = int32(i), int32(k)
		l.link(nx, x, &r.head[k])
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
		bot = append(bot, bentry{nx.t, nx.ev})
		x = nx.next
	}
	if len(bot) <= 12 {
		for i := 1; i < len(bot); i++ {
			y := bot[i]
			j := i
			for ; j > 0 && bless(&y, &bot[j-1]); j-- {
				bot[j] = bot[j-1]
			}
			bot[j] = y
		}
	} else {
		slices.SortFunc(bot, func(a, b bentry) int {
			switch {
			case a.t < b.t:
				return -1
			case a.t > b.t:
				return 1
			}
			return event.Compare(a.ev, b.ev)
		})
	}
	l.bot, l.bh, l.botIns = bot, 0, 0
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
				// Only +Inf events are left: sort them into Bottom, where the
				// +Inf and finite events pushed from now on go too.
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

// botRemove takes nx's event out of Bottom, moving the shorter side of the array.
func (l *Ladder) botRemove(nx *lnode) {
	y := bentry{nx.t, nx.ev}
	p := l.botSearch(&y)
	for l.bot[p].ev != nx.ev { // only if two events compare equal, which they should not
		p++
	}
	if p-l.bh < len(l.bot)-1-p {
		copy(l.bot[l.bh+1:p+1], l.bot[l.bh:p])
		l.bot[l.bh] = bentry{}
		l.bh++
	} else {
		copy(l.bot[p:], l.bot[p+1:])
		l.bot[len(l.bot)-1] = bentry{}
		l.bot = l.bot[:len(l.bot)-1]
	}
	if l.bh == len(l.bot) {
		l.bh, l.bot = 0, l.bot[:0]
	}
}

// botToRung turns a Bottom that Pushes have made large into a new lowest rung, if its
// times can be spread over buckets. In the +Inf phase the +Inf events go back to their
// list, which ends the phase.
func (l *Ladder) botToRung() {
	l.botIns = 0
	bot := l.bot[l.bh:]
	j := len(bot) // bot[:j] are the finite events
	for j > 0 && math.IsInf(bot[j-1].t, 1) {
		j--
	}
	if j == 0 {
		return
	}
	hi := bot[j-1].t
	if !l.newRung(l.nr, j, bot[0].t, hi) {
		return
	}
	i := l.nr
	l.nr++
	r := &l.rungs[i]
	for k := range bot {
		ev := bot[k].ev
		bot[k] = bentry{}
		x := int32(ev.Receiver)
		nx := &l.nodes[x]
		if k >= j {
			nx.where = inInf
			l.link(nx, x, &l.infHead)
			l.infN++
			continue
		}
		b := r.index(nx.t)
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
