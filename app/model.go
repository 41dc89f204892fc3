package app

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/sample/chart"
)

// Model is what a model registers once to get the whole command: its flags with their
// defaults and checks, how to build its LPs, its results, its output files. Name, Flags and
// Results are needed (New panics without them); Summary (for the usage) and EndTime (the
// default --max-sim-time, else 0: an end time must then be given) should be set; the rest is
// optional.
type Model struct {
	// Name is the model's command word: 'PROGRAM NAME [flags]'.
	Name string
	// Summary is one line for the program's usage and the model's help.
	Summary string
	// Notes, when set, follow the summary in 'PROGRAM help NAME' (such as where the model
	// differs from the one it follows).
	Notes string
	// EndTime is the default --max-sim-time.
	EndTime float64
	// Flags registers the model's flags on fs (their names must not be the kernel's, which
	// 'PROGRAM help NAME' lists) and returns a function that builds the LPs from the parsed
	// values, with the model's own partitioner (nil: contiguous blocks). A build error is a
	// usage error: one line, exit status 2. Make the variables the flags bind anew on each
	// call (inside Flags): a study parses and builds one run while others run, so a
	// variable made once, outside Flags, would be rebound under LPs that still read it.
	Flags func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error)
	// Payloads, when set, returns the registry of the model's payload types, which a run
	// across processes needs to carry them (nil: the model sends words only).
	Payloads func() *kernel.Registry
	// Resolve, when set, runs after the flags are parsed and --config applied, and sets
	// the flags whose defaults depend on other flags (the epidemic's variant), so that
	// --dump-config and --stats-file show the values the run uses.
	Resolve func(fs *pflag.FlagSet) error
	// Results returns the model's totals after a run of lps with the flags fs (parsed,
	// as the run used them), as labelled lines and stats-file keys. Called with nil LPs
	// and nil flags it must return the same keys (a study checks its spec against them),
	// or panic when the keys depend on the flags (DynamicResults).
	Results func(lps []kernel.LogicalProcess, fs *pflag.FlagSet) []Result
	// Init and Final, when set, are the model's init and final hooks, run under every
	// dispatcher (kernel.Config.ModelInit and ModelFinal): Init once with the built LPs
	// before any LP's Init, Final once after the run with every LP's final state, before
	// Results reads them, for results of the model as a whole. Under mpirun every rank runs
	// both, each Final with every LP's final state. An error fails the run (exit status 1).
	// In a study, a run's Final and Results are called together, under one lock, so that
	// Final may leave its totals in a variable of the model's for Results to read.
	Init, Final func(lps []kernel.LogicalProcess) error
	// LPStats are per-LP statistics: each is reduced over the LPs after a run into four
	// results, KEY_sum, KEY_min, KEY_max and KEY_mean, printed, written to the stats file
	// and the report, and open to studies like the model's own results.
	LPStats []LPStat
	// EventKind, when set, names an event's kind in a --trace file (default: the payload's
	// Go type, or "words").
	EventKind func(ev *kernel.Event) string
	// DynamicResults says that the result keys depend on the flags: a study must list the
	// results it summarises.
	DynamicResults bool
	// Size returns the model's LP count and its initial events (or other items of state
	// per LP, as many) from its flag values, for the memory estimate (nil: unknown);
	// SizeFlags are the flags it reads.
	Size      func(flag func(name string) float64) (lps, events float64)
	SizeFlags []string
	// OutputPaths returns the files the model's own flags name, by flag name (nil: none),
	// checked before the run like the kernel's outputs (writable, none the same file as
	// another output or the --config file) and left out of the stats file's config;
	// WriteOutputs writes them after a run (nil: nothing to write).
	OutputPaths  func() map[string]string
	WriteOutputs func(lps []kernel.LogicalProcess) error
	// InputPaths returns the files the model's own flags name that it reads, by flag name
	// (nil: none): like the --config file, no output may be one of them.
	InputPaths func() map[string]string
	// Against, when set, ends 'PROGRAM help NAME': how the model stands to the model it
	// follows, with its own heading line.
	Against string
	// Labels, when set, name the model's quantities on charts, each with a unit: its
	// flags by name (a study's parameters), its results by key (the text defaults to the
	// result's label) and its recorded series by name (the report's and 'PROGRAM plot
	// --model NAME's series chart).
	Labels map[string]chart.Label
}

// outputs returns the files that m's own flags ask a run to write, by flag name.
func (m *Model) outputs() map[string]string {
	if m.OutputPaths == nil {
		return nil
	}
	return m.OutputPaths()
}

// inputs returns the files that m's own flags ask a run to read, by flag name.
func (m *Model) inputs() map[string]string {
	if m.InputPaths == nil {
		return nil
	}
	return m.InputPaths()
}

// write writes m's own output files after a run of lps.
func (m *Model) write(lps []kernel.LogicalProcess) error {
	if m.WriteOutputs == nil {
		return nil
	}
	return m.WriteOutputs(lps)
}

// Result is one line of a model's final output and one key of the stats file.
type Result struct {
	// Label names the result in the printed results ("Average delay").
	Label string
	// Key names it in the stats file and in studies ("average_delay"); it must not be a
	// kernel statistic's.
	Key string
	// Value is a count (uint64, int or int64: printed and written as an integer) or a
	// measure (float64, such as an average: printed to 6 significant digits and written
	// in full). A measure with no value (a mean over nothing) is NaN: printed as NaN,
	// null in the stats file, and unmeasured in a study (blank in its tables).
	Value any
}

// text returns r's value as printed: a count in full, a measure to 6 significant digits.
func (r Result) text() string {
	switch v := r.Value.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', 6, 64)
	case uint64, int, int64:
		return fmt.Sprint(v)
	}
	return fmt.Sprint(r.Value)
}

// number returns r's value as a float64, as a study summarises it.
func (r Result) number() float64 {
	switch v := r.Value.(type) {
	case uint64:
		return float64(v)
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}

// LPStat is a statistic of one LP (its queue length, its events), which the command
// reduces over the LPs.
type LPStat struct {
	// Label and Key name the statistic; the reductions add " (sum over LPs)" and "_sum"
	// (min, max, mean likewise).
	Label, Key string
	// Value returns the statistic of lp after the run, or NaN where it does not apply to
	// lp (an LP of another kind): the reductions leave it out.
	Value func(lp kernel.LogicalProcess) float64
}

// results returns the model's results after a run of lps with flags fs, its own and its
// per-LP statistics' reductions; with nil LPs, the keys alone (values 0).
func (m *Model) results(lps []kernel.LogicalProcess, fs *pflag.FlagSet) []Result {
	out := m.Results(lps, fs)
	for _, st := range m.LPStats {
		out = append(out, reduce(st, lps)...)
	}
	return out
}

// reduce returns statistic st's sum, minimum, maximum and mean over the LPs of lps it
// applies to (not NaN): all 0 without LPs, the sum 0 and the others NaN where it applies
// to none.
func reduce(st LPStat, lps []kernel.LogicalProcess) []Result {
	var sum, lo, hi, mean float64
	n := 0
	for _, lp := range lps {
		v := st.Value(lp)
		if math.IsNaN(v) {
			continue
		}
		sum += v
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		n++
	}
	switch {
	case n > 0:
		mean = sum / float64(n)
	case len(lps) > 0:
		lo, hi, mean = math.NaN(), math.NaN(), math.NaN()
	}
	return []Result{
		{Label: st.Label + " (sum over LPs)", Key: st.Key + "_sum", Value: sum},
		{Label: st.Label + " (min over LPs)", Key: st.Key + "_min", Value: lo},
		{Label: st.Label + " (max over LPs)", Key: st.Key + "_max", Value: hi},
		{Label: st.Label + " (mean over LPs)", Key: st.Key + "_mean", Value: mean},
	}
}
