package app

import (
	"context"
	"fmt"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/study"
)

// studyDevice runs a study's runs of simulation type gpu several to a device loop
// (study.Device, dispatch.RunGroup).
type studyDevice struct{ c *Command }

// Type implements study.Device.
func (studyDevice) Type() string { return kernel.GPU }

// deviceRun is a study's run built for a device loop.
type deviceRun struct {
	inv *invocation
	lps []kernel.LogicalProcess
	sim *dispatch.Simulation
	key string
}

// Key implements study.DeviceRun.
func (r *deviceRun) Key() string { return r.key }

// LPs implements study.DeviceRun.
func (r *deviceRun) LPs() int { return len(r.lps) }

// Close implements study.DeviceRun.
func (r *deviceRun) Close() { r.inv.close() }

// Prepare implements study.Device: it builds the run as 'PROGRAM MODEL ARGS' would.
func (d studyDevice) Prepare(model string, args []string) (study.DeviceRun, error) {
	inv, lps, cfg, err := d.c.buildForStudy(model, args)
	if err != nil {
		return nil, err
	}
	r := &deviceRun{inv: inv, lps: lps}
	if r.sim, err = dispatch.New(cfg, lps); err == nil {
		r.key, err = r.sim.DeviceGroup()
	}
	if err != nil {
		inv.close()
		return nil, err
	}
	return r, nil
}

// RunGroup implements study.Device.
func (d studyDevice) RunGroup(ctx context.Context, runs []study.DeviceRun) ([]study.Outcome, error) {
	sims := make([]*dispatch.Simulation, len(runs))
	for i, r := range runs {
		sims[i] = r.(*deviceRun).sim
	}
	res, err := dispatch.RunGroup(ctx, sims)
	if err != nil {
		return nil, fmt.Errorf("run failed: %w", err)
	}
	outs := make([]study.Outcome, len(runs))
	for i, r := range runs {
		dr := r.(*deviceRun)
		outs[i] = d.c.studyOutcome(dr.inv, dr.lps, res[i])
	}
	return outs, nil
}
