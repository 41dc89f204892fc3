// Package device is the dispatcher of simulation type gpu: it runs the models' Init on the
// host, hands the initial events and states to package gpuwarp, whose loop runs the
// whole time warp on a CUDA device, and sets every LP's final state and generator from
// what comes back, so that the digest and the model's results are read as after any run.
// Progress and engine samples come from the device's counters, which the host reads as
// the loop runs (observe.go).
package device

import (
	"context"
	"fmt"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// collector is the Init context's sink: it keeps the initial events.
type collector struct {
	events []gpuwarp.Event
	err    error
}

// Send implements core.Sink.
func (c *collector) Send(to, from event.LPID, depth uint32, seq uint64, at, now event.Time, w event.Words, payload any) {
	if payload != nil && c.err == nil {
		c.err = fmt.Errorf("LP %d sent a Go payload (%T) from Init; --simulation-type %s carries the inline words only (SendWords)",
			from, payload, core.GPU)
	}
	c.events = append(c.events, gpuwarp.Event{To: uint32(to), Recv: at, Send: now, Depth: depth, Sender: uint32(from),
		Seq: seq, Words: w})
}

// Run runs the LPs of s on the device and returns the run's totals.
func Run(ctx context.Context, s *core.Sim) (core.Stats, error) {
	m, lps, err := deviceModels(s)
	if err != nil {
		return core.Stats{}, err
	}
	in, err := initial(ctx, s, m, lps)
	if err != nil {
		return core.Stats{}, err
	}
	opts := options(s)
	if ob := newObserver(&s.Cfg, time.Now()); ob != nil {
		opts.Observe = ob.observe
	}
	out, err := gpuwarp.Run(ctx, m, in, opts)
	if err != nil {
		return core.Stats{}, err
	}
	return finish(s, m, lps, &out), nil
}

// options are the device loop's options of s's configuration.
func options(s *core.Sim) gpuwarp.Options {
	g := &s.Cfg.GPU
	return gpuwarp.Options{Device: g.Device, Slots: g.Slots, Bound: g.Bound, Executions: g.Executions,
		Inactivity: g.Inactivity, Buffer: g.Buffer, Profile: g.Profile}
}

// finish sets every LP's final state and generator from out and returns the run's totals.
func finish(s *core.Sim, m *gpuwarp.Model, lps []core.DeviceModeler, out *gpuwarp.Result) core.Stats {
	var st core.Stats
	for i := range s.LPs {
		r := &s.LPs[i]
		r.RNG, r.Seq = out.RNG[i], out.Seq[i]
		lps[i].UnpackState(out.State[i*m.StateWords : (i+1)*m.StateWords])
	}
	st.EventsProcessed = out.Processed
	st.EventsRolledBack = out.RolledBack
	st.EventsCommitted = out.Committed()
	st.FinalTime = out.FinalTime
	st.Device, st.DeviceIterations, st.DeviceReturned = out.Device, uint64(out.Iterations), out.Returned
	st.DeviceBound, st.DeviceExecutions, st.DeviceInactivity = out.Bound, out.Executions, out.Inactivity
	st.DeviceLoopSeconds = out.LoopSeconds
	return st
}

// Check reports an LP of s that the device loop cannot run (no device code, or another
// device model than the others'), as Run would, before the run.
func Check(s *core.Sim) error {
	_, _, err := deviceModels(s)
	return err
}

// deviceModels returns the LPs' shared device model, or says which LP has none.
func deviceModels(s *core.Sim) (*gpuwarp.Model, []core.DeviceModeler, error) {
	lps := make([]core.DeviceModeler, len(s.LPs))
	var m *gpuwarp.Model
	for i := range s.LPs {
		dm, ok := s.LPs[i].Model.(core.DeviceModeler)
		if !ok || dm.DeviceModel() == nil {
			return nil, nil, fmt.Errorf("LP %s (%T) has no device code: --simulation-type %s runs models whose LPs implement kernel.DeviceModeler (phold, pcs and kademlia do; pcs not with --call-duration 0); use %s or %s",
				s.NameOf(event.LPID(i)), s.LPs[i].Model, core.GPU, core.TimeWarp, core.Sequential)
		}
		if m == nil {
			m = dm.DeviceModel()
		} else if dm.DeviceModel() != m {
			return nil, nil, fmt.Errorf("LP %s returns a different device model from LP 0's: every LP must return the same one",
				s.NameOf(event.LPID(i)))
		}
		lps[i] = dm
	}
	return m, lps, nil
}

// initial runs every LP's Init on the host and packs the LPs for the device; run ending
// stops it (core.InitStopped).
func initial(run context.Context, s *core.Sim, m *gpuwarp.Model, lps []core.DeviceModeler) (in gpuwarp.Input, err error) {
	col := &collector{}
	ctx := s.NewContext(col)
	defer func() {
		if r := recover(); r != nil {
			f := core.FrameOf(&ctx)
			err = core.RecoverModel(r, s, f.Self, f.Now, true)
		}
	}()
	s.InInit = true
	for i := range s.LPs {
		if err := core.InitStopped(run); err != nil {
			return in, err
		}
		core.Enter(&ctx, 0, 0, event.LPID(i), &s.LPs[i])
		s.LPs[i].Model.Init(&ctx)
		if err := core.FrameOf(&ctx).Err; err != nil {
			return in, err
		}
	}
	s.InInit = false
	if col.err != nil {
		return in, col.err
	}
	if len(col.events) == 0 {
		return in, fmt.Errorf("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}
	n := len(s.LPs)
	in = gpuwarp.Input{State: make([]uint64, n*m.StateWords), RNG: make([]core.RNG, n), Seq: make([]uint64, n),
		Events: col.events, End: s.Cfg.MaxSimTime}
	for i := range s.LPs {
		in.RNG[i], in.Seq[i] = s.LPs[i].RNG, s.LPs[i].Seq
		lps[i].PackState(in.State[i*m.StateWords : (i+1)*m.StateWords])
	}
	return in, nil
}
