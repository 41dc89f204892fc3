package app

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/study"
)

// readCSV reads a study table.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

// resultLine matches a result line of a run's output: "  Label:   123".
var resultLine = regexp.MustCompile(`(?m)^  ([A-Za-z ]+):\s+(\d+)$`)

// TestStudyMatchesRunsOneByOne runs small studies of PHOLD, PCS and the epidemic, each
// run sequential or with time-warp workers, and checks every run's digest and results
// against the same run done alone by 'warped MODEL'.
func TestStudyMatchesRunsOneByOne(t *testing.T) {
	cases := []struct {
		spec  string
		exec  []string
		label map[string]string // result key -> label in the run's output
	}{
		{"model: phold\nflags: {lps: 32, max-sim-time: 10}\nparameters:\n  remote: [0.1, 0.5]\nreplications: 3\n",
			[]string{"--jobs", "2"}, map[string]string{"events": "Events", "remote_events": "Remote events"}},
		{"model: phold\nflags: {lps: 64, max-sim-time: 20, gpu: cpu}\nparameters:\n  mean: [1, 2]\nreplications: 3\n",
			[]string{"--jobs", "3", "--merge-batches"}, map[string]string{"events": "Events", "remote_events": "Remote events"}},
		{"model: pcs\nflags: {num-cells-x: 4, num-cells-y: 4, max-sim-time: 50}\nparameters:\n  channel-cnt: [5, 10]\nreplications: 2\nseed: 11\n",
			[]string{"--jobs", "2", "--simulation-type", "time-warp", "--workers", "2"},
			map[string]string{"call_attempts": "Call attempts", "channel_blocks": "Channel blocks", "handoff_blocks": "Handoff blocks"}},
		{"model: epidemic\nflags: {watts-strogatz-k: 4, num-locations: 6, population: 20, max-sim-time: 300}\nparameters:\n  transmissibility: [0.3, 0.9]\nreplications: 2\nresults: [infections, moves]\n",
			[]string{"--jobs", "2", "--simulation-type", "time-warp", "--workers", "1"},
			map[string]string{"infections": "Infections", "moves": "Moves"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		spec := filepath.Join(dir, "s.yaml")
		require.NoError(t, os.WriteFile(spec, []byte(c.spec), 0o644))
		out := filepath.Join(dir, "out")
		code, stdout, stderr := warped(append([]string{"study", spec, "--out", out, "--progress=off"}, c.exec...)...)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "Study of ")
		if slices.Contains(c.exec, "--merge-batches") {
			require.Regexp(t, `offload: [1-9]\d* batches \(\d+ events\) of the runs in \d+ merged calls on \S+`, stdout)
		}
		rows := readCSV(t, filepath.Join(out, "runs.csv"))
		head := rows[0]
		col := func(name string) int {
			for i, h := range head {
				if h == name {
					return i
				}
			}
			t.Fatalf("no column %s in %v", name, head)
			return -1
		}
		model := strings.Fields(strings.SplitN(c.spec, "\n", 2)[0])[1]
		for _, row := range rows[1:] {
			// The run alone: fixed flags, the point's parameter (column 2) and the seed.
			args := []string{model, "--simulation-type=sequential", "--seed=" + row[col("seed")], "--" + head[2] + "=" + row[2]}
			for _, kv := range regexp.MustCompile(`([a-z-]+): ([0-9.]+)`).FindAllStringSubmatch(strings.Split(c.spec, "\n")[1], -1) {
				args = append(args, "--"+kv[1]+"="+kv[2])
			}
			code, alone, stderr := warped(args...)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, digestOf(t, alone), row[col("digest")], "digest of %v", args)
			got := map[string]string{}
			for _, m := range resultLine.FindAllStringSubmatch(alone, -1) {
				got[m[1]] = m[2]
			}
			for key, label := range c.label {
				require.Equal(t, got[label], row[col(key)], "%s of %v", key, args)
			}
		}
		sum := readCSV(t, filepath.Join(out, "summary.csv"))
		require.Contains(t, strings.Join(sum[0], ","), "mean,std,ci95_low,ci95_high")
		require.Len(t, sum, 1+2*len(c.label))
		_, err := os.Stat(filepath.Join(out, "plot-"+sum[1][2]+".png"))
		require.NoError(t, err)
	}
}

// TestStudyKernelMetrics: a study summarises the kernel's statistics as it does the
// model's results, with their confidence intervals, and each agrees with the same run's
// stats file; runs.csv names each column once (PHOLD's result "events" beside the
// kernel's events_committed).
func TestStudyKernelMetrics(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	results := []string{"events", "efficiency", "committed_events_per_second", "rollbacks", "peak_memory_bytes", "events_committed"}
	require.NoError(t, os.WriteFile(spec, []byte("model: phold\nflags: {lps: 32, max-sim-time: 10}\nparameters:\n  remote: [0.1, 0.5]\n"+
		"replications: 3\nresults: ["+strings.Join(results, ", ")+"]\n"), 0o644))
	out := filepath.Join(dir, "out")
	code, stdout, stderr := warped("study", spec, "--out", out, "--progress=off", "--jobs", "2",
		"--simulation-type", "time-warp", "--workers", "2")
	require.Equal(t, 0, code, stderr)
	for _, r := range results {
		require.Contains(t, stdout, r)
	}
	rows := readCSV(t, filepath.Join(out, "runs.csv"))
	seen := map[string]bool{}
	for _, h := range rows[0] {
		require.False(t, seen[h], "column %s twice in %v", h, rows[0])
		seen[h] = true
	}
	require.True(t, seen["wall_seconds"], "%v", rows[0])
	col := func(name string) int { return slices.Index(rows[0], name) }
	for _, row := range rows[1:] {
		// The committed events and the digest are the run's alone, whatever the execution.
		stats := filepath.Join(dir, "stats.json")
		code, _, stderr := warped("phold", "--lps=32", "--max-sim-time=10", "--remote="+row[col("remote")],
			"--seed="+row[col("seed")], "--simulation-type=sequential", "--stats-file", stats)
		require.Equal(t, 0, code, stderr)
		data, err := os.ReadFile(stats)
		require.NoError(t, err)
		var kv map[string]any
		require.NoError(t, json.Unmarshal(data, &kv))
		require.Equal(t, kv["digest"], row[col("digest")])
		require.Equal(t, strconv.FormatFloat(kv["events_committed"].(float64), 'g', -1, 64), row[col("events_committed")])
		require.Contains(t, kv, "rollbacks", "the stats file has every key a study summarises")
	}
	sum := readCSV(t, filepath.Join(out, "summary.csv"))
	require.Len(t, sum, 1+2*len(results))
	for _, row := range sum[1:] {
		if row[2] == "efficiency" {
			mean, err := strconv.ParseFloat(row[4], 64)
			require.NoError(t, err)
			require.True(t, mean > 0 && mean <= 1, "efficiency %v", mean)
		}
	}

	code, _, stderr = warped("study", writeSpec(t, "model: phold\nresults: [efficiencyy]\n"), "--out", filepath.Join(dir, "bad"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `model phold has no result "efficiencyy" (it has events, remote_events; and the kernel's statistics `)
}

// TestStudyLabels: a study's plots name the parameters and results as the model labels
// them (with units), the kernel's statistics by their labels, and every other key as it
// is with spaces.
func TestStudyLabels(t *testing.T) {
	cat := catalog{testCommand()}
	labels := cat.Labels("pcs")
	for key, want := range map[string]string{
		"call-interval":               "mean time between calls (simulated time)",
		"handoff_blocks":              "Handoff blocks (calls)",
		"committed_events_per_second": "committed event rate (events/s)",
		"events_rolled_back":          "events rolled back",
	} {
		require.Equal(t, want, labels[key].Axis(key), key)
	}
	for _, k := range statsKeys() {
		require.NotEmpty(t, labels[k].Text, "the kernel's %s", k)
	}
	require.Equal(t, "share of events to a random LP", cat.Labels("phold")["remote"].Axis("remote"))

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, _, stderr := warped("study", writeSpec(t, "model: pcs\nflags: {num-cells-x: 4, num-cells-y: 4, max-sim-time: 50}\n"+
		"parameters:\n  call-interval: [25, 50, 100, 200]\nresults: [handoff_blocks]\n"), "--out", out, "--progress=off")
	require.Equal(t, 0, code, stderr)
	svg, err := os.ReadFile(filepath.Join(out, "plot-handoff_blocks.svg"))
	require.NoError(t, err)
	for _, want := range []string{"mean time between calls (simulated time)", "Handoff blocks (calls)", ">25<", ">200<"} {
		require.Contains(t, string(svg), want)
	}
}

// writeSpec writes a study spec into a new file and returns its path.
func writeSpec(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// TestStudySpecErrors checks that a bad spec is one line on stderr, naming the line,
// with exit status 2 and no run.
func TestStudySpecErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ spec, want string }{
		{"model: pcx\n", `s.yaml:1: unknown model "pcx" (the models are phold, pcs, `},
		{"model: pcs\nparameters:\n  channels: [1, 2]\n", `s.yaml:3: model pcs has no flag "channels"; run 'warped help pcs' for the flags`},
		{"model: pcs\nparameters:\n  channel-cnt: {from: 20, to: 10, step: 5}\n", `s.yaml:3: parameter "channel-cnt": empty range`},
		{"model: pcs\nflags:\n  call-interval: often\n", `s.yaml:3: bad value "often" for call-interval`},
		{"model: pcs\nresults: [calls]\n", `s.yaml:2: model pcs has no result "calls" (it has call_attempts, channel_blocks, handoff_blocks; and the kernel's statistics anti_messages_sent,`},
		{"model: phold\nparameters:\n  lps: [16, 0]\n", `point 1 (--lps=0; summary.csv's numbering)`},
		{"model: logic\n", `model logic's results depend on its flags`},
	} {
		spec := filepath.Join(dir, "s.yaml")
		require.NoError(t, os.WriteFile(spec, []byte(c.spec), 0o644))
		out := filepath.Join(dir, "out")
		code, stdout, stderr := warped("study", spec, "--out", out)
		require.Equal(t, exitUsage, code, c.spec)
		require.Empty(t, stdout)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		require.True(t, strings.HasPrefix(stderr, "warped study: "), stderr)
		require.Contains(t, stderr, c.want)
		_, err := os.Stat(out)
		require.True(t, os.IsNotExist(err), "a bad spec created --out")
	}
	code, _, stderr := warped("study")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "missing SPEC")
}

// TestStudyInterruptAndResume interrupts a study once its first run is done (the one it
// runs alone to measure a run's memory) and resumes it. (Not by cancelling the study
// before it begins: every run looks at its context from its first LP's Init, so that
// first run would not finish.)
func TestStudyInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("model: phold\nflags: {lps: 16, max-sim-time: 10}\nreplications: 4\n"), 0o644))
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	se := &cancelOn{text: "1 run done alone", cancel: cancel}
	var so strings.Builder
	code := run(ctx, []string{"study", spec, "--out", out}, &so, se)
	require.Equal(t, exitRun, code)
	require.Contains(t, se.String(), "interrupted: the finished runs are in")
	journal, err := os.ReadFile(filepath.Join(out, "journal.jsonl"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(journal), "\n"), "the journal holds the first run alone")
	code, _, stderr := warped("study", spec, "--out", out)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "add --resume")
	code, stdout, stderr := warped("study", spec, "--out", out, "--resume")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "4 runs")
}

// cancelOn keeps what is written to it, and calls cancel once that holds text.
type cancelOn struct {
	mu     sync.Mutex
	b      strings.Builder
	text   string
	cancel func()
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.text) {
		w.cancel()
	}
	return n, err
}

func (w *cancelOn) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// dropLastColumn drops the last field of every CSV line.
func dropLastColumn(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(l, ','); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestStudyResumeFromPartialJournal cuts a finished study's journal at a random line (and
// in the middle of the next), resumes, and checks that the tables are byte-identical
// (but for the wall times of the runs that ran again).
func TestStudyResumeFromPartialJournal(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("model: pcs\nflags: {num-cells-x: 4, num-cells-y: 4, max-sim-time: 100}\nparameters:\n  call-interval: [50, 100]\nreplications: 5\n"), 0o644))
	whole := filepath.Join(dir, "whole")
	code, _, stderr := warped("study", spec, "--out", whole, "--progress=off")
	require.Equal(t, 0, code, stderr)
	journal, err := os.ReadFile(filepath.Join(whole, "journal.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(journal), "\n")
	k := 1 + rand.IntN(len(lines)-2) // keep k whole lines and half of the next
	part := filepath.Join(dir, "part")
	require.NoError(t, os.MkdirAll(part, 0o755))
	cut := strings.Join(lines[:k], "") + lines[k][:len(lines[k])/2]
	require.NoError(t, os.WriteFile(filepath.Join(part, "journal.jsonl"), []byte(cut), 0o644))
	code, stdout, stderr := warped("study", spec, "--out", part, "--resume", "--progress=off", "--jobs", "1")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "("+strconv.Itoa(k)+" resumed from the journal)")
	for _, name := range []string{"summary.csv", "summary.json", "runs.csv"} {
		a, err := os.ReadFile(filepath.Join(whole, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(part, name))
		require.NoError(t, err)
		if name == "runs.csv" { // the runs that ran again have their own wall times
			a, b = dropLastColumn(a), dropLastColumn(b)
		}
		require.Equal(t, string(a), string(b), "%s after resuming from %d of %d runs", name, k, len(lines)-1)
	}
}

// TestStudyRefusesRunOutputs: a spec that asks every run for a sample file, a series file
// or a report is refused before any run, on one line that names the flag and what to do.
func TestStudyRefusesRunOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"sample-file", "series-file", "report"} {
		spec := filepath.Join(dir, flag+".yaml")
		require.NoError(t, os.WriteFile(spec, []byte("model: epidemic\nflags: {watts-strogatz-k: 4, num-locations: 6, population: 20, max-sim-time: 300, "+
			flag+": x.out}\nparameters:\n  transmissibility: [0.3, 0.9]\nreplications: 2\n"), 0o644))
		out := filepath.Join(dir, flag+".out")
		code, _, stderr := warped("study", spec, "--out", out, "--progress=off")
		require.Equal(t, exitUsage, code, stderr)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, stderr)
		require.Contains(t, stderr, "--"+flag+" is for one run, not a study: drop it from the spec, and run the point alone with 'warped epidemic ... --"+flag+" x.out'")
		require.NoDirExists(t, out)
	}
}

// TestHelpOfCommands: 'warped help CMD' is 'warped CMD --help' for every command that
// is not a model, and the overview for help.
func TestHelpOfCommands(t *testing.T) {
	for _, cmd := range []string{"study", "plot", "devices", "version"} {
		t.Run(cmd, func(t *testing.T) {
			code, help, stderr := warped("help", cmd)
			require.Equal(t, 0, code, stderr)
			_, flagHelp, _ := warped(cmd, "--help")
			require.Equal(t, flagHelp, help)
			require.Contains(t, help, "Usage: warped "+cmd)
		})
	}
	for _, cmd := range []string{"help", "--help"} {
		t.Run(cmd, func(t *testing.T) {
			code, help, stderr := warped("help", cmd)
			require.Equal(t, 0, code, stderr)
			_, overview, _ := warped("help")
			require.Equal(t, overview, help)
		})
	}
}

// TestStudyHelp: 'warped help study' is 'warped study --help', which says how runs on the
// GPU share device loops.
func TestStudyHelp(t *testing.T) {
	code, help, stderr := warped("help", "study")
	require.Equal(t, 0, code, stderr)
	code, flagHelp, _ := warped("study", "--help")
	require.Equal(t, 0, code)
	require.Equal(t, flagHelp, help)
	require.Contains(t, help, "With --simulation-type gpu the runs are disjoint sets of LPs of one device loop")
	require.Contains(t, help, "--group-runs")
}

// TestStudyRunProcessFigures checks that a study's run reports the process's figures (peak
// memory, CPU wait) only when it had the process to itself: a run beside another has them
// unmeasured, not another run's.
func TestStudyRunProcessFigures(t *testing.T) {
	c := testCommand()
	args := []string{"--lps=64", "--max-sim-time=5", "--simulation-type=sequential"}
	alone, err := c.runForStudy(context.Background(), "phold", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := alone.Results["peak_memory_bytes"]; !ok || slices.ContainsFunc(processKeys, func(k string) bool { return slices.Contains(alone.Unmeasured, k) }) {
		t.Fatalf("a run alone: peak memory %v, unmeasured %v; want the process's figures measured",
			alone.Results["peak_memory_bytes"], alone.Unmeasured)
	}
	// A sequential run has no worker threads: unmeasured, not 0 (nor missing, which would
	// fail a study that lists it).
	require.Contains(t, alone.Unmeasured, "worker_threads")
	require.NotContains(t, alone.Results, "worker_threads")
	c.runs.Add(1) // another run in progress
	defer c.runs.Add(-1)
	beside, err := c.runForStudy(context.Background(), "phold", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range processKeys {
		if _, ok := beside.Results[k]; ok || !slices.Contains(beside.Unmeasured, k) {
			t.Fatalf("a run beside another has %s %v (unmeasured %v); want it unmeasured", k, beside.Results[k], beside.Unmeasured)
		}
	}
	if beside.Digest != alone.Digest {
		t.Fatalf("digests %s and %s differ", beside.Digest, alone.Digest)
	}
}

// TestStudyFinalAndResultsTogether: a model that keeps what its Final computes for its
// Results in a variable its runs share (TUTORIAL, step 13) gets each run's own value in a
// study that runs several at once.
func TestStudyFinalAndResultsTogether(t *testing.T) {
	m := *Bundled()[0] // PHOLD, as another model
	m.Name = "closure"
	var last int // shared by every run of the command
	m.Final = func(lps []kernel.LogicalProcess) error {
		last = len(lps)
		return nil
	}
	m.Results = func([]kernel.LogicalProcess, *pflag.FlagSet) []Result {
		return []Result{{Label: "LPs at the end", Key: "lps_final", Value: float64(last)}}
	}
	c := New("warped", &m)
	s, err := study.Parse([]byte("model: closure\nflags: {max-sim-time: 20}\n"+
		"parameters:\n  lps: [16, 32, 48, 64, 80, 96, 112, 128]\nreplications: 2\n"), "s.yaml", catalog{c})
	require.NoError(t, err)
	st, err := study.Execute(context.Background(), s, c.runForStudy, study.Options{Out: t.TempDir(), Types: kernel.Types(),
		Execution: study.Execution{Jobs: 4, SimulationType: kernel.Sequential}, Cores: 4})
	require.NoError(t, err)
	for _, r := range st.Runs {
		want, _ := strconv.Atoi(s.Points[r.Point][0])
		require.Equal(t, float64(want), st.Outcomes[r.Index].Results["lps_final"], "run %s", r.Key())
	}
}

// TestStudyProvenance: a study's provenance.json says which build, machine and command
// made its tables and how its runs were executed; summary.json gives each result's
// confidence half width too, as summary.csv does.
func TestStudyProvenance(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("model: phold\nflags: {lps: 32, max-sim-time: 5}\nparameters:\n  remote: [0.1, 0.5]\nreplications: 2\n"), 0o644))
	out := filepath.Join(dir, "out")
	code, _, stderr := warped("study", spec, "--out", out, "--progress=off", "--jobs", "1")
	require.Equal(t, 0, code, stderr)
	var prov struct {
		Provenance struct {
			Module      string `json:"module"`
			GoVersion   string `json:"go_version"`
			Host        string `json:"host"`
			CommandLine string `json:"command_line"`
		}
		Execution struct {
			SimulationType string `json:"simulation_type"`
			Jobs           int
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "provenance.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &prov), "%s", data)
	require.Equal(t, "github.com/warpedgo/warped", prov.Provenance.Module)
	require.NotEmpty(t, prov.Provenance.GoVersion)
	require.NotEmpty(t, prov.Provenance.Host)
	require.Contains(t, prov.Provenance.CommandLine, "warped study "+spec+" --out "+out)
	require.Equal(t, "sequential", prov.Execution.SimulationType)
	require.Equal(t, 1, prov.Execution.Jobs)
	data, err = os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"ci95_half_width"`)
}

// TestStudyResultOfAnotherDispatcher: a study may list time warp's worker_threads; its
// sequential runs do not measure it, which the tables leave blank and the summary marks.
func TestStudyResultOfAnotherDispatcher(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("model: phold\nflags: {lps: 32, max-sim-time: 5}\nparameters:\n  remote: [0.1, 0.5]\n"+
		"results: [worker_threads, efficiency]\n"), 0o644))
	out := filepath.Join(dir, "out")
	code, stdout, stderr := warped("study", spec, "--out", out, "--progress=off", "--simulation-type", "sequential")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^ +0\.1 +- +1$`, stdout)
	require.Contains(t, stdout, "-: no run measured it")
	rows := readCSV(t, filepath.Join(out, "summary.csv"))
	require.Equal(t, []string{"0", "0.1", "worker_threads", "0", "", "", "", "", ""}, rows[1])
}
