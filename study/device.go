package study

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Device runs the runs of one simulation type several to a device loop: the runs that
// share the loop's device code, end time and device options (a Key) become disjoint sets
// of LPs of one simulation on the device, so that one iteration advances all of them and
// the device and its set-up are paid once (the multi-level parallelism of a parameter
// study; package gpuwarp, RunMany).
type Device interface {
	// Type is the simulation type whose runs share loops.
	Type() string
	// Prepare builds the run of model with the command-line flags args, without running
	// it; it is called from several goroutines at once. An error says in one line why
	// the run cannot run on the device (its model has no device code).
	Prepare(model string, args []string) (DeviceRun, error)
	// RunGroup runs runs, all of one Key, in one device loop and returns their outcomes
	// in order; each is the outcome the run has alone, but for its wall time, which is
	// the loop's. An error of one run is a *RunError.
	RunGroup(ctx context.Context, runs []DeviceRun) ([]Outcome, error)
}

// RunError is Device.RunGroup's error of one of its runs, by its index in the group.
type RunError struct {
	Run int
	Err error
}

// Error says which run of the loop failed, and why.
func (e *RunError) Error() string { return fmt.Sprintf("run %d of the device loop: %v", e.Run, e.Err) }

// Unwrap returns why the run failed.
func (e *RunError) Unwrap() error { return e.Err }

// DeviceRun is a run that Device built.
type DeviceRun interface {
	// Key is the same for the runs that can share a device loop.
	Key() string
	// LPs is the run's number of LPs.
	LPs() int
	// Close releases what the run holds, after its loop or instead of one.
	Close()
}

// MaxGroupRuns is the most runs one device loop may hold (Execution.GroupRuns).
const MaxGroupRuns = 1 << 16

// groupLPs is the most LPs a device loop holds when Execution.GroupRuns leaves it to the
// study: the paper's largest PHOLD (2^20 LPs), where the loop ran at its best rate on an
// H100 (docs/PERFORMANCE.md), in about 3 GiB of PHOLD's lists and buffers. A run of more
// LPs has a loop of its own.
const groupLPs = 1 << 20

// group is the runs of one key waiting for their loop.
type group struct {
	key  string
	runs []Run
	prep []DeviceRun
	lps  int
}

// groups runs pending on sch.o.Device: it builds the runs (o.Cores at once), puts each in
// plan order in the open group of its key, and runs a group in one loop when it is full
// (GroupRuns runs, or groupLPs LPs) or when the open groups hold more than groupLPs LPs in
// all (the fullest), then the groups left in the order they opened. One loop runs at a
// time: it has the device to itself.
func (sch *scheduler) groups(ctx context.Context, pending []Run, plan Plan) error {
	limit := sch.ex.GroupRuns
	if limit == 0 {
		limit = MaxGroupRuns
	}
	sch.st.Plan = plan
	fmt.Fprintf(sch.o.Log, "study: %d runs to do, %s, several to a device loop (%s)\n", len(pending), plan.SimulationType, groupBound(sch.ex.GroupRuns))
	var open []*group
	defer func() {
		for _, g := range open {
			closeAll(g.prep)
		}
	}()
	flush := func(i int) error {
		g := open[i]
		open = append(open[:i], open[i+1:]...)
		return sch.runGroup(ctx, g)
	}
	// Runs are built o.Cores at once, then grouped in plan order.
	for len(pending) > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: resume it with --resume", ErrInterrupted)
		}
		batch := pending[:min(len(pending), max(1, sch.o.Cores))]
		pending = pending[len(batch):]
		preps, err := sch.prepare(batch, plan)
		if err != nil {
			return err
		}
		for k, r := range batch {
			p := preps[k]
			i := 0
			for i < len(open) && open[i].key != p.Key() {
				i++
			}
			if i < len(open) && sch.ex.GroupRuns == 0 && open[i].lps+p.LPs() > groupLPs {
				if err := flush(i); err != nil {
					closeAll(preps[k:])
					return err
				}
				i = len(open)
			}
			if i == len(open) {
				open = append(open, &group{key: p.Key()})
			}
			g := open[i]
			g.runs, g.prep, g.lps = append(g.runs, r), append(g.prep, p), g.lps+p.LPs()
			if len(g.runs) == limit {
				if err := flush(i); err != nil {
					closeAll(preps[k+1:])
					return err
				}
			}
			// The open groups hold their runs' models in host memory: a loop's worth of
			// LPs in all (or one group's), the fullest run first when several keys
			// interleave.
			for len(open) > 1 && openLPs(open) > groupLPs {
				if err := flush(fullest(open)); err != nil {
					closeAll(preps[k+1:])
					return err
				}
			}
		}
	}
	for len(open) > 0 {
		if err := flush(0); err != nil {
			return err
		}
	}
	return nil
}

// prepare builds runs on every core; it fails with the first run's error in plan order,
// having closed the runs it built.
func (sch *scheduler) prepare(runs []Run, plan Plan) ([]DeviceRun, error) {
	preps := make([]DeviceRun, len(runs))
	errs := make([]error, len(runs))
	var g errgroup.Group
	for k, r := range runs {
		g.Go(func() error {
			preps[k], errs[k] = sch.o.Device.Prepare(sch.spec.Model, sch.args(r, plan))
			return nil
		})
	}
	_ = g.Wait()
	for k, err := range errs {
		if err != nil {
			closeAll(preps)
			return nil, fmt.Errorf("run %d (%s): %w", runs[k].Index, runs[k].Key(), err)
		}
	}
	return preps, nil
}

// closeAll closes the runs of preps that were built.
func closeAll(preps []DeviceRun) {
	for _, p := range preps {
		if p != nil {
			p.Close()
		}
	}
}

// openLPs returns the LPs of the open groups.
func openLPs(open []*group) int {
	n := 0
	for _, g := range open {
		n += g.lps
	}
	return n
}

// fullest returns the index of the open group of most LPs, the first of them.
func fullest(open []*group) int {
	f := 0
	for i, g := range open {
		if g.lps > open[f].lps {
			f = i
		}
	}
	return f
}

// groupBound says how big a device loop may be.
func groupBound(runs int) string {
	if runs == 0 {
		return fmt.Sprintf("up to %d LPs a loop", groupLPs)
	}
	return fmt.Sprintf("up to %d runs a loop", runs)
}

// runGroup runs g in one device loop, then journals and records each run's outcome.
func (sch *scheduler) runGroup(ctx context.Context, g *group) error {
	outs, err := sch.o.Device.RunGroup(ctx, g.prep)
	closeAll(g.prep)
	g.prep = nil
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: resume it with --resume", ErrInterrupted)
		}
		if re := (*RunError)(nil); errors.As(err, &re) && re.Run >= 0 && re.Run < len(g.runs) {
			r := g.runs[re.Run]
			return fmt.Errorf("run %d (%s): %w", r.Index, r.Key(), re.Err)
		}
		return fmt.Errorf("the device loop of runs %s: %w", runList(g.runs), err)
	}
	sch.st.DeviceLoops++
	for i, r := range g.runs {
		if err := sch.record(r, outs[i]); err != nil {
			return err
		}
	}
	return nil
}

// runList names runs by index, the first few and the count.
func runList(runs []Run) string {
	var b strings.Builder
	for i, r := range runs {
		if i == 4 {
			fmt.Fprintf(&b, " ... (%d runs)", len(runs))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r.Index))
	}
	return b.String()
}
