package kernel

import (
	"context"
	"errors"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/ltsf"
)

// checkEvery is how many events the dispatchers process between looks at the clock and at
// cancellation. It is a power of two so the test is a mask.
const checkEvery = 1 << 14

// sequentialDispatcher processes events one at a time in the total order. Each LP's
// earliest pending event sits in one schedule queue and the rest in the LP's own pending
// heap, so the schedule queue holds at most one event per LP.
type sequentialDispatcher struct {
	sim   *Simulation
	sched ltsf.Queue
	pool  event.Pool
	ctx   Context
	// cur is the LP being run; its next event is scheduled after its handler returns.
	cur LPID
	// running is true while a handler or Init runs (cur is valid).
	running bool
}

func newSequential(s *Simulation) *sequentialDispatcher {
	d := &sequentialDispatcher{sim: s, sched: ltsf.NewHeap(len(s.lps))}
	pend := make([]eventset.Pending, len(s.lps))
	eventset.Carve(pend, 4)
	for i := range s.lps {
		s.lps[i].pending = pend[i]
	}
	d.ctx = Context{pool: &d.pool, out: d, sim: s}
	return d
}

// deliver puts a newly sent event where it belongs. While an LP runs, its own event stays
// at the root of the schedule queue and t.scheduled holds (outside any queue) the least
// event it has sent to itself so far, so the common self-send touches no heap at all.
func (d *sequentialDispatcher) deliver(e *event.Event) {
	t := &d.sim.lps[e.Receiver]
	k := event.KeyOf(e)
	switch {
	case d.running && e.Receiver == d.cur:
		if t.scheduled == nil {
			t.scheduled, t.schedKey = e, k
		} else if event.KeyLess(&k, &t.schedKey) {
			t.pending.PushKey(t.schedKey, t.scheduled)
			t.scheduled, t.schedKey = e, k
		} else {
			t.pending.PushKey(k, e)
		}
	case t.scheduled == nil:
		t.scheduled, t.schedKey = e, k
		d.sched.Push(e)
	case event.KeyLess(&k, &t.schedKey):
		d.sched.Remove(e.Receiver)
		t.pending.PushKey(t.schedKey, t.scheduled)
		t.scheduled, t.schedKey = e, k
		d.sched.Push(e)
	default:
		t.pending.PushKey(k, e)
	}
}

// nextOf returns the earliest of LP r's staged event and its pending events, taking it out
// of pending, after the LP has run. It leaves r.scheduled set to the result.
func nextOf(r *lpRecord) *event.Event {
	next := r.scheduled
	if mk, ok := r.pending.MinKey(); ok && (next == nil || event.KeyLess(&mk, &r.schedKey)) {
		m := r.pending.PopMin()
		if next != nil {
			r.pending.PushKey(r.schedKey, next)
		}
		next, r.schedKey = m, mk
	}
	r.scheduled = next
	return next
}

// enter prepares the context for running LP id at time now.
func (d *sequentialDispatcher) enter(id LPID, now Time, depth uint32) {
	d.cur, d.running = id, true
	d.ctx.now, d.ctx.depth, d.ctx.self, d.ctx.lp = now, depth, id, &d.sim.lps[id]
}

func (d *sequentialDispatcher) run(ctx context.Context) (st Stats, err error) {
	s := d.sim
	defer func() {
		if r := recover(); r != nil {
			err = recoverModel(r, s, d.cur, d.ctx.now, s.init)
		}
	}()
	s.init = true
	for i := range s.lps {
		id := LPID(i)
		if s.lps[i].scheduled != nil {
			// An earlier LP's Init sent to this one: stage that event while Init runs.
			d.sched.Remove(id)
		}
		d.enter(id, 0, 0)
		s.lps[i].model.Init(&d.ctx)
		if d.ctx.err != nil {
			return st, d.ctx.err
		}
		d.running = false
		if next := nextOf(&s.lps[i]); next != nil {
			d.sched.Push(next)
		}
	}
	s.init = false
	if d.sched.Len() == 0 {
		return st, errors.New("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}

	end := s.cfg.MaxSimTime
	start := time.Now()
	lastProgress := start
	var n uint64
	for {
		e := d.sched.Peek()
		if e == nil || e.RecvTime >= end {
			break
		}
		// e stays at the root while its LP runs: everything sent now sorts after it.
		id := e.Receiver
		r := &s.lps[id]
		r.scheduled = nil
		d.enter(id, e.RecvTime, e.Depth)
		r.model.Handle(&d.ctx, e)
		if d.ctx.err != nil {
			return st, d.ctx.err
		}
		d.running = false
		st.FinalTime = e.RecvTime
		if next := nextOf(r); next != nil {
			d.sched.ReplaceMin(next)
		} else {
			d.sched.Pop()
		}
		d.pool.Put(e)
		n++
		if n&(checkEvery-1) == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if s.cfg.Progress != nil {
				if now := time.Now(); now.Sub(lastProgress) >= s.cfg.ProgressInterval {
					lastProgress = now
					s.cfg.Progress(Progress{Now: st.FinalTime, EndTime: end, EventsProcessed: n,
						Elapsed: now.Sub(start)})
				}
			}
		}
	}
	st.EventsProcessed = n
	st.EventsCommitted = n
	st.PeakPendingEvents = d.pool.Peak()
	return st, nil
}
