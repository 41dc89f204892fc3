package study

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/warpedgo/warped/internal/outfile"
)

// xParam returns the index of the parameter to plot against: the first whose values
// are all numbers and that takes more than one value; -1 if none does.
func (s *Spec) xParam() int {
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
// error bars, one line per combination of the other parameters.
func (st *Study) Plot(ri, xi int) (*plot.Plot, error) {
	s := st.Spec
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (mean, 95%% CI over %d seeds)", s.Model, s.Results[ri], s.Replications)
	p.X.Label.Text = s.Params[xi]
	p.Y.Label.Text = s.Results[ri]
	p.Legend.Top = true
	var order []string
	series := map[string]*errPoints{}
	for _, ps := range st.Summary() {
		var others []string
		for i, v := range ps.Params {
			if i != xi {
				others = append(others, s.Params[i]+"="+v)
			}
		}
		name := strings.Join(others, " ")
		e := series[name]
		if e == nil {
			e = &errPoints{}
			series[name] = e
			order = append(order, name)
		}
		x, _ := strconv.ParseFloat(ps.Params[xi], 64)
		r := ps.Results[ri]
		lo, hi := r.CILow, r.CIHigh
		if math.IsNaN(lo) {
			lo, hi = r.Mean, r.Mean
		}
		e.x, e.y, e.lo, e.hi = append(e.x, x), append(e.y, r.Mean), append(e.lo, lo), append(e.hi, hi)
	}
	for i, name := range order {
		e := series[name]
		line, points, err := plotter.NewLinePoints(e)
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", s.Results[ri], err)
		}
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			return nil, fmt.Errorf("plot of %s: %w", s.Results[ri], err)
		}
		c := plotutil.Color(i)
		line.Color, points.Color, bars.Color = c, c, c
		points.Shape = plotutil.Shape(i)
		p.Add(line, points, bars)
		if name != "" {
			p.Legend.Add(name, line, points)
		}
	}
	return p, nil
}

// WritePlots writes one plot per result against the first numeric parameter that
// varies, as PNG and SVG (plot-RESULT.png, .svg) in dir, and returns the paths written.
// A study with no such parameter has no plots.
func (st *Study) WritePlots(dir string) ([]string, error) {
	xi := st.Spec.xParam()
	if xi < 0 {
		return nil, nil
	}
	var paths []string
	for ri, key := range st.Spec.Results {
		p, err := st.Plot(ri, xi)
		if err != nil {
			return paths, err
		}
		for _, format := range []string{"png", "svg"} {
			w, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, format)
			if err != nil {
				return paths, fmt.Errorf("plot of %s: %w", key, err)
			}
			var b bytes.Buffer
			if _, err := w.WriteTo(&b); err != nil {
				return paths, fmt.Errorf("plot of %s: %w", key, err)
			}
			path := filepath.Join(dir, "plot-"+key+"."+format)
			if err := outfile.WriteFile(path, b.Bytes()); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
