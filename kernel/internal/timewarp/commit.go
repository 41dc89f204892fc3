package timewarp

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/statemgr"
)

// The commit hooks ([core.Sim.Committers] and Config.Trace) are called as the engine
// commits an event: as fossil collection or compaction drops its history entry below the
// commit horizon (collectFossils, compact), or at the end of the run for the entries still
// logged (commitRest). A worker's log holds each of its LPs' live entries in timestamp
// order, and drops them oldest first, so each LP's events reach the hooks in timestamp
// order; a rolled-back (dead) entry never does. With hooks, no event is processed safe
// (unlogged): a safe event would commit as it is processed, before that LP's older logged
// events, which commit only at the next fossil collection (d.hooks gates the safe bounds).

// commitHeadHooks calls the commit hooks for the history log's head entries that
// collectFossils is about to drop below the commit horizon hk, before commitEntry clears
// their payloads.
func (w *worker) commitHeadHooks(hk event.Key) {
	q := w.q
	d := w.d
	if d.sim.Cfg.Trace != nil {
		d.traceMu.Lock()
		defer d.traceMu.Unlock()
	}
	for n := range q.hist.Len() {
		h := q.hist.Nth(n)
		if h.Dead {
			continue
		}
		if !committed(&h.Ev, &hk) {
			break
		}
		w.commitHook(h, q.hist.ScratchNth(n))
	}
}

// commitEntryHooks calls the commit hooks for one history entry, committed out of a bulk
// (compact, commitRest); s is its scratch words ([statemgr.History.Scratch]).
func (w *worker) commitEntryHooks(h *statemgr.Entry, s *event.Words) {
	d := w.d
	if d.sim.Cfg.Trace != nil {
		d.traceMu.Lock()
		defer d.traceMu.Unlock()
	}
	w.commitHook(h, s)
}

// commitHook calls the trace (under the caller's d.traceMu) and the Commit hook of the LP
// of history entry h, with the worker's frame set to the event's LP and time, as the
// sequential dispatcher does; s is the entry's scratch words ([statemgr.History.Scratch]).
func (w *worker) commitHook(h *statemgr.Entry, s *event.Words) {
	d := w.d
	ev := &h.Ev
	id := ev.Receiver
	if t := d.sim.Cfg.Trace; t != nil {
		t(id, ev)
	}
	if d.sim.Committers == nil {
		return
	}
	c := d.sim.Committers[id]
	if c == nil {
		return
	}
	f := w.frame()
	f.Now, f.Depth, f.Self, f.LP = ev.RecvTime, ev.Depth, id, &d.sim.LPs[id].LPState
	f.Committing, f.Scratch = true, w.scratchOf(s) // Commit may read what Handle left there
	c.Commit(&w.ctx, ev)
	f.Committing, f.Scratch, f.ScratchTouched = false, &w.scratch, false
}

// scratchOf returns s, the scratch words the history log kept for an event, for its
// Reverse or Commit; or, where the log keeps none (no event of the queue has used them,
// so they are zero), the worker's spare words, zeroed.
func (w *worker) scratchOf(s *event.Words) *event.Words {
	if s != nil {
		return s
	}
	w.spare = event.Words{}
	return &w.spare
}

// commitRest calls the commit hooks, at the end of a run, for the events still logged:
// every live entry is then committed (the run's events below its end time all are). Each
// queue's first worker calls them, one queue after another, once the workers have ended;
// a model panic in a hook is the run's error.
func (d *timeWarpDispatcher) commitRest() (err error) {
	var w *worker
	defer func() {
		if r := recover(); r != nil {
			err = core.RecoverModel(r, d.sim, w.frame().Self, w.frame().Now, false)
		}
	}()
	for _, w = range d.workers {
		if w.id >= len(d.queues) {
			continue
		}
		q := w.q
		for n := range q.hist.Len() {
			if h := q.hist.Nth(n); !h.Dead {
				w.commitEntryHooks(h, q.hist.ScratchNth(n))
			}
		}
	}
	return nil
}
