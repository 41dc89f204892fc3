package ltsf

import (
	"fmt"
	"strings"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
)

// Events is the schedule queue a time-warp worker takes from: the pending events of the
// queue's LPs, taken least first in the total order of package event. It is what the
// engine needs of a queue, and [eventset.Calendar] (the default) and [Schedule] (an LTSF
// queue of LPs, of any kind [New] builds, with each LP's events beside it) implement it.
//
// Pops must take exactly the least event held, whatever was pushed since: a rollback
// pushes events into the past of those already taken. Equal events (same key and sign)
// may come in either order.
//
// Cancellation stamps: every push is numbered (1, 2, ...; [Events.Stamp] is the number of
// the last), and [Events.PoppedStamp] tells which push the event just popped came from.
// The engine records, for an anti-message whose twin is pending, the stamp at its
// arrival, and drops the first event of the twin's key popped with a stamp at or below
// it: the twin, and not a re-send of the same key pushed after the anti-message came.
//
// An Events is not safe for concurrent use.
type Events interface {
	// Push adds a copy of e.
	Push(e *event.Event)
	// PushSend adds the positive event with the given fields (Push without an event
	// record built first, for a worker's sends).
	PushSend(recvTime, sendTime event.Time, seq uint64, depth, sender, receiver uint32, w event.Words, payload any)
	// Pop removes the least event and returns it, or nil when none is held. The event
	// stays valid until the next Pop or PopBefore, pushes in between included.
	Pop() *event.Event
	// PopBefore is Pop when the least event's receive time is below t; otherwise it
	// removes nothing and returns nil. Events at +Inf are never below t.
	PopBefore(t float64) *event.Event
	// Min returns the least receive time held, or false when none is held.
	Min() (event.Time, bool)
	// MinKey returns the key (event.KeyOf) of the least event held, or a key below it
	// at its receive time (the calendar's Key{RecvTime: +Inf} when every event held is at
	// +Inf), or false when none is held.
	MinKey() (event.Key, bool)
	// TakeBucket moves out some of the least events held, without sorting them: it
	// appends each to dst and its stamp to stamps. Every event it takes sorts before
	// every event it leaves, and every one is below until; it takes at most max. It may
	// take none (the caller then pops in order): it is an optional fast path for takers
	// that need no order among a batch.
	TakeBucket(dst []event.Event, stamps []uint64, max int, until float64) ([]event.Event, []uint64)
	// Len returns the number of events held.
	Len() int
	// Peak returns the largest number of events held at once.
	Peak() int
	// Stamp returns the stamp of the last push (0 before the first).
	Stamp() uint64
	// PoppedStamp returns the stamp of the event the last Pop or PopBefore returned.
	PoppedStamp() uint64
}

var (
	_ Events = (*eventset.Calendar)(nil)
	_ Events = (*Schedule)(nil)
)

// Calendar is the schedule queue type of eventset's calendar queue, the default.
const Calendar = "calendar"

// QueueTypes returns the schedule queue types NewEvents accepts, the default first.
func QueueTypes() []string { return append([]string{Calendar}, Kinds()...) }

// NewEvents returns an empty schedule queue of the named type for events of LPs in
// [0, numLPs): a calendar queue for "calendar", otherwise a [Schedule] over the LTSF
// queue of that kind (see [New]).
func NewEvents(typ string, numLPs int) (Events, error) {
	if typ == Calendar {
		return new(eventset.Calendar), nil
	}
	if !isKind(typ) {
		return nil, UnknownTypeError(typ)
	}
	q, err := New(typ, numLPs)
	if err != nil {
		return nil, err
	}
	return NewSchedule(q, numLPs), nil
}

// UnknownTypeError returns the error for an unknown schedule queue type: one line that
// lists the valid ones.
func UnknownTypeError(typ string) error {
	ts := QueueTypes()
	return fmt.Errorf("unknown queue type %q (want %s or %s)", typ, strings.Join(ts[:len(ts)-1], ", "), ts[len(ts)-1])
}

// isKind reports whether kind is one of Kinds.
func isKind(kind string) bool {
	for _, k := range Kinds() {
		if k == kind {
			return true
		}
	}
	return false
}
