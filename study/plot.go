package study

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/sample/chart"
)

// xParam returns the index of the parameter to plot against: the spec's plot.x, else the
// first whose values are all numbers and that takes more than one value; -1 if none does.
func (s *Spec) xParam() int {
	if s.Plot.X != "" {
		return slices.Index(s.Params, s.Plot.X) // checked when parsed
	}
	for i := range s.Params {
		distinct := map[string]bool{}
		numeric := true
		for _, pt := range s.Points {
			if _, err := strconv.ParseFloat(pt[i], 64); err != nil {
				numeric = false
				break
			}
			distinct[pt[i]] = true
		}
		if numeric && len(distinct) > 1 {
			return i
		}
	}
	return -1
}

// errPoints are a series' points with their confidence intervals.
type errPoints struct {
	x, y, lo, hi []float64
}

func (e *errPoints) Len() int                        { return len(e.x) }
func (e *errPoints) XY(i int) (float64, float64)     { return e.x[i], e.y[i] }
func (e *errPoints) YError(i int) (float64, float64) { return e.y[i] - e.lo[i], e.hi[i] - e.y[i] }

// Plot draws result ri's mean against parameter xi with 95% confidence intervals as
// error bars, one line per combination of the other parameters, for print (chart.Style):
// the axes named by the spec's labels, x ticks at the parameter's values, a grid, a y
// axis that holds every confidence interval whole and zero where every mean is positive
// or zero (a linear one; no zoom into noise), and a logarithmic x axis where the spec asks or, by
// default, where the values call for it (logLike).
func (st *Study) Plot(ri, xi int) (*plot.Plot, error) {
	s := st.Spec
	result, param := s.Results[ri], s.Params[xi]
	rl, pl := s.Labels[result], s.Labels[param]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s\nmean and 95%% CI of %d seeds", s.Model, rl.Name(result), s.Replications)
	p.X.Label.Text = pl.Axis(param)
	p.Y.Label.Text = rl.Axis(result)
	p.BackgroundColor = color.White
	p.Add(plotter.NewGrid())
	var order []string
	series := map[string]*errPoints{}
	var xs []float64
	for _, ps := range st.Summary() {
		var others []string
		for i, v := range ps.Params {
			if i != xi {
				others = append(others, s.Labels[s.Params[i]].Name(s.Params[i])+" = "+v)
			}
		}
		name := strings.Join(others, ", ")
		e := series[name]
		if e == nil {
			e = &errPoints{}
			series[name] = e
			order = append(order, name)
		}
		r := ps.Results[ri]
		if math.IsNaN(r.Mean) {
			continue // no run of the point measured it (Outcome.Unmeasured)
		}
		x, _ := strconv.ParseFloat(ps.Params[xi], 64)
		if !slices.Contains(xs, x) {
			xs = append(xs, x)
		}
		lo, hi := r.CILow, r.CIHigh
		if math.IsNaN(lo) {
			lo, hi = r.Mean, r.Mean
		}
		e.x, e.y, e.lo, e.hi = append(e.x, x), append(e.y, r.Mean), append(e.lo, lo), append(e.hi, hi)
	}
	if len(xs) == 0 {
		return nil, errNoData
	}
	for i, name := range order {
		e := series[name]
		if e.Len() == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(e)
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", result, err)
		}
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", result, err)
		}
		c := plotutil.Color(i)
		line.Color, points.Color, bars.Color = c, c, c
		points.Shape = plotutil.Shape(i)
		p.Add(line, points, bars)
		if name != "" {
			p.Legend.Add(name, line, points)
		}
	}
	slices.Sort(xs)
	xLog := positive(xs) && (s.Plot.XScale == ScaleLog || s.Plot.XScale != ScaleLinear && logLike(xs))
	if xLog {
		p.X.Scale = plot.LogScale{}
	}
	p.X.Tick.Marker = valueTicks(xs)
	if pad := (xs[len(xs)-1] - xs[0]) / 20; !xLog && pad > 0 { // the outer points' bars whole
		p.X.Min, p.X.Max = xs[0]-pad, xs[len(xs)-1]+pad
	} else if xLog {
		p.X.Min, p.X.Max = xs[0]/math.Pow(xs[len(xs)-1]/xs[0], 0.05), xs[len(xs)-1]*math.Pow(xs[len(xs)-1]/xs[0], 0.05)
	}
	var ys, means []float64
	for _, e := range series {
		ys, means = append(append(ys, e.lo...), e.hi...), append(means, e.y...)
	}
	switch {
	case s.Plot.YScale == ScaleLog && positive(ys):
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	case !slices.ContainsFunc(means, func(y float64) bool { return y < 0 }):
		p.Y.Min, p.Y.Tick.Marker = min(p.Y.Min, 0), chart.SITicks{} // from zero, or below where a CI goes
	case !slices.ContainsFunc(means, func(y float64) bool { return y > 0 }):
		p.Y.Max, p.Y.Tick.Marker = max(p.Y.Max, 0), chart.SITicks{}
	default:
		p.Y.Tick.Marker = chart.SITicks{}
	}
	if _, linear := p.Y.Scale.(plot.LinearScale); linear { // room for the markers at the edges
		pad := (p.Y.Max - p.Y.Min) / 20
		if p.Y.Min != 0 { // an axis from zero stays from zero
			p.Y.Min -= pad
		}
		if p.Y.Max != 0 {
			p.Y.Max += pad
		}
	}
	chart.Style(p)
	return p, nil
}

// positive reports whether xs are all above zero, so that a log axis can show them.
func positive(xs []float64) bool {
	return len(xs) > 0 && !slices.ContainsFunc(xs, func(x float64) bool { return !(x > 0) })
}

// logLike reports whether sorted positive values call for a log axis: they span a factor
// of at least 4 and are spaced more evenly on a log scale than on a linear one (25, 50,
// 100, 200 are; 10, 20, 30, 40 are not); two values, a factor of at least 10.
func logLike(xs []float64) bool {
	if !positive(xs) || len(xs) < 2 {
		return false
	}
	span := xs[len(xs)-1] / xs[0]
	if len(xs) == 2 {
		return span >= 10
	}
	lin, log := make([]float64, 0, len(xs)-1), make([]float64, 0, len(xs)-1)
	for i := 1; i < len(xs); i++ {
		lin = append(lin, xs[i]-xs[i-1])
		log = append(log, math.Log(xs[i]/xs[i-1]))
	}
	return span >= 4 && spread(log) < spread(lin)
}

// spread is the coefficient of variation of gaps: their standard deviation over their
// mean.
func spread(gaps []float64) float64 {
	var sum, sq float64
	for _, g := range gaps {
		sum += g
	}
	mean := sum / float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	return math.Sqrt(sq/float64(len(gaps))) / mean
}

// valueTicks are ticks at the grid's values, labelled with SI prefixes; of more than
// twelve, every k-th is labelled so that the labels do not overlap.
func valueTicks(xs []float64) plot.ConstantTicks {
	every := (len(xs) + 11) / 12
	ts := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ts[i].Value = x
		if i%every == 0 {
			ts[i].Label = chart.SI(x)
		}
	}
	return ts
}

// errNoData is Plot's error for a result that no run measured.
var errNoData = errors.New("no run measured it")

// WritePlots writes one plot per result against the first numeric parameter that
// varies, as PNG and SVG sized for print (chart.DefaultOptions; plot-RESULT.png, .svg)
// in dir, and returns the paths written. A study with no such parameter has no plots, nor
// has a result that no run measured.
func (st *Study) WritePlots(dir string) ([]string, error) {
	files, err := st.plotFiles(dir)
	if err != nil {
		return nil, err
	}
	return outfile.WriteAll(files)
}

// plotFiles renders WritePlots' files, without writing them.
func (st *Study) plotFiles(dir string) ([]outfile.Named, error) {
	xi := st.Spec.xParam()
	if xi < 0 {
		return nil, nil
	}
	charts := make([]chart.Chart, 0, len(st.Spec.Results))
	for ri, key := range st.Spec.Results {
		p, err := st.Plot(ri, xi)
		if errors.Is(err, errNoData) {
			continue // its runs shared the process (see Outcome.Unmeasured): the study said so
		}
		if err != nil {
			return nil, err
		}
		charts = append(charts, chart.Chart{Name: "plot-" + key, Plot: p})
	}
	return chart.Files(context.Background(), dir, charts, chart.DefaultOptions())
}
