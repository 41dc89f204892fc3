package timewarp

import (
	"fmt"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/statemgr"
)

// rollback undoes every processed event of LP id (record x) with key >= k: reverses
// them (reverse computation) or restores the latest saved state before k and coasts
// forward, puts them back into the calendar (dropping the one with key k when dropTwin: the
// twin of an anti-message), and cancels their outputs: sends their anti-messages, or, with
// lazy cancellation, holds them (see holdOutputs) but for the dropped twin's. It returns
// false when CheckRollbacks found the restored or re-executed state different and failed
// the run.
func (w *worker) rollback(x *lpState, id LPID, k event.Key, dropTwin bool) bool {
	d, q := w.d, w.q
	if event.KeyLess(&k, &q.fossilKey) || !event.KeyLess(&q.safeHigh, &k) {
		panic(fmt.Sprintf("kernel: LP %d rolls back to %+v, below the commit horizon %+v or a safe event %+v",
			id, k, q.fossilKey, q.safeHigh))
	}
	r := &d.sim.LPs[id]
	d.sim.UndoSeries(id, &k) // core's series.go
	u := q.undone[:0]
	i := x.last
	for q.hist.Holds(i) {
		h := q.hist.At(i)
		hk := event.KeyOf(&h.Ev)
		if event.KeyLess(&hk, &k) {
			break
		}
		u = append(u, i)
		i = h.Prev
	}
	q.undone = u
	if d.reverse {
		rev := r.Model.(core.Reverser)
		f := w.frame()
		for _, j := range u { // newest first
			h := q.hist.At(j)
			core.Enter(&w.ctx, h.Ev.RecvTime, h.Ev.Depth, id, r)
			f.Scratch = w.scratchOf(q.hist.Scratch(j)) // the words the event's Handle left
			reverseEvent(&w.ctx, rev, &h.Ev, twUndo{draws: h.Draws, seq: r.Seq - uint64(h.OutTo-h.OutFrom)})
		}
		f.Scratch, f.ScratchTouched = &w.scratch, false
	}
	held := false
	for _, j := range u {
		h := q.hist.At(j)
		h.Dead = true
		if h.Saved != nil {
			q.hist.Free(h.Saved)
			h.Saved = nil
		}
		w.stats.rolledBack++
		twin := dropTwin && event.KeyOf(&h.Ev) == k
		if twin {
			w.stats.annihil++
		} else {
			q.pend.Push(&h.Ev)
			w.tracker.Made(h.Ev.RecvTime)
		}
		if d.lazy && !twin {
			held = held || h.OutTo > h.OutFrom
		} else {
			for o := h.OutFrom; o < h.OutTo; o++ {
				anti := q.outs.At(o).Anti()
				w.stats.antiSent++
				d.deliver(w, &anti)
			}
		}
		h.Ev.Payload = nil
	}
	if held {
		w.holdOutputs(id, k, u, dropTwin)
	}
	x.last, x.lastKey = i, event.Key{}
	if q.hist.Holds(i) {
		x.lastKey = event.KeyOf(&q.hist.At(i).Ev)
	}
	if d.reverse {
		if d.check && !w.checkRestored(id, r, i) {
			d.fail(d.reverseError(id, k))
			return false
		}
		return true
	}
	// Restore the newest saved state before k: from the LP's newest remaining entry that
	// holds one, else the base state; then coast forward, oldest first and without
	// sending, over the LP's events after it (after the base: its spill list first).
	c := q.coasts[:0]
	var from *statemgr.Saved
	j := i
	for q.hist.Holds(j) {
		h := q.hist.At(j)
		if h.Saved != nil {
			from = h.Saved
			break
		}
		c = append(c, j)
		j = h.Prev
	}
	q.coasts = c
	fromBase := from == nil
	if fromBase {
		from = d.base[id]
		x.anchor = -1
	} else {
		x.anchor, x.anchorTime = j, q.hist.At(j).Ev.RecvTime
	}
	r.Model.Restore(from.Model)
	setCore(r, from.Core)
	if d.check {
		want, at := d.ck.saved[id], "its newest committed saved state"
		if !fromBase {
			want = q.checks.At(int(j - q.hist.Base())).state
			e := &q.hist.At(j).Ev
			at = fmt.Sprintf("the state saved after its event at time %v (from LP %d, sequence %d)",
				e.RecvTime, e.Sender, e.Seq)
		}
		if w.stateDigest(&d.ck.snap[id], r) != want {
			d.fail(d.restoreErrorAt(id, at))
			return false
		}
	}
	x.count = 0
	w.coasting = true
	defer func() { w.coasting = false }()
	if fromBase {
		sp := d.spill[id]
		for n := range sp {
			w.coast(x, id, r, &sp[n])
		}
	}
	for n := len(c) - 1; n >= 0; n-- {
		e := &q.hist.At(c[n]).Ev
		w.sendBytes = w.sendBytes[:0]
		w.coast(x, id, r, e)
		if d.check && w.eventDigest(&d.ck.snap[id], r) != *q.checks.At(int(c[n] - q.hist.Base())) {
			d.fail(d.reexecError(id, e))
			return false
		}
	}
	if d.check && len(c) == 0 && !w.checkRestored(id, r, i) {
		d.fail(d.restoreErrorAt(id, "its newest committed saved state and re-executing the committed events after it"))
		return false
	}
	return true
}

// checkRestored reports whether LP id (record r) is in the state recorded after its log
// entry i, or, when i is below the log, after its newest event no longer logged
// (CheckRollbacks).
func (w *worker) checkRestored(id LPID, r *core.LPRecord, i int64) bool {
	d, q := w.d, w.q
	want := d.ck.base[id]
	if q.hist.Holds(i) && d.ck.safeAt[id] < i {
		want = q.checks.At(int(i - q.hist.Base())).state
	}
	return w.stateDigest(&d.ck.snap[id], r) == want
}

// coast re-executes event ev of LP id (record x, LP record r) during coast forward. It
// saves no state: the events coast forward re-executes are fewer than the period since the
// state it started from, so the next save comes with the next event processed anew.
func (w *worker) coast(x *lpState, id LPID, r *core.LPRecord, ev *event.Event) {
	core.Enter(&w.ctx, ev.RecvTime, ev.Depth, id, r)
	r.Model.Handle(&w.ctx, ev)
	if f := w.frame(); f.ScratchTouched { // fresh zero words for each event re-executed
		w.scratch, f.ScratchTouched = event.Words{}, false
	}
	x.count++
	w.stats.coastForward++
}

// twUndo is what reverse computation records for a processed event: the number of draws
// its handler made from the LP's generator and the LP's send sequence number before it.
type twUndo struct {
	draws uint32
	seq   uint64
}

// twinKey returns the key of the positive event that the anti-message with key k cancels.
func twinKey(k event.Key) event.Key {
	k.SeqSign |= 1
	return k
}

// reverseEvent undoes event e, the last event that the LP of ctx processed, u being what was
// recorded for it: it rewinds the LP's generator by e's draws and restores its sequence
// number, so that Reverse sees the generator as Handle found it, calls Reverse, and resets
// the generator and sequence number again (whatever Reverse drew). ctx's time and depth
// must be e's.
func reverseEvent(ctx *core.Context, rev core.Reverser, e *event.Event, u twUndo) {
	f := core.FrameOf(ctx)
	r := f.LP
	r.RNG.Rewind(uint64(u.draws))
	r.Seq = u.seq
	g := r.RNG
	f.Reversing, f.DrawsMade = true, u.draws
	rev.Reverse(ctx, e)
	f.Reversing, f.DrawsMade = false, 0
	r.RNG, r.Seq = g, u.seq
}
