package dispatch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/device"
)

// DeviceGroup returns the key of the device loop that s, of simulation type gpu, can
// share with other simulations (RunGroup): simulations of one key have the same device
// code (their parameters may differ), end time and device options. It fails as Run
// would when an LP has no device code.
func (s *Simulation) DeviceGroup() (string, error) {
	if s.sim.Cfg.Type != kernel.GPU {
		return "", fmt.Errorf("only simulations of type %s share a device loop, not %s", kernel.GPU, s.sim.Cfg.Type)
	}
	return device.Key(s.sim)
}

// GroupError is the error of one simulation of RunGroup's, by its index in sims; an
// error of the loop as a whole is not one.
type GroupError struct {
	Sim int
	Err error
}

// Error says which simulation of the group failed, and why.
func (e *GroupError) Error() string {
	return fmt.Sprintf("simulation %d of the group: %v", e.Sim, e.Err)
}

// Unwrap returns why the simulation failed.
func (e *GroupError) Unwrap() error { return e.Err }

// RunGroup runs sims, simulations of one DeviceGroup key that have not run, in one
// device loop: each is a set of LPs of its own that its events never leave, so each
// result (digest, statistics, the LPs' final states for the model's results) is the one
// its Run gives, except that the wall time is the group's and the device loop's figures
// are the shared loop's. It is how a parameter study runs its runs on the GPU.
func RunGroup(ctx context.Context, sims []*Simulation) ([]kernel.Result, error) {
	if len(sims) == 0 {
		return nil, errors.New("no simulations to run")
	}
	start := time.Now()
	cs := make([]*core.Sim, len(sims))
	for i, s := range sims {
		if s.ran {
			return nil, &GroupError{Sim: i, Err: errors.New("it already ran; build a new one with New")}
		}
		if _, err := s.DeviceGroup(); err != nil {
			return nil, &GroupError{Sim: i, Err: err}
		}
		cs[i] = s.sim
	}
	for i, s := range sims {
		s.ran = true
		if h := s.sim.Cfg.ModelInit; h != nil {
			if err := h(s.models()); err != nil {
				return nil, &GroupError{Sim: i, Err: fmt.Errorf("model init hook: %w", err)}
			}
		}
	}
	stats, err := device.RunGroup(ctx, cs)
	if re := (*device.RunError)(nil); errors.As(err, &re) {
		return nil, &GroupError{Sim: re.Run, Err: re.Err}
	}
	if err != nil {
		return nil, err
	}
	res := make([]kernel.Result, len(sims))
	var g errgroup.Group // the digests, on every core
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, s := range sims {
		g.Go(func() error {
			res[i] = s.result(stats[i], start)
			return nil
		})
	}
	_ = g.Wait()
	for i, s := range sims {
		if h := s.sim.Cfg.ModelFinal; h != nil {
			if err := h(s.models()); err != nil {
				return nil, &GroupError{Sim: i, Err: fmt.Errorf("model final hook: %w", err)}
			}
		}
	}
	return res, nil
}
