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
		w.q.outbox[o] = append(w.q.outbox[o], *e)
		w.q.boxed = true
		if event.Before(e, &w.q.keyMin) { // see horizon
			w.q.keyMin.Set(e)
		}
		w.q.lowerSafe(e, d.sim.Lookahead)
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
		if committed(&in[i], &q.fossilKey) || event.Before(&in[i], &q.safeHigh) {
			// The horizon or the safe bound was not a lower bound: a protocol bug, which
			// the tests would catch.
			panic(fmt.Sprintf("kernel: event %+v arrived below the commit horizon %+v or a safe event %+v",
				in[i], q.fossilKey, q.safeHigh))
		}
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
