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
	"gonum.org/v1/plot/plotutil"

	"github.com/warpedgo/warped/kernel"
)

// Series returns one chart per series of a model's time series (kernel.Result.Series,
// sample.ReadSeries), in the order of their names: the value against simulated time. The
// values of a series that several LPs record at the same time are summed (the epidemic's
// locations each record their counts at every sample: the chart shows the totals). A
// chart is named series-NAME, with the name's characters other than letters, digits, '-'
// and '_' replaced by '_'.
func Series(points []kernel.SeriesPoint) ([]Chart, error) {
	if len(points) == 0 {
		return nil, errors.New("no series points to chart")
	}
	names, lines := seriesLines(points)
	var out []Chart
	for _, name := range names {
		xy := lines[name]
		if len(xy) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = "Model series: " + name
		p.X.Label.Text = "simulated time"
		p.Y.Label.Text = name
		p.BackgroundColor = color.White
		p.Add(plotter.NewGrid())
		if err := plotutil.AddLinePoints(p, xy); err != nil {
			return nil, fmt.Errorf("chart of series %s: %w", name, err)
		}
		p.Legend = plot.NewLegend()
		p.Y.Tick.Marker = SITicks{}
		style(p)
		out = append(out, Chart{Name: "series-" + fileName(name), Plot: p})
	}
	if len(out) == 0 {
		return nil, errors.New("no finite series points to chart")
	}
	return out, nil
}

// seriesLines returns the names of the series in points, sorted, and each one's line: its
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
	slices.Sort(names)
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

// fileName maps a series name to a file name's characters.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}
