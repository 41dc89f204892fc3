package kernel

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/internal/prefetch"
)

// checkEvery is how many events the dispatchers process between looks at the clock and at
// cancellation. It is a power of two so the test is a mask.
const checkEvery = 1 << 14

// sequentialDispatcher processes events one at a time in the total order. All pending
// events live by value in one calendar queue: a send writes its record there directly,
// and the handler reads the event in place. So there are no event records to pool and no
// pointers to chase.
type sequentialDispatcher struct {
	sim *Simulation
	cal eventset.Calendar
	ctx Context
}

func newSequential(s *Simulation) *sequentialDispatcher {
	d := &sequentialDispatcher{sim: s}
	d.ctx = s.newContext(d)
	return d
}

// prefetchNext asks the processor for what handling the coming events will touch, so
// that the cache misses overlap the handling of the event just popped from cal, in three
// stages, each relying on what the one before asked for an event earlier: the calendar
// record of the third event from now, the LP record of the second (its receiver is read
// from the record asked for before), and the model state of the next (its address is read
// from the LP record asked for before). It returns the second event's receiver when cal
// knows it without a search, for the caller's own per-LP records.
func prefetchNext(cal *eventset.Calendar, lps []lpRecord) (LPID, bool) {
	cal.PrefetchUpcoming(2)
	if id, ok := cal.Upcoming(0); ok {
		prefetch.Line(modelData(&lps[id]))
	}
	id, ok := cal.Upcoming(1)
	if ok {
		r := &lps[id]
		prefetch.Line(unsafe.Pointer(r))
		prefetch.Line(unsafe.Pointer(&r.seq))
	}
	return id, ok
}

// modelData returns the data word of r's model: for the usual pointer to a model's LP
// value, the address of its state. It reads the interface's layout (type word, data
// word), which is the runtime's; it is only for prefetching, which never faults.
func modelData(r *lpRecord) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&r.model))[1]
}

// send queues a sent event.
func (d *sequentialDispatcher) send(to, from LPID, depth uint32, seq uint64, at, now Time, w Words, payload any) {
	d.cal.PushSend(at, now, seq, depth, from, to, w, payload)
}

// enter prepares the context for running LP id at time now.
func (d *sequentialDispatcher) enter(id LPID, now Time, depth uint32) {
	d.ctx.now, d.ctx.depth, d.ctx.self, d.ctx.lp = now, depth, id, &d.sim.lps[id]
}

func (d *sequentialDispatcher) run(ctx context.Context) (st Stats, err error) {
	s := d.sim
	defer func() {
		if r := recover(); r != nil {
			err = recoverModel(r, s, d.ctx.self, d.ctx.now, s.init)
		}
	}()
	s.init = true
	for i := range s.lps {
		d.enter(LPID(i), 0, 0)
		s.lps[i].model.Init(&d.ctx)
		if d.ctx.err != nil {
			return st, d.ctx.err
		}
	}
	s.init = false
	if d.cal.Len() == 0 {
		return st, errors.New("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}

	end := s.cfg.MaxSimTime
	start := time.Now()
	lastProgress := start
	var n uint64
	for {
		e := d.cal.Pop()
		if e == nil || e.RecvTime >= end {
			break
		}
		prefetchNext(&d.cal, s.lps)
		id := e.Receiver
		d.enter(id, e.RecvTime, e.Depth)
		s.lps[id].model.Handle(&d.ctx, e)
		if d.ctx.err != nil {
			return st, d.ctx.err
		}
		st.FinalTime = e.RecvTime
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
	st.PeakPendingEvents = d.cal.Peak()
	return st, nil
}
