package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/study"
)

// summary is the line a study prints about its loops.
func (d *studyDevice) summary(runs, loops int) string {
	s := fmt.Sprintf("device: %d runs in %d device loop(s): %d events committed in %.3f s (%.1f M events/s)",
		runs, loops, d.events, d.wall, float64(d.events)/d.wall/1e6)
	if d.loop > 0 {
		s += fmt.Sprintf(", %.3f s of it iterating (%.1f M events/s)", d.loop, float64(d.events)/d.loop/1e6)
	}
	return s
}

// studyDevice runs a study's runs of simulation type gpu several to a device loop
// (study.Device, dispatch.RunGroup), and adds up what the loops did (the study runs one
// loop at a time).
type studyDevice struct {
	c *Command
	// events, wall and loop are the events committed, the loops' wall time (set-up,
	// Init and digests included) and their iterations' time alone.
	events     uint64
	wall, loop float64
}

// Type implements study.Device.
func (*studyDevice) Type() string { return kernel.GPU }

// deviceRun is a study's run built for a device loop.
type deviceRun struct {
	inv     *invocation
	lps     []kernel.LogicalProcess
	sim     *dispatch.Simulation
	key     string
	results []Result // the model's, read as the run ends (finalWithResults)
}

// Key implements study.DeviceRun.
func (r *deviceRun) Key() string { return r.key }

// LPs implements study.DeviceRun.
func (r *deviceRun) LPs() int { return len(r.lps) }

// Close implements study.DeviceRun.
func (r *deviceRun) Close() { r.inv.close() }

// Prepare implements study.Device: it builds the run as 'PROGRAM MODEL ARGS' would.
func (d *studyDevice) Prepare(model string, args []string) (study.DeviceRun, error) {
	inv, lps, cfg, err := d.c.buildForStudy(model, args)
	if err != nil {
		return nil, err
	}
	r := &deviceRun{inv: inv, lps: lps}
	d.c.finalWithResults(inv, &cfg, &r.results)
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
func (d *studyDevice) RunGroup(ctx context.Context, runs []study.DeviceRun) ([]study.Outcome, error) {
	sims := make([]*dispatch.Simulation, len(runs))
	for i, r := range runs {
		sims[i] = r.(*deviceRun).sim
	}
	res, err := dispatch.RunGroup(ctx, sims)
	if ge := (*dispatch.GroupError)(nil); errors.As(err, &ge) {
		return nil, &study.RunError{Run: ge.Sim, Err: fmt.Errorf("run failed: %w", ge.Err)}
	}
	if err != nil {
		return nil, fmt.Errorf("run failed: %w", err)
	}
	d.wall += res[0].WallSeconds
	d.loop += res[0].DeviceLoopSeconds
	outs := make([]study.Outcome, len(runs))
	for i, r := range runs {
		d.events += res[i].EventsCommitted
		dr := r.(*deviceRun)
		outs[i] = studyOutcome(dr.results, res[i])
	}
	return outs, nil
}
