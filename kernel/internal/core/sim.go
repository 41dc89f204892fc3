package core

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/warpedgo/warped/rng"
)

// LPRecord is the kernel's per-LP state. It is owned by the dispatcher that runs the LP.
type LPRecord struct {
	Model LogicalProcess
	RNG   rng.XORWOW
	// Seq is the number of events the LP has sent: the next send's sequence number.
	Seq uint64
}

// Sim is a configured set of LPs, as the dispatchers see it: the configuration, the LPs
// and what the run shares between them. kernel.Simulation holds one.
type Sim struct {
	Cfg    Config
	LPs    []LPRecord
	InInit bool // true while Init runs
	// Lookahead is the least delay of a send to another LP (see Lookahead).
	Lookahead Time
	// Committers[id] is LP id's Commit hook (Committer), or nil; the slice is nil when
	// no LP has one.
	Committers []Committer
	// Series[id] are LP id's recorded points (Config.RecordSeries; see series.go), or nil.
	Series [][]SeriesRec
	// Laps is the most laps Mattern's token needed in a round this rank initiated (a
	// run across processes; for tests).
	Laps uint32
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
	// with the engine, in one process or with one worker per process; see the
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

// NewSim checks the configuration and the LPs and returns a Sim ready to run. check, when
// not nil, is called for each LP after its name is checked (kernel checks the state types of
// LPs that embed Plain there).
func NewSim(cfg Config, lps []LogicalProcess, check func(name string, lp LogicalProcess) error) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The dispatchers compare receive times with MaxSimTime alone.
	cfg.MaxSimTime, cfg.EndInclusive = cfg.Bound(), false
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
	s := &Sim{Cfg: cfg, LPs: make([]LPRecord, len(lps))}
	if cfg.RecordSeries {
		s.Series = make([][]SeriesRec, len(lps))
	}
	names := make(map[string]int, len(lps))
	for i, lp := range lps {
		if lp == nil {
			return nil, fmt.Errorf("LP %d is nil", i)
		}
		name := lp.Name()
		if j, dup := names[name]; dup {
			return nil, fmt.Errorf("duplicate LP name %q (ids %d and %d); LP names must be unique", name, j, i)
		}
		names[name] = i
		if check != nil {
			if err := check(name, lp); err != nil {
				return nil, err
			}
		}
		if cfg.Type == TimeWarp && cfg.TimeWarp.StateSaving == StateSavingReverse {
			if _, ok := lp.(Reverser); !ok {
				return nil, fmt.Errorf("time-warp state-saving type reverse needs every LP to implement Reverse; LP %q (id %d) does not", name, i)
			}
			if !CanReverse(lp) {
				return nil, fmt.Errorf("time-warp state-saving type reverse: LP %q (id %d) cannot reverse its events in this configuration; use periodic", name, i)
			}
		}
		s.LPs[i] = LPRecord{Model: lp, RNG: rng.New(cfg.Seed, uint64(i))}
		if c, ok := lp.(Committer); ok {
			if s.Committers == nil {
				s.Committers = make([]Committer, len(lps))
			}
			s.Committers[i] = c
		}
	}
	if cfg.Type == TimeWarp {
		s.Cfg.TimeWarp.StateSaving = resolveStateSaving(cfg.TimeWarp, lps)
	}
	la, err := lookaheadOf(lps)
	if err != nil {
		return nil, err
	}
	s.Lookahead = la
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
		if !CanReverse(lp) {
			return StateSavingPeriodic
		}
	}
	return StateSavingReverse
}

// NameOf returns the name of LP id, or a placeholder for an unknown id.
func (s *Sim) NameOf(id LPID) string {
	if int(id) < len(s.LPs) {
		return s.LPs[id].Model.Name()
	}
	return fmt.Sprintf("<unknown %d>", id)
}

// Digest hashes every LP's id, generator and state in LP order.
func (s *Sim) Digest() string {
	h := sha256.New()
	var buf []byte
	for i := range s.LPs {
		buf = s.AppendDigest(buf[:0], LPID(i))
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AppendDigest appends what LP id adds to the result digest: its id, generator and state.
func (s *Sim) AppendDigest(buf []byte, id LPID) []byte {
	r := &s.LPs[id]
	buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
	buf = binary.LittleEndian.AppendUint32(buf, r.RNG.D)
	for _, v := range r.RNG.V {
		buf = binary.LittleEndian.AppendUint32(buf, v)
	}
	if a, ok := r.Model.(StateAppender); ok {
		return a.AppendState(buf)
	}
	return AppendValue(buf, r.Model.Snapshot(nil))
}

// RecoverModel turns a model panic into a ModelPanicError for the LP being run.
func RecoverModel(r any, s *Sim, lp LPID, now Time, init bool) error {
	return &ModelPanicError{LP: lp, LPName: s.NameOf(lp), Time: now, Init: init, Value: r,
		Stack: debug.Stack()}
}
