package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// The command's flags are GNU-style (spf13/pflag): --flag value and --flag=value for
// every kind. parseArgs adds what pflag leaves out: a boolean takes the word that
// follows it (--progress on, --time-warp-remote-safe false), a single dash before a long
// name still works (-lps 8, as Go's flag package took it), and an unknown flag's error
// names the flags it may have meant.

// parseArgs parses args into fs. It returns pflag.ErrHelp when args ask for help.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	norm, err := normalizeArgs(fs, args)
	if err != nil {
		return err
	}
	return outOfRange(fs.Parse(norm))
}

// outOfRange rewrites pflag's "must be an integer" for an integer too large (or small)
// for its flag's type, which the user may read as a complaint about the digits.
func outOfRange(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	bits := map[string]int{"int": 0, "int64": 64, "int32": 32, "int16": 16, "int8": 8}
	b, ok := bits[ive.GetFlag().Value.Type()]
	if !ok {
		return err
	}
	var ne *strconv.NumError
	if _, perr := strconv.ParseInt(ive.GetValue(), 0, b); !errors.As(perr, &ne) || ne.Err != strconv.ErrRange {
		return err
	}
	if b == 0 {
		b = strconv.IntSize
	}
	return fmt.Errorf("invalid argument %q for \"--%s\" flag: out of range (at most %d in magnitude)",
		ive.GetValue(), ive.GetFlag().Name, int64(1)<<(b-1)-1)
}

// normalizeArgs rewrites args into the forms pflag takes: every flag as --name or
// --name=value, a boolean's following word joined to it.
func normalizeArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case a == "-h" || a == "-help" || a == "--help":
			return nil, pflag.ErrHelp
		case len(a) < 2 || a[0] != '-' || strings.HasPrefix(a, "---"):
			out = append(out, a) // an argument, or bad syntax that pflag reports
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		value, hasValue := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, value, hasValue = name[:k], name[k+1:], true
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, unknownFlag(fs, name, strings.SplitN(a, "=", 2)[0])
		}
		if !hasValue && f.NoOptDefVal != "" && i+1 < len(args) && optionalWord(f, args[i+1]) {
			i++
			value, hasValue = args[i], true
		}
		switch {
		case hasValue:
			out = append(out, "--"+name+"="+flagWord(f, value))
		case f.NoOptDefVal == "" && i+1 < len(args):
			// The next argument is the value, whatever it looks like (--remote -0.5).
			i++
			out = append(out, "--"+name+"="+args[i])
		default:
			out = append(out, "--"+name) // a bare boolean, or a value missing: pflag says so
		}
	}
	return out, nil
}

// boolWords are the words a boolean flag takes, and what they mean.
var boolWords = map[string]string{"true": "true", "false": "false", "on": "true", "off": "false",
	"yes": "true", "no": "false", "1": "true", "0": "false", "t": "true", "f": "false"}

// optionalWord reports whether w, following flag f that may stand alone, is f's value:
// a boolean word for a boolean, auto, on or off for --progress.
func optionalWord(f *pflag.Flag, w string) bool {
	w = strings.ToLower(w)
	if f.Value.Type() == "bool" {
		_, ok := boolWords[w]
		return ok
	}
	return w == "auto" || w == "on" || w == "off"
}

// flagWord returns value as f's Set takes it: a boolean's on, off, yes or no as true or
// false.
func flagWord(f *pflag.Flag, value string) string {
	if f.Value.Type() == "bool" {
		if b, ok := boolWords[strings.ToLower(value)]; ok {
			return b
		}
	}
	return value
}

// warped2Flags are WARPED2's flags that this command spells otherwise or does without,
// and what to give instead.
var warped2Flags = map[string]string{
	"c":                                    "--config FILE",
	"partitioning-blocksize":               "--partitioning blocks (contiguous ranges, one a schedule queue)",
	"statistics-type":                      "--stats-file FILE for the totals, --trace FILE for every committed event",
	"statistics-file":                      "--stats-file FILE",
	"time-warp-statistics-file":            "--stats-file FILE",
	"partitioning-type":                    "--partitioning (model, blocks or round-robin)",
	"partitioning-file":                    "--partitioning (a file of parts is not read)",
	"time-warp-config-output-file":         "--dump-config > FILE (the flags that were set, as a --config file)",
	"time-warp-lp-migration":               "nothing: an LP stays with the worker that --partitioning gives it",
	"time-warp-communication-max-msg-size": "nothing: a message is sized to its events (--time-warp-communication-max-aggregate bounds their number)",
}

// unknownFlag is the error of a flag fs lacks, given as arg: WARPED2's name for another
// flag (warped2Flags), a single letter (no flag has one), or one whose names are near.
func unknownFlag(fs *pflag.FlagSet, name, arg string) error {
	if arg == "-"+name || arg == "--"+name {
		name = strings.TrimLeft(arg, "-")
	}
	shown := "--" + name
	if len(name) == 1 && !strings.HasPrefix(arg, "--") {
		shown = "-" + name
	}
	if name == "model" && fs.Lookup("warped2-config") != nil {
		return fmt.Errorf("unknown flag --model (WARPED2's epidemic file is --warped2-config FILE here)")
	}
	if instead, ok := warped2Flags[name]; ok {
		return fmt.Errorf("unknown flag %s (WARPED2's; here: %s)", shown, instead)
	}
	if len(name) == 1 {
		return fmt.Errorf("unknown flag %s: flags have long names here, WARPED2's models' short ones included", shown)
	}
	var near []string
	fs.VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if d <= max(1, len(name)/4) || (len(name) >= 3 && strings.Contains(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if len(near) > 4 {
		near = near[:4]
	}
	return fmt.Errorf("unknown flag --%s (did you mean %s?)", name, strings.Join(near, " or "))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Flag groups, in the order help lists them. A flag's group is its "group" annotation;
// the model's own flags have none.
const (
	groupModel    = "model"
	groupKernel   = "kernel"
	groupTimeWarp = "time-warp"
	groupGPU      = "gpu"
	groupOutput   = "output"
)

var flagGroups = []struct{ key, title string }{
	{groupModel, "Model flags"}, {groupKernel, "Kernel flags"},
	{groupTimeWarp, "Time warp flags"}, {groupGPU, "GPU flags (--gpu offload under time warp; --simulation-type gpu)"},
	{groupOutput, "Output flags"},
}

// outputFlags are the kernel's flags about what a run writes and shows.
var outputFlags = map[string]bool{"config": true, "dump-config": true, "stats-file": true, "progress": true,
	"sample-file": true, "sample-mode": true, "sample-period": true, "sample-format": true,
	"series-file": true, "report": true, "trace": true, "trace-every": true}

// annotateGroups puts every flag fs has so far in the kernel, time warp, GPU or output group.
func annotateGroups(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		g := groupKernel
		switch {
		case outputFlags[f.Name]:
			g = groupOutput
		case strings.HasPrefix(f.Name, "time-warp-"):
			g = groupTimeWarp
		case strings.HasPrefix(f.Name, "gpu"):
			g = groupGPU
		}
		_ = fs.SetAnnotation(f.Name, "group", []string{g})
	})
}

// flagGroup returns f's group.
func flagGroup(f *pflag.Flag) string {
	if g := f.Annotations["group"]; len(g) > 0 {
		return g[0]
	}
	return groupModel
}

// writeFlagHelp lists fs's flags by group, each group in the order the flags were made.
func writeFlagHelp(b *strings.Builder, fs *pflag.FlagSet) {
	fs.SortFlags = false
	for _, g := range flagGroups {
		first := true
		fs.VisitAll(func(f *pflag.Flag) {
			if flagGroup(f) != g.key {
				return
			}
			if first {
				fmt.Fprintf(b, "\n%s:\n", g.title)
				first = false
			}
			arg := ""
			if f.NoOptDefVal == "" {
				arg = " " + f.Value.Type()
			}
			fmt.Fprintf(b, "  --%s%s\n      %s%s\n", f.Name, arg, f.Usage, defaultNote(f))
		})
	}
}

// defaultNote is what a flag's help says of its default: " (default X)", or nothing where
// the usage says it already, the default is empty, or it is a boolean's false (the
// flag's absence).
func defaultNote(f *pflag.Flag) string {
	if strings.Contains(f.Usage, "(default") || f.DefValue == "" || f.Value.Type() == "bool" && f.DefValue == "false" {
		return ""
	}
	return " (default " + f.DefValue + ")"
}

// dumpConfig returns the flags that were set, on the command line or by --config, less
// those in omit, as a JSON object that --config accepts: a run with it is the same run,
// since a flag left out keeps the default it had (the CPUs of the machine it runs on,
// auto state saving).
func dumpConfig(fs *pflag.FlagSet, omit map[string]bool) ([]byte, error) {
	kv := map[string]any{}
	fs.Visit(func(f *pflag.Flag) {
		if notInConfig[f.Name] || omit[f.Name] {
			return
		}
		s := f.Value.String()
		switch f.Value.Type() {
		case "float64":
			if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(v, 0) {
				kv[f.Name] = v
				return
			}
		case "int", "uint64":
			kv[f.Name] = json.Number(s)
			return
		case "bool":
			if v, err := strconv.ParseBool(s); err == nil {
				kv[f.Name] = v
				return
			}
		}
		kv[f.Name] = s // a string, or +Inf (JSON has no infinity; "+Inf" parses back)
	})
	out, err := json.MarshalIndent(kv, "", "  ")
	return append(out, '\n'), err
}

// flagNumber returns the value of the numeric flag name of fs as a float64 (0 when there
// is none), so that products of sizes cannot wrap.
func flagNumber(fs *pflag.FlagSet, name string) float64 {
	f := fs.Lookup(name)
	if f == nil {
		return 0
	}
	switch f.Value.Type() {
	case "int", "uint64", "float64":
		v, _ := strconv.ParseFloat(f.Value.String(), 64)
		return v
	}
	return 0
}

// decimalIntegers has every integer flag of fs read its value in decimal: pflag reads
// integers as Go does, so --lps 010 would be 8 (octal), 0x10 16 and 1_000 1000, which nobody
// giving a simulation's sizes means (a float flag read 010 as 10).
func decimalIntegers(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			f.Value = decimal{f.Value}
		}
	})
}

// decimal is an integer flag's value read in decimal only (see decimalIntegers); leading
// zeros are allowed (010 is ten).
type decimal struct{ pflag.Value }

// Set sets the value from s, a decimal integer with an optional sign.
func (d decimal) Set(s string) error {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, digits = s[:1], s[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return fmt.Errorf("want a whole number in decimal digits")
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		digits = "0"
	}
	return d.Value.Set(sign + digits)
}

// notInConfig are flags that make no sense inside a configuration file.
var notInConfig = map[string]bool{"config": true, "dump-config": true}

// newFlagSet returns the flag set of model m, with the kernel options bound to o.
func newFlagSet(m *Model, o *options) (*pflag.FlagSet, func() ([]kernel.LogicalProcess, partition.Partitioner, error)) {
	fs := pflag.NewFlagSet(m.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.progress = "auto"
	tw := kernel.DefaultTimeWarp() // every time-warp flag's default
	fs.Float64Var(&o.maxSimTime, "max-sim-time", m.EndTime, "end time: events before it are processed (and those at it with --max-sim-time-inclusive)")
	fs.BoolVar(&o.inclusive, "max-sim-time-inclusive", false, "process the events at --max-sim-time too: WARPED2's rule (it handles timestamps <= max-sim-time), to reproduce its runs")
	fs.StringVar(&o.simType, "simulation-type", kernel.TimeWarp, "dispatcher: "+strings.Join(kernel.Types(), " or "))
	fs.IntVar(&o.workers, "time-warp-worker-threads", tw.Workers, "time warp: workers (default: the CPUs this process may use); more than that take turns on that many goroutines")
	fs.IntVar(&o.schedulers, "time-warp-scheduler-count", tw.Schedulers, "time warp: schedule queues, at most the worker threads (0: one per worker thread)")
	fs.StringVar(&o.queueType, "time-warp-queue-type", tw.QueueType, "time warp: each schedule queue's pending events: calendar (a calendar queue of its LPs' events), or heap, splay, ladder or parallel-heap (an LTSF queue of its LPs, each LP's events beside it), with a queue per worker or shared by a group")
	fs.StringVar(&o.lockType, "time-warp-lock-type", tw.LockType, "time warp: the locks of the schedule queues: ticket (FIFO spinlock) or mutex (polls briefly, then parks)")
	fs.IntVar(&o.period, "time-warp-state-saving-period", tw.StateSavingPeriod, "time warp: save each LP's state every N events (1: copy state saving)")
	fs.StringVar(&o.stateSaving, "time-warp-state-saving-type", tw.StateSaving, "time warp: periodic state saving, reverse computation (every LP must implement Reverse), or auto: reverse when every LP implements it and no period is set")
	fs.StringVar(&o.cancellation, "time-warp-cancellation", tw.Cancellation, "time warp: aggressive or lazy cancellation")
	fs.Float64Var(&o.window, "time-warp-optimism-window", 0, "time warp: never process events at or above GVT + W (0: unbounded)")
	fs.Float64Var(&o.gvtPeriodMS, "time-warp-gvt-calculation-period", float64(tw.GVTPeriod)/float64(time.Millisecond), "time warp: the most milliseconds between GVT rounds; rounds also start every few hundred events a worker processes and when every worker is idle, so a longer period (WARPED2's 1000) changes little")
	fs.BoolVar(&o.checkRollbacks, "time-warp-check-rollbacks", false, "time warp: debug mode: check that re-executed events rebuild the same state")
	fs.StringVar(&o.gvtMethod, "time-warp-gvt-calculation-method", tw.GVTMethod, "time warp across processes: GVT by Mattern's token (asynchronous), all-gather (synchronous) or time quanta reported to rank 0 (tq)")
	fs.IntVar(&o.maxAggregate, "time-warp-communication-max-aggregate", tw.MaxAggregate, "time warp across processes: most events in one message (1: no aggregation)")
	fs.BoolVar(&o.remoteSafe, "time-warp-remote-safe", true, "time warp across processes: commit events below the other processes' promises unlogged (reverse computation, 1 worker per process; off by default where a node runs more ranks than it has CPUs, on when given)")
	fs.StringVar(&o.gpu, "gpu", gpuoffload.ModeAuto, "time warp: batched event handling on an offload backend: off, on (CUDA, or fail), auto (CUDA if it opens, and while batching pays) or cpu (the CPU backend)")
	fs.IntVar(&o.gpuBatchSize, "gpu-batch-size", 0, "time warp with --gpu: most events per batch (0: tuned while the run proceeds)")
	fs.IntVar(&o.device.Device, "gpu-device", 0, "CUDA device number for --gpu and --simulation-type gpu")
	fs.IntVar(&o.device.Slots, "gpu-slots", 0, "simulation type gpu: each LP's event list capacity, a power of two (0: twice the most initial events of one LP, at least 32)")
	fs.Float64Var(&o.device.Bound, "gpu-bound", 0, "simulation type gpu: optimism bound, handle events at most this far after GVT (0: tuned while the run proceeds; inf: unbounded)")
	fs.IntVar(&o.device.Executions, "gpu-executions", 0, "simulation type gpu: most event handling passes per iteration, 1 to 16 (0: tuned while the run proceeds)")
	fs.Float64Var(&o.device.Inactivity, "gpu-inactivity", 0, "simulation type gpu: a pass after the first runs only while the one before kept this share of the LPs busy (0: tuned)")
	fs.BoolVar(&o.gpuProfile, "gpu-profile", false, "simulation type gpu: time each device kernel (waiting for each launch, so slower) and print the times on stderr")
	fs.IntVar(&o.device.Buffer, "gpu-buffer", 0, "simulation type gpu: capacity for events in transit (0: sized from the LPs and initial events)")
	fs.StringVar(&o.partitioning, "partitioning", "model", "LPs to processes and schedule queues: model (the model's own, else blocks), blocks or round-robin")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed for every LP's generator")
	fs.StringVar(&o.config, "config", "", "read flags from this JSON file (the command line overrides it)")
	fs.BoolVar(&o.dumpConfig, "dump-config", false, "print the flags that were set (on the command line or by --config) as a JSON object that --config takes, and exit: defaults are left out, so it reruns the same run on any machine")
	fs.StringVar(&o.statsFile, "stats-file", "", "write the statistics, results (under \"results\"), provenance and configuration as JSON to this file")
	fs.Var(&o.progress, "progress", "progress line on stderr: auto (when stderr is a terminal), on or off")
	fs.Lookup("progress").NoOptDefVal = "on"
	addSampleFlags(fs, &o.sample) // sampling.go
	addTraceFlags(fs, &o.trace)   // trace.go
	fs.Var(&o.maxMemory, "max-memory", "narrow time warp's optimism above 80% of this size, and stop the run, exit 1, when the Go runtime's memory (heap, stacks, its own) exceeds it (4GiB, 512MiB; 0: no limit; auto: GOMEMLIMIT if set, else 9/10 of the machine's, cgroup's or ulimit -v's memory)")
	fs.StringVar(&o.report, "report", "", "write a self-contained HTML page with the provenance, configuration, totals and results (as tables) and the charts (figures with captions) of the run to this file")
	annotateGroups(fs) // flags.go: what the model's bind adds is the model's group
	build := m.Flags(fs)
	decimalIntegers(fs) // flags.go
	return fs, build
}

// parseFlags parses the model's flags from args, then sets those that the --config file
// names and the command line does not, checks the end time, and lets the model settle
// the flags whose defaults depend on others (model.resolve). It returns pflag.ErrHelp
// when args ask for help.
func (inv *invocation) parseFlags(args []string) error {
	inv.fs, inv.build = newFlagSet(inv.m, &inv.o)
	fs := inv.fs
	if err := parseArgs(fs, args); err != nil { // flags.go
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return alike(usageFailure("%v", err))
	}
	if fs.NArg() > 0 {
		return alike(usageFailure("unexpected argument %q%s", fs.Arg(0), afterOptional(fs, args, fs.Arg(0))))
	}
	if inv.o.config != "" {
		if err := applyConfigFile(fs, inv.o.config); err != nil {
			return usageFailure("%v", err)
		}
	}
	if math.IsNaN(inv.o.maxSimTime) || inv.o.maxSimTime <= 0 {
		return alike(usageFailure("--max-sim-time must be a positive number (or +Inf), got %v", inv.o.maxSimTime))
	}
	inv.given = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { inv.given[f.Name] = true })
	if inv.m.Resolve != nil {
		if err := inv.m.Resolve(fs); err != nil {
			return usageFailure("%v", err)
		}
	}
	return nil
}

// dumpConfig prints the flags that were set, as --config takes them (--dump-config).
func (inv *invocation) dumpConfig() error {
	out, err := dumpConfig(inv.fs, nil)
	if err != nil {
		return runFailure(err)
	}
	if _, err := inv.stdout.Write(out); err != nil {
		return runFailure(fmt.Errorf("cannot write the configuration to standard output: %w", writeError(err)))
	}
	return nil
}
