package ltsf

import "github.com/warpedgo/warped/event"

// Schedule is an [Events] built as WARPED2 builds its schedule queues: each LP's pending
// events in a set of its own (a binary min-heap of events by value), and an LTSF queue of
// LPs ([Queue]: heap, splay tree, ladder queue or parallel heap) holding, for each LP
// with pending events, the key of its least one. Pop takes the queue's least LP, pops
// that LP's least event and puts the LP back with its next one; a push that becomes its
// LP's least event moves the LP's entry. So the LTSF queue decides the cost of the
// ordering across LPs, which is what the kinds are compared on, and the per-LP sets stay
// small (an LP's own pending events).
//
// It never takes a bucket (TakeBucket takes nothing): a group of workers that shares it
// takes its events in order. Not safe for concurrent use.
type Schedule struct {
	lps      Queue       // one entry per LP with pending events: the key of its least
	evs      [][]stamped // each LP's pending events: a binary min-heap (stampedLess)
	n, peak  int
	pushes   uint64
	out      event.Event // the event the last pop returned
	outStamp uint64
}

// stamped is a pending event and the number of the push that added it.
type stamped struct {
	ev    event.Event
	stamp uint64
}

// stampedLess orders pending events by the total order, and equal events by push.
func stampedLess(a, b *stamped) bool {
	if c := event.Compare(&a.ev, &b.ev); c != 0 {
		return c < 0
	}
	return a.stamp < b.stamp
}

// NewSchedule returns an empty Schedule that orders its LPs with q, an empty queue for LP
// ids in [0, numLPs).
func NewSchedule(q Queue, numLPs int) *Schedule {
	return &Schedule{lps: q, evs: make([][]stamped, numLPs)}
}

// Push adds a copy of e.
func (s *Schedule) Push(e *event.Event) { s.push(e) }

// PushSend adds the positive event with the given fields.
func (s *Schedule) PushSend(recvTime, sendTime event.Time, seq uint64, depth, sender, receiver uint32,
	w event.Words, payload any) {
	e := event.Event{RecvTime: recvTime, SendTime: sendTime, Seq: seq, Payload: payload, Words: w,
		Depth: depth, Sender: sender, Receiver: receiver}
	s.push(&e)
}

// push adds a copy of e to its LP's heap and moves the LP's entry when e becomes its least.
func (s *Schedule) push(e *event.Event) {
	lp := e.Receiver
	h := s.evs[lp]
	s.pushes++
	s.n++
	s.peak = max(s.peak, s.n)
	h = append(h, stamped{ev: *e, stamp: s.pushes})
	i := siftUp(h, len(h)-1)
	s.evs[lp] = h
	if i != 0 {
		return
	}
	if len(h) > 1 {
		s.lps.Remove(lp)
	}
	s.lps.Push(event.KeyOf(e), lp)
}

// Pop removes the least event and returns it, or nil when none is held.
func (s *Schedule) Pop() *event.Event { return s.pop(0, false) }

// PopBefore is Pop when the least event's receive time is below t.
func (s *Schedule) PopBefore(t float64) *event.Event { return s.pop(t, true) }

// pop removes and returns the least event, when bounded only if its receive time is
// below t.
func (s *Schedule) pop(t float64, bounded bool) *event.Event {
	k, lp, ok := s.lps.Min()
	if !ok || bounded && !(k.RecvTime < t) {
		return nil
	}
	s.lps.Pop()
	h := s.evs[lp]
	s.out, s.outStamp = h[0].ev, h[0].stamp
	last := len(h) - 1
	h[0] = h[last]
	h[last] = stamped{} // drop the payload reference
	h = h[:last]
	s.evs[lp] = h
	s.n--
	if last > 0 {
		siftDown(h, 0)
		s.lps.Push(event.KeyOf(&h[0].ev), lp)
	}
	return &s.out
}

// Min returns the least receive time held.
func (s *Schedule) Min() (event.Time, bool) {
	k, _, ok := s.lps.Min()
	return k.RecvTime, ok
}

// MinKey returns the key of the least event held.
func (s *Schedule) MinKey() (event.Key, bool) {
	k, _, ok := s.lps.Min()
	return k, ok
}

// TakeBucket takes nothing: see Schedule.
func (s *Schedule) TakeBucket(dst []event.Event, stamps []uint64, _ int, _ float64) ([]event.Event, []uint64) {
	return dst, stamps
}

// Len returns the number of events held.
func (s *Schedule) Len() int { return s.n }

// Peak returns the largest number of events held at once.
func (s *Schedule) Peak() int { return s.peak }

// Stamp returns the stamp of the last push.
func (s *Schedule) Stamp() uint64 { return s.pushes }

// PoppedStamp returns the stamp of the event the last pop returned.
func (s *Schedule) PoppedStamp() uint64 { return s.outStamp }

// siftUp sifts h[i] up the binary heap h and returns where it ends.
func siftUp(h []stamped, i int) int {
	x := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !stampedLess(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
	return i
}

// siftDown sifts h[i] down the binary heap h.
func siftDown(h []stamped, i int) {
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && stampedLess(&h[c+1], &h[c]) {
			c++
		}
		if !stampedLess(&h[c], &x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
