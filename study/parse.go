package study

// The spec's parser: its YAML nodes read and checked one kind at a time (counts, flags,
// the grid's values and ranges, the plot's options), each error naming its line.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/spf13/pflag"
)

// parser carries what errors need: the file, and the model's flags once known.
type parser struct {
	file  string
	model string
	fs    *pflag.FlagSet
	cat   Catalog
	plotX *yaml.Node // the plot.x value, for its error's line
}

func (p *parser) errf(n *yaml.Node, format string, a ...any) error {
	e := &SpecError{File: p.file, Msg: oneLine(fmt.Sprintf(format, a...))}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// keyNode returns the key node called key in mapping m, or m.
func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i]
			}
		}
	}
	return m
}

func (p *parser) scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s must be a single value", what)
	}
	return n.Value, nil
}

func (p *parser) intIn(n *yaml.Node, what string, lo, hi int) (int, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	x, err := strconv.Atoi(s)
	if err != nil || x < lo || x > hi {
		return 0, p.errf(n, "%s must be an integer in [%d, %d], got %q", what, lo, hi, s)
	}
	return x, nil
}

func (p *parser) strings(n *yaml.Node, what string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := p.scalar(n, what)
		return []string{s}, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		s, err := p.scalar(c, what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// checkPlotX checks that the spec's plot.x, where given, names a parameter whose values are
// numbers.
func (p *parser) checkPlotX(s *Spec) error {
	if s.Plot.X == "" {
		return nil
	}
	i := slices.Index(s.Params, s.Plot.X)
	if i < 0 {
		return p.errf(p.plotX, "plot.x is %q, which is not a parameter (the parameters: %s)", s.Plot.X, strings.Join(s.Params, ", "))
	}
	for _, pt := range s.Points {
		if _, err := strconv.ParseFloat(pt[i], 64); err != nil {
			return p.errf(p.plotX, "plot.x is %q, whose value %q is not a number: a plot's x axis needs numbers", s.Plot.X, pt[i])
		}
	}
	return nil
}

// plot parses the spec's plot options.
func (p *parser) plot(n *yaml.Node, o *PlotOptions) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "plot must be a mapping (x, x-scale, y-scale)")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dst *string
		switch k.Value {
		case "x":
			x, err := p.scalar(v, "plot.x")
			if err != nil {
				return err
			}
			o.X, p.plotX = x, v // checked once the parameters are known (checkPlotX)
			continue
		case "x-scale":
			dst = &o.XScale
		case "y-scale":
			dst = &o.YScale
		default:
			return p.errf(k, "unknown key plot.%s (want x, x-scale, y-scale)", k.Value)
		}
		x, err := p.scalar(v, "plot."+k.Value)
		if err != nil {
			return err
		}
		if x != ScaleAuto && x != ScaleLinear && x != ScaleLog {
			return p.errf(v, "plot.%s must be %s, %s or %s, got %q", k.Value, ScaleAuto, ScaleLinear, ScaleLog, x)
		}
		*dst = x
	}
	return nil
}

func (p *parser) execution(n *yaml.Node, e *Execution) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "execution must be a mapping (jobs, simulation-type, workers, memory-mib, merge-batches, group-runs)")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "jobs":
			e.Jobs, err = p.intIn(v, "execution.jobs", 0, MaxJobs)
		case "workers":
			e.Workers, err = p.intIn(v, "execution.workers", 0, MaxWorkers)
		case "memory-mib":
			e.MemoryMiB, err = p.intIn(v, "execution.memory-mib", 0, MaxMemoryMiB)
		case "simulation-type":
			e.SimulationType, err = p.scalar(v, "execution.simulation-type")
		case "group-runs":
			e.GroupRuns, err = p.intIn(v, "execution.group-runs", 0, MaxGroupRuns)
		case "merge-batches":
			var x string
			if x, err = p.scalar(v, "execution.merge-batches"); err == nil {
				if e.MergeBatches, err = strconv.ParseBool(x); err != nil {
					err = p.errf(v, "execution.merge-batches must be true or false, got %q", x)
				}
			}
		default:
			err = p.errf(k, "unknown key execution.%s (want jobs, simulation-type, workers, memory-mib, merge-batches, group-runs)", k.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkFlag checks that the model has flag name and that value is good for it.
func (p *parser) checkFlag(at *yaml.Node, name, value string) error {
	if why, ok := reserved[name]; ok {
		return p.errf(at, "flag %q cannot be given in a study: %s", name, why)
	}
	if p.fs.Lookup(name) == nil {
		return p.errf(at, "model %s has no flag %q; run '%s help %s' for the flags", p.model, name, p.cat.Program(), p.model)
	}
	if err := p.fs.Set(name, value); err != nil {
		return p.errf(at, "bad value %q for %s: %v", value, name, err)
	}
	return nil
}

func (p *parser) flags(n *yaml.Node) ([]Param, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "flags must be a mapping of flag names to values")
	}
	var out []Param
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		val, err := p.scalar(v, "flag "+k.Value)
		if err != nil {
			return nil, err
		}
		if err := p.checkFlag(k, k.Value, val); err != nil {
			return nil, err
		}
		out = append(out, Param{k.Value, val})
	}
	return out, nil
}

// grid reads parameters: each a list of values, or a range {from, to, step}, or
// {from, to, count} (evenly spaced, or geometric with scale: log), and sets the full
// grid, the first parameter varying slowest.
func (p *parser) grid(n *yaml.Node, s *Spec) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return p.errf(n, "parameters must be a non-empty mapping of flag names to values or ranges")
	}
	var values [][]string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if slices.Contains(s.Params, k.Value) {
			return p.errf(k, "parameter %q given twice", k.Value)
		}
		vals, err := p.values(k.Value, v)
		if err != nil {
			return err
		}
		if i, j, ok := repeated(vals, valueKey); ok {
			at := v // a range refuses its repeats itself (rangeValues)
			if v.Kind == yaml.SequenceNode {
				at = v.Content[j]
			}
			return p.errf(at, "parameter %q lists %s twice (values %d and %d): each value is a point of its own; "+
				"list it once (replications give a point more runs)", k.Value, vals[i], i+1, j+1)
		}
		for _, x := range vals {
			if err := p.checkFlag(v, k.Value, x); err != nil {
				return err
			}
		}
		s.Params = append(s.Params, k.Value)
		values = append(values, vals)
	}
	size, sizes := 1, make([]string, len(values))
	for i, vals := range values {
		sizes[i] = strconv.Itoa(len(vals))
		if size > MaxPoints/len(vals) {
			return p.errf(n, "the grid has more than %d points (%s values): give fewer values", MaxPoints, strings.Join(sizes[:i+1], " x "))
		}
		size *= len(vals)
	}
	s.Points = [][]string{{}}
	for _, vals := range values {
		next := make([][]string, 0, len(s.Points)*len(vals))
		for _, pt := range s.Points {
			for _, x := range vals {
				next = append(next, append(slices.Clip(pt), x))
			}
		}
		s.Points = next
	}
	return nil
}

// values reads one parameter's values.
func (p *parser) values(name string, n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return nil, p.errf(n, "parameter %q: empty list of values", name)
		}
		return p.strings(n, "parameter "+name)
	case yaml.MappingNode:
		return p.rangeValues(name, n)
	}
	return nil, p.errf(n, "parameter %q must be a value, a list or a range {from, to, step}", name)
}

// rangeValues expands {from, to, step} or {from, to, count[, scale: log]}.
func (p *parser) rangeValues(name string, n *yaml.Node) ([]string, error) {
	num := map[string]float64{}
	scale := "linear"
	isInt := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "from", "to", "step", "count":
			s, err := p.scalar(v, name+"."+k.Value)
			if err != nil {
				return nil, err
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, p.errf(v, "parameter %q: %s must be a finite number, got %q", name, k.Value, s)
			}
			if k.Value != "count" && strings.ContainsAny(s, ".eE") {
				isInt = false
			}
			num[k.Value] = x
		case "scale":
			s, err := p.scalar(v, name+".scale")
			if err != nil {
				return nil, err
			}
			if s != "linear" && s != "log" {
				return nil, p.errf(v, "parameter %q: scale must be linear or log, got %q", name, s)
			}
			scale = s
		default:
			return nil, p.errf(k, "parameter %q: unknown range key %q (want from, to, step or count, scale)", name, k.Value)
		}
	}
	from, okF := num["from"]
	to, okT := num["to"]
	step, okS := num["step"]
	count, okC := num["count"]
	switch {
	case !okF || !okT:
		return nil, p.errf(n, "parameter %q: a range needs from and to", name)
	case okS == okC:
		return nil, p.errf(n, "parameter %q: a range needs either step or count", name)
	}
	var xs []float64
	if okS {
		if step <= 0 {
			return nil, p.errf(n, "parameter %q: step must be positive, got %v", name, step)
		}
		if scale == "log" {
			return nil, p.errf(n, "parameter %q: scale log takes count, not step", name)
		}
		if to < from {
			return nil, p.errf(n, "parameter %q: empty range: to %v is below from %v", name, to, from)
		}
		steps := math.Floor((to-from)/step + 1e-9)
		if steps > 1e6 {
			return nil, p.errf(n, "parameter %q: range has more than a million values", name)
		}
		for i := 0.0; i <= steps; i++ {
			xs = append(xs, from+i*step)
		}
	} else {
		c := int(count)
		if float64(c) != count || c < 1 || c > 1e6 {
			return nil, p.errf(n, "parameter %q: count must be an integer in [1, 1000000], got %v", name, count)
		}
		if scale == "log" && (from <= 0 || to <= 0) {
			return nil, p.errf(n, "parameter %q: scale log needs positive from and to", name)
		}
		for i := range c {
			t := 0.0
			if c > 1 {
				t = float64(i) / float64(c-1)
			}
			if scale == "log" {
				xs = append(xs, from*math.Pow(to/from, t))
			} else {
				xs = append(xs, from+t*(to-from))
			}
		}
	}
	if okC {
		// A count asks for that many values: real ones, rounded only for a flag that
		// takes integers, and refused where rounding would merge some.
		isInt = p.integerFlag(name)
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		if isInt {
			out[i] = strconv.FormatInt(int64(math.Round(x)), 10)
		} else {
			out[i] = strconv.FormatFloat(x, 'g', 12, 64)
		}
	}
	if c := slices.Compact(slices.Clone(out)); len(c) < len(out) {
		if isInt && okC {
			return nil, p.errf(n, "parameter %q takes integers: %d values from %v to %v repeat after rounding (%s); give a smaller count or a wider range",
				name, len(out), from, to, strings.Join(out, " "))
		}
		return nil, p.errf(n, "parameter %q: the range repeats values (%s)", name, strings.Join(out, " "))
	}
	return out, nil
}

// integerFlag reports whether the model's flag name takes integers only (it refuses a
// fraction).
func (p *parser) integerFlag(name string) bool {
	f := p.fs.Lookup(name)
	if f == nil {
		return false
	}
	old := f.Value.String()
	defer f.Value.Set(old)
	return f.Value.Set("0.5") != nil
}

// points reads a list of points, each a mapping of the same parameters to values.
func (p *parser) points(n *yaml.Node, s *Spec) error {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return p.errf(n, "points must be a non-empty list of mappings of flag names to values")
	}
	for j, pt := range n.Content {
		if pt.Kind != yaml.MappingNode || len(pt.Content) == 0 {
			return p.errf(pt, "point %d must be a non-empty mapping of flag names to values", j+1)
		}
		var names, vals []string
		for i := 0; i+1 < len(pt.Content); i += 2 {
			k, v := pt.Content[i], pt.Content[i+1]
			val, err := p.scalar(v, "point value "+k.Value)
			if err != nil {
				return err
			}
			if err := p.checkFlag(k, k.Value, val); err != nil {
				return err
			}
			names = append(names, k.Value)
			vals = append(vals, val)
		}
		if j == 0 {
			s.Params = names
		} else if !slices.Equal(names, s.Params) {
			return p.errf(pt, "point %d sets %s; every point must set %s, in that order", j+1, strings.Join(names, ", "), strings.Join(s.Params, ", "))
		}
		s.Points = append(s.Points, vals)
	}
	if i, j, ok := repeated(s.Points, pointKey); ok {
		return p.errf(n.Content[j], "point %d repeats point %d: list each point once (replications give a point more runs)", j+1, i+1)
	}
	return nil
}

// repeated returns the first pair of indexes i < j whose elements have the same key.
func repeated[T any](xs []T, key func(T) string) (i, j int, ok bool) {
	seen := make(map[string]int, len(xs))
	for j, x := range xs {
		k := key(x)
		if i, ok := seen[k]; ok {
			return i, j, true
		}
		seen[k] = j
	}
	return 0, 0, false
}

// valueKey is what tells a flag's values apart: a number as its value (25 and 25.0 are
// one), anything else as written.
func valueKey(v string) string {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "\x00" + v // never a number's form
}

// pointKey is valueKey for a point's values.
func pointKey(vals []string) string {
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(valueKey(v))
		b.WriteByte(0xff) // in no value's key
	}
	return b.String()
}
