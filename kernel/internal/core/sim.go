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

	"github.com/warpedgo/warped/kernel/internal/canon"
	"github.com/warpedgo/warped/kernel/internal/frame"
	"github.com/warpedgo/warped/rng"
)

// LPRecord is the kernel's per-LP state. It is owned by the dispatcher that runs the LP.
type LPRecord struct {
	Model LogicalProcess
	// LPState is the LP's generator (RNG) and send sequence number (Seq), which its
	// Context's frame points at while it runs.
	frame.LPState
}

// Sim is a configured set of LPs, as the dispatchers see it: the configuration, the LPs
// and what the run shares between them. dispatch.Simulation holds one.
type Sim struct {
	Cfg Config
	LPs []LPRecord
	// Shared is what the LPs' Contexts see of the simulation: InInit (set while Init
	// runs), the recorded Series (Config.RecordSeries; see series.go) and the LPs' names.
	frame.Shared
	// Lookahead is the least delay of a send to another LP (see Lookahead).
	Lookahead Time
	// Committers[id] is LP id's Commit hook (Committer), or nil; the slice is nil when
	// no LP has one.
	Committers []Committer
	// Laps is the most laps Mattern's token needed in a round this rank initiated (a
	// run across processes; for tests).
	Laps uint32
	// TQWaiting is the most boundaries the TQ-GVT master held reported by some ranks and
	// not yet by all (rank 0 of a run across processes with TQ-GVT; for tests).
	TQWaiting int
}

// NewSim checks the configuration and the LPs and returns a Sim ready to run. check, when
// not nil, is called for each LP after its name is checked (dispatch checks the state types of
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
	s.Names = s
	if cfg.RecordSeries {
		s.Series = make([][]frame.SeriesRec, len(lps))
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
		s.LPs[i] = LPRecord{Model: lp, LPState: frame.LPState{RNG: rng.New(cfg.Seed, uint64(i))}}
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
	return canon.AppendValue(buf, r.Model.Snapshot(nil))
}

// RecoverModel turns a model panic into a ModelPanicError for the LP being run.
func RecoverModel(r any, s *Sim, lp LPID, now Time, init bool) error {
	return &ModelPanicError{LP: lp, LPName: s.NameOf(lp), Time: now, Init: init, Value: r,
		Stack: debug.Stack()}
}
