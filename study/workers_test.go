package study

import (
	"context"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warpedgo/warped/gpuoffload"
)

// TestSpecWorkersAreTheRuns checks that a spec that varies the time-warp workers gets them:
// each run is a time-warp run with its point's workers (the scheduler adds none of its
// own), and the study runs as many at once as the cores hold of the most workers.
func TestSpecWorkersAreTheRuns(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters:\n  time-warp-worker-threads: [1, 2, 4]\nreplications: 2\n")
	var mu sync.Mutex
	got := map[string][]string{} // the point's workers -> the args the runs had
	run := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		var w []string
		for _, a := range args {
			if strings.HasPrefix(a, "--"+WorkersFlag+"=") || strings.HasPrefix(a, "--simulation-type=") {
				w = append(w, a)
			}
		}
		got[strings.Join(w, " ")] = w
		return toyRun(ctx, model, args, be)
	}
	st, err := Execute(context.Background(), s, run, Options{Out: t.TempDir(), Types: types, Cores: 8})
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan.SimulationType != "time-warp" || st.Plan.Jobs != 2 || st.Plan.Workers != 0 {
		t.Fatalf("plan %+v, want time-warp runs, 2 at once (8 cores, 4 workers at most), no workers of the study's", st.Plan)
	}
	want := []string{
		"--time-warp-worker-threads=1 --simulation-type=time-warp",
		"--time-warp-worker-threads=2 --simulation-type=time-warp",
		"--time-warp-worker-threads=4 --simulation-type=time-warp",
	}
	keys := slices.Sorted(maps.Keys(got))
	if !slices.Equal(keys, want) {
		t.Fatalf("the runs' workers and types:\n%s\nwant\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
}

// TestSpecWorkersContradictions checks the settings refused beside a spec's workers: the
// study's own workers, and runs that have none.
func TestSpecWorkersContradictions(t *testing.T) {
	s := parseToy(t, "model: toy\nflags:\n  time-warp-worker-threads: 2\n")
	for _, c := range []struct {
		name string
		ex   Execution
		want string
	}{
		{"workers twice", Execution{Workers: 4}, "keep one"},
		{"sequential runs", Execution{SimulationType: "sequential"}, "set simulation-type time-warp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types, Execution: c.ex})
			var se *SettingsError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a settings error saying %q", err, c.want)
			}
		})
	}
}

// TestUnmeasuredResults checks that a result a run could not measure is blank in runs.csv
// and left out of its point's statistics, not read as 0.
func TestUnmeasuredResults(t *testing.T) {
	s := parseToy(t, "model: toy\nreplications: 3\nresults: [a, b]\n")
	var mu sync.Mutex
	n := 0
	run := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
		out, err := toyRun(ctx, model, args, be)
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 2 { // one replication shared the process
			delete(out.Results, "b")
			out.Unmeasured = []string{"b"}
		}
		return out, err
	}
	st, err := Execute(context.Background(), s, run, Options{Out: t.TempDir(), Types: types, Execution: Execution{Jobs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sum := st.Summary()[0]
	if a, b := sum.Results[0], sum.Results[1]; a.N != 3 || b.N != 2 || math.IsNaN(b.Mean) {
		t.Fatalf("a n=%d, b n=%d mean %v: want 3 of a, 2 of b with a mean", a.N, b.N, b.Mean)
	}
	runs := string(st.RunsCSVBytes())
	if !strings.Contains(runs, ",,") {
		t.Fatalf("runs.csv has no blank for the unmeasured result:\n%s", runs)
	}
}

// TestPlotsLeaveOutUnmeasured checks that a result no run measured has no plot (and does
// not fail the others).
func TestPlotsLeaveOutUnmeasured(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters:\n  n: [1, 2]\nreplications: 2\nresults: [a, b]\n")
	run := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
		out, err := toyRun(ctx, model, args, be)
		delete(out.Results, "b")
		out.Unmeasured = []string{"b"}
		return out, err
	}
	st, err := Execute(context.Background(), s, run, Options{Out: t.TempDir(), Types: types})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := st.WritePlots(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if !slices.Contains(names, "plot-a.png") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "plot-b") }) {
		t.Fatalf("plots %v, want a's and none of b", names)
	}
}
