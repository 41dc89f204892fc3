package dispatch

import (
	"context"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/internal/timewarp"
)

// TimeWarpInternals is what the tests see of a finished time-warp run besides its Result.
type TimeWarpInternals struct {
	kernel.Result
	timewarp.Internals
}

// RunTimeWarpInternals builds a simulation from cfg (Type is set to time warp) and lps,
// runs it like Simulation.Run, and reports the dispatcher's internals.
func RunTimeWarpInternals(ctx context.Context, cfg kernel.Config, lps []kernel.LogicalProcess) (TimeWarpInternals, error) {
	return RunTimeWarpInternalsLogMax(ctx, cfg, lps, 0)
}

// RunTimeWarpInternalsLogMax is RunTimeWarpInternals with the engine's history log bound
// set to logMax entries (0: the default).
func RunTimeWarpInternalsLogMax(ctx context.Context, cfg kernel.Config, lps []kernel.LogicalProcess, logMax int) (TimeWarpInternals, error) {
	return RunTimeWarpInternalsTuned(ctx, cfg, lps, timewarp.Tuning{LogMax: logMax})
}

// RunTimeWarpInternalsTuned is RunTimeWarpInternals with the engine's internal bounds set
// by tu.
func RunTimeWarpInternalsTuned(ctx context.Context, cfg kernel.Config, lps []kernel.LogicalProcess, tu timewarp.Tuning) (TimeWarpInternals, error) {
	cfg.Type = kernel.TimeWarp
	s, err := New(cfg, lps)
	if err != nil {
		return TimeWarpInternals{}, err
	}
	s.ran = true
	st, in, err := timewarp.RunInternals(ctx, s.sim, tu)
	if err != nil {
		return TimeWarpInternals{}, err
	}
	return TimeWarpInternals{Result: kernel.Result{Stats: st, Digest: s.sim.Digest()}, Internals: in}, nil
}

// HandleThenReverse handles ev on lp and undoes it as reverse computation does: see
// timewarp.HandleThenReverse.
func HandleThenReverse(lp kernel.LogicalProcess, self kernel.LPID, n int, g kernel.RNG, seq uint64, ev *kernel.Event) (handled, back kernel.RNG, seqHandled, seqBack uint64, sends int) {
	return timewarp.HandleThenReverse(lp, self, n, g, seq, ev)
}

// GVTLaps returns the most laps Mattern's GVT token needed in a round that this rank
// started (rank 0 of a run across processes; 0 otherwise).
func (s *Simulation) GVTLaps() uint32 { return s.sim.Laps }

// TQWaiting returns the most TQ-GVT boundaries rank 0's master held reported by some
// ranks and not yet by all (rank 0 of a run with TQ-GVT; 0 otherwise).
func (s *Simulation) TQWaiting() int { return s.sim.TQWaiting }
