package timewarp

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/rng"
	"github.com/warpedgo/warped/statemgr"
)

// process runs the handler of event ev on LP id: a safe event is committed at once,
// any other logged (processLogged).
//
// While processBatch commits a batch, its element w.batchAt of w.batch (ev handled by the LP's
// batch kernel, see offload.go) takes the place of the model's Handle; everything else is
// the same.
func (w *worker) process(x *lpState, id LPID, ev *event.Event) {
	d, q := w.d, w.q
	r := &d.sim.LPs[id]
	f := w.frame() // not core.Enter, which costs more instructions an event
	f.Now, f.Depth, f.Self, f.LP = ev.RecvTime, ev.Depth, id, &r.LPState
	if d.perSend {
		w.cause = event.KeyOf(ev) // lazy cancellation: the cause of the sends to come
		w.sendBytes = w.sendBytes[:0]
	}
	if event.Before(ev, &q.safeBound) {
		// Safe (reverse computation only: see updateSafe): committed as it is processed.
		// The LP's record is left as it was (its last and lastKey are of its last logged
		// event), which keeps its line clean; safeHigh stands for every safe event, as
		// nothing may arrive below it (drainInbound checks), and it is the latest safe
		// event, as they are taken in order (finalTime).
		w.unlogged = true
		if w.batch == nil { // see processLogged
			r.Model.Handle(&w.ctx, ev)
		} else {
			w.applyBatched(r, w.batch, w.batchAt)
		}
		if f.ScratchTouched { // a safe event never reverses: its words are not kept
			w.scratch, f.ScratchTouched = event.Words{}, false
		}
		q.safeHigh.Set(ev) // not KeyOf: see event.Key.Set
		w.stats.safe++
		if d.check {
			d.ck.base[id], d.ck.safeAt[id] = w.stateDigest(&d.ck.snap[id], r), x.last
		}
	} else {
		w.unlogged = false
		w.processLogged(x, r, ev)
	}
	if w.stats.processed++; w.stats.processed&q.gvtMask == 0 {
		w.roundDue()
	}
}

// processLogged runs the handler of event ev on LP record r (lpState x) and logs it.
func (w *worker) processLogged(x *lpState, r *core.LPRecord, ev *event.Event) {
	d, q := w.d, w.q
	d0 := r.RNG.D // the Weyl counter alone counts the draws (rng.Draws)
	outFrom := q.outs.Next()
	// The handler: the model's Handle, or, while processBatch commits a batch, the results
	// of the batch's element (see applyBatched). Written out, here and for a safe event in
	// process: as a function it is not inlined, and its call would cost instructions on
	// every event.
	if w.batch == nil {
		r.Model.Handle(&w.ctx, ev)
	} else {
		w.applyBatched(r, w.batch, w.batchAt)
	}
	// Field by field: a composite literal is built on the stack and then copied.
	h := q.hist.Push()
	h.Ev = *ev
	h.Prev, h.OutFrom, h.OutTo = x.last, outFrom, q.outs.Next()
	h.Saved, h.Dead = nil, false
	x.last = q.hist.Next() - 1
	if f := w.frame(); f.ScratchTouched { // kept for the event's Reverse (rollback)
		q.hist.KeepScratch(x.last, w.scratch)
		w.scratch, f.ScratchTouched = event.Words{}, false
	}
	x.lastKey.Set(ev) // not KeyOf: see event.Key.Set
	if d.reverse {
		h.Draws = rng.Draws(rng.XORWOW{D: d0}, rng.XORWOW{D: r.RNG.D})
	} else if x.count++; x.count >= d.period {
		x.count = 0
		h.Saved = q.save(r)
		x.anchor, x.anchorTime = x.last, ev.RecvTime
	}
	if d.check {
		*q.checks.Push(histMin) = w.eventDigest(&d.ck.snap[ev.Receiver], r)
		if d.reverse && w.batch == nil {
			w.checkTwice(x, r, ev, h.Prev)
		}
	}
}

// roundDue starts the GVT round that process found due (every gvtMask+1 events).
func (w *worker) roundDue() {
	w.shown.Store(w.stats.processed)
	w.d.startGVT()
}

// save returns a copy of the state of LP record r, reusing a discarded one.
func (q *queue) save(r *core.LPRecord) *statemgr.Saved {
	s := q.hist.NewSaved()
	s.Model = r.Model.Snapshot(s.Model)
	s.Core = coreOf(r)
	return s
}

// sink is a worker of the engine as the sink of its Context (initQueues
// sets it): its send is the engine's, without worker.Send's dispatch, a call that would
// pass a send's eleven words of arguments on once more, on every send.
type sink worker

// Send is the engine's sink (see worker.Send).
func (s *sink) Send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	w := (*worker)(s)
	if w.coasting {
		return
	}
	d := w.d
	if !w.initSend {
		if !w.unlogged {
			o := w.q.outs.Push() // field by field: see processLogged
			o.RecvTime, o.SendTime, o.Seq, o.Depth, o.Sender, o.Receiver = at, now, seq, depth, from, to
		}
		if to == from || int(d.owner[to]) == w.g && (d.dist == nil || d.dist.IsLocal(to)) {
			// The common case, into the worker's own calendar, without building the
			// event first (deliver's case for it). A send to self needs no lookup:
			// the owner table's line is cold more often than not, and on PHOLD three
			// sends in four go to self.
			w.tracker.Made(at)
			if p := &w.q.pend; p.other == nil { // the calendar, called directly (see pending)
				p.cal.PushSend(at, now, seq, depth, from, to, ws, payload)
			} else {
				p.other.PushSend(at, now, seq, depth, from, to, ws, payload)
			}
			return
		}
	}
	e := event.Event{RecvTime: at, SendTime: now, Seq: seq, Payload: payload, Words: ws,
		Depth: depth, Sender: from, Receiver: to}
	d.deliver(w, &e)
}

// logOut appends a send of the event being processed to the output log, as sink's send
// does (written out there: it is not inlined).
func (q *queue) logOut(at, now Time, seq uint64, depth uint32, from, to LPID) {
	o := q.outs.Push()
	o.RecvTime, o.SendTime, o.Seq, o.Depth, o.Sender, o.Receiver = at, now, seq, depth, from, to
}
