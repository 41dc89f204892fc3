package timewarp

import (
	"fmt"

	"github.com/warpedgo/warped/event"
)

// deliver makes event e (copied) visible to its receiver's worker: into the calendar
// before the run, or for the sender's own LPs (anti-messages into the list handled before
// the next event); into the outbox for another worker's LPs (the manager, which has no
// outbox, hands over at once); to the manager for another process's LPs.
func (d *timeWarpDispatcher) deliver(w *worker, e *event.Event) {
	w.tracker.Made(e.RecvTime)
	if d.dist != nil && !d.dist.IsLocal(e.Receiver) {
		pe := w.pool.Get()
		*pe = *e
		d.dist.Post(pe)
		return
	}
	// The receiver's worker by index: reading its record would miss the cache, as its
	// owner writes the line on every event.
	o := int(d.owner[e.Receiver])
	switch {
	case w.q == nil: // the manager
		d.queues[o].handOver(e)
	case o == w.g && w.initSend:
		w.q.pend.Push(e)
	case w.initSend:
		d.queues[o].handOver(e) // initEach runs the queues' Inits in parallel
	case o == w.g:
		if e.Anti {
			w.q.pushAnti(e)
		} else {
			w.q.pend.Push(e)
		}
	default:
		if event.Before(e, &w.q.keyMin) { // see horizon
			w.q.keyMin.Set(e)
		}
		w.q.lowerSafe(e, d.sim.Lookahead)
		if r := w.beside(o); r != nil && !e.Anti {
			r.takeDirect(e)
			return
		}
		w.q.outbox[o] = append(w.q.outbox[o], *e)
		w.q.boxed = true
	}
}

// beside returns the worker of queue o when the host that runs w runs it too, both take
// hand-overs directly (direct), and no anti-message of w's can be on its way to it, else
// nil. The host runs one of its workers at a time, so w may put an event straight into
// that worker's calendar, as if it had been handed over and drained at once; it saves the
// outbox, the inbound's lock and two copies (a third of what 16 workers on one thread cost
// over one: docs/PERFORMANCE.md). The host's own list of the workers it runs says which
// (host.mine, read and written only on the host's goroutine, which runs w).
//
// An anti-message goes through the outbox and the inbound, and an event must not overtake
// the anti-message of an earlier one with its key (a rollback re-sends an event with the
// same key and perhaps another payload; the receiver tells them apart by which came
// before the anti-message: dropCancelled). So an event goes straight in only while w's
// outbox to o is empty and o's inbound holds nothing.
func (w *worker) beside(o int) *worker {
	if !w.direct || !w.mates[o] || len(w.q.outbox[o]) > 0 {
		return nil
	}
	r := w.d.workers[o]
	if r.q.inN.Load() > 0 {
		return nil
	}
	return r
}

// takeDirect takes positive event e from a worker of its own host (beside) into its
// calendar, as drainInbound would, and keeps the host's note of its least event.
// Anti-messages keep to the outboxes: each then reaches its receiver after its event.
func (w *worker) takeDirect(e *event.Event) {
	q := w.q
	q.checkArrival(e)
	w.setIdle(false) // before the event is in: see drainInbound
	q.pend.Push(e)
	if w.leastKnown && e.RecvTime < w.least {
		w.least = e.RecvTime
	}
}

// checkArrival panics when e arrives below the commit horizon or a safe event processed:
// the horizon or the safe bound was not a lower bound, a protocol bug that the tests
// would catch.
func (q *queue) checkArrival(e *event.Event) {
	if committed(e, &q.fossilKey) || event.Before(e, &q.safeHigh) {
		panic(fmt.Sprintf("kernel: event %+v arrived below the commit horizon %+v or a safe event %+v",
			*e, q.fossilKey, q.safeHigh))
	}
}

// handOver appends e to the worker's inbound.
func (q *queue) handOver(e *event.Event) {
	q.inMu.Lock()
	q.in = append(q.in, *e)
	q.inN.Store(int32(len(q.in)))
	q.inMu.Unlock()
	q.changes.Add(1) // after inN (see queue.changes)
	q.wakeQueue()
}

// flushOutboxes hands every buffered event over to its worker.
func (w *worker) flushOutboxes() {
	q := w.q
	for i, box := range q.outbox {
		if len(box) == 0 {
			continue
		}
		o := w.d.queues[i]
		o.inMu.Lock()
		o.in = append(o.in, box...)
		o.inN.Store(int32(len(o.in)))
		o.inMu.Unlock()
		o.changes.Add(1)
		o.wakeQueue()
		clear(box)
		q.outbox[i] = box[:0]
	}
	q.boxed = false
}

// drainInbound takes the events handed over to the worker: positive events into the
// calendar, anti-messages handled at once, in arrival order. The worker becomes active
// under the inbound lock when there is anything, so that a manager checking for passivity
// cannot miss work in the hands of a worker it counted as passive.
func (w *worker) drainInbound() {
	q := w.q
	q.inMu.Lock()
	in := q.in
	if len(in) > 0 {
		// Active before inN reads 0: the manager's passivity check reads inN without the
		// lock, then the wake count (see termination.Workers); in the other order it could
		// see neither the events nor the wake, and end the run while they are in hand.
		w.setIdle(false)
	}
	q.in = q.spare[:0]
	q.inN.Store(0)
	q.inMu.Unlock()
	for i := range in {
		q.checkArrival(&in[i])
		switch {
		case w.grp && (in[i].Anti || len(q.antis) > 0):
			// Through the anti-message list, in order: its LP may be held by another
			// worker of the group (see handleAntis).
			q.pushAnti(&in[i])
		case in[i].Anti:
			w.handleAnti(&in[i])
		default:
			q.pend.Push(&in[i])
		}
	}
	clear(in)
	q.spare = in[:0]
}
