package study

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeDevice groups the toy's runs by their end time (--max-sim-time) and --name, gives
// each run toy.n LPs, runs a group as toyRun runs each of its runs, and records the groups.
type fakeDevice struct {
	groups [][]string   // each loop's runs, by key
	open   atomic.Int64 // prepared runs not closed
	fail   string       // a --name whose runs Prepare refuses
}

type fakeRun struct {
	d    *fakeDevice
	args []string
	key  string
	lps  int
}

func (r *fakeRun) Key() string { return r.key }
func (r *fakeRun) LPs() int    { return r.lps }
func (r *fakeRun) Close()      { r.d.open.Add(-1) }

func (*fakeDevice) Type() string { return "gpu" }

func (d *fakeDevice) Prepare(model string, args []string) (DeviceRun, error) {
	r := &fakeRun{d: d, args: args, lps: 1}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--max-sim-time="), strings.HasPrefix(a, "--name="):
			r.key += a + " "
		case strings.HasPrefix(a, "--n="):
			fmt.Sscan(strings.TrimPrefix(a, "--n="), &r.lps)
		}
		if d.fail != "" && a == "--name="+d.fail {
			return nil, errors.New("model toy has no device code")
		}
	}
	d.open.Add(1)
	return r, nil
}

func (d *fakeDevice) RunGroup(ctx context.Context, runs []DeviceRun) ([]Outcome, error) {
	var keys []string
	outs := make([]Outcome, len(runs))
	for i, p := range runs {
		r := p.(*fakeRun)
		if r.key != runs[0].Key() {
			return nil, fmt.Errorf("group of keys %q and %q", runs[0].Key(), r.key)
		}
		keys = append(keys, strings.Join(r.args, " "))
		outs[i], _ = toyRun(ctx, "toy", r.args, nil)
	}
	d.groups = append(d.groups, keys)
	return outs, nil
}

var deviceTypes = []string{"sequential", "time-warp", "gpu"}

// TestDeviceGroups checks that a study's runs of the device's type run several to a
// loop: grouped by key (a run of another end time in its own loop), split by the bound
// on runs, each outcome the run's own, every prepared run closed.
func TestDeviceGroups(t *testing.T) {
	const spec = `
model: toy
points:
  - {n: 64, rate: 0.1, max-sim-time: 10}
  - {n: 64, rate: 0.3, max-sim-time: 10}
  - {n: 13, rate: 0.5, max-sim-time: 10}
  - {n: 64, rate: 0.9, max-sim-time: 20}
replications: 2
`
	s := parseToy(t, spec)
	for _, tc := range []struct {
		name   string
		groups int
		sizes  string
	}{
		{"chosen", 0, "[6 2]"},
		{"4 runs a loop", 4, "[4 2 2]"},
		{"one run a loop", 1, "[1 1 1 1 1 1 1 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDevice{}
			st, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
				Execution: Execution{SimulationType: "gpu", GroupRuns: tc.groups}})
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			for _, g := range d.groups {
				sizes = append(sizes, len(g))
			}
			if fmt.Sprint(sizes) != tc.sizes || st.DeviceLoops != len(sizes) {
				t.Fatalf("loops of %v runs (%d counted), want %s: %q", sizes, st.DeviceLoops, tc.sizes, d.groups)
			}
			if tc.groups != 1 && !strings.Contains(d.groups[len(d.groups)-1][0], "--max-sim-time=20") {
				t.Fatalf("the last loop is %q, want the runs that end at 20", d.groups[len(d.groups)-1])
			}
			for _, r := range st.Runs {
				want, _ := toyRun(context.Background(), "toy", r.Args, nil)
				if got := st.Outcomes[r.Index]; got.Digest != want.Digest || got.Results["a"] != want.Results["a"] {
					t.Fatalf("run %d: %+v, want %+v", r.Index, got, want)
				}
			}
			if d.open.Load() != 0 || st.Plan.SimulationType != "gpu" {
				t.Fatalf("%d prepared runs left open; plan %+v", d.open.Load(), st.Plan)
			}
		})
	}
}

// TestDeviceGroupsByLPs checks that, without a bound on runs, a loop holds at most
// groupLPs LPs.
func TestDeviceGroupsByLPs(t *testing.T) {
	s := parseToy(t, fmt.Sprintf("model: toy\nflags: {n: %d}\nreplications: 5\n", groupLPs/2))
	d := &fakeDevice{}
	if _, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
		Execution: Execution{SimulationType: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	if len(d.groups) != 3 || len(d.groups[0]) != 2 || len(d.groups[2]) != 1 {
		t.Fatalf("loops %q, want 2, 2 and 1 runs of half the LPs", d.groups)
	}
}

// TestDeviceGroupsInterleaved checks that runs of two keys in turn are held open at most a
// loop's worth of LPs in all: the fullest group runs when they hold more.
func TestDeviceGroupsInterleaved(t *testing.T) {
	s := parseToy(t, fmt.Sprintf("model: toy\nparameters: {n: [%d, %d], name: [a, b]}\nreplications: 2\n", groupLPs/4, groupLPs/4-1))
	d := &fakeDevice{}
	if _, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
		Execution: Execution{SimulationType: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	var sizes []string
	for _, g := range d.groups {
		sizes = append(sizes, fmt.Sprintf("%d of %s", len(g), strings.Fields(g[0])[1]))
	}
	if got := strings.Join(sizes, ", "); got != "3 of --name=a, 4 of --name=b, 1 of --name=a" {
		t.Fatalf("loops: %s", got)
	}
}

// TestDeviceRefuses checks that a run the device cannot take fails the study with one
// line naming the run, before its loop runs, and that the other types run one by one.
func TestDeviceRefuses(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters: {name: [a, b]}\n")
	d := &fakeDevice{fail: "b"}
	_, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
		Execution: Execution{SimulationType: "gpu"}})
	if err == nil || !strings.Contains(err.Error(), "run 1 (--name=b --seed=1): model toy has no device code") ||
		strings.Contains(err.Error(), "\n") || len(d.groups) != 0 || d.open.Load() != 0 {
		t.Fatalf("error %v; loops %q, %d prepared runs open", err, d.groups, d.open.Load())
	}
	st, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
		Execution: Execution{SimulationType: "sequential"}})
	if err != nil || st.DeviceLoops != 0 || len(d.groups) != 0 {
		t.Fatalf("sequential study: %v, %d loops", err, st.DeviceLoops)
	}
	if _, err := Parse([]byte("model: toy\nexecution: {group-runs: -1}\n"), "toy.yaml", fakeCatalog{}); err == nil ||
		!strings.Contains(err.Error(), "execution.group-runs must be") {
		t.Fatalf("negative group-runs: %v", err)
	}
}

// failingDevice fails the loop's run with a given index in the group.
type failingDevice struct {
	fakeDevice
	run int
}

func (d *failingDevice) RunGroup(ctx context.Context, runs []DeviceRun) ([]Outcome, error) {
	if d.run < len(runs) {
		return nil, &RunError{Run: d.run, Err: errors.New("run failed: LP 3 sent a Go payload")}
	}
	return d.fakeDevice.RunGroup(ctx, runs)
}

// TestDeviceRunErrorNamesTheRun checks that the failure of one run of a loop names that
// run of the study, and any other failure the loop's runs.
func TestDeviceRunErrorNamesTheRun(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters: {rate: [1, 2, 3]}\nreplications: 2\n")
	d := &failingDevice{run: 3}
	_, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: deviceTypes, Device: d,
		Execution: Execution{SimulationType: "gpu"}})
	if err == nil || err.Error() != "run 3 (--rate=2 --seed=2): run failed: LP 3 sent a Go payload" {
		t.Fatalf("error %v", err)
	}
}

// cancellingDevice cancels the study's context in its second loop, as Ctrl-C would.
type cancellingDevice struct {
	fakeDevice
	cancel func()
}

func (d *cancellingDevice) RunGroup(ctx context.Context, runs []DeviceRun) ([]Outcome, error) {
	if len(d.groups) == 1 {
		d.cancel()
		return nil, ctx.Err()
	}
	return d.fakeDevice.RunGroup(ctx, runs)
}

// TestDeviceInterruptAndResume interrupts a study in its second device loop: the first
// loop's runs are in the journal, and --resume runs the rest, in loops again.
func TestDeviceInterruptAndResume(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters: {rate: [1, 2, 3]}\nreplications: 2\n")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &cancellingDevice{cancel: cancel}
	ex := Execution{SimulationType: "gpu", GroupRuns: 2}
	_, err := Execute(ctx, s, toyRun, Options{Out: dir, Types: deviceTypes, Device: d, Execution: ex})
	if !errors.Is(err, ErrInterrupted) || d.open.Load() != 0 {
		t.Fatalf("interrupted study: %v, %d prepared runs open", err, d.open.Load())
	}
	again := &fakeDevice{}
	st, err := Execute(context.Background(), s, toyRun, Options{Out: dir, Types: deviceTypes, Device: again, Execution: ex, Resume: true})
	if err != nil || st.Resumed != 2 || len(again.groups) != 2 || st.DeviceLoops != 2 {
		t.Fatalf("resumed study: %v, %d resumed, loops %q", err, st.Resumed, again.groups)
	}
	for _, r := range st.Runs {
		want, _ := toyRun(context.Background(), "toy", r.Args, nil)
		if st.Outcomes[r.Index].Digest != want.Digest {
			t.Fatalf("run %d: digest %s, want %s", r.Index, st.Outcomes[r.Index].Digest, want.Digest)
		}
	}
}
