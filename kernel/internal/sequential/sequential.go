// Package sequential is the sequential dispatcher: it processes every event of a simulation
// in the total order of package event, one at a time, keeping the pending events by value
// in one calendar queue.
package sequential

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// sequentialDispatcher processes events one at a time in the total order. All pending
// events live by value in one calendar queue: a send writes its record there directly,
// and the handler reads the event in place. So there are no event records to pool and no
// pointers to chase.
type sequentialDispatcher struct {
	sim     *core.Sim
	cal     eventset.Calendar
	ctx     core.Context
	scratch event.Words // the handled event's Context.Scratch
}

// Run runs the LPs of s to its end time and returns the run's totals.
func Run(ctx context.Context, s *core.Sim) (core.Stats, error) {
	return newSequential(s).run(ctx)
}

func newSequential(s *core.Sim) *sequentialDispatcher {
	d := &sequentialDispatcher{sim: s}
	d.ctx = s.NewContext(d)
	core.FrameOf(&d.ctx).Scratch = &d.scratch
	return d
}

// Send queues a sent event (the dispatcher is its Context's sink).
func (d *sequentialDispatcher) Send(to, from event.LPID, depth uint32, seq uint64, at, now event.Time, w event.Words, payload any) {
	d.cal.PushSend(at, now, seq, depth, from, to, w, payload)
}

// enter prepares the context for running LP id at time now.
func (d *sequentialDispatcher) enter(id event.LPID, now event.Time, depth uint32) {
	f := core.FrameOf(&d.ctx) // not core.Enter, which costs more instructions an event
	f.Now, f.Depth, f.Self, f.LP = now, depth, id, &d.sim.LPs[id].LPState
}

// commit reports event e of LP id, which it just handled, to the trace and the LP's
// Commit hook, if there are.
func (d *sequentialDispatcher) commit(id event.LPID, e *event.Event) {
	if t := d.sim.Cfg.Trace; t != nil {
		t(id, e)
	}
	var c core.Committer
	if d.sim.Committers != nil {
		c = d.sim.Committers[id]
	}
	if c == nil {
		return
	}
	f := core.FrameOf(&d.ctx)
	f.Committing = true
	c.Commit(&d.ctx, e)
	f.Committing = false
}

func (d *sequentialDispatcher) run(ctx context.Context) (st core.Stats, err error) {
	s := d.sim
	defer func() {
		if r := recover(); r != nil {
			f := core.FrameOf(&d.ctx)
			err = core.RecoverModel(r, s, f.Self, f.Now, s.InInit)
		}
	}()
	s.InInit = true
	for i := range s.LPs {
		if err := core.InitStopped(ctx); err != nil {
			return st, err
		}
		d.enter(event.LPID(i), 0, 0)
		s.LPs[i].Model.Init(&d.ctx)
		if err := core.FrameOf(&d.ctx).Err; err != nil {
			return st, err
		}
	}
	s.InInit = false
	if d.cal.Len() == 0 {
		return st, errors.New("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}

	end := s.Cfg.MaxSimTime
	hooks := s.Committers != nil || s.Cfg.Trace != nil
	start := time.Now()
	look, stopLooks := d.looks(ctx)
	defer stopLooks()
	var n uint64
	for {
		e := d.cal.PopBefore(end)
		if e == nil {
			break
		}
		core.PrefetchNext[struct{}](&d.cal, s.LPs, nil)
		id := e.Receiver
		d.enter(id, e.RecvTime, e.Depth)
		s.LPs[id].Model.Handle(&d.ctx, e)
		// FrameOf at each use, not a local pointer to the frame, which costs more
		// instructions per event (docs/PERFORMANCE.md).
		if err := core.FrameOf(&d.ctx).Err; err != nil {
			return st, err
		}
		if hooks {
			d.commit(id, e) // every event commits as it is processed here
		}
		if f := core.FrameOf(&d.ctx); f.ScratchTouched {
			d.scratch, f.ScratchTouched = event.Words{}, false // zero for the next event
		}
		st.FinalTime = e.RecvTime
		n++
		if look.Load() {
			look.Store(false) // before the looks: a reason set during them is seen next event
			if ctx.Err() != nil {
				return st, context.Cause(ctx)
			}
			if s.Cfg.Progress != nil {
				s.Cfg.Progress(core.Progress{Now: st.FinalTime, EndTime: end, EventsProcessed: n,
					Elapsed: time.Since(start)})
			}
		}
	}
	st.EventsProcessed = n
	st.EventsCommitted = n
	st.PeakPendingEvents = d.cal.Peak()
	return st, nil
}

// minTick is the shortest interval between progress looks: a shorter ProgressInterval
// (tests give 1 ns, "at every look") would have the ticker's goroutine spin.
const minTick = 50 * time.Microsecond

// looks returns the flag that tells the event loop to look at the run's context and to
// report progress, and the function that stops setting it. The flag is set when ctx ends
// (context.AfterFunc) and, with a Progress callback, every ProgressInterval (a ticker's
// goroutine). The loop reads it at each event: a plain load of a word written a few times
// a second costs it no more than a counter's test, where looking at the context or the
// clock at each event would cost it instructions, and looking every few thousand events
// let a model of slow events (a millisecond each) run on for seconds past a cancel.
func (d *sequentialDispatcher) looks(ctx context.Context) (*atomic.Bool, func()) {
	look := new(atomic.Bool)
	stopAfter := context.AfterFunc(ctx, func() { look.Store(true) })
	if d.sim.Cfg.Progress == nil {
		return look, func() { stopAfter() }
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(max(d.sim.Cfg.ProgressInterval, minTick))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				look.Store(true)
			case <-done:
				return
			}
		}
	}()
	return look, func() {
		stopAfter()
		close(done)
	}
}
