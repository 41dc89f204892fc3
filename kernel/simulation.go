package kernel

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/device"
	"github.com/warpedgo/warped/kernel/internal/sequential"
	"github.com/warpedgo/warped/kernel/internal/timewarp"
)

// Simulation is a configured set of LPs, ready to run once.
type Simulation struct {
	sim *core.Sim
	ran bool
}

// Stats are the totals of a run. The JSON names are those of the --stats-file output.
//
// Fields (documented in full in kernel/internal/core), with their JSON names in the stats
// file: EventsProcessed, EventsCommitted, EventsRolledBack, Efficiency (committed over
// processed), WallSeconds, CommittedEventsPerSecond, PeakPendingEvents, PeakMemoryBytes,
// FinalTime; time warp adds PrimaryRollbacks, SecondaryRollbacks, AverageRollbackLength,
// AntiMessagesSent, CancelledEvents, SuppressedSends, CoastForwardEvents, SafeEvents,
// PromisesSent, GVTCycles, BatchedEvents, OffloadBatches, OffloadNote, StateSaving and
// ScheduleQueues.
type Stats = core.Stats

// Result is what a completed run produced.
type Result struct {
	Stats
	// Digest is the hex SHA-256 over every LP's id, generator state and model state, in
	// LP order: equal digests mean equal committed results.
	Digest string `json:"digest"`
	// Series are the values the models recorded (Context.Record) in committed events, by
	// time, then LP (Config.RecordSeries only). In a run across processes, this rank's LPs'.
	Series []SeriesPoint `json:"-"`
}

// New checks the configuration and the LPs and returns a Simulation ready to Run.
func New(cfg Config, lps []LogicalProcess) (*Simulation, error) {
	checked := map[reflect.Type]bool{}
	plain := func(name string, lp core.LogicalProcess) error {
		p, ok := lp.(plainer)
		if !ok {
			return nil
		}
		t := p.plainType()
		if !checked[t] {
			if err := checkPlain(t); err != nil {
				return fmt.Errorf("LP %q: state type %s cannot be saved by copying (%v); "+
					"use plain values or implement Snapshot and Restore", name, t, err)
			}
			checked[t] = true
		}
		return nil
	}
	// The dispatchers' interface has the same methods as LogicalProcess (kernel.go).
	models := make([]core.LogicalProcess, len(lps))
	for i, lp := range lps {
		models[i] = lp
	}
	sim, err := core.NewSim(cfg, models, plain)
	if err != nil {
		return nil, err
	}
	return &Simulation{sim: sim}, nil
}

// StateSaving returns the state saving a time-warp run uses (periodic or reverse, auto
// resolved), or "" for a sequential one.
func (s *Simulation) StateSaving() string {
	if s.sim.Cfg.Type != TimeWarp {
		return ""
	}
	return s.sim.Cfg.TimeWarp.StateSaving
}

// Run runs the simulation to the end time and returns its result. It can be called once.
// Cancelling ctx stops the run early with ctx's error.
func (s *Simulation) Run(ctx context.Context) (Result, error) {
	if s.ran {
		return Result{}, errors.New("simulation already ran; build a new one with New")
	}
	s.ran = true
	start := time.Now()
	var stats Stats
	var err error
	switch s.sim.Cfg.Type {
	case TimeWarp:
		stats, err = timewarp.Run(ctx, s.sim)
	case GPU:
		stats, err = device.Run(ctx, s.sim)
	default:
		stats, err = sequential.Run(ctx, s.sim)
	}
	if err != nil {
		return Result{}, err
	}
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
	return Result{Stats: stats, Digest: s.sim.Digest(), Series: s.sim.CollectSeries()}, nil
}

// LP returns the model of LP id, for reading results after Run.
func (s *Simulation) LP(id LPID) LogicalProcess { return s.sim.LPs[id].Model }

// NumLPs returns the number of LPs.
func (s *Simulation) NumLPs() int { return len(s.sim.LPs) }

// PeerError is the error of a rank whose run was stopped because another rank failed; its
// text is that rank's error, prefixed by its rank.
type PeerError = core.PeerError

// MismatchError says that the ranks of a run across processes were configured
// differently; every rank gets the same one.
type MismatchError = core.MismatchError

// ReportedElsewhere reports whether err, returned by Run on a rank other than 0, is also
// known to rank 0 (another rank's failure, or a configuration mismatch), so that only rank
// 0 needs to show it.
func ReportedElsewhere(err error) bool {
	var p *PeerError
	var m *MismatchError
	return errors.As(err, &p) || errors.As(err, &m)
}
