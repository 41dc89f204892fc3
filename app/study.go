package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/internal/infile"
	"github.com/warpedgo/warped/internal/meminfo"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/sample/chart"
	"github.com/warpedgo/warped/study"
)

// catalog gives package study the command's models.
type catalog struct{ c *Command }

func (cat catalog) Flags(name string) (*pflag.FlagSet, error) {
	m := cat.c.find(name)
	if m == nil {
		names := make([]string, len(cat.c.models))
		for i, m := range cat.c.models {
			names[i] = m.Name
		}
		return nil, study.UnknownModel(name, names)
	}
	cat.c.mu.Lock()
	defer cat.c.mu.Unlock()
	var o options
	fs, _ := newFlagSet(m, &o)
	return fs, nil
}

// Program is the command's name.
func (cat catalog) Program() string { return cat.c.name }

// StatsKeys are the kernel's statistics that a study may summarise (statskeys.go).
func (catalog) StatsKeys() []string { return statsKeys() }

func (cat catalog) ResultKeys(name string) (keys []string) {
	for _, r := range cat.results(name) {
		keys = append(keys, r.Key)
	}
	return keys
}

// results returns model name's results as known before a run (their keys and labels), or
// nil when they depend on its flags.
func (cat catalog) results(name string) (rs []Result) {
	m := cat.c.find(name)
	if m == nil || m.DynamicResults {
		return nil
	}
	cat.c.mu.Lock()
	defer cat.c.mu.Unlock()
	defer func() {
		if recover() != nil {
			rs = nil
		}
	}()
	return m.results(nil, nil)
}

// Labels names model name's quantities on a study's plots: the kernel's statistics
// (statsLabels), the model's results by their printed labels, and over both the model's
// own Labels (a label without text keeps the result's).
func (cat catalog) Labels(name string) map[string]chart.Label {
	out := statsLabels()
	for _, r := range cat.results(name) {
		out[r.Key] = chart.Label{Text: r.Label}
	}
	if m := cat.c.find(name); m != nil {
		for k, l := range m.Labels {
			if l.Text == "" {
				l.Text = out[k].Text
			}
			out[k] = l
		}
	}
	return out
}

// runForStudy runs model name with the command-line flags args in this process, as
// 'PROGRAM NAME ARGS' would but printing nothing, and returns its outcome.
func (c *Command) runForStudy(ctx context.Context, name string, args []string, shared gpuoffload.Backend) (study.Outcome, error) {
	if shared != nil {
		defer shared.Close()
	}
	alone := c.runs.Add(1) == 1
	defer c.runs.Add(-1)
	started := c.starts.Add(1)
	if alone {
		// The process's peak from here on is this run's: what earlier runs left is given
		// back first, or a small run after a large one would report the large one's. A
		// collection costs a few milliseconds, the run's own time for small runs: only
		// where more than studyRetained is resident.
		if meminfo.Resident() > studyRetained {
			debug.FreeOSMemory()
		}
		meminfo.ResetPeak()
	}
	inv, lps, cfg, err := c.buildForStudy(name, args)
	if err != nil {
		return study.Outcome{}, err
	}
	defer inv.close()
	if shared != nil && inv.o.simType == kernel.TimeWarp && inv.o.gpu != gpuoffload.ModeOff && hasBatcher(lps) {
		// The study's shared backend, batching on (the study asked to merge batches).
		cfg.TimeWarp.Offload, cfg.TimeWarp.BatchSize = shared, inv.o.gpuBatchSize
	} else if _, err := inv.openOffload(&cfg, lps); err != nil {
		return study.Outcome{}, err
	}
	var results []Result
	c.finalWithResults(inv, &cfg, &results)
	sim, err := dispatch.New(cfg, lps)
	if err != nil {
		return study.Outcome{}, err
	}
	res, err := sim.Run(ctx)
	if err != nil {
		return study.Outcome{}, fmt.Errorf("run failed: %w", err)
	}
	out := studyOutcome(results, res)
	if !alone || c.starts.Load() != started { // another run shared the process
		for _, k := range processKeys {
			if _, ok := out.Results[k]; ok {
				delete(out.Results, k)
				out.Unmeasured = append(out.Unmeasured, k)
			}
		}
	}
	return out, nil
}

// studyRetained is the resident memory above which a study's run alone first gives back
// what earlier runs left (runForStudy): its peak is then its own within that much.
const studyRetained = 64 << 20

// processKeys are the statistics that measure the whole process, not one run: a study's
// run that shared the process with another leaves them unmeasured (study.Outcome).
var processKeys = []string{"peak_memory_bytes", "cpu_wait_seconds"}

// buildForStudy parses model name's flags args and builds its LPs and configuration, as
// 'PROGRAM NAME ARGS' would but printing nothing. The caller closes the invocation.
func (c *Command) buildForStudy(name string, args []string) (*invocation, []kernel.LogicalProcess, kernel.Config, error) {
	m := c.find(name)
	if m == nil {
		return nil, nil, kernel.Config{}, fmt.Errorf("unknown model %q", name)
	}
	inv := &invocation{c: c, m: m, stdout: io.Discard, stderr: io.Discard}
	c.mu.Lock()
	err := inv.parseFlags(args)
	if err == nil {
		err = checkOptions(&inv.o)
	}
	var lps []kernel.LogicalProcess
	var cfg kernel.Config
	if err == nil {
		var part partition.Partitioner
		if lps, part, err = inv.buildModel(); err == nil {
			inv.fitWorkers(len(lps)) // as a run alone would; its note is not shown
			cfg = inv.config(part)   // reads every flag's value
		}
	}
	c.mu.Unlock()
	if err != nil {
		inv.close()
		return nil, nil, kernel.Config{}, err
	}
	return inv, lps, cfg, nil
}

// finalWithResults has a study's run read its model's results as its final hook, right
// after the model's own Final and under the same lock (see Command.mu), into *results: a
// model may keep what Final computes for Results (TUTORIAL, step 13) where another run's
// Final would overwrite it before this run's Results read it.
func (c *Command) finalWithResults(inv *invocation, cfg *kernel.Config, results *[]Result) {
	cfg.ModelFinal = func(lps []kernel.LogicalProcess) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if inv.m.Final != nil {
			if err := inv.m.Final(lps); err != nil {
				return err
			}
		}
		*results = inv.m.results(lps, inv.fs)
		return nil
	}
}

// studyOutcome is a study's record of a run that gave res, with the model's results: those
// and the kernel's statistics.
func studyOutcome(results []Result, res kernel.Result) study.Outcome {
	out := study.Outcome{Results: make(map[string]float64, len(results)), Digest: res.Digest,
		Events: res.EventsCommitted, WallSeconds: res.WallSeconds}
	for k, v := range statsNumbers(res.Stats) {
		out.Results[k] = v
	}
	for _, r := range results {
		if v := r.number(); math.IsNaN(v) || math.IsInf(v, 0) {
			out.Unmeasured = append(out.Unmeasured, r.Key) // no value: a mean over nothing
		} else {
			out.Results[r.Key] = v
		}
	}
	for _, k := range statsKeys() {
		if _, ok := out.Results[k]; !ok && !slices.Contains(out.Unmeasured, k) {
			out.Unmeasured = append(out.Unmeasured, k) // another dispatcher's (worker_threads)
		}
	}
	return out
}

// hasBatcher reports whether some LP has batch kernels.
func hasBatcher(lps []kernel.LogicalProcess) bool {
	return slices.ContainsFunc(lps, func(lp kernel.LogicalProcess) bool {
		_, ok := lp.(kernel.Batcher)
		return ok
	})
}

// openMerge opens the backend that a study's runs share to merge batches: the one the
// spec's --gpu asks for (auto: CUDA if it opens, else the CPU backend).
func openMerge(s *study.Spec, name *string) func() (gpuoffload.Backend, error) {
	return func() (gpuoffload.Backend, error) {
		mode, device := gpuoffload.ModeAuto, 0
		for _, f := range s.Flags {
			switch f.Name {
			case "gpu":
				mode = f.Value
			case "gpu-device":
				device, _ = strconv.Atoi(f.Value) // checked with the spec
			}
		}
		if mode == gpuoffload.ModeOff {
			return nil, &study.SettingsError{Msg: "merging batches across runs needs --gpu cpu, on or auto, not off"}
		}
		be, _, err := gpuoffload.Open(mode, gpuoffload.Options{Device: device})
		if err != nil {
			return nil, err
		}
		if be == nil {
			be = gpuoffload.NewCPU(0)
		}
		if name != nil {
			*name = be.Name()
		}
		return be, nil
	}
}

// studyOptions are the flags of 'PROGRAM study'.
type studyOptions struct {
	out      string
	resume   bool
	exec     study.Execution
	progress progressMode
}

// studyUsage is the help of 'PROGRAM study'.
const studyUsage = `Usage: PROGRAM study SPEC [flags]

Runs a parameter study: the runs of one model over a grid (or list) of parameter values,
each point repeated with several seeds, many at once in this process. SPEC is a YAML or
JSON file; see examples/study/. Writes summary.csv and summary.json (mean, std and 95%
confidence interval per point and result), runs.csv (one row per run with its digest),
plots (plot-RESULT.png and .svg: each result against the first numeric parameter that
varies, named as the model labels them, ticks at the parameter's values, a log x axis
where the values are spaced evenly on one; the spec's plot: {x-scale, y-scale} sets
linear or log) and journal.jsonl (finished runs) into --out.

With --simulation-type gpu the runs are disjoint sets of LPs of one device loop, as many as
share the device code, end time and --gpu-* flags, up to 2^20 LPs or --group-runs runs a
loop; each run's digest and results are the ones it has alone.

Flags:
`

// studyCommand is 'PROGRAM study SPEC [flags]'.
func (c *Command) studyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	fail := func(status int, format string, a ...any) int {
		fmt.Fprintf(stderr, c.name+" study: "+format+"\n", a...)
		return status
	}
	var o studyOptions
	o.progress = "auto"
	fs := pflag.NewFlagSet("study", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.out, "out", "", "directory of the tables, plots and journal (default: the spec's name with .out)")
	fs.BoolVar(&o.resume, "resume", false, "go on with the study whose journal is in --out, skipping its finished runs")
	fs.IntVar(&o.exec.Jobs, "jobs", 0, "runs at once (0: the spec's, else chosen from the cores and memory; with --simulation-type gpu, device loops run one at a time)")
	fs.StringVar(&o.exec.SimulationType, "simulation-type", "", "each run's dispatcher: auto (chosen: sequential runs on every core, or time-warp runs when there are fewer runs than cores and they are long), "+strings.Join(kernel.Types(), " or ")+" (default: the spec's, else auto)")
	fs.IntVar(&o.exec.Workers, "workers", 0, "time-warp worker threads of each run (0: the cores divided by the jobs)")
	fs.IntVar(&o.exec.MemoryMiB, "memory-mib", 0, "memory budget of the runs in MiB (0: the spec's, else half the memory available)")
	fs.IntVar(&o.exec.GroupRuns, "group-runs", 0, "with --simulation-type gpu, the most runs in one device loop (0: as many as 2^20 LPs hold)")
	fs.BoolVar(&o.exec.MergeBatches, "merge-batches", false, "run time-warp runs on one shared offload backend that merges batches of the same kernel from different runs (CUDA with --gpu on or auto where it opens, else the CPU backend)")
	fs.Var(&o.progress, "progress", "progress bar on stderr: auto (when stderr is a terminal), on or off")
	fs.Lookup("progress").NoOptDefVal = "on"
	fs.SortFlags = false
	var spec string
	for rest := args; ; {
		if err := parseArgs(fs, rest); errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, strings.ReplaceAll(studyUsage, "PROGRAM", c.name))
			fs.VisitAll(func(f *pflag.Flag) {
				fmt.Fprintf(stdout, "  --%-16s %s%s\n", f.Name, f.Usage, defaultNote(f))
			})
			return exitOK
		} else if err != nil {
			return fail(exitUsage, "%v; run '%s study --help' for the flags", err, c.name)
		}
		if fs.NArg() == 0 {
			break
		}
		if spec != "" {
			return fail(exitUsage, "unexpected argument %q: give one SPEC", fs.Arg(0))
		}
		spec, rest = fs.Arg(0), fs.Args()[1:]
	}
	if spec == "" {
		return fail(exitUsage, "missing SPEC; run '%s study --help'", c.name)
	}
	if err := o.exec.Check(); err != nil {
		return fail(exitUsage, "%v; run '%s study --help' for the flags", err, c.name)
	}
	if err := comm.CheckLaunch(); err != nil {
		return fail(exitUsage, "%v", err)
	}
	data, err := infile.ReadAtMost(spec, maxSpecBytes)
	if errors.Is(err, infile.ErrTooLarge) {
		return fail(exitUsage, "cannot read the spec: %s is over %d MiB: not a study spec", spec, maxSpecBytes>>20)
	}
	if err != nil {
		return fail(exitUsage, "cannot read the spec: %v", err)
	}
	s, err := study.Parse(data, spec, catalog{c})
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if err := c.checkStudyPoints(s); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if o.out == "" {
		o.out = strings.TrimSuffix(filepath.Base(spec), filepath.Ext(spec)) + ".out"
	}
	var ranks study.Ranks
	log := stderr
	if comm.LaunchedRanks() > 1 {
		// Under mpirun the ranks share the runs; rank 0 prints and writes the tables.
		mpi, err := comm.NewMPI(comm.MPIOptions{})
		if err != nil {
			return fail(exitRun, "%v", err)
		}
		defer func() {
			// A failure ends every rank (none may wait for another forever): rank 0
			// once it has said why, another rank when a signal stopped it alone.
			if code != exitOK && (mpi.Rank() == 0 || interrupted(ctx) != nil) {
				mpi.Abort(code)
			}
			mpi.Close()
		}()
		ranks = mpi
		if mpi.Rank() != 0 {
			errOut := stderr
			fail = func(status int, format string, a ...any) int {
				if sig := interrupted(ctx); sig != nil {
					// It stops the job at once (study.Execute returns without waiting
					// for the others' runs): it says how to go on, as rank 0 would.
					fmt.Fprintf(errOut, "%s study: rank %d: %v: the finished runs are in %s; go on with '%s study %s --out %s --resume'\n",
						c.name, mpi.Rank(), sig, o.out, c.name, spec, o.out)
				}
				return status
			}
			stdout, stderr, log, o.progress = io.Discard, io.Discard, io.Discard, "off"
		}
	}
	var prog study.Progress
	switch o.progress {
	case "on": // a bar on a terminal, plain lines into a file or pipe
		prog = study.NewProgress(stderr, isTerminal(stderr))
	case "off":
	default:
		prog = study.NewProgress(stderr, showProgress("auto", stderr))
	}
	dev := &studyDevice{c: c}
	var merged string // the backend of merged batches, named in the summary
	st, err := study.Execute(ctx, s, c.runForStudy, study.Options{Out: o.out, Resume: o.resume,
		Execution: o.exec, Progress: prog, Log: log, Types: kernel.Types(), OpenMerge: openMerge(s, &merged), Ranks: ranks,
		Device: dev})
	if errors.Is(err, study.ErrInterrupted) {
		why := "interrupted"
		if sig := interrupted(ctx); sig != nil {
			why = sig.Error()
		}
		return fail(exitRun, "%s: the finished runs are in %s; go on with '%s study %s --out %s --resume'",
			why, filepath.Join(o.out, study.JournalFile), c.name, spec, o.out)
	}
	var se *study.SettingsError
	if errors.As(err, &se) {
		return fail(exitUsage, "%v", err)
	}
	if err != nil {
		// A run's failure, or the journal's (a full disk): what the journal holds stays.
		return fail(exitRun, "%v; the runs finished before are in %s: mend the cause, then go on with '%s study %s --out %s --resume'",
			err, filepath.Join(o.out, study.JournalFile), c.name, spec, o.out)
	}
	if ranks != nil && ranks.Rank() != 0 {
		return exitOK
	}
	if sig := interrupted(ctx); sig != nil {
		return fail(exitRun, "%v: every run finished (in %s); write the tables with '%s study %s --out %s --resume'",
			sig, filepath.Join(o.out, study.JournalFile), c.name, spec, o.out)
	}
	st.Provenance = newProvenance(time.Now(), commandLine(c.name, "study", args))
	paths, err := st.WriteTables(o.out)
	if err != nil {
		return fail(exitRun, "%v: no table written; every run finished (in %s): write them with '%s study %s --out %s --resume'",
			err, filepath.Join(o.out, study.JournalFile), c.name, spec, o.out)
	}
	printStudy(stdout, st)
	if st.DeviceLoops > 0 {
		fmt.Fprintln(stdout, dev.summary(len(st.Runs)-st.Resumed, st.DeviceLoops))
	}
	if st.MergedBatches > 0 {
		fmt.Fprintf(stdout, "offload: %d batches (%d events) of the runs in %d merged calls on %s\n", st.MergedBatches, st.MergedElements, st.MergedCalls, merged)
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(paths, ", "))
	return exitOK
}

// checkStudyPoints checks, before any run, that every point's configuration builds: the
// model's own checks (a negative count, an odd degree) fail here, not after hours.
func (c *Command) checkStudyPoints(s *study.Spec) error {
	m := c.find(s.Model)
	seen := map[string]bool{}
	for _, r := range s.Runs() {
		if r.Replication != 0 {
			continue
		}
		args := r.Args[:len(r.Args)-1] // the seed does not change the configuration
		if k := strings.Join(args, " "); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		inv := &invocation{c: c, m: m, stdout: io.Discard, stderr: io.Discard}
		c.mu.Lock()
		err := inv.parseFlags(args)
		if err == nil {
			err = checkOptions(&inv.o)
		}
		if err == nil {
			err = refuseRunOutputs(inv.fs, inv.who())
		}
		if err == nil {
			err = checkMemory(m, inv.fs)
		}
		if err == nil {
			_, _, err = inv.buildModel()
		}
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("%s: point %d (%s; summary.csv's numbering): %v", s.Model, r.Point, strings.Join(args, " "), err)
		}
	}
	return nil
}

// studyRefused are the flags of one run's outputs that a study's runs do not write (one
// file for many runs would be overwritten; a study's outputs are its tables).
var studyRefused = []string{"sample-file", "series-file", "report", "max-memory", "trace"}

// refuseRunOutputs reports a flag of studyRefused that fs sets, with what to do instead.
func refuseRunOutputs(fs *pflag.FlagSet, who string) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && slices.Contains(studyRefused, f.Name) {
			err = fmt.Errorf("--%s is for one run, not a study: drop it from the spec, and run the point alone with '%s ... --%s %s'", f.Name, who, f.Name, f.Value)
		}
	})
	return err
}

// plural is n and noun, with an s but for one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// printStudy prints the summary: per point and result the mean and the 95% confidence
// interval's half width.
func printStudy(w io.Writer, st *study.Study) {
	fmt.Fprintf(w, "Study of %s: %s x %s = %s (%d resumed from the journal)\n", st.Spec.Model,
		plural(len(st.Spec.Points), "point"), plural(st.Spec.Replications, "seed"), plural(len(st.Runs), "run"), st.Resumed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := append(append([]string{}, st.Spec.Params...), st.Spec.Results...)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	blank := false
	for _, ps := range st.Summary() {
		row := append([]string{}, ps.Params...)
		for _, r := range ps.Results {
			if r.N == 0 {
				row, blank = append(row, "-"), true // no run measured it (another dispatcher's figure)
				continue
			}
			// Significant digits, not decimals: efficiency is 0.9987, call attempts 48157.4.
			cell := strconv.FormatFloat(r.Mean, 'g', 6, 64)
			if h := (r.CIHigh - r.CILow) / 2; h == h {
				cell += " ± " + strconv.FormatFloat(h, 'g', 3, 64)
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	digests := map[string]bool{}
	for _, out := range st.Outcomes {
		digests[out.Digest] = true
	}
	keys := make([]string, 0, len(digests))
	for k := range digests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	note := ""
	if blank {
		note = "-: no run measured it; "
	}
	fmt.Fprintf(w, "(mean ± 95%% confidence half-width; %s%d distinct digests)\n", note, len(keys))
}

// maxSpecBytes is the largest study spec: a spec is a few kilobytes, and a device such as
// /dev/zero given by mistake would be read until memory ran out.
const maxSpecBytes = 16 << 20
