package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"gonum.org/v1/plot/vg"

	"github.com/warpedgo/warped/internal/infile"
	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
	"github.com/warpedgo/warped/sample/chart"
)

// plotUsage is the help of 'PROGRAM plot'.
const plotUsage = `Usage: PROGRAM plot FILE... [--out DIR]
       PROGRAM plot STATS.json... [--out DIR]

Draws the engine samples of a run (a --sample-file, CSV or JSON lines; the files of
several ranks together) as charts, each written in the --format's formats into DIR:
event-rate (committed events per second of wall time, over intervals at least half the
usual sample interval and a 200th of the run long), efficiency (percent) and gvt against wall time, rollbacks
(rolled-back events per second) and pending events per worker, memory (the Go heap),
threads (those running the workers, and the process's threads waiting for a processor
per second of wall time: where the load took the run's time; files written before they
were sampled have none), and time-split (the share of each worker's time spent idle, processing, in GVT and in
communication, and of each rank's manager's). Rollbacks and pending events show a line
per worker up to four workers; with more, the median over the workers and their range
(least to greatest) as a band, per rank. Memory shows the process's resident memory and
the Go heap in use (files written before resident memory was sampled have the heap only).
Given a --series-file (the model's own series), it draws them in one chart, series: the
values against simulated time, summed over the LPs that record them at that time, a
line per series; with --model NAME, labelled and titled as the model names them (a
chart per unit where its series have several). Sample and series files may be given
together.

Given --stats-file outputs instead (one run each, or a JSON array of such objects), it
compares the runs side by side in bar charts: committed event rate, efficiency, events
rolled back, peak memory and wall time, each bar with its value. The runs are named by
the settings in which they differ (one setting: its values under the bars and its name on
the axis), else by file name.

Input it cannot draw is refused (exit 2): over 128 MiB in all, no rows, samples of more
than 256 workers, more than 64 series.

Counts start at zero with SI tick labels (12 M); a stretch without samples (over ten
usual intervals and 2% of the run) is a gap in the line; legends sit beside the data, or
below it when long.

  --out DIR          directory for the charts (default "plots"; made if missing)
  --model NAME       the model that wrote the --series-file: its names and units label
                     the series chart
  --format LIST      formats, comma-separated: png, svg, pdf (default "png,svg")
  --width INCHES     figure width, 1 to 20 (default 3.5: one column of a two-column
                     paper; the height is 0.62 of it)
  --dpi N            resolution of PNGs, 50 to 1200 (default 300)
`

// plotCommand is 'warped plot': it returns the exit status. When ctx ends (a stop
// signal), it stops between charts and writes none.
func (c *Command) plotCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("plot", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "plots", "directory for the charts")
	model := fs.String("model", "", "the model that wrote the series file")
	opts := chart.DefaultOptions()
	formats := fs.StringSlice("format", opts.Formats, "formats: png, svg, pdf")
	width := fs.Float64("width", float64(opts.Width/vg.Inch), "figure width in inches")
	fs.IntVar(&opts.DPI, "dpi", opts.DPI, "resolution of PNGs")
	// The file may come before or after the flags.
	var files []string
	for {
		if err := parseArgs(fs, args); err == pflag.ErrHelp {
			fmt.Fprint(stdout, strings.ReplaceAll(plotUsage, "PROGRAM", c.name))
			return exitOK
		} else if err != nil {
			fmt.Fprintf(stderr, "%s plot: %v; run '%s plot --help' for the usage\n", c.name, err, c.name)
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "%s plot: want a sample file or stats files, got none; run '%s plot --help' for the usage\n", c.name, c.name)
		return exitUsage
	}
	opts.Formats, opts.Width = *formats, vg.Length(*width)*vg.Inch
	if err := opts.Check(); err != nil {
		fmt.Fprintf(stderr, "%s plot: %v; run '%s plot --help' for the usage\n", c.name, err, c.name)
		return exitUsage
	}
	if err := checkPlotOut(*out); err != nil {
		fmt.Fprintf(stderr, "%s plot: %v\n", c.name, err)
		return exitUsage
	}
	var m *Model
	if *model != "" {
		if m = c.find(*model); m == nil {
			fmt.Fprintf(stderr, "%s plot: --model: unknown model %q; run '%s help' for the models\n", c.name, *model, c.name)
			return exitUsage
		}
	}
	charts, err := plotCharts(files, m, func(s string) { fmt.Fprintf(stderr, "%s plot: %s\n", c.name, s) })
	if err != nil {
		// The input is the user's to fix: a file missing, of the wrong kind or too big.
		fmt.Fprintf(stderr, "%s plot: %v\n", c.name, err)
		return exitUsage
	}
	paths, err := chart.WriteFiles(ctx, *out, charts, opts) // writes none once ctx has ended
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s plot: %v: no chart written\n", c.name, context.Cause(ctx))
		return exitRun
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s plot: %v\n", c.name, err)
		return exitRun
	}
	fmt.Fprintf(stdout, "wrote %d charts to %s: %s\n", len(paths), *out, strings.Join(paths, " "))
	return exitOK
}

// The bounds of what 'warped plot' draws, which bound its memory: the input's total
// size, and the lines of one chart and the charts of the model's series.
const (
	maxPlotBytes  = 128 << 20
	maxPlotLines  = 256
	maxPlotSeries = 64
)

// checkPlotOut fails unless the charts can be written in dir (made if missing, with its
// parents).
func checkPlotOut(dir string) error {
	fail := func(err error) error { return fmt.Errorf("cannot write charts to --out %s: %w", dir, err) }
	probe := filepath.Join(dir, "x.png")
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil && !st.IsDir() {
			return fail(fmt.Errorf("%s is not a directory", d))
		}
		if err == nil || d == filepath.Dir(d) {
			break
		}
		probe = d // the first directory to make: its parent must take it
	}
	if err := outfile.Check(probe); err != nil {
		return fail(errors.Unwrap(err))
	}
	return nil
}

// plotCharts reads files (stats files, or sample and series files) and returns their
// charts, refusing input it cannot draw; m, when not nil, is the model whose series they
// are.
func plotCharts(files []string, m *Model, note func(string)) ([]chart.Chart, error) {
	total := int64(0)
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
		}
		if total += st.Size(); total > maxPlotBytes {
			return nil, fmt.Errorf("the input is over %d MiB (at %s): too much to draw; take fewer samples (a longer --sample-period) or plot fewer files", maxPlotBytes>>20, path)
		}
	}
	runs, xLabel, err := readStatsFiles(files)
	switch {
	case err != nil:
		return nil, err
	case runs != nil:
		return chart.Compare(runs, xLabel)
	}
	return plotFiles(files, m, note)
}

// readPlotInput reads an input file of warped plot, to the bound of what it draws (a device
// or a FIFO has no size for the check of every input's total to see).
func readPlotInput(path string) ([]byte, error) {
	data, err := infile.ReadAtMost(path, maxPlotBytes)
	switch {
	case errors.Is(err, infile.ErrTooLarge):
		return nil, fmt.Errorf("the input is over %d MiB (at %s): too much to draw; take fewer samples (a longer --sample-period) or plot fewer files", maxPlotBytes>>20, path)
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w", path, outfile.UnwrapPath(err))
	}
	return data, nil
}

// readStatsFiles reads files as --stats-file outputs (each one object, or an array of
// them) and returns one run each, labelled by the settings in which the runs differ, else
// by file name (and index in an array), and the label's name for the chart's axis. It
// returns nil when the first file is not one (a sample file), and an error when only some
// are.
func readStatsFiles(files []string) ([]chart.Run, string, error) {
	var runs []chart.Run
	var settings []map[string]string
	for i, path := range files {
		data, err := readPlotInput(path)
		if err != nil {
			return nil, "", err
		}
		objs, ok := statsObjects(data)
		if !ok {
			if i == 0 {
				return nil, "", nil
			}
			return nil, "", fmt.Errorf("%s is not a --stats-file output, unlike %s: give one sample file, or stats files only", path, files[0])
		}
		label := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		for j, o := range objs {
			r := chart.Run{Label: label, Values: map[string]float64{}}
			if len(objs) > 1 {
				r.Label = fmt.Sprintf("%s[%d]", label, j)
			}
			settings = append(settings, runSettings(o))
			results, _ := o["results"].(map[string]any) // the model's (no kernel key clashes)
			for _, kv := range []map[string]any{o, results} {
				for k, v := range kv {
					if x, ok := v.(float64); ok {
						r.Values[k] = x
					}
				}
			}
			runs = append(runs, r)
		}
	}
	return runs, labelByDifferences(runs, settings), nil
}

// runSettings are what a stats object says about how its run was made: its model, its flags
// (config), its dispatcher and its workers (provenance), as text.
func runSettings(o map[string]any) map[string]string {
	s := map[string]string{}
	if m, ok := o["model"].(string); ok {
		s["model"] = m
	}
	if c, ok := o["config"].(map[string]any); ok {
		for k, v := range c {
			if !outputFlags[k] {
				s["--"+k] = fmt.Sprint(v)
			}
		}
	}
	if p, ok := o["provenance"].(map[string]any); ok {
		if v, ok := p["dispatcher"]; ok {
			s["dispatcher"] = fmt.Sprint(v)
		}
	}
	return s
}

// labelByDifferences names each run by the settings in which the runs differ, not by
// its file's name, where they differ in any, and returns the axis label: with one setting
// differing, the setting's name, and each run's label is its value (a flag a run did not
// set is "default"); with several, "run", and each label lists them, one a line.
func labelByDifferences(runs []chart.Run, settings []map[string]string) string {
	if len(runs) < 2 || len(settings) != len(runs) {
		return ""
	}
	keys := map[string]bool{}
	for _, s := range settings {
		for k := range s {
			keys[k] = true
		}
	}
	var differ []string
	for k := range keys {
		v, ok := settings[0][k]
		for _, s := range settings[1:] {
			if w, has := s[k]; has != ok || w != v {
				differ = append(differ, k)
				break
			}
		}
	}
	if len(differ) == 0 {
		return ""
	}
	slices.SortFunc(differ, func(a, b string) int { // the model first, then by name
		if (a == "model") != (b == "model") {
			if a == "model" {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	if len(differ) == 1 {
		k := differ[0]
		for i := range runs {
			runs[i].Label = cmp.Or(settings[i][k], "default")
		}
		return strings.TrimPrefix(k, "--")
	}
	// has says whether a run of model m sets flag k: a flag no run of the model sets is
	// not the model's (PCS has no --lps), and goes unsaid rather than "default".
	has := func(m, k string) bool {
		for _, s := range settings {
			if _, ok := s[k]; ok && s["model"] == m {
				return true
			}
		}
		return false
	}
	for i := range runs {
		var parts []string
		for _, k := range differ {
			v, ok := settings[i][k]
			switch {
			case !ok && !has(settings[i]["model"], k):
			case !ok:
				parts = append(parts, strings.TrimPrefix(k, "--")+" default")
			case k == "dispatcher" || k == "model":
				parts = append(parts, v)
			default:
				parts = append(parts, strings.TrimPrefix(k, "--")+" "+v)
			}
		}
		runs[i].Label = strings.Join(parts, "\n") // one setting a line under the bar
	}
	return "run"
}

// statsObjects decodes data as one stats object or an array of them (each with
// events_committed).
func statsObjects(data []byte) ([]map[string]any, bool) {
	var objs []map[string]any
	var one map[string]any
	if json.Unmarshal(data, &one) == nil {
		objs = []map[string]any{one}
	} else if json.Unmarshal(data, &objs) != nil {
		return nil, false
	}
	for _, o := range objs {
		if _, ok := o["events_committed"]; !ok {
			return nil, false
		}
	}
	return objs, len(objs) > 0
}

// plotFiles returns the charts of the engine samples and model series in files (each one
// or the other, told by its first line); m, when not nil, labels the series. A file whose
// last row is cut short is drawn without it, and note says so.
func plotFiles(files []string, m *Model, note func(string)) ([]chart.Chart, error) {
	var rows []sample.Row
	var points []kernel.SeriesPoint
	for _, path := range files {
		data, err := readPlotInput(path)
		if err != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(string(data[:min(len(data), 256)]), "\n")
		if sample.IsSeries(first) {
			pts, err := sample.ReadSeries(bytes.NewReader(data))
			if errors.Is(err, sample.ErrCutShort) {
				note(fmt.Sprintf("%s: %v", path, err))
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			points = append(points, pts...)
			continue
		}
		if isStudySummary(data) {
			return nil, fmt.Errorf("%s is a study's summary: the study draws its plots beside it (plot-RESULT.png; "+
				"'warped study SPEC --out DIR --resume' draws them again, plot.x and the scales as the spec says)", path)
		}
		if _, ok := statsObjects(data); ok { // after a sample file (readStatsFiles took the other order)
			return nil, fmt.Errorf("%s is a --stats-file output, unlike %s: give one sample file, or stats files only", path, files[0])
		}
		rs, err := sample.Read(bytes.NewReader(data))
		if errors.Is(err, sample.ErrCutShort) {
			note(fmt.Sprintf("%s: %v", path, err))
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) == 0 && len(points) == 0 {
		return nil, fmt.Errorf("%s: no sample or series rows to draw", strings.Join(files, ", "))
	}
	if err := checkLines(rows, points); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(files, ", "), err)
	}
	var charts []chart.Chart
	if len(rows) > 0 {
		cs, err := chart.Make(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(files, ", "), err)
		}
		charts = cs
	}
	if len(points) > 0 {
		title, labels := "", map[string]chart.Label(nil)
		if m != nil {
			title, labels = seriesTitle(m), m.Labels
		}
		cs, err := chart.Series(points, title, labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(files, ", "), err)
		}
		charts = append(charts, cs...)
	}
	return charts, nil
}

// checkLines refuses samples of more workers than a chart can show as lines, and more
// model series than charts to draw.
func checkLines(rows []sample.Row, points []kernel.SeriesPoint) error {
	type id struct{ rank, worker int }
	workers := map[id]bool{}
	for i := range rows {
		if workers[id{rows[i].Rank, rows[i].Worker}] = true; len(workers) > maxPlotLines {
			return fmt.Errorf("samples of more than %d workers: too many lines for a chart; plot the files of fewer ranks", maxPlotLines)
		}
	}
	series := map[string]bool{}
	for i := range points {
		if series[points[i].Series] = true; len(series) > maxPlotSeries {
			return fmt.Errorf("more than %d series: too many lines to tell apart; keep fewer series in the file", maxPlotSeries)
		}
	}
	return nil
}

// isStudySummary reports whether data is a study's summary.json (its points and
// replications), which no chart of warped plot draws.
func isStudySummary(data []byte) bool {
	var doc struct {
		Points       []json.RawMessage `json:"points"`
		Replications int               `json:"replications"`
	}
	return json.Unmarshal(data, &doc) == nil && doc.Points != nil && doc.Replications > 0
}
