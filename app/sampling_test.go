package app

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/sample"
)

// TestSampleFile runs PHOLD with --sample-file in both formats and checks that the rows
// add up to the totals of --stats-file.
func TestSampleFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ format, mode string }{{"csv", "gvt"}, {"jsonl", "real-time"}} {
		path := filepath.Join(dir, "s."+c.format)
		stats := filepath.Join(dir, "stats.json")
		code, _, errOut := warped("phold", "--lps", "64", "--max-sim-time", "100", "--gpu", "off",
			"--time-warp-worker-threads", "2", "--time-warp-gvt-calculation-period", "0.5",
			"--sample-file", path, "--sample-format", c.format, "--sample-mode", c.mode,
			"--sample-period", "1", "--stats-file", stats)
		require.Equal(t, 0, code, errOut)
		f, err := os.Open(path)
		require.NoError(t, err)
		rows, err := sample.Read(f)
		f.Close()
		require.NoError(t, err)
		data, err := os.ReadFile(stats)
		require.NoError(t, err)
		var kv map[string]any
		require.NoError(t, json.Unmarshal(data, &kv))
		var processed uint64
		var committed int64
		finals := 0
		for _, r := range rows {
			processed += r.Processed
			committed += r.Committed
			if r.Final {
				finals++
			}
		}
		require.Equal(t, 2, finals, c.format)
		require.Equal(t, kv["events_processed"].(float64), float64(processed), c.format)
		require.Equal(t, kv["events_committed"].(float64), float64(committed), c.format)
	}
}

// TestSampleFlagErrors checks the sampling flags' messages.
func TestSampleFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sample-mode", "often"}, `--sample-mode: unknown mode "often" (want gvt or real-time)`},
		{[]string{"--sample-format", "xml"}, `--sample-format: unknown format "xml" (want csv or jsonl)`},
		{[]string{"--sample-period", "-1"}, "--sample-period must be a non-negative number of milliseconds"},
		{[]string{"--sample-file", "x.csv", "--simulation-type", "sequential"}, "--sample-file samples time-warp and gpu runs only"},
		{[]string{"--sample-mode", "real-time"}, "--sample-mode and --sample-period say how --sample-file takes its rows: give --sample-file FILE"},
		{[]string{"--sample-period", "5"}, "--sample-mode and --sample-period say how --sample-file takes its rows"},
		{[]string{"--sample-file", filepath.Join(dir, "no", "dir", "s.csv"), "--gpu", "off"}, "cannot write --sample-file"},
	} {
		code, _, errOut := warped(append([]string{"phold", "--max-sim-time", "5"}, c.args...)...)
		require.Equal(t, exitUsage, code, c.args)
		require.Contains(t, errOut, c.want)
	}
}

func TestRankPath(t *testing.T) {
	require.Equal(t, "out/s-rank1.csv", rankPath("out/s.csv", 1))
	require.Equal(t, "s-rank0", rankPath("s", 0))
}

// TestPlotStopsOnASignal: warped plot stopped by a signal (its context ended) writes no
// chart and says so: exit 1.
func TestPlotStopsOnASignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.csv")
	code, _, errOut := warped("phold", "--lps", "64", "--max-sim-time", "100", "--gpu", "off", "--sample-file", path)
	require.Equal(t, 0, code, errOut)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interruption{sig: syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	out := filepath.Join(dir, "charts")
	code = testCommand().Run(ctx, []string{"plot", path, "--out", out}, &stdout, &stderr)
	require.Equal(t, exitRun, code, stderr.String())
	require.Equal(t, "warped plot: interrupted by SIGTERM: no chart written\n", stderr.String())
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "no chart directory: %v", err)
}

// TestPlotCommand records the samples of a run and draws them: every chart comes as a PNG
// that decodes and an SVG that parses.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	code, _, errOut := warped("phold", "--lps", "64", "--max-sim-time", "300", "--gpu", "off",
		"--time-warp-worker-threads", "2", "--time-warp-gvt-calculation-period", "0.5",
		"--sample-file", path, "--sample-format", "jsonl")
	require.Equal(t, 0, code, errOut)
	out := filepath.Join(dir, "charts")
	code, stdout, errOut := warped("plot", path, "--out", out)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, stdout, "charts to "+out)
	pngs, _ := filepath.Glob(filepath.Join(out, "*.png"))
	svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	require.NotEmpty(t, pngs)
	require.Len(t, svgs, len(pngs))
	require.FileExists(t, filepath.Join(out, "time-split.png"))
	for _, p := range pngs {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		_, err = png.Decode(bytes.NewReader(data))
		require.NoError(t, err, p)
	}
	for _, p := range svgs {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var root struct{ XMLName xml.Name }
		require.NoError(t, xml.Unmarshal(data, &root), p)
		require.Equal(t, "svg", root.XMLName.Local)
	}

	t.Run("format, width and dpi", func(t *testing.T) {
		out := filepath.Join(dir, "print")
		code, _, errOut := warped("plot", path, "--out", out, "--format", "png,pdf", "--width", "7", "--dpi", "100")
		require.Equal(t, 0, code, errOut)
		data, err := os.ReadFile(filepath.Join(out, "event-rate.png"))
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err)
		require.Equal(t, 700, img.Bounds().Dx(), "7 in at 100 dpi")
		pdf, err := os.ReadFile(filepath.Join(out, "event-rate.pdf"))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")))
		svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
		require.Empty(t, svgs, "only the formats asked for")
	})
	for _, c := range []struct{ name, flag, value, want string }{
		{"bad format", "--format", "gif", `unknown chart format "gif"`},
		{"narrow", "--width", "0.1", "chart width 0.1 in is out of range"},
		{"low dpi", "--dpi", "5", "chart resolution 5 dpi is out of range"},
		{"width NaN", "--width", "NaN", "chart width NaN in is out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := warped("plot", path, "--out", filepath.Join(dir, "bad"), c.flag, c.value)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, c.want)
			require.NoDirExists(t, filepath.Join(dir, "bad"), "nothing written")
		})
	}

	code, _, errOut = warped("plot")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "want a sample file or stats files, got none")
	code, _, errOut = warped("plot", filepath.Join(dir, "none.csv"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "none.csv: no such file or directory")
}

// TestPlotRefusesWhatItCannotDraw: input errors exit 2 with one line before anything is
// written, a failed write exits 1.
func TestPlotRefusesWhatItCannotDraw(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	var many strings.Builder
	many.WriteString("wall_seconds,worker,processed\n")
	for w := range maxPlotLines + 1 {
		fmt.Fprintf(&many, "1,%d,3\n", w)
	}
	var series strings.Builder
	series.WriteString("time,lp,series,value\n")
	for k := range maxPlotSeries + 1 {
		fmt.Fprintf(&series, "1,0,s%d,1\n", k)
	}
	out := filepath.Join(dir, "charts")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an empty object", []string{write("empty.json", "{}\n")}, exitUsage, "has no wall_seconds or worker"},
		{"a header only", []string{write("head.csv", "wall_seconds,worker,processed\n")}, exitUsage, "no sample or series rows to draw"},
		{"too many workers", []string{write("many.csv", many.String())}, exitUsage, "samples of more than 256 workers"},
		{"too many series", []string{write("series.csv", series.String())}, exitUsage, "more than 64 series"},
		{"out in proc", []string{write("ok.csv", "wall_seconds,worker,processed\n1,0,3\n"), "--out", "/proc/x"}, exitUsage, "cannot write charts to --out /proc/x"},
		{"a full device", []string{filepath.Join(dir, "ok.csv"), "--out", "/dev/full"}, exitUsage, "cannot write charts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plot"}, tc.args...)
			if !slices.Contains(args, "--out") {
				args = append(args, "--out", out)
			}
			code, stdout, errOut := warped(args...)
			require.Equal(t, tc.code, code, errOut)
			require.Contains(t, errOut, tc.want)
			require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
			require.Empty(t, stdout)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "nothing written")
		})
	}
}

// TestPlotCompare compares two runs' --stats-file outputs in bar charts.
func TestPlotCompare(t *testing.T) {
	dir := t.TempDir()
	var stats []string
	for _, w := range []string{"1", "2"} {
		path := filepath.Join(dir, "workers"+w+".json")
		code, _, errOut := warped("phold", "--lps", "64", "--max-sim-time", "50", "--gpu", "off",
			"--time-warp-worker-threads", w, "--stats-file", path)
		require.Equal(t, 0, code, errOut)
		stats = append(stats, path)
	}
	out := filepath.Join(dir, "cmp")
	code, stdout, errOut := warped(append([]string{"plot", "--out", out}, stats...)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, stdout, "compare-rate.png")
	data, err := os.ReadFile(filepath.Join(out, "compare-efficiency.png"))
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(data))
	require.NoError(t, err)

	// A sample file among stats files is an error.
	samples := filepath.Join(dir, "s.csv")
	require.NoError(t, os.WriteFile(samples, []byte("wall_seconds,worker,processed\n1,0,3\n"), 0o644))
	code, _, errOut = warped("plot", stats[0], samples)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "is not a --stats-file output")
	// And a stats file after a sample file.
	code, _, errOut = warped("plot", samples, stats[0])
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, stats[0]+" is a --stats-file output, unlike "+samples)
}

// TestSeriesFile runs the epidemic under time warp with --series-file and --sample-file:
// the file holds the sequential run's series (the locations' counts); warped plot draws
// both files together, the disease states in one chart beside the engine's, labelled as
// the model names them with --model.
func TestSeriesFile(t *testing.T) {
	dir := t.TempDir()
	args := []string{"epidemic", "--variant", "stochastic", "--num-locations", "12", "--population", "20", "--max-sim-time", "1000", "--gpu", "off"}
	seq := filepath.Join(dir, "seq.csv")
	code, _, errOut := warped(append(args, "--simulation-type", "sequential", "--series-file", seq)...)
	require.Equal(t, 0, code, errOut)
	tw, samples := filepath.Join(dir, "tw.csv"), filepath.Join(dir, "samples.csv")
	code, _, errOut = warped(append(args, "--time-warp-worker-threads", "4", "--time-warp-state-saving-period", "3",
		"--series-file", tw, "--sample-file", samples)...)
	require.Equal(t, 0, code, errOut)
	want, err := os.ReadFile(seq)
	require.NoError(t, err)
	got, err := os.ReadFile(tw)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the time-warp run's series is the sequential run's")
	pts, err := sample.ReadSeries(bytes.NewReader(got))
	require.NoError(t, err)
	require.Len(t, pts, 12*6*(1000/100-1), "six counts per location per sample")

	out := filepath.Join(dir, "charts")
	code, stdout, errOut := warped("plot", samples, tw, "--out", out)
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"series", "event-rate", "time-split"} {
		require.Contains(t, stdout, name+".svg")
		data, err := os.ReadFile(filepath.Join(out, name+".png"))
		require.NoError(t, err)
		_, err = png.Decode(bytes.NewReader(data))
		require.NoError(t, err, name)
	}
	require.NotContains(t, stdout, "series-", "one chart for the model's series")
	code, _, errOut = warped("plot", tw, "--out", out, "--model", "epidemic", "--format", "svg")
	require.Equal(t, 0, code, errOut)
	svg, err := os.ReadFile(filepath.Join(out, "series.svg"))
	require.NoError(t, err)
	for _, want := range []string{"Series of the epidemic model", "people, summed over LPs", ">uninfected<", ">recovered<"} {
		require.Contains(t, string(svg), want)
	}
	code, _, errOut = warped("plot", tw, "--out", out, "--model", "epidemics")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `--model: unknown model "epidemics"`)

	// A model that records nothing: a header only, and a note.
	empty := filepath.Join(dir, "none.csv")
	code, _, errOut = warped("phold", "--lps", "16", "--max-sim-time", "10", "--gpu", "off", "--series-file", empty)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "the model recorded no series")
	data, err := os.ReadFile(empty)
	require.NoError(t, err)
	require.Equal(t, "time,lp,series,value\n", string(data))
	code, _, errOut = warped("phold", "--max-sim-time", "5", "--gpu", "off", "--series-file", filepath.Join(dir, "no", "s.csv"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "cannot write --series-file")
}

// TestKilledRunsLeftovers: what a run killed at once left of its outputs is settled by the
// next run that writes them: a sample file's rows kept beside it (run.partial.csv), a stats
// file's part removed, each said.
func TestKilledRunsLeftovers(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	host, err := os.Hostname()
	require.NoError(t, err)
	host = strings.NewReplacer("-", "_", "/", "_").Replace(host)
	leftover := func(output string) string {
		return filepath.Join(dir, "."+output+".tmp-"+host+"-"+strconv.Itoa(dead.Process.Pid)+"-42")
	}
	rows := "wall_seconds,worker\n0.1,0\n"
	require.NoError(t, os.WriteFile(leftover("run.csv"), []byte(rows), 0o600))
	require.NoError(t, os.WriteFile(leftover("s.json"), []byte(`{"events_`), 0o600))
	code, _, errOut := warped("phold", "--lps=64", "--max-sim-time=5", "--time-warp-worker-threads=2", "--gpu=off",
		"--sample-file", filepath.Join(dir, "run.csv"), "--stats-file", filepath.Join(dir, "s.json"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "a run killed earlier left its --sample-file rows so far in "+leftover("run.csv")+": kept as "+filepath.Join(dir, "run.partial.csv"))
	require.Contains(t, errOut, "removed "+leftover("s.json")+", the part of --stats-file")
	data, err := os.ReadFile(filepath.Join(dir, "run.partial.csv"))
	require.NoError(t, err)
	require.Equal(t, rows, string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"run.csv", "run.partial.csv", "s.json"}, names)
}

// TestPlotCutShortFile: a sample file whose last row was cut short (its run killed while it
// wrote) is drawn without that row, and the command says so.
func TestPlotCutShortFile(t *testing.T) {
	dir := t.TempDir()
	samples := filepath.Join(dir, "run.csv")
	code, _, errOut := warped("phold", "--lps=256", "--max-sim-time=50", "--time-warp-worker-threads=2", "--gpu=off",
		"--sample-file", samples, "--sample-mode", "real-time", "--sample-period", "1")
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(samples)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(samples, data[:len(data)-7], 0o644))
	code, out, errOut := warped("plot", samples, "--out", filepath.Join(dir, "charts"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "the file ends in a row cut short")
	require.Contains(t, out, "wrote ")
}

// TestPlotStudySummary: a study's summary.json given to warped plot is refused with a
// pointer to the study's own plots, not a JSON error.
func TestPlotStudySummary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.json")
	require.NoError(t, os.WriteFile(p, []byte("{\n  \"model\": \"pcs\",\n  \"replications\": 2,\n  \"points\": []\n}\n"), 0o644))
	code, _, errOut := warped("plot", p, "--out", filepath.Join(t.TempDir(), "c"))
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "is a study's summary: the study draws its plots beside it")
}
