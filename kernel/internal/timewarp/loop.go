package timewarp

import (
	"math"
	"unsafe"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/prefetch"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// housekeep does what a worker of the engine does before it takes events: it
// takes in what other workers handed over, handles anti-messages, settles held outputs,
// reports to a running GVT round, collects fossils below the commit horizon and compacts a
// full log. It returns GVT. (A worker of a group calls it under its group's lock.)
func (w *worker) housekeep() Time {
	d, q := w.d, w.q
	// Before anything it bumps is looked at: a change after this read is seen by the
	// stretch that follows.
	w.seenChanges = q.changes.Load()
	if q.inN.Load() > 0 || len(q.antis) > 0 {
		w.mark(phaseComm)
		w.takeInbound()
		w.mark(phaseProcess)
	}
	if d.dist != nil && d.dist.Safe() != nil {
		w.remoteSafe() // remotesafe.go
	}
	if w.extra && d.lazy {
		w.settleHeld()
	}
	if r := d.gvt.Round(); w.tracker.Due(r) {
		w.mark(phaseGVT)
		w.report(r)
		w.mark(phaseProcess)
	}
	g := d.gvt.GVT()
	if d.hz == nil {
		if g > q.fossilKey.RecvTime {
			w.mark(phaseGVT)
			w.collectFossils(event.Key{RecvTime: g}) // below every event at g
			w.mark(phaseProcess)
		}
	} else if r := d.hz.round.Load(); r != q.horizonSeen && q.handedRound[r&1] <= r {
		// Every round publishes a horizon, which is at least its GVT; GVT may come from
		// a round whose horizon is not out yet. Round r+2 rewrites round r's slot, and it
		// ends only with this worker's report: once the worker has reported in it, the
		// slot may be being rewritten (round r+1's publication still under way), so it
		// waits for the next publication, which bumps its queue's changes.
		w.mark(phaseGVT)
		q.horizonSeen = r
		hk := d.hz.keys[r&1]
		if hk.RecvTime < g {
			hk = event.Key{RecvTime: g}
		}
		if event.KeyLess(&q.fossilKey, &hk) {
			w.collectFossils(hk)
		}
		if d.reverse && !d.hooks { // with hooks no event is safe (commit.go)
			q.updateSafe(d.hz, r, w.id, d.sim.Lookahead)
		}
		w.mark(phaseProcess)
	}
	if r := d.gvt.Rounds(); r != q.roundsSeen {
		q.followRounds(d.logMax)
		q.roundsSeen, q.ahead = r, 0
		next, ok := q.pend.Min()
		if !ok {
			next = math.Inf(1)
		}
		w.adjustWindow(g, next)
	}
	if q.hist.Len() >= d.logMax {
		every := max(q.compactEvery, d.logMax/compactShare)
		if n := w.stats.processed; n-q.compactedAt >= uint64(every) {
			w.mark(phaseGVT)
			q.compactedAt = n
			before := q.hist.Len()
			w.compact(q.fossilKey)
			if before-q.hist.Len() < before/compactShare {
				q.compactEvery = min(2*every, d.logMax)
			} else {
				q.compactEvery = 0
			}
			w.mark(phaseProcess)
		}
	}
	return g
}

// takeInbound drains the worker's inbound into its calendar, then handles the
// anti-messages that came with it and any its own rollbacks left: in that order, since an
// anti-message may cancel an event that arrived in the same hand-over. Every step that
// needs the worker to hold all that was handed to it (housekeep, a GVT report, a safe
// bound across processes) takes it this way.
func (w *worker) takeInbound() {
	q := w.q
	if q.inN.Load() > 0 {
		w.drainInbound()
	}
	if len(q.antis) > 0 {
		w.handleAntis()
	}
}

// turnState is how a worker's turn over its queue (run) ended.
type turnState uint8

const (
	turnDone   turnState = iota // it took as many events as it was given
	turnIdle                    // nothing below the end (or the optimism window) to take
	turnAhead                   // events below the end, but beyond the ahead bound or window
	turnFailed                  // the run failed (or ended)
)

// run is a worker's turn over its own queue: up to n events, taken in stretches (each
// after housekeep) as long as it may take them. It returns the number taken and how the
// turn ended. A worker that may not take an event is marked idle (goIdle) and in the idle
// phase when run returns.
func (w *worker) run(n int) (int, turnState) {
	d, q := w.d, w.q
	for i := 0; i < n; {
		if d.done.Load() {
			return i, turnFailed
		}
		g := w.housekeep()
		t, ok := q.pend.Min()
		lim := d.limit()
		b := w.takeBound(g, lim)
		if !ok || !(t < b) {
			return i, w.stopTurn(t, ok, lim)
		}
		w.setIdle(false)
		if o := w.off; w.extra && o != nil {
			o.tick(w)
			if size := o.size(d); size > 0 {
				if !w.processBatch(size, g) {
					return i, turnFailed
				}
				if q.boxed {
					w.flushOutboxes()
				}
				i++
				continue
			}
		}
		k, ok := w.stretch(min(n-i, w.stretchMax()), b)
		if i += k; !ok {
			return i, turnFailed
		}
	}
	return n, turnDone
}

// stretch takes up to n events (at least the first, which the caller found below b) as
// long as they are below b and nothing the worker's housekeep looks at changed (its
// queue's changes: GVT rounds, horizons, the end, its inbound). Within n
// (stretchMax) neither the ahead bound nor the log's bound is reached, and b stands for the
// rest of pastLimit's test, so each event is checked by one comparison (PopBefore's). A
// straggler ends the stretch: its rollback may send anti-messages to the worker's own LPs,
// which housekeep handles before the next event (nothing else adds to antis meanwhile). It
// returns the number taken, and false when the run failed.
//
// Each event taken is processed, or, when it is a straggler, its LP is rolled back and the
// event put back; one that its anti-message cancelled is dropped. Before that, the worker
// asks the processor for what the next one will touch, so that the misses overlap this
// one's handling: the coming events' calendar records, LP records and model state, with
// the lpState record of the LP whose records it asks for ([core.PrefetchNext]), and the
// history log slot the next entry goes to, unless the event before was safe (the next one
// most likely is too, and is not logged). Both steps are written out in the loop rather
// than called: each call costs the loop its spilled registers (docs/PERFORMANCE.md, "Never
// waits, second part").
func (w *worker) stretch(n int, b Time) (int, bool) {
	d, q := w.d, w.q
	// q.ahead counts the events taken (stretchMax keeps it from reaching q.aheadMax).
	start := q.ahead
	for stop := start + n; q.ahead < stop; {
		// The calendar's own copy, valid until the next Pop: copying it out right after Pop
		// wrote it field by field would stall on store forwarding.
		var ev *event.Event
		if p := &q.pend; p.other == nil { // the calendar, called directly (see pending)
			ev = p.cal.PopBefore(b)
		} else {
			ev = p.other.PopBefore(b)
		}
		if ev == nil {
			return q.ahead - start, true
		}
		q.ahead++
		core.PrefetchNext(&q.pend.cal, d.sim.LPs, d.lps) // cal: see pending
		// The flag first: after a safe event the slot is not looked for at all.
		if !w.unlogged {
			if h := q.hist.Spare(); h != nil { // two lines (see statemgr.Entry)
				prefetch.Lines(unsafe.Pointer(h), unsafe.Pointer(&h.Saved))
			}
		}
		id := ev.Receiver
		x := &d.lps[id]
		switch {
		case x.firstCancel() != 0 && w.dropped(x, ev):
		case event.Before(ev, &x.lastKey):
			w.straggler(x, id, ev)
			return q.ahead - start, true
		default:
			w.process(x, id, ev)
		}
		if q.boxed && q.ahead%flushEvents == 0 {
			w.mark(phaseComm)
			w.flushOutboxes()
			w.mark(phaseProcess)
		}
		if w.frame().Err != nil {
			d.fail(w.frame().Err)
			return q.ahead - start, false
		}
		if q.changes.Load() != w.seenChanges {
			return q.ahead - start, true
		}
	}
	return n, true
}

// followRounds sets the ahead bound from the events taken in the round that just ended
// (q.ahead), unless the bound cut that round short: then it says how long the round was
// held up, not the worker's pace (see aheadFirst).
func (q *queue) followRounds(logMax int) {
	if q.ahead < q.aheadMax {
		q.aheadMean += (q.ahead - q.aheadMean) / 8
		q.aheadMax = min(max(aheadRounds*q.aheadMean, aheadLeast), logMax)
	}
}

// stretchMax is the number of events a stretch may take without looking at more than its
// bound: none beyond the first where the worker housekeeps before every event
// (perEvent) or is at its ahead bound; otherwise as many as keep it below the ahead bound
// and its log below its bound (an event adds at most one entry), and no more than
// w.longest.
func (w *worker) stretchMax() int {
	q := w.q
	if w.perEvent || w.aheadFull() {
		return 1
	}
	return min(q.aheadMax-q.ahead, w.d.logMax-q.hist.Len(), w.longest)
}

// takeBound returns the time below which the worker may take an event now, with GVT g
// and limit lim (d.limit): below lim (the end time, or the optimism window's limit), and
// up to GVT while the worker is ahead (aheadFull), else up to GVT plus its window.
func (w *worker) takeBound(g, lim Time) Time {
	b := g // at the ahead bound: up to GVT
	if !w.aheadFull() {
		b += w.q.th.win
	}
	return math.Min(lim, math.Nextafter(b, math.Inf(1)))
}

// stopTurn ends a turn in which the worker may not take its least pending event (at time
// t; ok false: it holds none) below the limit lim: it goes idle, and the turn ends idle or
// ahead (it holds events below the limit, beyond GVT's bound).
func (w *worker) stopTurn(t Time, ok bool, lim Time) turnState {
	w.mark(phaseIdle)
	w.goIdle(ok && t < w.d.end)
	if ok && t < lim {
		w.q.th.held = true // see adjustWindow
		return turnAhead
	}
	return turnIdle
}

// pastLimit reports whether an event at time t is past what the worker may take now, with
// GVT g and limit lim: at or past takeBound.
func (w *worker) pastLimit(t, lim, g Time) bool {
	return t >= w.takeBound(g, lim)
}

// aheadFull reports whether the worker has taken q.aheadMax events since the last GVT round
// ended, or its history log is full: it then takes no event past GVT.
func (w *worker) aheadFull() bool {
	return w.q.ahead >= w.q.aheadMax || w.q.hist.Len() >= w.d.logMax
}

// goIdle hands over the buffered events and marks the worker idle; work says whether it
// holds events below the end time (beyond the optimism window).
func (w *worker) goIdle(work bool) {
	if w.q.boxed {
		w.flushOutboxes()
	}
	w.q.work.Store(work)
	w.setIdle(true)
}

// dropped reports whether ev, an event of LP record x just taken, was cancelled by its
// anti-message (x has cancelled events pending), and drops it if so.
func (w *worker) dropped(x *lpState, ev *event.Event) bool {
	k := event.KeyOf(ev)
	return w.q.dropCancelled(x, &k, w.q.pend.PoppedStamp())
}

// straggler rolls LP id (record x) back for ev, an event just taken that sorts before the
// LP's last logged one, and puts ev back.
func (w *worker) straggler(x *lpState, id LPID, ev *event.Event) {
	w.stats.primary++
	// The rollback puts events back and may send anti-messages to this worker's LPs:
	// those go first, then the least event is taken again. (When the rollback check
	// fails, the run ends.)
	w.rollback(x, id, event.KeyOf(ev), false)
	w.q.pend.Push(ev)
}
