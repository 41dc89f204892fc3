package eventset

// How a Calendar moves through virtual time: the window of buckets, opening and closing
// the current one, sliding and retuning, and taking a bucket's events at once.

import (
	"math"

	"github.com/warpedgo/warped/event"
)

// maxBuckets bounds the window's number of buckets.
const maxBuckets = 1 << 20

// bucketOf returns the absolute bucket of time t, or false when t is past the window. A
// time before the current bucket maps to it: an event pushed into the past joins the
// current bucket's late heap, whose least event Pop weighs against the sorted run's. The
// calendar must be tuned.
func (c *Calendar) bucketOf(t float64) (int64, bool) {
	f := (t - c.origin) * c.inv
	if !(f < float64(c.base+c.mask+1)) {
		return 0, false
	}
	if f < float64(c.cur) { // a time before the current bucket (or one by rounding)
		return c.cur, true
	}
	return int64(f), true
}

// advance closes the current bucket and opens the next non-empty one. The window must
// hold events.
func (c *Calendar) advance() {
	if c.next() {
		c.open()
	}
}

// next closes the current bucket and makes the next non-empty one current, and reports
// whether it is still to be opened: false when a tuning on the way opened the least
// bucket instead. The window must hold events.
func (c *Calendar) next() bool {
	c.closeCurrent()
	for {
		c.cur++
		if c.cur-c.base >= (c.mask+1)/2 {
			if c.drifted() {
				c.tune() // opens the least bucket
				return false
			}
			c.slide()
		}
		if c.ring[c.cur&c.mask].n > 0 {
			return true
		}
	}
}

// TakeBucket moves out the held events of the current bucket, or, when it has none left,
// of the next non-empty one, without sorting them: it appends each to dst, and its stamp
// (see PoppedStamp) to stamps. Every event it takes sorts before every event it leaves
// (the bucket's events are the least held, and its late events are taken with it), but
// in no particular order among themselves; a taker that needs no order (the workers of a
// shared queue handle a batch out of key order) saves the sort that Pop's opening of the
// bucket costs. It takes nothing, returning dst and stamps as they were, when the
// calendar is not tuned, when the events left are all in the far list, when the bucket
// holds more than max events, or when it reaches up to time until or past it (Pop then
// finds the least event as it does).
func (c *Calendar) TakeBucket(dst []event.Event, stamps []uint64, max int, until float64) ([]event.Event, []uint64) {
	if !c.tuned || c.n == 0 {
		return dst, stamps
	}
	c.found = nil
	if c.head == len(c.order) && len(c.late) == 0 && len(c.after) == 0 {
		if c.inRing == 0 {
			return dst, stamps
		}
		if c.next() {
			bk := &c.ring[c.cur&c.mask]
			if bk.n > max || c.bucketEnd() > until {
				c.open() // for Pop
				return dst, stamps
			}
			k := len(dst)
			for ch := c.at(bk.head); ch != nil; ch = c.at(ch.next) {
				for i := range ch.n {
					dst, stamps = c.takeRecord(dst, stamps, &ch.evs[i])
				}
			}
			// Open, with nothing left to take: the chunks keep the records until the
			// bucket closes, as an opened bucket's taken records.
			c.order, c.head, c.isOpen = c.order[:0], 0, true
			c.tookOut(len(dst) - k)
			return dst, stamps
		}
	}
	if n := len(c.order) - c.head + len(c.late) + len(c.after); n > max || c.bucketEnd() > until {
		return dst, stamps
	}
	k := len(dst)
	for _, s := range c.order[c.head:] {
		dst, stamps = c.takeRecord(dst, stamps, s.e)
	}
	for _, s := range c.late {
		dst, stamps = c.takeRecord(dst, stamps, s.e)
	}
	for _, s := range c.after {
		dst, stamps = c.takeRecord(dst, stamps, s.e)
	}
	c.order, c.head, c.late, c.after = c.order[:0], 0, c.late[:0], c.after[:0]
	c.tookOut(len(dst) - k)
	return dst, stamps
}

// bucketEnd returns the time at which the current bucket ends: its events, and its late
// ones, are before it.
func (c *Calendar) bucketEnd() float64 { return c.origin + float64(c.cur+1)*c.width }

// takeRecord appends the event of record r to dst and its stamp to stamps.
func (c *Calendar) takeRecord(dst []event.Event, stamps []uint64, r *record) ([]event.Event, []uint64) {
	dst = append(dst, event.Event{})
	c.load(&dst[len(dst)-1], r)
	return dst, append(stamps, r.stamp48())
}

// tookOut counts k events taken from the current bucket.
func (c *Calendar) tookOut(k int) {
	c.n -= k
	c.inRing -= k
	c.taken += k
}

// closeCurrent empties the current bucket, if it is open: all its events have been taken.
func (c *Calendar) closeCurrent() {
	if c.isOpen {
		c.release(&c.ring[c.cur&c.mask])
		c.isOpen = false
	}
	c.order, c.head, c.late, c.after = c.order[:0], 0, c.late[:0], c.after[:0]
}

// drifted reports whether the buckets passed since tuning held, on average, far more or
// far fewer events than the tuning aimed at, or the window has become too short and a
// quarter of the events wait in the far list. A retune costs O(pending events), so it is
// considered only once as many events have been taken since the last one: retuning stays
// amortized O(1) per event whatever the time distribution does.
func (c *Calendar) drifted() bool {
	if c.taken < c.n || c.cur < 64 {
		return false
	}
	if 4*c.far.n > c.n && len(c.ring) < maxBuckets {
		return true
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
	for ch := c.at(old.head); ch != nil; ch = c.at(ch.next) {
		for i := range ch.n {
			e := &ch.evs[i]
			if b, ok := c.bucketOf(e.recvTime); ok {
				c.add(&c.ring[b&c.mask], e)
				c.inRing++
			} else {
				c.add(&c.far, e)
			}
		}
	}
	c.release(&old)
}

// promote makes after, sorted, the current bucket's sorted run, once order is used up.
func (c *Calendar) promote() {
	c.order, c.after = c.after, c.order[:0]
	c.head = 0
	c.scratch = radixSlots(c.order, c.scratch)
}

// open sorts the current bucket's events into order.
func (c *Calendar) open() {
	for ch := c.at(c.ring[c.cur&c.mask].head); ch != nil; ch = c.at(ch.next) {
		for i := range ch.n {
			e := &ch.evs[i]
			appendSlot(&c.order, e)
		}
	}
	if len(c.order) < radixMin {
		sortSlots(c.order) // what sortBucket would do, without a call (most buckets)
	} else {
		c.scratch = sortBucket(c.order, c.scratch)
	}
	c.head = 0
	c.isOpen = true
}

// tune chooses the width and the window from all pending events and opens the bucket of
// the least one. It returns false, leaving all events in far and the calendar untuned,
// when every pending event is at +Inf. The current bucket must have no events left to take.
func (c *Calendar) tune() bool {
	c.closeCurrent()
	// Gather everything into far.
	for i := range c.ring {
		bk := &c.ring[i]
		for ch := c.at(bk.head); ch != nil; ch = c.at(ch.next) {
			for i := range ch.n {
				c.add(&c.far, &ch.evs[i])
			}
		}
		c.release(bk)
	}
	c.inRing = 0
	tmin, tmax, finite := math.Inf(1), math.Inf(-1), 0
	c.each(&c.far, func(e *record) {
		t := e.recvTime
		if t < tmin {
			tmin = t
		}
		if t > tmax && !math.IsInf(t, 1) {
			tmax = t
		}
	})
	if math.IsInf(tmin, 1) {
		// Everything waits in far, and the current bucket is closed: until the next
		// tuning, pushes must go to far too (one at or before the closed current bucket
		// would otherwise join it, where nothing would ever take or release it).
		c.tuned = false
		return false
	}
	sum := 0.0
	c.each(&c.far, func(e *record) {
		if t := e.recvTime; !math.IsInf(t, 1) {
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
	var m *record
	var mk event.Key
	c.each(&c.far, func(e *record) {
		if k := e.key(); m == nil || event.KeyLess(&k, &mk) {
			m, mk = e, k
		}
	})
	c.load(dst, m)
	c.outStamp = m.stamp48()
	c.remove(&c.far, m)
	c.n--
}

// remove deletes record r, already loaded or released, from bk by moving bk's last record
// into its place. No slot may point into bk (it must not be the open current bucket).
func (c *Calendar) remove(bk *bucket, r *record) {
	t := c.chunk(bk.tail)
	*r = t.evs[t.n-1]
	t.n--
	bk.n--
	if t.n == 0 { // unlink the empty tail
		var prev uint32
		for id := bk.head; id != bk.tail; id = c.chunk(id).next {
			prev = id
		}
		if prev == 0 {
			bk.head = 0
		} else {
			c.chunk(prev).next = 0
		}
		t.next, c.free = c.free, bk.tail
		bk.tail = prev
	}
}

// each calls f for every event of bk.
func (c *Calendar) each(bk *bucket, f func(e *record)) {
	for ch := c.at(bk.head); ch != nil; ch = c.at(ch.next) {
		for i := range ch.n {
			f(&ch.evs[i])
		}
	}
}
