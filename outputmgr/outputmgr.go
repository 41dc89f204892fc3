// Package outputmgr keeps what a time-warp worker needs to cancel the events its logical
// processes (LPs) sent: the output log ([Log]) of the sends of the events processed and not
// yet committed, whose anti-messages a rollback sends (aggressive cancellation), and, with
// lazy cancellation, each LP's held outputs ([Lazy]), which a rollback holds instead and
// re-execution either regenerates (the send is suppressed) or lets expire (the
// anti-message goes out). Its one job is the bookkeeping of sent events; which events to
// cancel, and when, the kernel decides from its history log (package statemgr), whose
// entries delimit their sends in the output log by absolute index.
//
// # The output log
//
// For each send of an event it processes (not for the sends of coast forward, made the
// first time already, nor for those of the LPs' Init or of safe events, which nothing
// rolls back), the kernel pushes a [Sent] (Log.Push) and, with lazy cancellation, its
// [Contents] (Log.PushContents). A rollback reads the sends of the undone events by index:
// their anti-messages ([Sent.Anti]), or, to hold them, the events with their contents
// ([Log.Event]). Their entries stay in the log, unreachable, until fossil collection drops
// the log's head up to the sends of the last event it drops (Log.DropTo), or compaction
// keeps only the sends of the events still logged (Log.BeginCompact, Keep, EndCompact).
// The log is a ring buffer that doubles when full, so that pushing allocates nothing in
// steady state. Events returned for cancellation (by [Lazy.Expire], [Lazy.Regenerated] and
// [Lazy.Drain]) are copies of the positive events as they were sent; the kernel turns
// each into its anti-message (Anti = true, every other field unchanged) and sends it to
// the event's receiver.
//
// # Lazy cancellation: the worker protocol
//
// With lazy cancellation a rollback does not cancel at once: the rolled-back outputs are
// held in the LP's [Lazy] l, and re-execution decides. A send made while processing an
// event c that is identical to a held output of the same cause c (see [Lazy.Regenerated])
// is suppressed: the original message is still valid at its receiver. Held outputs whose
// cause has been processed again without regenerating them, or whose cause will not be
// processed again, are cancelled. Step by step:
//
//  1. Rollback to key k: l.Hold the sends of the undone events (but those of an
//     anti-message's twin, which the kernel cancels at once), in cause order, instead of
//     sending their anti-messages. Hold merges them with the outputs l still holds from an
//     earlier rollback: those stay held, neither lost nor cancelled twice. Then restore the
//     state and coast forward as usual.
//  2. Process an event with key c (first time or re-execution alike): for each event e the
//     handler sends, always log it, then let cancels, suppress be the results of
//     l.Regenerated(c, &e, cancels[:0]); send the anti-messages in cancels first, then
//     send e unless suppress. A suppressed send is logged like any other: its entry
//     stands for the held original, which is identical. cancels holds at most one event:
//     a held output with e's key and receiver that differs from e, which must be cancelled
//     before e is sent or the receiver could not tell the two apart. For an event
//     processed for the first time Regenerated returns false and, unless such a clash
//     occurs, no cancels.
//  3. Each time the LP's earliest pending event is determined (after processing an event,
//     after a rollback, after an anti-message annihilated a pending event: wherever the
//     kernel reschedules the LP), let n be its key and cancel l.Expire(n, ...): the held
//     outputs whose cause is below n, whose cause therefore was processed again without
//     regenerating them or was cancelled. When the LP has no pending event, cancel
//     l.Drain(...) instead. This also covers the held outputs of the event just processed.
//     It is not optional: held outputs hold GVT back (step 4), so they must not wait for
//     the LP to process an event that an optimism window keeps it from processing. Calling
//     l.Expire(c, ...) again just before processing c is harmless.
//  4. GVT: while l holds outputs, the LP's contribution to the GVT estimate is the least
//     of its earliest pending event's receive time and l.MinRecvTime(): the anti-messages
//     of held outputs, not sent yet, will arrive at those times. (Right after step 3 every
//     held cause is at or after the earliest pending event, so the second term only
//     matters when the pending events changed since, for example when another worker
//     annihilated the LP's earliest pending event.) Held outputs are never fossil
//     collected.
//  5. At the end of the simulation nothing may be held (step 3 drains an LP that has no
//     pending event).
//
// Expiring early is never wrong, only less lazy: an expired output is cancelled at once,
// and a later identical send is then sent afresh (its anti-message went out first).
// Regenerated and Expire cost one length check when nothing is held, so the kernel need
// not tell a re-execution from a first execution.
package outputmgr

import (
	"fmt"
	"math"
	"reflect"

	"github.com/warpedgo/warped/event"
)

// held is one output held by Lazy.
type held struct {
	cause event.Key
	ev    event.Event
	live  bool // false once consumed, cancelled or expired
}

// match identifies a message at its receiver: the event's key and its receiver.
type match struct {
	key      event.Key
	receiver event.LPID
}

func matchOf(e *event.Event) match { return match{event.KeyOf(e), e.Receiver} }

// Lazy holds, after a rollback, the outputs of the rolled-back events instead of cancelling
// them at once (lazy cancellation); see the package documentation for the protocol. A
// regenerated send identical to a held output of the same cause is suppressed; held outputs
// whose cause is processed again without regenerating them are cancelled. Not safe for
// concurrent use.
type Lazy struct {
	// held is sorted by cause (send order within a cause); held[head:] may be live.
	held []held
	head int
	live int
	// index locates the live held outputs by key and receiver.
	index   map[match]int
	scratch []held
}

// NewLazy returns an empty holder.
func NewLazy() *Lazy { return &Lazy{index: make(map[match]int)} }

// Len returns the number of held outputs.
func (l *Lazy) Len() int { return l.live }

// Hold is lazy cancellation's rollback: it holds, without cancelling them, the n outputs
// that at(0), ..., at(n-1) return (each the cause, and a copy of the positive event as it
// was sent), which must come in cause order, merged in cause order with the outputs l
// already holds. The events are copied. It panics if two held outputs have the same key
// and receiver (two live messages the receiver could not tell apart: a kernel bug).
func (l *Lazy) Hold(n int, at func(j int) (cause event.Key, ev *event.Event)) {
	if n > 0 {
		l.hold(n, at)
	}
}

// hold merges the n outputs of at, in cause order, into the held outputs.
func (l *Lazy) hold(n int, at func(j int) (event.Key, *event.Event)) {
	out := l.scratch[:0]
	old := l.held[l.head:]
	for j := range n {
		cause, ev := at(j)
		for len(old) > 0 && (!old[0].live || !event.KeyLess(&cause, &old[0].cause)) {
			if old[0].live {
				out = append(out, old[0])
			}
			old = old[1:]
		}
		out = append(out, held{cause: cause, ev: *ev, live: true})
	}
	for _, h := range old {
		if h.live {
			out = append(out, h)
		}
	}
	clear(l.held)
	l.held, l.scratch = out, l.held[:0]
	l.head = 0
	l.live = len(out)
	clear(l.index)
	for j := range out {
		m := matchOf(&out[j].ev)
		if _, dup := l.index[m]; dup {
			panic(fmt.Sprintf("outputmgr: two live outputs with key %+v for receiver %d", m.key, m.receiver))
		}
		l.index[m] = j
	}
}

// Regenerated is called for each event e sent while processing the event with key cause
// (after logging it). It reports whether e is to be suppressed: a held
// output of the same cause is identical to e (same receiver, receive time, send time,
// sequence number, depth, Words, and Payload equal by == for basic types, by
// reflect.DeepEqual otherwise). That held output is consumed: it is no longer held, and
// the log entry of e stands for it. Otherwise e is to be sent; if a held output
// has e's key and receiver but differs from e (in content or cause), it is removed and
// appended to cancel, and the kernel must send its anti-message before sending e. It
// returns cancel.
func (l *Lazy) Regenerated(cause event.Key, e *event.Event, cancel []event.Event) ([]event.Event, bool) {
	if l.live == 0 {
		return cancel, false
	}
	m := matchOf(e)
	j, ok := l.index[m]
	if !ok {
		return cancel, false
	}
	h := &l.held[j]
	same := h.cause == cause && identical(&h.ev, e)
	if !same {
		cancel = append(cancel, h.ev)
	}
	l.drop(h, m)
	return cancel, same
}

// drop removes a live held output.
func (l *Lazy) drop(h *held, m match) {
	delete(l.index, m)
	h.live = false
	h.ev.Payload = nil
	l.live--
}

// identical reports whether a and b are the same message.
func identical(a, b *event.Event) bool {
	return a.RecvTime == b.RecvTime && a.SendTime == b.SendTime && a.Seq == b.Seq &&
		a.Words == b.Words && a.Depth == b.Depth && a.Sender == b.Sender &&
		a.Receiver == b.Receiver && a.Anti == b.Anti && payloadEqual(a.Payload, b.Payload)
}

// payloadEqual compares payloads: == for basic types, reflect.DeepEqual otherwise.
func payloadEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int:
		y, ok := b.(int)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case uint64:
		y, ok := b.(uint64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

// expire removes the held outputs from the front while past(cause), appending the live
// ones to dst.
func (l *Lazy) expire(dst []event.Event, past func(c *event.Key) bool) []event.Event {
	for l.head < len(l.held) && past(&l.held[l.head].cause) {
		h := &l.held[l.head]
		if h.live {
			dst = append(dst, h.ev)
			l.drop(h, matchOf(&h.ev))
		}
		*h = held{}
		l.head++
	}
	if l.head == len(l.held) {
		l.held, l.head = l.held[:0], 0
	}
	return dst
}

// Expire removes the held outputs whose cause key is less than upTo and appends them to
// dst for cancellation, in cause order, returning dst. upTo is the key of the LP's earliest
// pending event: the causes before it were processed again without regenerating these
// outputs, or were cancelled.
func (l *Lazy) Expire(upTo event.Key, dst []event.Event) []event.Event {
	if l.live == 0 {
		return dst
	}
	return l.expire(dst, func(c *event.Key) bool { return event.KeyLess(c, &upTo) })
}

// Drain removes every held output and appends it to dst for cancellation, in cause order,
// returning dst.
func (l *Lazy) Drain(dst []event.Event) []event.Event {
	if l.live == 0 {
		return dst
	}
	return l.expire(dst, func(*event.Key) bool { return true })
}

// Oldest returns the cause of the oldest held output, and false when none is held.
func (l *Lazy) Oldest() (event.Key, bool) {
	if l.live == 0 {
		return event.Key{}, false
	}
	for l.head < len(l.held) && !l.held[l.head].live {
		l.held[l.head] = held{}
		l.head++
	}
	return l.held[l.head].cause, true
}

// MinRecvTime returns the least receive time of the held outputs, or +Inf when none is
// held. The anti-messages of held outputs may still be sent, so while outputs are held the
// LP's contribution to GVT must not exceed it. It scans the held outputs.
func (l *Lazy) MinRecvTime() event.Time {
	m := math.Inf(1)
	if l.live == 0 {
		return m
	}
	for i := l.head; i < len(l.held); i++ {
		if h := &l.held[i]; h.live && h.ev.RecvTime < m {
			m = h.ev.RecvTime
		}
	}
	return m
}
