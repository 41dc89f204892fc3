// Package study runs parameter studies: many simulations of one model over a grid (or a
// list) of parameter values, each point repeated with several seeds, in one process. It
// parses and checks a study's spec, plans its runs, schedules them concurrently within a
// memory budget, journals every finished run so that an interrupted study resumes, and
// summarises the results (mean, standard deviation and 95% confidence interval per point)
// as CSV, JSON and plots. Its runs may share one offload backend that merges their
// batches (Merger), its runs on the GPU may run several to a device loop (Device), and
// several processes may share its runs (Ranks).
//
// The models are not known here: the caller injects them through a Catalog and a Runner.
package study

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/spf13/pflag"

	"github.com/warpedgo/warped/sample/chart"
)

// Spec is a parsed, checked study.
type Spec struct {
	// Model names the model every run simulates.
	Model string
	// Flags are the model and kernel flags every run shares, by name (without dashes), in
	// the spec's order.
	Flags []Param
	// Params are the parameters that vary, in the spec's order, each with its values.
	// Points lists the parameter values of every point, one value per parameter (the
	// full grid when the spec gives parameters, else the spec's points).
	Params []string
	Points [][]string
	// Replications is the number of seeds per point; replication r of a point uses seed
	// Seed+r.
	Replications int
	Seed         uint64
	// Results are the keys of the model's results to summarise.
	Results []string
	// Execution is how the runs are executed (the command line may override it).
	Execution Execution
	// Plot says how the plots draw their axes.
	Plot PlotOptions
	// Labels name the parameters and results on the plots, with units, by flag name and
	// result key (the Catalog's).
	Labels map[string]chart.Label
}

// The scales of a plot's axis (PlotOptions).
const (
	ScaleAuto   = "auto"   // the x axis logarithmic where the values call for it (see Plot), the y axis linear
	ScaleLinear = "linear" // linear; a y axis holds zero where every mean is positive or zero
	ScaleLog    = "log"    // logarithmic where every value (and confidence bound) is positive, else linear
)

// PlotOptions say how a study's plots draw their axes: each scale is ScaleAuto (or empty),
// ScaleLinear or ScaleLog.
type PlotOptions struct {
	XScale, YScale string
	// X is the parameter on the plots' x axis ("": the first numeric one that varies).
	X string
}

// Param is a flag name and its value, as the command line would give it.
type Param struct {
	Name, Value string
}

// Execution says how a study's runs are executed.
type Execution struct {
	// Jobs is the number of runs at once (0: chosen, see Plan).
	Jobs int
	// SimulationType is each run's dispatcher: "auto" (the default: chosen, see Plan),
	// or one of the kernel's types.
	SimulationType string
	// Workers is the time-warp worker goroutines of each run (0: the cores divided by
	// the jobs).
	Workers int
	// MemoryMiB is the memory budget of the runs in MiB (0: half the memory available
	// when the study starts).
	MemoryMiB int
	// MergeBatches runs the runs with time-warp workers on one shared offload backend
	// that merges batches of the same kernel from different runs (see Merger).
	MergeBatches bool
	// GroupRuns is the most runs of the device loop's simulation type that share one
	// loop (see Device; 0: as many as groupLPs LPs hold).
	GroupRuns int
}

// The bounds of Execution's counts; 0 is always allowed (chosen).
const (
	MaxJobs      = 1 << 16
	MaxWorkers   = 1 << 10
	MaxMemoryMiB = math.MaxInt32
)

// Check reports, as one line naming the command-line flag, a count of e out of its
// bounds.
func (e Execution) Check() error {
	for _, c := range []struct {
		flag   string
		v, max int
	}{{"jobs", e.Jobs, MaxJobs}, {"workers", e.Workers, MaxWorkers}, {"memory-mib", e.MemoryMiB, MaxMemoryMiB},
		{"group-runs", e.GroupRuns, MaxGroupRuns}} {
		if c.v < 0 || c.v > c.max {
			return &SettingsError{fmt.Sprintf("--%s must be in [0, %d] (0: chosen), got %d", c.flag, c.max, c.v)}
		}
	}
	return nil
}

// Catalog is what checking a spec needs to know about the models.
type Catalog interface {
	// Program is the command's name, for the messages that point to its help.
	Program() string
	// Flags returns a new flag set with every flag of the model's runs (its own and the
	// kernel's), or an error when there is no such model.
	Flags(model string) (*pflag.FlagSet, error)
	// ResultKeys returns the keys of the model's results, or nil when they are only
	// known after a run.
	ResultKeys(model string) []string
	// StatsKeys returns the keys of the kernel's statistics that every run reports besides
	// the model's results (efficiency, committed_events_per_second, rollbacks, memory, as
	// in a stats file): a spec may list them under results too.
	StatsKeys() []string
	// Labels returns how plots name the model's flags (by name), results and the
	// kernel's statistics (by key), with units; a name it lacks is shown as it is.
	Labels(model string) map[string]chart.Label
}

// MaxPoints and MaxRuns are the most points and runs a study may have.
const (
	MaxPoints = 1_000_000
	MaxRuns   = 1_000_000
)

// reserved are flags a spec may not set: the study sets them itself, or they name
// per-run output files that concurrent runs would share.
var reserved = map[string]string{
	"seed":            "set 'seed' and 'replications' at the top level instead",
	"simulation-type": "set it under 'execution' instead",
	"config":          "put the flags in the spec instead",
	"dump-config":     "not for studies",
	"stats-file":      "the study writes its own tables (--out)",
	"progress":        "the study shows its own progress",
	"time-series":     "a study's runs cannot share one output file",
}

// SpecError is a problem with a spec: where it is (the spec's file name and line, or a
// key) and what is wrong.
type SpecError struct {
	File string
	Line int // 0: unknown
	Msg  string
}

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Parse parses and checks a spec in YAML or JSON (JSON is YAML) from data; file names it
// in errors. Every flag, parameter and value is checked against the model's flag set
// from cat before any run; errors are one line naming the spec's line.
func Parse(data []byte, file string, cat Catalog) (*Spec, error) {
	p := &parser{file: file, cat: cat}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &SpecError{File: file, Msg: "not YAML or JSON: " + oneLine(err.Error())}
	}
	if len(doc.Content) == 0 {
		return nil, p.errf(nil, "empty spec: it needs at least 'model'")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "the spec must be a mapping of keys (model, flags, parameters, ...)")
	}
	s := &Spec{Replications: 1, Seed: 1, Execution: Execution{SimulationType: "auto"}}
	var params, points, flags *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, p.errf(k, "key %q given twice", k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "model":
			s.Model, err = p.scalar(v, "model")
		case "flags":
			flags = v
		case "parameters":
			params = v
		case "points":
			points = v
		case "replications":
			s.Replications, err = p.intIn(v, "replications", 1, 1<<20)
		case "seed":
			var x int
			x, err = p.intIn(v, "seed", 0, math.MaxInt)
			s.Seed = uint64(x)
		case "results":
			s.Results, err = p.strings(v, "results")
		case "execution":
			err = p.execution(v, &s.Execution)
		case "plot":
			err = p.plot(v, &s.Plot)
		default:
			err = p.errf(k, "unknown key %q (want model, flags, parameters, points, replications, seed, results, execution, plot)", k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	if s.Model == "" {
		return nil, p.errf(root, "missing key 'model'")
	}
	fs, err := cat.Flags(s.Model)
	if err != nil {
		return nil, p.errf(keyNode(root, "model"), "%v", err)
	}
	p.fs, p.model = fs, s.Model
	s.Labels = cat.Labels(s.Model)
	if flags != nil {
		if s.Flags, err = p.flags(flags); err != nil {
			return nil, err
		}
	}
	switch {
	case params != nil && points != nil:
		return nil, p.errf(keyNode(root, "points"), "give either 'parameters' (a full grid) or 'points', not both")
	case params != nil:
		err = p.grid(params, s)
	case points != nil:
		err = p.points(points, s)
	default:
		s.Points = [][]string{{}} // one point: the fixed flags alone
	}
	if err != nil {
		return nil, err
	}
	if len(s.Points) > MaxRuns/s.Replications {
		return nil, p.errf(root, "%d points x %d replications is more than %d runs: give fewer", len(s.Points), s.Replications, MaxRuns)
	}
	for _, f := range s.Flags {
		if slices.Contains(s.Params, f.Name) {
			return nil, p.errf(keyNode(flags, f.Name), "flag %q is also a parameter; give it in one place", f.Name)
		}
	}
	if err := p.checkPlotX(s); err != nil {
		return nil, err
	}
	keys := cat.ResultKeys(s.Model)
	if keys == nil && len(s.Results) == 0 {
		return nil, p.errf(root, "missing key 'results': model %s's results depend on its flags, so list those to summarise", s.Model)
	}
	if keys != nil {
		if len(s.Results) == 0 {
			s.Results = keys
		}
		stats := cat.StatsKeys()
		for _, r := range s.Results {
			if !slices.Contains(keys, r) && !slices.Contains(stats, r) {
				return nil, p.errf(keyNode(root, "results"), "model %s has no result %q (it has %s; and the kernel's statistics %s)",
					s.Model, r, strings.Join(keys, ", "), strings.Join(stats, ", "))
			}
		}
	}
	return s, nil
}

// oneLine joins the lines of s.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// errNoModel is wrapped by a Catalog's Flags when there is no such model.
var errNoModel = errors.New("unknown model")

// UnknownModel returns the error a Catalog gives for a model it does not have.
func UnknownModel(name string, have []string) error {
	return fmt.Errorf("%w %q (the models are %s)", errNoModel, name, strings.Join(have, ", "))
}
