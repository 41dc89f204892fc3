package eventset

import (
	"math"

	"github.com/warpedgo/warped/event"
)

// perBucket is the mean number of events a Calendar's bucket is tuned to hold: enough
// that sorting a bucket is cheap per event, few enough that it stays in cache.
const perBucket = 32

// Calendar holds the pending events of all LPs for the sequential dispatcher, which only
// ever takes the least event and never removes any other. It is a calendar queue (Brown,
// 1988) whose buckets hold the events themselves, by value: a window of nb buckets, each
// width units of virtual time wide, covers the near future, and the far future waits
// unsorted in one list. When a bucket becomes current its events are sorted by key, and
// taking events then streams through that bucket in order. Sending appends to a bucket.
// So neither operation chases pointers through scattered event records, which is what
// bounds a pointer-based queue once the pending events outgrow the caches.
//
// The width is tuned from the pending events (so that a bucket holds about perBucket
// events), the window is slid forward, pulling far events in, every half window, and
// everything is retuned when the window runs dry or the event density has drifted far
// from the tuning. Events of equal time always share a bucket, so integer-time models
// work at any width. Nothing is allocated once the buckets have grown to their working
// size. Not safe for concurrent use.
type Calendar struct {
	width, inv float64 // bucket width and its inverse
	origin     float64 // start time of absolute bucket 0
	mask       int64   // len(ring)-1; len(ring) is a power of two
	ring       []bucket
	// base is the first absolute bucket of the window [base, base+len(ring)); absolute
	// bucket b lives in ring[b&mask] while it is in the window.
	base int64
	// cur is the current bucket (base <= cur); order holds its events' keys sorted, and
	// order[head:] are those not yet taken. Events sent into the current bucket after it
	// was opened wait in the binary heap late instead, so that a burst of zero-delay events
	// costs O(log n) each rather than a shift of the sorted run each.
	cur    int64
	order  []slot
	head   int
	late   []slot
	isOpen bool
	// inRing counts the events in the window, the current bucket's included.
	inRing int
	// far holds the events whose bucket is at or past the window's end, and all events
	// before the first tuning.
	far bucket
	// n counts all events held; peak is its maximum.
	n, peak int
	tuned   bool
	// taken counts events taken since the last tuning, for the density check.
	taken int
	// tunes counts tunings.
	tunes int
	// inf holds the last event taken from the +Inf events.
	inf event.Event
	// free is a stack of empty chunks.
	free *chunk
}

// maxBuckets bounds the window's number of buckets.
const maxBuckets = 1 << 20

// chunkLen is the number of events per chunk of a bucket.
const chunkLen = 32

// chunk is a fixed block of events; a bucket is a list of chunks. Events never move once
// stored, so the sorted slots can point at them, and a bucket grows without copying.
// Chunks of emptied buckets are reused, so memory follows the pending events.
type chunk struct {
	evs  [chunkLen]event.Event
	n    int
	next *chunk
	// refs is set when an event with a Payload was stored, so that release clears the
	// chunk (dropping the references for the garbage collector) only then.
	refs bool
}

// bucket is a list of chunks, filled from head to tail.
type bucket struct {
	head, tail *chunk
	n          int
}

// slot is one event of the current bucket: its key and where it is stored.
type slot struct {
	k event.Key
	e *event.Event
}

// add stores a copy of e in bk and returns where.
func (c *Calendar) add(bk *bucket, e *event.Event) *event.Event {
	t := bk.tail
	if t == nil || t.n == chunkLen {
		nc := c.free
		if nc != nil {
			c.free = nc.next
			nc.next = nil
		} else {
			nc = new(chunk)
		}
		if t == nil {
			bk.head = nc
		} else {
			t.next = nc
		}
		bk.tail, t = nc, nc
	}
	p := &t.evs[t.n]
	*p = *e
	t.n++
	t.refs = t.refs || e.Payload != nil
	bk.n++
	return p
}

// release returns bk's chunks, cleared, to the free stack and leaves bk empty.
func (c *Calendar) release(bk *bucket) {
	for ch := bk.head; ch != nil; {
		next := ch.next
		if ch.refs {
			clear(ch.evs[:ch.n])
			ch.refs = false
		}
		ch.n = 0
		ch.next = c.free
		c.free = ch
		ch = next
	}
	*bk = bucket{}
}

// Len returns the number of events held.
func (c *Calendar) Len() int { return c.n }

// Peak returns the largest number of events held at once.
func (c *Calendar) Peak() int { return c.peak }

// Push adds a copy of e.
func (c *Calendar) Push(e *event.Event) {
	c.n++
	if c.n > c.peak {
		c.peak = c.n
	}
	if !c.tuned {
		c.add(&c.far, e)
		return
	}
	b, ok := c.bucketOf(e.RecvTime)
	if !ok {
		c.add(&c.far, e)
		return
	}
	c.inRing++
	if b > c.cur {
		c.add(&c.ring[b&c.mask], e)
		return
	}
	// The current bucket: into the late heap.
	p := c.add(&c.ring[c.cur&c.mask], e)
	c.late = append(c.late, slot{event.KeyOf(e), p})
	upSlots(c.late, len(c.late)-1)
}

// Pop removes the least event and returns it, or nil when none is held. The event stays
// valid, and in place, until the next Pop: pushing meanwhile does not move it.
func (c *Calendar) Pop() *event.Event {
	for {
		inOrder, inLate := c.head < len(c.order), len(c.late) > 0
		if inOrder || inLate {
			var e *event.Event
			if inLate && (!inOrder || event.KeyLess(&c.late[0].k, &c.order[c.head].k)) {
				e = c.late[0].e
				popSlots(&c.late)
			} else {
				e = c.order[c.head].e
				c.head++
			}
			c.n--
			c.inRing--
			c.taken++
			return e
		}
		if c.n == 0 {
			return nil
		}
		if !c.tuned || c.inRing == 0 {
			if !c.tune() {
				c.popInfinite(&c.inf)
				return &c.inf
			}
			continue
		}
		c.advance()
	}
}

// bucketOf returns the absolute bucket of time t, or false when t is past the window.
func (c *Calendar) bucketOf(t float64) (int64, bool) {
	f := (t - c.origin) * c.inv
	if !(f < float64(c.base+c.mask+1)) {
		return 0, false
	}
	if f < float64(c.cur) { // only by rounding: every pushed time is >= the current one
		return c.cur, true
	}
	return int64(f), true
}

// advance closes the current bucket and opens the next non-empty one. The window must
// hold events.
func (c *Calendar) advance() {
	c.closeCurrent()
	for {
		c.cur++
		if c.cur-c.base >= (c.mask+1)/2 {
			if c.drifted() {
				c.tune() // opens the least bucket
				return
			}
			c.slide()
		}
		if c.ring[c.cur&c.mask].n > 0 {
			c.open()
			return
		}
	}
}

// closeCurrent empties the current bucket, if it is open: all its events have been taken.
func (c *Calendar) closeCurrent() {
	if c.isOpen {
		c.release(&c.ring[c.cur&c.mask])
		c.isOpen = false
	}
	c.order, c.head, c.late = c.order[:0], 0, c.late[:0]
}

// drifted reports whether the buckets passed since tuning held, on average, far more or
// far fewer events than the tuning aimed at, or the window has become too short and a
// quarter of the events wait in the far list.
func (c *Calendar) drifted() bool {
	if 4*c.far.n > c.n && len(c.ring) < maxBuckets {
		return true
	}
	if c.cur < 64 {
		return false
	}
	per := float64(c.taken) / float64(c.cur)
	return per > 8*perBucket || per < perBucket/8
}

// slide moves the window to start at the current bucket and pulls in the far events that
// now fall inside it.
func (c *Calendar) slide() {
	c.base = c.cur
	old := c.far
	c.far = bucket{}
	for ch := old.head; ch != nil; ch = ch.next {
		for i := range ch.n {
			e := &ch.evs[i]
			if b, ok := c.bucketOf(e.RecvTime); ok {
				c.add(&c.ring[b&c.mask], e)
				c.inRing++
			} else {
				c.add(&c.far, e)
			}
		}
	}
	c.release(&old)
}

// open sorts the current bucket's events into order.
func (c *Calendar) open() {
	for ch := c.ring[c.cur&c.mask].head; ch != nil; ch = ch.next {
		for i := range ch.n {
			e := &ch.evs[i]
			c.order = append(c.order, slot{event.KeyOf(e), e})
		}
	}
	sortSlots(c.order)
	c.head = 0
	c.isOpen = true
}

// tune chooses the width and the window from all pending events and opens the bucket of
// the least one. It returns false when every pending event is at +Inf. The current bucket
// must have no events left to take.
func (c *Calendar) tune() bool {
	c.closeCurrent()
	// Gather everything into far.
	for i := range c.ring {
		bk := &c.ring[i]
		for ch := bk.head; ch != nil; ch = ch.next {
			for i := range ch.n {
				c.add(&c.far, &ch.evs[i])
			}
		}
		c.release(bk)
	}
	c.inRing = 0
	tmin, tmax, finite := math.Inf(1), math.Inf(-1), 0
	c.far.each(func(e *event.Event) {
		t := e.RecvTime
		if t < tmin {
			tmin = t
		}
		if t > tmax && !math.IsInf(t, 1) {
			tmax = t
		}
	})
	if math.IsInf(tmin, 1) {
		return false
	}
	sum := 0.0
	c.far.each(func(e *event.Event) {
		if t := e.RecvTime; !math.IsInf(t, 1) {
			sum += t - tmin
			finite++
		}
	})
	// About perBucket events per bucket if they spread evenly over twice their mean
	// distance from the front, and a window that reaches the latest of them (within
	// limits: the far list takes the rest).
	mean := sum / float64(finite)
	width := 2 * mean * perBucket / float64(finite)
	if !(width > 0) || math.IsInf(width, 0) {
		width = 1 // all at one time: any width will do
	}
	nb := int64(64)
	for float64(nb)*width <= 1.25*(tmax-tmin) && nb < maxBuckets {
		nb <<= 1
	}
	if int64(len(c.ring)) != nb {
		c.ring = make([]bucket, nb)
	}
	c.width, c.inv, c.origin, c.mask = width, 1/width, tmin, nb-1
	c.base, c.cur = 0, 0
	c.tuned = true
	c.tunes++
	c.taken = 0
	c.slide()
	c.open()
	return true
}

// popInfinite removes the least of the events at +Inf (all that remain, in far) into dst,
// moving the last event of far into its place.
func (c *Calendar) popInfinite(dst *event.Event) {
	var m *event.Event
	c.far.each(func(e *event.Event) {
		if m == nil || event.Less(e, m) {
			m = e
		}
	})
	*dst = *m
	t := c.far.tail
	*m = t.evs[t.n-1]
	t.evs[t.n-1] = event.Event{}
	t.n--
	c.far.n--
	c.n--
	if t.n == 0 { // unlink the empty tail
		var prev *chunk
		for ch := c.far.head; ch != t; ch = ch.next {
			prev = ch
		}
		if prev == nil {
			c.far.head = nil
		} else {
			prev.next = nil
		}
		c.far.tail = prev
		t.next, c.free = c.free, t
	}
}

// each calls f for every event of bk.
func (bk *bucket) each(f func(e *event.Event)) {
	for ch := bk.head; ch != nil; ch = ch.next {
		for i := range ch.n {
			f(&ch.evs[i])
		}
	}
}
