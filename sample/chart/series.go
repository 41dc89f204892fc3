package chart

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/warpedgo/warped/kernel"
)

// Label names a quantity on a chart: a model's series, result or parameter.
type Label struct {
	// Text names it ("mean call interval"); empty: its name.
	Text string
	// Unit is what it is counted or measured in ("people", "simulated time"); empty: none.
	Unit string
}

// Name returns the label's text, or name when it has none.
func (l Label) Name(name string) string {
	if l.Text != "" {
		return l.Text
	}
	return name
}

// Axis returns the label as an axis shows it: "text (unit)", or the text alone.
func (l Label) Axis(name string) string {
	if l.Unit == "" {
		return l.Name(name)
	}
	return l.Name(name) + " (" + l.Unit + ")"
}

// Series returns the charts of a model's time series (kernel.Result.Series,
// sample.ReadSeries): every series in one chart against simulated time, a line each in
// the order the model first records them, with a legend; series of different units (as
// labels gives them, by series name) in one chart per unit. The values of a series that
// several LPs record at the same time are summed (the epidemic's locations each record
// their counts at every sample: the chart shows the totals), and the y axis says so.
// title names the chart ("" for "Model series"). The charts are named series, or
// series-UNIT for each unit, with the unit's characters other than letters, digits, '-'
// and '_' replaced by '_'.
func Series(points []kernel.SeriesPoint, title string, labels map[string]Label) ([]Chart, error) {
	if len(points) == 0 {
		return nil, errors.New("no series points to chart")
	}
	if title == "" {
		title = "Model series"
	}
	names, lines := seriesLines(points)
	var units []string
	byUnit := map[string][]series{}
	for _, name := range names {
		if len(lines[name]) == 0 {
			continue
		}
		l := labels[name]
		if _, ok := byUnit[l.Unit]; !ok {
			units = append(units, l.Unit)
		}
		byUnit[l.Unit] = append(byUnit[l.Unit], series{name: l.Name(name), xy: lines[name]})
	}
	if len(units) == 0 {
		return nil, errors.New("no finite series points to chart")
	}
	var out []Chart
	for _, unit := range units {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "simulated time"
		p.Y.Label.Text = cmp.Or(unit, "value") + ", summed over LPs"
		p.BackgroundColor = color.White
		p.Add(plotter.NewGrid())
		if _, err := addLines(p, byUnit[unit], true); err != nil {
			return nil, fmt.Errorf("chart of the model's series: %w", err)
		}
		if p.Y.Min >= 0 {
			p.Y.Min = 0 // counts and amounts from zero
		}
		p.Y.Tick.Marker = SITicks{}
		Style(p)
		name := "series"
		if len(units) > 1 {
			name += "-" + fileName(cmp.Or(unit, "value"))
		}
		out = append(out, Chart{Name: name, Plot: p, Caption: "The values the model recorded (committed events only) " +
			"against simulated time, each series summed over the LPs that record it at that time."})
	}
	return out, nil
}

// seriesLines returns the names of the series in points, in the order of their first
// points, and each one's line: its
// finite values summed per time, in time order.
func seriesLines(points []kernel.SeriesPoint) ([]string, map[string]plotter.XYs) {
	type key struct {
		series string
		t      float64
	}
	sums := map[key]float64{}
	var names []string
	for _, p := range points {
		k := key{p.Series, p.Time}
		if _, ok := sums[k]; !ok && !slices.Contains(names, p.Series) {
			names = append(names, p.Series)
		}
		sums[k] += p.Value
	}
	lines := map[string]plotter.XYs{}
	for k, v := range sums {
		if !math.IsInf(k.t, 0) && !math.IsNaN(k.t) && !math.IsInf(v, 0) && !math.IsNaN(v) {
			lines[k.series] = append(lines[k.series], plotter.XY{X: k.t, Y: v})
		}
	}
	for _, xy := range lines {
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	}
	return names, lines
}

// fileName maps a name to a file name's characters.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}
