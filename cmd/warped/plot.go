package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
	"github.com/warpedgo/warped/sample/chart"
)

// plotUsage is the help of 'warped plot'.
const plotUsage = `Usage: warped plot FILE... [--out DIR]
       warped plot STATS.json... [--out DIR]

Draws the engine samples of a run (a --sample-file, CSV or JSON lines; the files of
several ranks together) as charts, each written as PNG and SVG into DIR: event-rate,
efficiency and gvt against wall time, rollbacks and pending events per worker, memory,
and time-split (the share of each worker's time spent idle, processing, in GVT and in
communication, and of each rank's manager's). Given a --series-file (the model's own
series), it draws one chart per series, series-NAME: the value against simulated time,
summed over the LPs that record it at that time. Sample and series files may be given
together.

Given --stats-file outputs instead (one run each, or a JSON array of such objects), it
compares the runs side by side in bar charts: committed event rate, efficiency, events
rolled back, peak memory and wall time.

  --out DIR   directory for the charts (default "plots"; made if missing)
`

// plotCommand is 'warped plot': it returns the exit status.
func plotCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warped plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "plots", "directory for the charts")
	// The file may come before or after the flags.
	var files []string
	for {
		if err := fs.Parse(args); err == flag.ErrHelp {
			fmt.Fprint(stdout, plotUsage)
			return exitOK
		} else if err != nil {
			fmt.Fprintf(stderr, "warped plot: %v; run 'warped plot --help' for the usage\n", err)
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "warped plot: want a sample file or stats files, got none; run 'warped plot --help' for the usage\n")
		return exitUsage
	}
	runs, err := readStatsFiles(files)
	var paths []string
	switch {
	case err != nil:
	case runs != nil:
		var charts []chart.Chart
		if charts, err = chart.Compare(runs); err == nil {
			paths, err = chart.WriteFiles(*out, charts)
		}
	default:
		paths, err = plotFiles(files, *out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "warped plot: %v\n", err)
		return exitRun
	}
	fmt.Fprintf(stdout, "wrote %d charts to %s: %s\n", len(paths), *out, strings.Join(paths, " "))
	return exitOK
}

// readStatsFiles reads files as --stats-file outputs (each one object, or an array of
// them) and returns one run each, labelled by file name (and index in an array). It returns
// nil, nil when the first file is not one (a sample file), and an error when only some are.
func readStatsFiles(files []string) ([]chart.Run, error) {
	var runs []chart.Run
	for i, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err // names the file
		}
		objs, ok := statsObjects(data)
		if !ok {
			if i == 0 {
				return nil, nil
			}
			return nil, fmt.Errorf("%s is not a --stats-file output, unlike %s: give one sample file, or stats files only", path, files[0])
		}
		label := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		for j, o := range objs {
			r := chart.Run{Label: label, Values: map[string]float64{}}
			if len(objs) > 1 {
				r.Label = fmt.Sprintf("%s[%d]", label, j)
			}
			for k, v := range o {
				if x, ok := v.(float64); ok {
					r.Values[k] = x
				}
			}
			runs = append(runs, r)
		}
	}
	return runs, nil
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

// plotFiles draws the engine samples and model series in files (each one or the other,
// told by its first line) into dir and returns the files written.
func plotFiles(files []string, dir string) ([]string, error) {
	var rows []sample.Row
	var points []kernel.SeriesPoint
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("open sample file: %w", err)
		}
		first, _, _ := strings.Cut(string(data[:min(len(data), 256)]), "\n")
		if sample.IsSeries(first) {
			pts, err := sample.ReadSeries(bytes.NewReader(data))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			points = append(points, pts...)
			continue
		}
		rs, err := sample.Read(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rs...)
	}
	var charts []chart.Chart
	if len(rows) > 0 || len(points) == 0 {
		cs, err := chart.Make(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(files, ", "), err)
		}
		charts = cs
	}
	if len(points) > 0 {
		cs, err := chart.Series(points)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(files, ", "), err)
		}
		charts = append(charts, cs...)
	}
	return chart.WriteFiles(dir, charts)
}
