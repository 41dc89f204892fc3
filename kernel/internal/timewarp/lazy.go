package timewarp

import (
	"github.com/warpedgo/warped/event"
)

// holdRef locates an output that a rollback holds (lazy cancellation): the cause's entry
// and the output's absolute index in the output log.
type holdRef struct {
	entry, out int64
}

// lazySink is a worker of the engine as the sink of its Context with lazy
// cancellation (initQueues sets it; with CheckRollbacks, worker.Send calls it): it
// keeps each logged send's contents beside its output log entry, and, when the sender holds
// outputs, sends the anti-messages of those the send clashes with and suppresses a send
// identical to a held one, before sink's send.
type lazySink worker

// Send is the lazy cancellation's sink (see lazySink).
func (s *lazySink) Send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	w := (*worker)(s)
	if !w.coasting && !w.initSend {
		if !w.unlogged {
			od := w.q.outs.PushContents()
			od.Words, od.Payload = ws, payload
		}
		if w.d.lazies[from].Len() > 0 && w.lazyHandled(to, from, depth, seq, at, now, ws, payload) {
			if !w.unlogged { // logged as sink's send would have
				w.q.logOut(at, now, seq, depth, from, to)
			}
			return
		}
	}
	(*sink)(w).Send(to, from, depth, seq, at, now, ws, payload)
}

// lazyHandled takes lazy cancellation's decision on a send by an LP that holds outputs: it
// sends the anti-messages of the held outputs the send clashes with, and reports whether
// the send is taken care of: suppressed, or waiting behind those anti-messages.
func (w *worker) lazyHandled(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) bool {
	d := w.d
	e := event.Event{RecvTime: at, SendTime: now, Seq: seq, Payload: payload, Words: ws,
		Depth: depth, Sender: from, Receiver: to}
	suppress, clashed := w.regenerated(&e)
	if suppress {
		return true
	}
	if clashed && int(d.owner[to]) == w.g && (d.dist == nil || d.dist.IsLocal(to)) {
		// Behind the anti-messages of the held outputs it clashes with, which wait in
		// antis: pushed now, it would take an earlier calendar stamp than their
		// cancellations (see cancelled), and could be dropped in their place.
		w.tracker.Made(at)
		w.q.pushAnti(&e)
		return true
	}
	return false
}

// regenerated is lazy cancellation's decision on event e, sent while processing the event
// with key w.cause by an LP that holds outputs: it sends the anti-messages of the held
// outputs that e clashes with (clashed), and reports whether e is to be suppressed (an
// identical held output of the same cause is still live at the receiver; see
// [outputmgr.Lazy.Regenerated]).
func (w *worker) regenerated(e *event.Event) (suppress, clashed bool) {
	w.cancels, suppress = w.d.lazies[e.Sender].Regenerated(w.cause, e, w.cancels[:0])
	clashed = len(w.cancels) > 0
	w.sendAntis(w.cancels)
	if suppress {
		w.stats.suppressed++
	}
	return suppress, clashed
}

// holdOutputs is lazy cancellation's part of a rollback of LP id to key k: it holds the
// outputs of the undone log entries u (newest first; but the dropped twin's, when dropTwin,
// whose anti-messages went out) in the LP's holder, in cause order, and lists the LP as
// holding. Each held output's cause is then pending in the worker's calendar; expireHeld
// cancels it once that is no longer so and it was not regenerated.
func (w *worker) holdOutputs(id LPID, k event.Key, u []int64, dropTwin bool) {
	d, q := w.d, w.q
	refs := q.holdRefs[:0]
	for n := len(u) - 1; n >= 0; n-- {
		h := q.hist.At(u[n])
		if dropTwin && event.KeyOf(&h.Ev) == k {
			continue
		}
		for o := h.OutFrom; o < h.OutTo; o++ {
			refs = append(refs, holdRef{entry: u[n], out: o})
		}
	}
	q.holdRefs = refs
	var ev event.Event
	d.lazies[id].Hold(len(refs), func(j int) (event.Key, *event.Event) {
		ref := refs[j]
		ev = q.outs.Event(ref.out)
		return event.KeyOf(&q.hist.At(ref.entry).Ev), &ev
	})
	if !d.listed[id] {
		d.listed[id] = true
		q.holding = append(q.holding, id)
	}
	if event.KeyLess(&k, &q.heldMin) {
		q.heldMin = k
	}
}

// settleHeld expires the held outputs whose causes are no longer pending (expireHeld) and
// handles the anti-messages that this sends to the worker's own LPs, until none is left.
func (w *worker) settleHeld() {
	for {
		n := len(w.q.antis) // entries of a group's list that wait for their LPs (handleAntis)
		w.expireHeld()
		if len(w.q.antis) == n {
			return
		}
		w.handleAntis()
	}
}

// expireHeld cancels the held outputs (lazy cancellation) whose cause sorts below every
// pending event of the worker, or all of them when nothing is pending: the worker takes its
// events in key order, so such a cause was processed again without regenerating them, or
// was cancelled, and will not be processed before a rollback puts it back. Every other held
// output has its cause pending, at or below its receive time, so the worker's GVT and safety
// reports cover its anti-message; the worker calls expireHeld before it reports.
func (w *worker) expireHeld() {
	d, q := w.d, w.q
	if len(q.holding) == 0 {
		return
	}
	mk, ok := q.pend.MinKey()
	if ok && !event.KeyLess(&q.heldMin, &mk) {
		return
	}
	q.heldMin = maxKey()
	kept := q.holding[:0]
	for _, id := range q.holding {
		lz := d.lazies[id]
		if w.grp && d.lps[id].held() {
			// Another worker of the group may be handling the cause: its commit decides
			// (expired now, a regenerated send with other contents could overtake the
			// anti-message, which waits for its receiver: see senderWaits).
			kept = append(kept, id)
			if c, live := lz.Oldest(); live && event.KeyLess(&c, &q.heldMin) {
				q.heldMin = c
			}
			continue
		}
		if ok {
			q.antiBuf = lz.Expire(mk, q.antiBuf[:0])
		} else {
			q.antiBuf = lz.Drain(q.antiBuf[:0])
		}
		w.sendAntis(q.antiBuf)
		if c, live := lz.Oldest(); live {
			kept = append(kept, id)
			if event.KeyLess(&c, &q.heldMin) {
				q.heldMin = c
			}
		} else {
			d.listed[id] = false
		}
	}
	clear(q.holding[len(kept):])
	q.holding = kept
}
