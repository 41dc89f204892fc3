package study

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/sample/chart"
)

// fakeCatalog has one model, "toy", with flags n (int), rate (float) and name (string).
type fakeCatalog struct{}

func (fakeCatalog) Flags(model string) (*pflag.FlagSet, error) {
	if model != "toy" {
		return nil, UnknownModel(model, []string{"toy"})
	}
	fs := pflag.NewFlagSet("toy", pflag.ContinueOnError)
	fs.Int("n", 1, "")
	fs.Float64("rate", 1, "")
	fs.String("name", "", "")
	fs.Float64("max-sim-time", 1, "")
	fs.Uint64("seed", 1, "")
	fs.String("simulation-type", "sequential", "")
	fs.Int("time-warp-worker-threads", 1, "")
	return fs, nil
}

func (fakeCatalog) ResultKeys(string) []string { return []string{"a", "b"} }

func (fakeCatalog) Program() string { return "toysim" }

func (fakeCatalog) StatsKeys() []string { return []string{"efficiency", "events_committed"} }

func (fakeCatalog) Labels(string) map[string]chart.Label {
	return map[string]chart.Label{"a": {Text: "Alpha count", Unit: "calls"}, "rate": {Text: "arrival rate", Unit: "1/s"}}
}

// toyRun is a deterministic function of the run's flags, except the execution flags.
func toyRun(_ context.Context, model string, args []string, _ gpuoffload.Backend) (Outcome, error) {
	var keep []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--simulation-type=") && !strings.HasPrefix(a, "--time-warp-worker-threads=") {
			keep = append(keep, a)
		}
	}
	h := sha256.Sum256([]byte(model + " " + strings.Join(keep, " ")))
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(h[8*i:]) }
	return Outcome{Results: map[string]float64{"a": float64(u(0) % 1000), "b": float64(u(1) % 7)},
		Digest: fmt.Sprintf("%x", h[:8]), Events: u(2) % 10000, WallSeconds: float64(u(3)%1000) / 1000}, nil
}

var types = []string{"sequential", "time-warp"}

const toySpec = `
model: toy
flags:
  max-sim-time: 10
parameters:
  n: {from: 1, to: 3, step: 1}
  rate: [0.5, 1.5]
replications: 5
seed: 7
`

func parseToy(t *testing.T, src string) *Spec {
	t.Helper()
	s, err := Parse([]byte(src), "toy.yaml", fakeCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseGrid(t *testing.T) {
	s := parseToy(t, toySpec)
	if got, want := fmt.Sprint(s.Points), "[[1 0.5] [1 1.5] [2 0.5] [2 1.5] [3 0.5] [3 1.5]]"; got != want {
		t.Fatalf("points %s, want %s", got, want)
	}
	if fmt.Sprint(s.Results) != "[a b]" || s.Replications != 5 || s.Seed != 7 {
		t.Fatalf("spec %+v", s)
	}
	runs := s.Runs()
	if len(runs) != 30 || runs[6].Key() != "--max-sim-time=10 --n=1 --rate=1.5 --seed=8" {
		t.Fatalf("%d runs, run 6 is %q", len(runs), runs[6].Key())
	}
	s = parseToy(t, `{"model": "toy", "parameters": {"rate": {"from": 1, "to": 100, "count": 3, "scale": "log"}}, "results": ["b"]}`)
	if got := fmt.Sprint(s.Points); got != "[[1] [10] [100]]" {
		t.Fatalf("log range: %s", got)
	}
	s = parseToy(t, `{"model": "toy", "parameters": {"rate": {"from": 0, "to": 1, "count": 5}}, "results": ["b"]}`)
	if got := fmt.Sprint(s.Points); got != "[[0] [0.25] [0.5] [0.75] [1]]" {
		t.Fatalf("a count between integer bounds of a real flag: %s", got)
	}
	s = parseToy(t, "model: toy\npoints:\n  - {n: 2, name: x}\n  - {n: 5, name: y}\n")
	if got := fmt.Sprint(s.Params, s.Points); got != "[n name] [[2 x] [5 y]]" {
		t.Fatalf("points: %s", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"model: nope\n", "toy.yaml:1: unknown model \"nope\""},
		{"flags: {n: 1}\n", "missing key 'model'"},
		{"model: toy\nparameters:\n  bogus: [1, 2]\n", "toy.yaml:3: model toy has no flag \"bogus\"; run 'toysim help toy' for the flags"},
		{"model: toy\nparameters:\n  n: []\n", "toy.yaml:3: parameter \"n\": empty list"},
		{"model: toy\nparameters:\n  n: {from: 5, to: 1, step: 1}\n", "toy.yaml:3: parameter \"n\": empty range"},
		{"model: toy\nparameters:\n  n: [1, x]\n", "toy.yaml:3: bad value \"x\" for n"},
		{"model: toy\nflags:\n  rate: fast\n", "toy.yaml:3: bad value \"fast\" for rate"},
		{"model: toy\nflags:\n  seed: 3\n", "toy.yaml:3: flag \"seed\" cannot be given"},
		{"model: toy\nreplications: 0\n", "toy.yaml:2: replications must be an integer"},
		{"model: toy\nresults: [c]\n", "toy.yaml:2: model toy has no result \"c\""},
		{"model: toy\ncolour: red\n", "toy.yaml:2: unknown key \"colour\""},
		{"model: toy\nparameters: {n: [1]}\npoints: [{n: 1}]\n", "toy.yaml:3: give either"},
		{"model: toy\npoints:\n  - {n: 1}\n  - {rate: 2}\n", "toy.yaml:4: point 2 sets rate"},
		{"model: toy\nexecution: {jobs: -1}\n", "toy.yaml:2: execution.jobs must be"},
		{"model: [toy\n", "toy.yaml: not YAML or JSON"},
		{"model: toy\nparameters:\n  n: {from: 0, to: 1, count: 5}\n", "toy.yaml:3: parameter \"n\" takes integers: 5 values from 0 to 1 repeat"},
		{"model: toy\nparameters:\n  rate: {from: 1, to: 1, count: 2}\n", "parameter \"rate\": the range repeats values"},
		{"model: toy\nparameters:\n  n: [1, 2]\nplot: {x: rate}\n", "toy.yaml:4: plot.x is \"rate\", which is not a parameter (the parameters: n)"},
		{"model: toy\nparameters:\n  name: [a, b]\nplot: {x: name}\n", "toy.yaml:4: plot.x is \"name\", whose value \"a\" is not a number"},
		{"model: toy\nparameters:\n  rate: [25, 50, 25.0]\n", "toy.yaml:3: parameter \"rate\" lists 25 twice (values 1 and 3)"},
		{"model: toy\nparameters:\n  name: [a, b, b]\n", "toy.yaml:3: parameter \"name\" lists b twice (values 2 and 3)"},
		{"model: toy\npoints:\n  - {n: 1, rate: 2}\n  - {n: 2, rate: 2}\n  - {n: 1, rate: 2.0}\n", "toy.yaml:5: point 3 repeats point 1"},
		{"model: toy\nparameters:\n  n: {from: 1, to: 1000000, step: 1}\n  rate: {from: 1, to: 1000000, step: 1}\n", "more than 1000000 points (1000000 x 1000000 values)"},
		{"model: toy\nparameters:\n  n: {from: 1, to: 1000, step: 1}\nreplications: 10000\n", "1000 points x 10000 replications is more than 1000000 runs"},
	} {
		_, err := Parse([]byte(c.src), "toy.yaml", fakeCatalog{})
		if err == nil {
			t.Errorf("%q: no error, want %q", c.src, c.want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%q: error %q, want one line with %q", c.src, msg, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 3})
	// t(0.975, 1 d.f.) = 12.7062047361747; std = sqrt(2); half width = t * std / sqrt(2).
	if s.Mean != 2 || math.Abs(s.Std-math.Sqrt2) > 1e-12 || math.Abs(s.CIHigh-2-12.7062047361747) > 1e-9 {
		t.Fatalf("%+v", s)
	}
	if s := Summarize([]float64{4}); s.Mean != 4 || !math.IsNaN(s.CILow) {
		t.Fatalf("one value: %+v", s)
	}
}

// tables writes st's tables into dir and returns them by name, but provenance.json.
func tables(t *testing.T, st *Study, dir string) map[string]string {
	t.Helper()
	paths, err := st.WriteTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		if filepath.Base(p) == ProvenanceJSON {
			continue // the execution of this process's runs: not the same after a resume
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

func TestExecuteMatchesRunsOneByOne(t *testing.T) {
	s := parseToy(t, toySpec)
	st, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types, Cores: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Runs {
		want, _ := toyRun(context.Background(), "toy", r.Args, nil)
		if got := st.Outcomes[r.Index]; got.Digest != want.Digest || got.Results["a"] != want.Results["a"] {
			t.Fatalf("run %d: %+v, want %+v", r.Index, got, want)
		}
	}
	if st.Plan.Jobs != 4 || st.Plan.SimulationType != "sequential" {
		t.Fatalf("plan %+v, want 4 sequential jobs", st.Plan)
	}
	tab := tables(t, st, t.TempDir())
	if !strings.HasPrefix(tab[SummaryCSV], "point,n,rate,result,n,mean,std,ci95_low,ci95_high,ci95_half_width\n") ||
		strings.Count(tab[SummaryCSV], "\n") != 1+6*2 || strings.Count(tab[RunsCSV], "\n") != 1+30 {
		t.Fatalf("tables:\n%s\n%s", tab[SummaryCSV], tab[RunsCSV])
	}
	if _, ok := tab["plot-a.png"]; !ok {
		t.Fatalf("no plot of a: %v", len(tab))
	}
}

// TestExecuteNeedsTypes: Options without the kernel's simulation types is a settings error,
// not a panic.
func TestExecuteNeedsTypes(t *testing.T) {
	s := parseToy(t, toySpec)
	_, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir()})
	var se *SettingsError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "give it kernel.Types()") {
		t.Fatalf("Execute without Types: %v, want a SettingsError naming kernel.Types()", err)
	}
}

// TestResumeAfterInterrupt interrupts a study after a random number of runs, resumes
// it, and checks that the tables equal those of an uninterrupted study.
func TestResumeAfterInterrupt(t *testing.T) {
	s := parseToy(t, toySpec)
	whole, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types, Cores: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := tables(t, whole, t.TempDir())
	rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	for trial := range 4 {
		dir := t.TempDir()
		stopAt := int64(1 + rnd.IntN(len(whole.Runs)-1))
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		interrupting := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
			if calls.Add(1) > stopAt {
				cancel()
			}
			if ctx.Err() != nil {
				return Outcome{}, ctx.Err()
			}
			return toyRun(ctx, model, args, be)
		}
		_, err := Execute(ctx, s, interrupting, Options{Out: dir, Types: types, Cores: 3})
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("trial %d: interrupted study returned %v", trial, err)
		}
		if trial%2 == 1 { // a crash while writing a line
			f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"key":"--max-sim-ti`)
			f.Close()
		}
		if _, err := Execute(context.Background(), s, toyRun, Options{Out: dir, Types: types}); err == nil {
			t.Fatalf("trial %d: a second study into the same --out without --resume did not fail", trial)
		}
		var ran atomic.Int64
		counting := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
			ran.Add(1)
			return toyRun(ctx, model, args, be)
		}
		st, err := Execute(context.Background(), s, counting, Options{Out: dir, Resume: true, Types: types, Cores: 3})
		if err != nil {
			t.Fatalf("trial %d: resume: %v", trial, err)
		}
		if int(ran.Load())+st.Resumed != len(st.Runs) || st.Resumed == 0 {
			t.Fatalf("trial %d: resumed %d and ran %d of %d runs", trial, st.Resumed, ran.Load(), len(st.Runs))
		}
		got := tables(t, st, t.TempDir())
		for name, w := range want {
			if got[name] != w {
				t.Fatalf("trial %d (stopped after %d runs): %s differs after resume", trial, stopAt, name)
			}
		}
	}
}

// TestResumeAnotherStudy: --resume with a journal none of whose runs is in the spec (the
// spec was edited, or --out names another study's directory) is refused, and one that
// holds some of the spec's runs resumes them and says how many it leaves out.
func TestResumeAnotherStudy(t *testing.T) {
	dir := t.TempDir()
	if _, err := Execute(context.Background(), parseToy(t, toySpec), toyRun, Options{Out: dir, Types: types}); err != nil {
		t.Fatal(err)
	}
	other := parseToy(t, strings.Replace(toySpec, "seed: 7", "seed: 70", 1))
	_, err := Execute(context.Background(), other, toyRun, Options{Out: dir, Resume: true, Types: types})
	var se *SettingsError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "none of the 30 runs in the journal") {
		t.Fatalf("resume of another study's journal: got %v, want a SettingsError saying none of its 30 runs is in the spec", err)
	}
	fewer := parseToy(t, strings.Replace(toySpec, "rate: [0.5, 1.5]", "rate: [0.5]", 1))
	var log strings.Builder
	st, err := Execute(context.Background(), fewer, toyRun, Options{Out: dir, Resume: true, Types: types, Log: &log})
	if err != nil || st.Resumed != 15 {
		t.Fatalf("resume of a narrowed spec: resumed %v, err %v; want 15 resumed", st, err)
	}
	if !strings.Contains(log.String(), "study: 15 runs in the journal are not runs of this spec") {
		t.Fatalf("the log does not say which runs were left out: %q", log.String())
	}
}

func TestAutoChoosesTimeWarpForFewLongRuns(t *testing.T) {
	s := parseToy(t, "model: toy\nreplications: 3\n")
	slow := func(ctx context.Context, model string, args []string, be gpuoffload.Backend) (Outcome, error) {
		out, err := toyRun(ctx, model, args, be)
		out.WallSeconds = 2 * pilotSeconds // as measured by the run
		return out, err
	}
	st, err := Execute(context.Background(), s, slow, Options{Out: t.TempDir(), Types: types, Cores: 8})
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan.SimulationType != "time-warp" || st.Plan.Jobs != 2 || st.Plan.Workers != 4 {
		t.Fatalf("plan %+v, want 2 time-warp jobs of 4 workers", st.Plan)
	}
	if _, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types,
		Execution: Execution{SimulationType: "optimistic"}}); err == nil || !strings.Contains(err.Error(), "unknown simulation type") {
		t.Fatalf("bad simulation type: %v", err)
	}
}
