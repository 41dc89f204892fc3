// Package dispatch builds a simulation from a model's LPs and a kernel.Config and runs it
// on the dispatcher that Config.Type names: the sequential one (kernel/internal/sequential)
// or time warp (kernel/internal/timewarp, and kernel/internal/dist across processes).
//
// It is apart from package kernel, which defines what a model implements and calls,
// because the dispatchers use those types: kernel imports no dispatcher, so that its types
// are defined where models import them and go doc shows their methods and fields
// (docs/DECISIONS.md, "The kernel's types where models import them").
//
//	sim, err := dispatch.New(kernel.Config{MaxSimTime: 100, Seed: 1}, lps)
//	if err != nil { ... }
//	res, err := sim.Run(ctx)
//	fmt.Println(res.Digest, res.EventsCommitted)
//
// RunGroup runs several simulations of type gpu in one device loop, each with the result
// it has alone (a parameter study's runs; group.go).
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/device"
	"github.com/warpedgo/warped/kernel/internal/osthread"
	"github.com/warpedgo/warped/kernel/internal/sequential"
	"github.com/warpedgo/warped/kernel/internal/timewarp"
)

// Simulation is a configured set of LPs, ready to run once.
type Simulation struct {
	sim *core.Sim
	ran bool
}

// New checks the configuration and the LPs and returns a Simulation ready to Run. The
// Simulation takes the LPs as they are, state included, and changes them as it runs:
// build fresh LPs for each Simulation (a loop over seeds that reuses one slice would start
// each run from the previous one's final state).
func New(cfg kernel.Config, lps []kernel.LogicalProcess) (*Simulation, error) {
	sim, err := newSim(cfg, lps)
	if err != nil {
		return nil, err
	}
	if sim.Cfg.Type == kernel.GPU {
		if err := device.Check(sim); err != nil { // an LP without device code: known now
			return nil, err
		}
	}
	return &Simulation{sim: sim}, nil
}

// newSim checks cfg and lps, the state types of LPs that embed kernel.Plain among them.
func newSim(cfg kernel.Config, lps []kernel.LogicalProcess) (*core.Sim, error) {
	checked := map[reflect.Type]bool{}
	plain := func(name string, lp kernel.LogicalProcess) error {
		t := kernel.PlainState(lp)
		if t == nil || checked[t] {
			return nil
		}
		if err := kernel.CheckPlainState(t); err != nil {
			return fmt.Errorf("LP %q: state type %s cannot be saved by copying (%v); "+
				"use plain values or implement Snapshot and Restore", name, t, err)
		}
		checked[t] = true
		return nil
	}
	return core.NewSim(cfg, lps, plain)
}

// StateSaving returns the state saving a time-warp run uses (periodic or reverse, auto
// resolved), or "" for a sequential one.
func (s *Simulation) StateSaving() string {
	if s.sim.Cfg.Type != kernel.TimeWarp {
		return ""
	}
	return s.sim.Cfg.TimeWarp.StateSaving
}

// Run runs the simulation to the end time and returns its result. It can be called once.
// Cancelling ctx stops the run early with ctx's cause (context.Cause: ctx's error unless
// it was cancelled with a cause of its own).
func (s *Simulation) Run(ctx context.Context) (kernel.Result, error) {
	if s.ran {
		return kernel.Result{}, errors.New("simulation already ran; build a new one with New")
	}
	s.ran = true
	start, wait0 := time.Now(), time.Duration(-1) // wait0: see CPUWaitSeconds below
	if s.sim.Cfg.Type != kernel.TimeWarp {
		wait0 = osthread.ProcessRunDelay()
	}
	if h := s.sim.Cfg.ModelInit; h != nil {
		if err := h(s.models()); err != nil {
			return kernel.Result{}, fmt.Errorf("model init hook: %w", err)
		}
	}
	var stats kernel.Stats
	var err error
	switch s.sim.Cfg.Type {
	case kernel.TimeWarp:
		stats, err = timewarp.Run(ctx, s.sim)
	case kernel.GPU:
		stats, err = device.Run(ctx, s.sim)
	default:
		stats, err = sequential.Run(ctx, s.sim)
	}
	if err != nil {
		return kernel.Result{}, err
	}
	if s.sim.Cfg.Type != kernel.TimeWarp { // the engine measures its own, summed over its ranks
		stats.CPUWaitSeconds = osthread.Since(wait0).Seconds()
	}
	res := s.result(stats, start)
	if h := s.sim.Cfg.ModelFinal; h != nil {
		if err := h(s.models()); err != nil {
			return kernel.Result{}, fmt.Errorf("model final hook: %w", err)
		}
	}
	return res, nil
}

// models returns the LPs' models in id order, for the model's hooks.
func (s *Simulation) models() []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, len(s.sim.LPs))
	for i := range s.sim.LPs {
		lps[i] = s.sim.LPs[i].Model
	}
	return lps
}

// result completes a run's stats (its rates, and its peak memory where the dispatcher did
// not sum its ranks') and adds the digest and the series.
func (s *Simulation) result(stats kernel.Stats, start time.Time) kernel.Result {
	stats.WallSeconds = time.Since(start).Seconds()
	if stats.WallSeconds > 0 {
		stats.CommittedEventsPerSecond = float64(stats.EventsCommitted) / stats.WallSeconds
	}
	if stats.EventsProcessed > 0 {
		stats.Efficiency = float64(stats.EventsCommitted) / float64(stats.EventsProcessed)
	}
	if stats.PeakMemoryBytes == 0 { // a run across processes sums its ranks'
		stats.PeakMemoryBytes = core.PeakMemory()
	}
	return kernel.Result{Stats: stats, Digest: s.sim.Digest(), Series: s.sim.CollectSeries()}
}

// LP returns the model of LP id, for reading results after Run.
func (s *Simulation) LP(id kernel.LPID) kernel.LogicalProcess { return s.sim.LPs[id].Model }

// NumLPs returns the number of LPs.
func (s *Simulation) NumLPs() int { return len(s.sim.LPs) }
