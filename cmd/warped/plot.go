package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/warpedgo/warped/sample"
	"github.com/warpedgo/warped/sample/chart"
)

// plotUsage is the help of 'warped plot'.
const plotUsage = `Usage: warped plot FILE [--out DIR]

Draws the engine samples of a run (a --sample-file, CSV or JSON lines) as charts, each
written as PNG and SVG into DIR: event-rate, efficiency and gvt against wall time,
rollbacks and pending events per worker, and memory.

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
	if len(files) != 1 {
		fmt.Fprintf(stderr, "warped plot: want one sample file, got %d; run 'warped plot --help' for the usage\n", len(files))
		return exitUsage
	}
	paths, err := plotFile(files[0], *out)
	if err != nil {
		fmt.Fprintf(stderr, "warped plot: %v\n", err)
		return exitRun
	}
	fmt.Fprintf(stdout, "wrote %d charts to %s: %s\n", len(paths), *out, strings.Join(paths, " "))
	return exitOK
}

// plotFile draws the samples in path into dir and returns the files written.
func plotFile(path, dir string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open sample file: %w", err)
	}
	defer f.Close()
	rows, err := sample.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	charts, err := chart.Make(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return chart.WriteFiles(dir, charts)
}
