package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/warpedgo/warped/rng"
)

// lpRecord is the kernel's per-LP state. It is owned by the dispatcher that runs the LP.
type lpRecord struct {
	model LogicalProcess
	rng   rng.XORWOW
	// seq is the number of events the LP has sent: the next send's sequence number.
	seq uint64
}

// Simulation is a configured set of LPs, ready to run once.
type Simulation struct {
	cfg  Config
	lps  []lpRecord
	ran  bool
	init bool // true while Init runs
	// lookahead is the least delay of a send to another LP (see Lookahead).
	lookahead Time
	// series[id] are LP id's recorded points (Config.RecordSeries; see series.go), or nil.
	series [][]seriesRec
	// gvtLaps is the most laps Mattern's token needed in a round this rank initiated (a
	// run across processes; for tests).
	gvtLaps uint32
}

// Stats are the totals of a run. The JSON names are those of the --stats-file output.
type Stats struct {
	EventsProcessed  uint64 `json:"events_processed"`
	EventsCommitted  uint64 `json:"events_committed"`
	EventsRolledBack uint64 `json:"events_rolled_back"`
	// Efficiency is committed / processed.
	Efficiency               float64 `json:"efficiency"`
	WallSeconds              float64 `json:"wall_seconds"`
	CommittedEventsPerSecond float64 `json:"committed_events_per_second"`
	// PeakPendingEvents is the largest number of events pending at once (sequential), or
	// the number of event records allocated, an upper bound of it (time warp).
	PeakPendingEvents int `json:"peak_pending_events"`
	// PeakMemoryBytes is the peak resident memory of the process (Linux VmHWM), or the
	// Go runtime's memory obtained from the OS where that is unavailable.
	PeakMemoryBytes uint64 `json:"peak_memory_bytes"`
	// FinalTime is the receive time of the last event processed.
	FinalTime Time `json:"final_time"`

	// Time warp only:

	// PrimaryRollbacks counts rollbacks caused by stragglers.
	PrimaryRollbacks uint64 `json:"primary_rollbacks"`
	// SecondaryRollbacks counts rollbacks caused by anti-messages.
	SecondaryRollbacks uint64 `json:"secondary_rollbacks"`
	// AverageRollbackLength is events rolled back per rollback.
	AverageRollbackLength float64 `json:"average_rollback_length"`
	// AntiMessagesSent counts anti-messages.
	AntiMessagesSent uint64 `json:"anti_messages_sent"`
	// CancelledEvents counts events annihilated by their anti-messages.
	CancelledEvents uint64 `json:"cancelled_events"`
	// SuppressedSends counts sends that lazy cancellation found identical to a held output
	// and did not send again.
	SuppressedSends uint64 `json:"suppressed_sends"`
	// CoastForwardEvents counts events re-executed to rebuild state after a rollback.
	CoastForwardEvents uint64 `json:"coast_forward_events"`
	// SafeEvents counts events committed as they were processed, without being logged for
	// rollback, because no event could arrive below them any more (reverse computation
	// with the partitioned engine, in one process or with one worker per process; see the
	// Lookahead interface and docs/DECISIONS.md).
	SafeEvents uint64 `json:"safe_events"`
	// PromisesSent counts the promises sent to other processes: lower bounds on the events
	// still to come, which let them take events as safe (runs across processes only; see
	// TimeWarpConfig.NoRemoteSafe).
	PromisesSent uint64 `json:"promises_sent"`
	// GVTCycles counts completed GVT rounds.
	GVTCycles uint64 `json:"gvt_cycles"`

	// Offload (TimeWarpConfig.Offload) only:

	// BatchedEvents counts events handled in a batch on the offload backend (processed,
	// like EventsProcessed: some may have been rolled back since).
	BatchedEvents uint64 `json:"batched_events"`
	// OffloadBatches counts the batches run on the offload backend.
	OffloadBatches uint64 `json:"offload_batches"`
	// OffloadNote says why offload was turned off during the run (a backend error with
	// OffloadAuto), or is empty.
	OffloadNote string `json:"offload_note,omitempty"`
	// StateSaving is the state saving a time-warp run used: periodic or reverse (auto
	// resolved; see TimeWarpConfig.StateSaving); empty for a sequential run.
	StateSaving string `json:"state_saving,omitempty"`
	// ScheduleQueues says which schedule arrangement a time-warp run used: "calendar, one
	// per worker" (the default: each worker runs its own LPs from a calendar queue), or,
	// with fewer schedule queues than workers, "calendar, N shared by M workers"; empty for
	// a sequential run.
	ScheduleQueues string `json:"schedule_queues,omitempty"`
}

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
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Type == "" {
		cfg.Type = Sequential
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = time.Second
	}
	if len(lps) == 0 {
		return nil, errors.New("no logical processes: a model needs at least one LP")
	}
	if uint64(len(lps)) > uint64(^LPID(0)) {
		return nil, fmt.Errorf("too many LPs (%d); at most %d are supported", len(lps), ^LPID(0))
	}
	s := &Simulation{cfg: cfg, lps: make([]lpRecord, len(lps))}
	if cfg.RecordSeries {
		s.series = make([][]seriesRec, len(lps))
	}
	names := make(map[string]int, len(lps))
	checked := map[reflect.Type]bool{}
	for i, lp := range lps {
		if lp == nil {
			return nil, fmt.Errorf("LP %d is nil", i)
		}
		name := lp.Name()
		if j, dup := names[name]; dup {
			return nil, fmt.Errorf("duplicate LP name %q (ids %d and %d); LP names must be unique", name, j, i)
		}
		names[name] = i
		if p, ok := lp.(plainer); ok {
			t := p.plainType()
			if !checked[t] {
				if err := checkPlain(t); err != nil {
					return nil, fmt.Errorf("LP %q: state type %s cannot be saved by copying (%v); "+
						"use plain values or implement Snapshot and Restore", name, t, err)
				}
				checked[t] = true
			}
		}
		if cfg.Type == TimeWarp && cfg.TimeWarp.StateSaving == StateSavingReverse {
			if _, ok := lp.(Reverser); !ok {
				return nil, fmt.Errorf("time-warp state-saving type reverse needs every LP to implement Reverse; LP %q (id %d) does not", name, i)
			}
			if !canReverse(lp) {
				return nil, fmt.Errorf("time-warp state-saving type reverse: LP %q (id %d) cannot reverse its events in this configuration; use periodic", name, i)
			}
		}
		s.lps[i] = lpRecord{model: lp, rng: rng.New(cfg.Seed, uint64(i))}
	}
	if cfg.Type == TimeWarp {
		s.cfg.TimeWarp.StateSaving = resolveStateSaving(cfg.TimeWarp, lps)
	}
	la, err := lookaheadOf(lps)
	if err != nil {
		return nil, err
	}
	s.lookahead = la
	return s, nil
}

// lookaheadOf returns the simulation's lookahead for lps: the least that they declare, or
// 0 when one does not implement Lookahead. A declared lookahead that is negative, infinite
// or not a number is an error.
func lookaheadOf(lps []LogicalProcess) (Time, error) {
	la := math.Inf(1)
	for i, lp := range lps {
		l, ok := lp.(Lookahead)
		if !ok {
			return 0, nil
		}
		v := l.Lookahead()
		if !(v >= 0) || math.IsInf(v, 1) {
			return 0, fmt.Errorf("LP %q (id %d) declares lookahead %v; a lookahead must be a finite number >= 0", lp.Name(), i, v)
		}
		la = min(la, v)
	}
	return la, nil
}

// resolveStateSaving returns the state saving tw asks for, auto resolved for lps: reverse
// computation when every LP implements Reverser (and is Reversible) and no period is set,
// else periodic.
func resolveStateSaving(tw TimeWarpConfig, lps []LogicalProcess) string {
	if tw.StateSaving != "" && tw.StateSaving != StateSavingAuto {
		return tw.StateSaving
	}
	if tw.StateSavingPeriod != 0 {
		return StateSavingPeriodic
	}
	for _, lp := range lps {
		if !canReverse(lp) {
			return StateSavingPeriodic
		}
	}
	return StateSavingReverse
}

// StateSaving returns the state saving a time-warp run uses (periodic or reverse, auto
// resolved), or "" for a sequential one.
func (s *Simulation) StateSaving() string {
	if s.cfg.Type != TimeWarp {
		return ""
	}
	return s.cfg.TimeWarp.StateSaving
}

// nameOf returns the name of LP id, or a placeholder for an unknown id.
func (s *Simulation) nameOf(id LPID) string {
	if int(id) < len(s.lps) {
		return s.lps[id].model.Name()
	}
	return fmt.Sprintf("<unknown %d>", id)
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
	switch s.cfg.Type {
	case TimeWarp:
		var d *timeWarpDispatcher
		if d, err = newTimeWarp(s); err == nil {
			stats, err = d.run(ctx)
		}
	default:
		stats, err = newSequential(s).run(ctx)
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
		stats.PeakMemoryBytes = peakMemory()
	}
	return Result{Stats: stats, Digest: s.digest(), Series: s.collectSeries()}, nil
}

// digest hashes every LP's id, generator and state in LP order.
func (s *Simulation) digest() string {
	h := sha256.New()
	var buf []byte
	for i := range s.lps {
		buf = s.appendDigest(buf[:0], LPID(i))
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendDigest appends what LP id adds to the result digest: its id, generator and state.
func (s *Simulation) appendDigest(buf []byte, id LPID) []byte {
	r := &s.lps[id]
	buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
	buf = binary.LittleEndian.AppendUint32(buf, r.rng.D)
	for _, v := range r.rng.V {
		buf = binary.LittleEndian.AppendUint32(buf, v)
	}
	if a, ok := r.model.(StateAppender); ok {
		return a.AppendState(buf)
	}
	return appendValue(buf, r.model.Snapshot(nil))
}

// LP returns the model of LP id, for reading results after Run.
func (s *Simulation) LP(id LPID) LogicalProcess { return s.lps[id].model }

// NumLPs returns the number of LPs.
func (s *Simulation) NumLPs() int { return len(s.lps) }

// recoverModel turns a model panic into a ModelPanicError for the LP being run.
func recoverModel(r any, s *Simulation, lp LPID, now Time, init bool) error {
	return &ModelPanicError{LP: lp, LPName: s.nameOf(lp), Time: now, Init: init, Value: r,
		Stack: debug.Stack()}
}
