package eventset

import (
	"math"
	"unsafe"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/prefetch"
)

// perBucket is the mean number of events a Calendar's bucket is tuned to hold: enough
// that sorting a bucket is cheap per event, few enough that it stays in cache.
const perBucket = 32

// Calendar holds pending events in the total order of package event: those of all LPs for
// the sequential dispatcher, which only takes the least event and pushes none before it,
// and each time-warp worker's pending events, which after a rollback may be pushed into the
// past of events already taken (Cancel removes one by key; the time-warp engine drops a
// cancelled event when it takes it instead, see Stamp). Pop always takes the least event
// held. It is a calendar queue (Brown,
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
// work at any width. An event pushed at or before the current bucket, into the past of
// events taken included, joins that bucket's late heap, whose least event Pop weighs
// against the sorted run's, so Pop still takes the least event held; one that sorts after
// the whole sorted run (a zero-delay event, in the common case) waits unsorted instead,
// and is sorted with the others like it once the run is used up. Nothing is allocated
// once the buckets have grown to their working size. Not safe for concurrent use.
type Calendar struct {
	width, inv float64 // bucket width and its inverse
	origin     float64 // start time of absolute bucket 0
	mask       int64   // len(ring)-1; len(ring) is a power of two
	ring       []bucket
	// base is the first absolute bucket of the window [base, base+len(ring)); absolute
	// bucket b lives in ring[b&mask] while it is in the window.
	base int64
	// cur is the current bucket (base <= cur), open whenever the calendar is tuned; order
	// holds its events' keys sorted, and order[head:] are those not yet taken. Events sent
	// into the current bucket after it was opened (those at earlier times included) wait in
	// the binary heap late instead, so that a burst of zero-delay events costs O(log n)
	// each rather than a shift of the sorted run each. The current bucket's chunks also
	// keep the records already taken or cancelled until it closes; order[head:], late and
	// after (below) point at exactly its held events.
	//
	// Events sent into the current bucket that sort after all of order (zero-delay sends
	// from the run's events, which share its time) wait unsorted in after, and become the
	// sorted run once order is used up (promote): sorting them then costs a fraction of
	// what the late heap's pushes and pops would (PCS sends many of its events this way,
	// thousands per bucket: docs/DECISIONS.md, "The sequential dispatcher keeps events by
	// value in a calendar queue"). Everything in after sorts after everything in order, so
	// while order has events Pop need not look at it.
	cur    int64
	order  []slot
	head   int
	late   []slot
	after  []slot
	isOpen bool
	// scratch is open's and promote's sorting buffer.
	scratch []slot
	// inRing counts the held events in the window, the current bucket's included.
	inRing int
	// far holds the events whose bucket is at or past the window's end, and all events
	// while the calendar is not tuned (before the first tuning, and after a tuning found
	// only events at +Inf).
	far bucket
	// n counts all events held; peak is its maximum.
	n, peak int
	tuned   bool
	// taken counts events taken since the last tuning, for the density check.
	taken int
	// tunes counts tunings.
	tunes int
	// out is the event that Pop returns, and outStamp its stamp.
	out      event.Event
	outStamp uint64
	// pushes counts the events pushed (see Stamp).
	pushes uint64
	// found is the slot of the least event that Min (or a PopBefore that took nothing)
	// found, and foundAt pushes then: until a push or a Cancel, Pop and PopBefore take it
	// without searching again (the time-warp worker calls Min before its first take of a
	// turn). Nil when unknown.
	found   *slot
	foundAt uint64
	// payloads holds the Payload values of stored events, by handle; freeHandles are its
	// unused entries.
	payloads    []any
	freeHandles []uint32
	// slabs hold the chunks, slabLen at a time; a chunk is named by a 1-based id (0 is
	// none) so that chunks link without pointers. free is the first of a stack of empty
	// chunks.
	slabs [][]chunk
	free  uint32
}

// Len returns the number of events held: pushed, and neither popped nor cancelled.
func (c *Calendar) Len() int { return c.n }

// Peak returns the largest number of events held at once.
func (c *Calendar) Peak() int { return c.peak }

// Push adds a copy of e.
func (c *Calendar) Push(e *event.Event) {
	r, late := c.slotFor(e.RecvTime)
	c.pushes++
	r.recvTime, r.sendTime, r.seq = e.RecvTime, e.SendTime, e.Seq
	r.words = e.Words
	r.depth, r.sender, r.receiver, r.anti = e.Depth, e.Sender, e.Receiver, e.Anti
	r.payload = c.payloadHandle(e.Payload)
	r.setStamp(c.pushes)
	if late {
		c.pushLate(r)
	}
}

// PushSend adds the positive event with the given fields: Push without building an event
// record first, for the sequential dispatcher's sends.
func (c *Calendar) PushSend(recvTime, sendTime event.Time, seq uint64, depth, sender, receiver uint32,
	w event.Words, payload any) {
	r, late := c.slotFor(recvTime)
	c.pushes++
	r.recvTime, r.sendTime, r.seq = recvTime, sendTime, seq
	r.words = w
	r.depth, r.sender, r.receiver, r.anti = depth, sender, receiver, false
	r.payload = c.payloadHandle(payload)
	r.setStamp(c.pushes)
	if late {
		c.pushLate(r)
	}
}

// slotFor counts a new event at time t and returns the record to fill for it, and whether
// it belongs to the current bucket (then the caller passes it to pushLate once filled).
func (c *Calendar) slotFor(t float64) (*record, bool) {
	c.n++
	if c.n > c.peak {
		c.peak = c.n
	}
	if !c.tuned {
		return c.reserve(&c.far), false
	}
	b, ok := c.bucketOf(t)
	if !ok {
		return c.reserve(&c.far), false
	}
	c.inRing++
	if b > c.cur {
		return c.reserve(&c.ring[b&c.mask]), false
	}
	return c.reserve(&c.ring[c.cur&c.mask]), true
}

// insertMax is the most events of the sorted run that pushLate moves up by one to insert
// an event among them.
const insertMax = 256

// pushLate adds a filled record of the current bucket to after, when it sorts after the
// whole sorted run, into the run, when it sorts before at most insertMax of the run's
// events left, else to the late heap.
func (c *Calendar) pushLate(r *record) {
	s := slotOf(r)
	n := len(c.order)
	if n > 0 && sless(&c.order[n-1], &s) {
		appendSlot(&c.after, r)
		return
	}
	// An event that sorts among the last few of the run (one handed over from another
	// worker or process, one put back by a rollback, one of a wave of zero-delay events
	// that sorts after most of the wave) goes in its place: the run's tail moves up by
	// one slot, a copy without comparisons. Moving that tail to after instead, to be
	// sorted again when the run is used up, sorted each event of a time-warp rank
	// receiving PHOLD's remote events five times over (docs/PERFORMANCE.md); sending
	// such events to the late heap sent an eighth of a PCS worker's events there,
	// thousands deep.
	if lo := max(c.head, n-insertMax); n > c.head && (lo == c.head || !sless(&s, &c.order[lo])) {
		// Binary search for the first slot of order[lo:n] that sorts after s (order[n-1]
		// does).
		pos, hi := lo, n-1
		for pos < hi {
			mid := int(uint(pos+hi) >> 1)
			if sless(&s, &c.order[mid]) {
				hi = mid
			} else {
				pos = mid + 1
			}
		}
		c.order = append(c.order, slot{})
		copy(c.order[pos+1:], c.order[pos:n])
		c.order[pos] = s
		return
	}
	c.late = append(c.late, s)
	upSlots(c.late, len(c.late)-1)
	if len(c.late) > 4*perBucket && len(c.late) > c.n/4 {
		// The tuning no longer fits: a width chosen when few events were held (a time-warp
		// worker whose queue had drained), or a rollback putting many events back, leaves
		// the calendar working as one binary heap. Retune with every held event; a quarter
		// of them must have come through here since, so this stays amortized O(1).
		c.retuneHeld()
	}
}

// retuneHeld retunes while the current bucket still holds events: they are copied to far
// first (its taken records stay behind and are released with it).
func (c *Calendar) retuneHeld() {
	for _, s := range c.order[c.head:] {
		c.add(&c.far, s.e)
	}
	for _, s := range c.late {
		c.add(&c.far, s.e)
	}
	for _, s := range c.after {
		c.add(&c.far, s.e)
	}
	if c.isOpen {
		c.release(&c.ring[c.cur&c.mask])
		c.isOpen = false
	}
	c.order, c.head, c.late, c.after = c.order[:0], 0, c.late[:0], c.after[:0]
	c.tune()
}

// Stamp returns the stamp of the event pushed last: pushes are numbered 1, 2, ... (in 48
// bits, which at a billion pushes a second last nine years), and PoppedStamp tells which
// push an event taken came from, so that a caller can tell apart two events of one key
// pushed before and after some moment.
func (c *Calendar) Stamp() uint64 { return c.pushes }

// PoppedStamp returns the stamp of the event the last Pop returned.
func (c *Calendar) PoppedStamp() uint64 { return c.outStamp }

// Pop removes the least event and returns it, or nil when none is held. The event stays
// valid, and in place, until the next Pop: pushing meanwhile does not move it.
func (c *Calendar) Pop() *event.Event {
	if e := c.PopBefore(math.Inf(1)); e != nil || c.n == 0 {
		return e
	}
	// Every held event is at +Inf (they wait in far, the calendar untuned).
	c.found = nil
	c.popInfinite(&c.out)
	return &c.out
}

// PopBefore is Pop when the least event's receive time is below t; otherwise it removes
// nothing and returns nil. Events at +Inf are never below t. A loop that ends at a time
// takes its events with it (one search for the least event where Min and Pop would each
// look at it), and so does the time-warp engine with its bound.
func (c *Calendar) PopBefore(t float64) *event.Event {
	s := c.found
	if s == nil || c.foundAt != c.pushes {
		s, _ = c.least() // none held: nil
	}
	if s == nil || !(s.t < t) {
		c.found, c.foundAt = s, c.pushes
		return nil
	}
	c.found = nil
	e := s.e
	if len(c.late) > 0 && s == &c.late[0] {
		popSlots(&c.late)
	} else {
		c.head++
	}
	c.n--
	c.inRing--
	c.taken++
	c.load(&c.out, e)
	c.outStamp = e.stamp48()
	return &c.out
}

// Min returns the least receive time among the held events, or false when none is held.
// It removes nothing, but it opens buckets (or tunes) exactly as Pop would to find the
// least event, so the next Pop returns an event at that time. It is for GVT reports and
// for the time-warp engine's check before it takes an event, and costs what Pop's search
// costs: nothing while the current bucket holds events, the opening (a sort) of the next
// non-empty bucket otherwise, and O(pending events) for a tuning, or when every event held
// is at +Inf.
func (c *Calendar) Min() (event.Time, bool) {
	s, ok := c.least()
	switch {
	case !ok:
		return 0, false
	case s == nil:
		return math.Inf(1), true // all held events are at +Inf
	}
	c.found, c.foundAt = s, c.pushes
	return s.t, true
}

// MinKey is Min with the whole key (event.KeyOf) of the least held event: the event the
// next Pop returns. When every held event is at +Inf it returns Key{RecvTime: +Inf}, which
// sorts at or below each of theirs.
func (c *Calendar) MinKey() (event.Key, bool) {
	s, ok := c.least()
	switch {
	case !ok:
		return event.Key{}, false
	case s == nil:
		return event.Key{RecvTime: math.Inf(1)}, true
	}
	return s.e.key(), true
}

// least finds the least held event as Pop would, opening buckets or tuning on the way, and
// returns its slot; or nil and true when every held event is at +Inf (in far, the calendar
// untuned), or false when none is held.
func (c *Calendar) least() (*slot, bool) {
	for {
		if c.head == len(c.order) && len(c.after) > 0 {
			c.promote()
		}
		inOrder, inLate := c.head < len(c.order), len(c.late) > 0
		switch {
		case inOrder && (!inLate || !sless(&c.late[0], &c.order[c.head])):
			return &c.order[c.head], true
		case inLate:
			return &c.late[0], true
		case c.n == 0:
			return nil, false
		}
		if !c.tuned || c.inRing == 0 {
			if !c.tune() {
				return nil, true
			}
			continue
		}
		c.advance()
	}
}

// Upcoming returns the receiver of the held event k places after the one the next Pop
// returns (k = 0: that one), for prefetching the records its handling will touch; ok is
// false when finding it would take a search (it is not in the current bucket's sorted run,
// or a late event may precede it). It reads the event's record, which PrefetchUpcoming
// can ask for an event earlier.
func (c *Calendar) Upcoming(k int) (receiver event.LPID, ok bool) {
	if i := c.head + k; i < len(c.order) && len(c.late) == 0 {
		return c.order[i].e.receiver, true
	}
	return 0, false
}

// PrefetchUpcoming asks the processor to load the record of the held event k places after
// the one the next Pop returns, when it is in the current bucket's sorted run (see
// Upcoming). It changes nothing.
func (c *Calendar) PrefetchUpcoming(k int) {
	if i := c.head + k; i < len(c.order) {
		r := c.order[i].e
		prefetch.Line(unsafe.Pointer(r))
		prefetch.Line(unsafe.Pointer(&r.anti))
	}
}

// PrefetchBucket asks the processor to load the record of the bucket that a push of an
// event at time t would go to: the first of PrefetchPush's two steps. It changes nothing.
func (c *Calendar) PrefetchBucket(t float64) {
	if bk := c.pushBucket(t); bk != nil {
		prefetch.Line(unsafe.Pointer(bk))
	}
}

// pushBucket returns the bucket of the window that a push of an event at time t would go
// to, or nil for the far list.
func (c *Calendar) pushBucket(t float64) *bucket {
	if !c.tuned {
		return nil
	}
	b, ok := c.bucketOf(t)
	if !ok {
		return nil
	}
	return &c.ring[b&c.mask]
}

// PrefetchPush asks the processor to load what a push of an event at time t would write:
// the record it would fill and its chunk's count. It reads the bucket's record, which
// PrefetchBucket can ask for a few pushes earlier; pushes in between may change the slot,
// so it is a hint (a caller that knows its next pushes' times asks for them ahead). It
// changes nothing.
func (c *Calendar) PrefetchPush(t float64) {
	if r, ch := c.nextRecord(t); r != nil {
		prefetch.Line(unsafe.Pointer(r))
		prefetch.Line(unsafe.Pointer(&ch.n))
	}
}

// nextRecord returns the record that a push of an event at time t would fill and its
// chunk, or nil when the push would take a new chunk or go to the far list.
func (c *Calendar) nextRecord(t float64) (*record, *chunk) {
	bk := c.pushBucket(t)
	if bk == nil {
		return nil, nil
	}
	// All chunks of a bucket but its tail are full (reserve, remove), so the next record
	// is the tail's slot bk.n%chunkLen, unless that is 0 (a new chunk).
	i := bk.n % chunkLen
	if i == 0 || bk.tail == 0 {
		return nil, nil
	}
	ch := c.chunk(bk.tail)
	return &ch.evs[i], ch
}

// Cancel removes the held event (pushed, and neither popped nor cancelled) whose Receiver
// is receiver and whose key (event.KeyOf) is k, and reports whether there was one. If
// several held events match, one of them is removed. Cancel scans, but only where the
// event must be: the far list, the one bucket of the window that its receive time maps
// to, or the current bucket's untaken slots. That is cheap for buckets of a few dozen
// events, not for the thousands a bucket of a model with integer times holds; the
// time-warp engine therefore drops a cancelled event when it takes it instead, telling it
// from a re-send of its key by the stamps (Stamp, PoppedStamp). An event taken by Pop is
// no longer held, so Cancel never matches it, even while its record waits in the current
// bucket for the bucket to close; a later push of an event with its key is held anew.
func (c *Calendar) Cancel(receiver event.LPID, k event.Key) bool {
	c.found = nil
	if !c.tuned {
		return c.cancelIn(&c.far, receiver, &k)
	}
	b, ok := c.bucketOf(k.RecvTime)
	switch {
	case !ok:
		return c.cancelIn(&c.far, receiver, &k)
	case b > c.cur:
		if c.cancelIn(&c.ring[b&c.mask], receiver, &k) {
			c.inRing--
			return true
		}
		return false
	}
	// The current bucket (earlier times map there too): its held events are those that
	// order[head:] and late point at. Their records must not move, so the cancelled one
	// stays in the bucket's chunks, unreferenced, like the events taken, until it closes.
	for i := c.head; i < len(c.order); i++ {
		if s := &c.order[i]; s.t == k.RecvTime && s.e.is(receiver, &k) {
			c.drop(s.e)
			c.order = append(c.order[:i], c.order[i+1:]...)
			c.n--
			c.inRing--
			return true
		}
	}
	for i := range c.late {
		if s := &c.late[i]; s.t == k.RecvTime && s.e.is(receiver, &k) {
			c.drop(s.e)
			removeSlot(&c.late, i)
			c.n--
			c.inRing--
			return true
		}
	}
	for i := range c.after {
		if s := &c.after[i]; s.t == k.RecvTime && s.e.is(receiver, &k) {
			c.drop(s.e)
			last := len(c.after) - 1
			c.after[i] = c.after[last] // after is unsorted
			c.after = c.after[:last]
			c.n--
			c.inRing--
			return true
		}
	}
	return false
}

// cancelIn removes from bk, which must not be the open current bucket, a held event of
// the given receiver and key, and reports whether it found one. It keeps n, not inRing.
func (c *Calendar) cancelIn(bk *bucket, receiver event.LPID, k *event.Key) bool {
	for ch := c.at(bk.head); ch != nil; ch = c.at(ch.next) {
		for i := range ch.n {
			if r := &ch.evs[i]; r.is(receiver, k) {
				c.drop(r)
				c.remove(bk, r)
				c.n--
				return true
			}
		}
	}
	return false
}

// is reports whether r is the event of the given receiver and key.
func (r *record) is(receiver event.LPID, k *event.Key) bool {
	return r.receiver == receiver && r.key() == *k
}

// drop releases r's payload handle, for an event removed without being loaded.
func (c *Calendar) drop(r *record) {
	if r.payload != 0 {
		h := r.payload - 1
		c.payloads[h] = nil
		c.freeHandles = append(c.freeHandles, h)
		r.payload = 0
	}
}
