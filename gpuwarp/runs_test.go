//go:build linux

package gpuwarp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/rng"
)

// TestRunManyPHOLD runs a small parameter study, 8 PHOLD runs of 64 LPs (4 remote
// fractions x 2 seeds), as one device loop (dispatch.RunGroup, gpuwarp.RunMany) and checks
// that every run gives its own sequential digest, results, committed events and final
// time, and that the runs' statistics add up to the loop's.
func TestRunManyPHOLD(t *testing.T) {
	need(t)
	type point struct {
		remote float64
		seed   uint64
		lps    int
	}
	var points []point
	for _, remote := range []float64{0.1, 0.3, 0.5, 0.9} {
		for _, seed := range []uint64{1, 2} {
			points = append(points, point{remote, seed, 64})
		}
	}
	points = append(points, point{1, 3, 13}) // a run of another size
	build := func(p point, typ string, g kernel.GPUConfig) (*dispatch.Simulation, []kernel.LogicalProcess) {
		c := phold.DefaultConfig()
		c.LPs, c.Remote = p.lps, p.remote
		lps, err := phold.New(c)
		require.NoError(t, err)
		s, err := dispatch.New(kernel.Config{MaxSimTime: 15, Seed: p.seed, Type: typ, GPU: g}, lps)
		require.NoError(t, err)
		return s, lps
	}
	for _, g := range []kernel.GPUConfig{{}, {Bound: math.Inf(1), Executions: 3}} {
		t.Run(fmt.Sprintf("bound %v executions %d", g.Bound, g.Executions), func(t *testing.T) {
			sims := make([]*dispatch.Simulation, len(points))
			models := make([][]kernel.LogicalProcess, len(points))
			for i, p := range points {
				sims[i], models[i] = build(p, kernel.GPU, g)
			}
			k0, err := sims[0].DeviceGroup()
			require.NoError(t, err)
			for _, s := range sims[1:] {
				k, err := s.DeviceGroup()
				require.NoError(t, err)
				require.Equal(t, k0, k, "PHOLD runs that differ in their parameters share a loop")
			}
			got, err := dispatch.RunGroup(context.Background(), sims)
			require.NoError(t, err)
			require.Len(t, got, len(points))
			var rolled uint64
			for i, p := range points {
				seq, lps := build(p, kernel.Sequential, kernel.GPUConfig{})
				want, err := seq.Run(context.Background())
				require.NoError(t, err)
				require.Equal(t, want.Digest, got[i].Digest, "run %d (%+v)", i, p)
				require.Equal(t, phold.Summarize(lps), phold.Summarize(models[i]), "run %d (%+v)", i, p)
				require.Equal(t, want.Stats.EventsCommitted, got[i].Stats.EventsCommitted, "run %d", i)
				require.Equal(t, want.Stats.FinalTime, got[i].Stats.FinalTime, "run %d", i)
				require.Equal(t, got[0].Stats.DeviceIterations, got[i].Stats.DeviceIterations, "the loop is shared")
				rolled += got[i].Stats.EventsRolledBack
			}
			t.Logf("%d runs in %d iterations, %d events rolled back", len(points), got[0].Stats.DeviceIterations, rolled)
		})
	}
}

// foldRuns are fold models and inputs of several runs: each its own size, start events,
// seed and ties parameter; lossy ones on the loop's state saving.
func foldRuns(end float64, lossy bool) ([]*gpuwarp.Model, []gpuwarp.Input) {
	var ms []*gpuwarp.Model
	var ins []gpuwarp.Input
	for r, c := range []struct {
		lps, start int
		ties       bool
	}{{40, 6, false}, {17, 3, true}, {1, 2, true}, {33, 8, false}, {24, 2, false}} {
		in := foldInput(c.lps, c.start, end)
		for i := range in.RNG {
			in.RNG[i] = rng.New(uint64(100+r), uint64(i))
		}
		ms, ins = append(ms, foldModel(c.ties, lossy)), append(ins, in)
	}
	return ms, ins
}

// TestRunManyFold checks merged runs of the fold model (payload words, up to two sends,
// zero delays, ties, a parameter that differs by run) against each run's host loop, with
// lists that overflow and put events back in transit, on reverse handlers and on the
// loop's state saving (the lossy fold).
func TestRunManyFold(t *testing.T) {
	need(t)
	for _, tc := range runManyFoldCases {
		t.Run(tc.name, func(t *testing.T) { checkRunManyFold(t, tc) })
	}
}

// TestRunManyFoldThreadOrder runs TestRunManyFold's cases with the stand-in running each
// launch's threads reversed and shuffled (see TestFoldThreadOrder): runs.cu's mapping of
// threads to runs must not depend on their order either.
func TestRunManyFoldThreadOrder(t *testing.T) {
	need(t)
	for _, order := range []string{"reverse", "shuffle:4"} {
		t.Run(order, func(t *testing.T) {
			standin.ThreadOrder(t, order)
			for _, tc := range runManyFoldCases {
				t.Run(tc.name, func(t *testing.T) { checkRunManyFold(t, tc) })
			}
		})
	}
}

// runManyFoldCase is a loop of merged fold runs.
type runManyFoldCase struct {
	name     string
	lossy    bool
	o        gpuwarp.Options
	overflow bool // the lists must overflow and put events back in transit
}

// runManyFoldCases are TestRunManyFold's loops.
var runManyFoldCases = []runManyFoldCase{
	{"tuned", false, gpuwarp.Options{}, false},
	{"8 slots, unbounded", false, gpuwarp.Options{Slots: 8, Bound: math.Inf(1), Executions: 2}, true},
	{"lossy, tuned", true, gpuwarp.Options{}, false},
	{"lossy, 8 slots, unbounded", true, gpuwarp.Options{Slots: 8, Bound: math.Inf(1), Executions: 2}, true},
}

// checkRunManyFold runs tc's loop of 10 fold runs and checks each against its host loop.
func checkRunManyFold(t *testing.T, tc runManyFoldCase) {
	ms, ins := foldRuns(10, tc.lossy)
	outs, err := gpuwarp.RunMany(context.Background(), ms, ins, tc.o)
	require.NoError(t, err)
	require.Len(t, outs, len(ins))
	var returned uint64
	for r, in := range ins {
		wantState, wantGens, committed := foldSequential(in, ms[r].Params[2] == 1, tc.lossy)
		require.Equal(t, wantState, outs[r].State, "run %d", r)
		require.Equal(t, wantGens, outs[r].RNG, "run %d", r)
		require.Equal(t, committed, outs[r].Committed(), "run %d", r)
		returned += outs[r].Returned
	}
	if tc.overflow {
		require.NotZero(t, returned, "the lists never overflowed: the case tests nothing")
	}
}

// TestRunManyRefuses checks that runs which cannot share a loop are refused with a line
// saying why, before anything runs.
func TestRunManyRefuses(t *testing.T) {
	ms, ins := foldRuns(10, false)
	other := *ms[1]
	other.OutSlots = 3
	badEvent := foldInput(4, 1, 10)
	badEvent.Events[0].To = 9
	for _, tc := range []struct {
		name string
		ms   []*gpuwarp.Model
		ins  []gpuwarp.Input
		want string
	}{
		{"no runs", nil, nil, "no runs"},
		{"fewer models", ms[:1], ins[:2], "1 models for 2 inputs"},
		{"other code", []*gpuwarp.Model{ms[0], &other}, ins[:2], "run 1's device model (fold) differs from run 0's"},
		{"other end", ms[:2], []gpuwarp.Input{ins[0], foldInput(3, 1, 11)}, "run 1 ends at 11 and run 0 at 10"},
		{"event out of its run", ms[:2], []gpuwarp.Input{ins[0], badEvent}, "run 1: gpuwarp: initial event 0 goes from LP 0 to LP 9, but there are 4 LPs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gpuwarp.RunMany(context.Background(), tc.ms, tc.ins, gpuwarp.Options{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// payloadLP is a PHOLD LP whose Init sends a Go payload, which the device loop cannot carry.
type payloadLP struct{ *phold.LP }

func (p payloadLP) Init(ctx *kernel.Context) { ctx.Send(ctx.Self(), 1, "payload") }

// TestRunGroupErrorNamesTheRun checks that a group's failure in one simulation (its Init,
// its model init hook) is a dispatch.GroupError naming that simulation.
func TestRunGroupErrorNamesTheRun(t *testing.T) {
	build := func(bad string) []*dispatch.Simulation {
		var sims []*dispatch.Simulation
		for i := range 3 {
			c := phold.DefaultConfig()
			c.LPs = 8
			lps, err := phold.New(c)
			require.NoError(t, err)
			cfg := kernel.Config{MaxSimTime: 5, Seed: uint64(i + 1), Type: kernel.GPU}
			if i == 2 && bad == "init" {
				lps[3] = payloadLP{lps[3].(*phold.LP)}
			}
			if i == 1 && bad == "hook" {
				cfg.ModelInit = func([]kernel.LogicalProcess) error { return errors.New("no input file") }
			}
			s, err := dispatch.New(cfg, lps)
			require.NoError(t, err)
			sims = append(sims, s)
		}
		return sims
	}
	for _, tc := range []struct {
		bad  string
		sim  int
		want string
	}{
		{"init", 2, "LP 3 sent a Go payload (string) from Init"},
		{"hook", 1, "model init hook: no input file"},
	} {
		t.Run(tc.bad, func(t *testing.T) {
			_, err := dispatch.RunGroup(context.Background(), build(tc.bad))
			var ge *dispatch.GroupError
			require.ErrorAs(t, err, &ge)
			require.Equal(t, tc.sim, ge.Sim)
			require.ErrorContains(t, ge.Err, tc.want)
		})
	}
}
