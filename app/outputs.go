package app

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/internal/outfile"
)

// outputOptions are, by output flag, the flags that say how that output is written and
// that are refused without it: a configuration that leaves the output out leaves them out.
var outputOptions = map[string][]string{
	"sample-file": {"sample-mode", "sample-period", "sample-format"},
}

// The files a run writes: which they are, the checks made before the run starts, and where
// its results go.

// checkOutputs fails before the run, as a usage error, when an output file cannot be
// written (its directory is missing or read-only, it is a directory, it is in /proc, or
// it is an existing file this process could not write), so that a finished run is never
// lost for want of a place to put its results, and no file is replaced that its owner
// protected; or when two outputs, or an output and the --config file, are one file, of
// which the last written would silently replace the other.
func (inv *invocation) checkOutputs() error {
	outs := inv.outputs()
	for _, o := range outs {
		if o.rank >= 0 && o.given == "-" {
			// Each rank writes its own: standard output, which the launcher merges, would
			// interleave them (and rankPath would make "-" a file named --rankN).
			return usageFailure("--%s - writes to standard output, which the ranks of a run across processes share: "+
				"give a file (each rank writes its own, FILE with -rankN before its extension)", o.flag)
		}
		if err := outfile.Check(o.path); err != nil {
			return usageFailure("%v", outputError(o.flag, err))
		}
	}
	var seen []output
	for _, o := range outs {
		id, ok := outfile.Identify(o.path)
		if !ok {
			continue // a device or FIFO, written in place: outputs may share /dev/null
		}
		o.id = id
		for _, p := range seen {
			switch {
			case p.id.Same(id) && id.IsStdout():
				return usageFailure("%s and %s both write to standard output; give each output its own file", p, o)
			case p.id.Same(id):
				return usageFailure("%s and %s name one file; give each output its own file", p, o)
			}
		}
		seen = append(seen, o)
	}
	inputs := map[string]string{}
	maps.Copy(inputs, inv.m.inputs())
	if inv.o.config != "" {
		inputs["config"] = inv.o.config
	}
	for _, flag := range slices.Sorted(maps.Keys(inputs)) { // in one order, for one message
		in, ok := outfile.Identify(inputs[flag])
		if !ok {
			continue // a device or FIFO, read in place
		}
		for _, o := range seen {
			if o.id.Same(in) {
				return usageFailure("%s would replace the --%s file %s; name another output file", o, flag, inputs[flag])
			}
		}
	}
	return nil
}

// output is a file that a run writes: the flag that names it, the path given and the
// path written (across processes, a rank's FILE-rankN).
type output struct {
	flag, given, path string
	rank              int        // the rank that writes path when it is a rank's own, else -1
	id                outfile.ID // set by checkOutputs
}

// String names o in messages: --FLAG PATH, and the rank's file where it differs.
func (o output) String() string {
	s := "--" + o.flag + " " + o.given
	if o.path != o.given {
		s += fmt.Sprintf(" (rank %d's %s)", o.rank, o.path)
	}
	return s
}

// outputs returns the files that the run writes, as every rank of a run across processes
// names them (comm.LaunchedRanks, read before MPI is opened, so that every rank checks,
// and refuses, alike): the stats file and the report are rank 0's alone, each rank writes
// its own sample, series and trace file (rankPath, as openSamples, seriesPath and
// openTrace do), and the model's own files are the paths given. So --stats-file x.csv
// --sample-file x.csv is two files across processes and one in a single process.
func (inv *invocation) outputs() []output {
	ranks := comm.LaunchedRanks()
	var outs []output
	add := func(flag, path string, perRank bool) {
		switch {
		case path == "":
		case !perRank || ranks <= 1:
			outs = append(outs, output{flag: flag, given: path, path: path, rank: -1})
		default:
			for r := range ranks {
				outs = append(outs, output{flag: flag, given: path, path: rankPath(path, r), rank: r})
			}
		}
	}
	add("stats-file", inv.o.statsFile, false)
	add("report", inv.o.report, false)
	add("sample-file", inv.o.sample.file, true)
	add("series-file", inv.o.sample.seriesFile, true)
	add("trace", inv.o.trace.file, true)
	own := inv.m.outputs()
	for _, flag := range slices.Sorted(maps.Keys(own)) { // in one order, for one message
		add(flag, own[flag], false)
	}
	return outs
}

// outputError names the flag of an output file in err: "cannot write --FLAG PATH: why".
func outputError(flag string, err error) error {
	var oe *outfile.Error
	if errors.As(err, &oe) {
		return fmt.Errorf("cannot write --%s %s: %w", flag, oe.Path, oe.Err)
	}
	return fmt.Errorf("--%s: %w", flag, err)
}

// files is how the run writes its output files: "-" is the invocation's standard output
// (a program that runs the command with writers of its own gets its outputs there).
func (inv *invocation) files() outfile.To { return outfile.To{Stdout: inv.stdout} }

// resultsOut is where the run's results are printed, and its name: standard output, unless
// one of the run's outputs is written there ("-": --stats-file - | jq), which then has it
// alone, and the results go to standard error. Ranks other than 0 print nothing.
func (inv *invocation) resultsOut() (io.Writer, string) {
	if inv.tr == nil || inv.tr.Rank() == 0 {
		for _, o := range inv.outputs() {
			if o.given == outfile.Stdout {
				return inv.stderr, "standard error"
			}
		}
	}
	return inv.stdout, "standard output"
}

// settleLeftovers deals with what runs killed at once (SIGKILL, the out-of-memory killer)
// left of the outputs this process writes (outfile.Leftovers): rows so far, of a sample,
// series or trace file or a model's own, are kept beside the output as a failed run's
// samples are (FILE.partial.EXT); a stats file's or report's part, of use only whole, is
// removed. Each is said on standard error.
func (inv *invocation) settleLeftovers() {
	rank, who := 0, inv.who()
	if inv.tr != nil {
		rank = inv.tr.Rank()
		who = fmt.Sprintf("%s: rank %d", who, rank)
	}
	for _, o := range inv.outputs() {
		if o.rank != rank && (o.rank >= 0 || rank != 0) {
			continue // another rank's
		}
		names, _ := outfile.Leftovers(o.path) // unreadable: the output's own check says so
		for _, n := range names {
			switch o.flag {
			case "stats-file", "report":
				if os.Remove(n) == nil {
					fmt.Fprintf(inv.stderr, "%s: removed %s, the part of --%s %s that a run killed earlier left\n", who, n, o.flag, o.given)
				}
			default:
				if kept, err := outfile.KeepAside(n, o.path); err == nil {
					fmt.Fprintf(inv.stderr, "%s: a run killed earlier left its --%s rows so far in %s: kept as %s\n", who, o.flag, n, kept)
				}
			}
		}
	}
}
