package timewarp

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/ltsf"
)

// pending is a schedule queue's pending events, of the type TimeWarpConfig.QueueType names:
// the calendar (the default), held by value and called directly, or another [ltsf.Events]
// (other, nil for the calendar). Each method tests other and calls one or the other: the
// test is a load and a branch that always goes one way, where calling the calendar through
// the interface would stop the compiler from seeing that pointers handed to it do not
// escape, and would put every event's push and pop behind an indirect call. The methods,
// each holding an interface call, are beyond the inliner's budget, so the two calls every
// event makes (stretch's PopBefore, sink's PushSend) write the test out instead, and
// pending has no method for them. The prefetch hints ([core.PrefetchNext],
// [eventset.Calendar.PrefetchUpcoming] and the like) are asked of cal directly, whatever
// the type: with another type cal stays empty, and they find nothing to ask for.
type pending struct {
	cal   eventset.Calendar
	other ltsf.Events
	tmp   event.Event // other's Push argument, so that Push's does not escape
}

// use makes the queue of type typ, for events of LPs in [0, numLPs), the one p holds.
func (p *pending) use(typ string, numLPs int) error {
	if typ == ltsf.Calendar {
		return nil
	}
	q, err := ltsf.NewEvents(typ, numLPs)
	p.other = q
	return err
}

// Push adds a copy of e.
func (p *pending) Push(e *event.Event) {
	if p.other != nil {
		p.tmp = *e
		p.other.Push(&p.tmp)
		return
	}
	p.cal.Push(e)
}

// Pop removes the least event and returns it (valid until the next pop), or nil.
func (p *pending) Pop() *event.Event {
	if p.other != nil {
		return p.other.Pop()
	}
	return p.cal.Pop()
}

// Min returns the least receive time held, or false when none is held.
func (p *pending) Min() (event.Time, bool) {
	if p.other != nil {
		return p.other.Min()
	}
	return p.cal.Min()
}

// MinKey returns the key of the least event held (see [ltsf.Events]), or false.
func (p *pending) MinKey() (event.Key, bool) {
	if p.other != nil {
		return p.other.MinKey()
	}
	return p.cal.MinKey()
}

// TakeBucket moves out some of the least events, unsorted (see [ltsf.Events]).
func (p *pending) TakeBucket(dst []event.Event, stamps []uint64, most int, until float64) ([]event.Event, []uint64) {
	if p.other != nil {
		return p.other.TakeBucket(dst, stamps, most, until)
	}
	return p.cal.TakeBucket(dst, stamps, most, until)
}

// Len returns the number of events held.
func (p *pending) Len() int {
	if p.other != nil {
		return p.other.Len()
	}
	return p.cal.Len()
}

// Peak returns the largest number of events held at once.
func (p *pending) Peak() int {
	if p.other != nil {
		return p.other.Peak()
	}
	return p.cal.Peak()
}

// Stamp returns the stamp of the last push (see cancelled).
func (p *pending) Stamp() uint64 {
	if p.other != nil {
		return p.other.Stamp()
	}
	return p.cal.Stamp()
}

// PoppedStamp returns the stamp of the event the last pop returned.
func (p *pending) PoppedStamp() uint64 {
	if p.other != nil {
		return p.other.PoppedStamp()
	}
	return p.cal.PoppedStamp()
}
