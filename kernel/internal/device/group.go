package device

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Key returns what the simulations that share one device loop (RunGroup) have in
// common: the device code (not its parameters' values), the end time and the device
// options. It fails as Run would when an LP of s has no device code.
func Key(s *core.Sim) (string, error) {
	m, _, err := deviceModels(s)
	if err != nil {
		return "", err
	}
	g := &s.Cfg.GPU
	return fmt.Sprintf("%s %x save=%t state=%d out=%d words=%t params=%d end=%x device=%d slots=%d bound=%x executions=%d inactivity=%x buffer=%d",
		m.Name, sha256.Sum256([]byte(m.Source)), m.SaveState, m.StateWords, m.OutSlots, m.Words, len(m.Params),
		math.Float64bits(s.Cfg.MaxSimTime), g.Device, g.Slots, math.Float64bits(g.Bound), g.Executions,
		math.Float64bits(g.Inactivity), g.Buffer), nil
}

// RunGroup runs the LPs of sims, which share one Key, in one device loop
// (gpuwarp.RunMany) and returns each simulation's totals as Run gives them alone; the
// device loop's figures (iterations, loop time, tuned settings) are the shared loop's.
// The first simulation's options are the loop's.
func RunGroup(ctx context.Context, sims []*core.Sim) ([]core.Stats, error) {
	ms := make([]*gpuwarp.Model, len(sims))
	ins := make([]gpuwarp.Input, len(sims))
	lps := make([][]core.DeviceModeler, len(sims))
	var key string
	for i, s := range sims {
		k, err := Key(s)
		if err == nil && i > 0 && k != key {
			err = errors.New("its device code, end time or device options differ from run 0's; group runs by Key")
		}
		if err != nil {
			return nil, &RunError{Run: i, Err: err}
		}
		key = k
	}
	// The runs' Init and packing, and after the loop their unpacking, are independent:
	// on every core, as a study's runs on the CPU.
	if err := each(len(sims), func(i int) (err error) {
		if ms[i], lps[i], err = deviceModels(sims[i]); err == nil {
			ins[i], err = initial(ctx, sims[i], ms[i], lps[i])
		}
		if err != nil {
			return &RunError{Run: i, Err: err}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	outs, err := gpuwarp.RunMany(ctx, ms, ins, options(sims[0]))
	if err != nil {
		return nil, err
	}
	stats := make([]core.Stats, len(sims))
	_ = each(len(sims), func(i int) error {
		stats[i] = finish(sims[i], ms[i], lps[i], &outs[i])
		return nil
	})
	return stats, nil
}

// RunError is the error of one simulation of a group, by its index in the group.
type RunError struct {
	Run int
	Err error
}

// Error says which run of the group failed, and why.
func (e *RunError) Error() string { return fmt.Sprintf("run %d of the group: %v", e.Run, e.Err) }

// Unwrap returns why the run failed.
func (e *RunError) Unwrap() error { return e.Err }

// each calls f(0), ..., f(n-1) on every core and returns the error of the least i that
// failed.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
