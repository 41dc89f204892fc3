package study

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"

	"github.com/warpedgo/warped/sample/chart"
)

// TestLogLike: a log x axis where the grid's values are spaced evenly on a log scale.
func TestLogLike(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want bool
	}{
		{"doubling", []float64{25, 50, 100, 200}, true},
		{"decades", []float64{1, 10, 100, 1000}, true},
		{"even steps", []float64{10, 20, 30, 40}, false},
		{"narrow doubling", []float64{1, 2}, false},
		{"two decades apart", []float64{1, 100}, true},
		{"with zero", []float64{0, 10, 100}, false},
		{"one value", []float64{5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, logLike(tc.xs)) })
	}
}

// plotSpec is a study of toy's results against rate at the given values, with reps seeds
// and the plot options given.
func plotSpec(rates string, reps int, opts string) string {
	return fmt.Sprintf("model: toy\nparameters:\n  rate: %s\n  n: [1, 2]\nreplications: %d\n%s", rates, reps, opts)
}

// TestPlot draws a study's plot: labels from the catalog, ticks at the grid's values, a
// log axis where the values call for it or the spec asks, a grid, a y axis from zero.
func TestPlot(t *testing.T) {
	var st *Study
	draw := func(t *testing.T, src string) *plot.Plot {
		t.Helper()
		var err error
		st, err = Execute(context.Background(), parseToy(t, src), toyRun, Options{Out: t.TempDir(), Types: types, Cores: 2})
		require.NoError(t, err)
		p, err := st.Plot(0, 0)
		require.NoError(t, err)
		return p
	}
	t.Run("labels, ticks, grid", func(t *testing.T) {
		p := draw(t, plotSpec("[0.5, 1, 1.5, 2]", 3, ""))
		require.Equal(t, "arrival rate (1/s)", p.X.Label.Text, "the catalog's label and unit")
		require.Equal(t, "Alpha count (calls)", p.Y.Label.Text)
		require.Contains(t, p.Title.Text, "Alpha count\nmean and 95% CI of 3 seeds")
		var ticks []string
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			ticks = append(ticks, tk.Label)
		}
		require.Equal(t, []string{"0.5", "1", "1.5", "2"}, ticks, "ticks at the grid's values")
		require.IsType(t, plot.LinearScale{}, p.X.Scale)
		require.LessOrEqual(t, p.Y.Min, 0.0, "counts from zero, or below where a confidence interval goes")
		for _, ps := range st.Summary() {
			require.LessOrEqual(t, p.Y.Min, ps.Results[0].CILow, "every confidence interval whole")
			require.GreaterOrEqual(t, p.Y.Max, ps.Results[0].CIHigh)
		}
		require.IsType(t, chart.SITicks{}, p.Y.Tick.Marker)
		svg, err := chart.Chart{Name: "a", Plot: p}.Render("svg", chart.DefaultOptions())
		require.NoError(t, err)
		require.Contains(t, string(svg), ">n = 1<", "the other parameter's values in the legend")
	})
	t.Run("log where the values call for it", func(t *testing.T) {
		p := draw(t, plotSpec("[25, 50, 100, 200]", 3, ""))
		require.IsType(t, plot.LogScale{}, p.X.Scale)
		p = draw(t, plotSpec("[25, 50, 100, 200]", 3, "plot: {x-scale: linear}\n"))
		require.IsType(t, plot.LinearScale{}, p.X.Scale, "the spec's choice")
	})
	t.Run("log asked for", func(t *testing.T) {
		p := draw(t, plotSpec("[1, 2, 3]", 1, "plot: {x-scale: log, y-scale: log}\n"))
		require.IsType(t, plot.LogScale{}, p.X.Scale)
		require.IsType(t, plot.LogScale{}, p.Y.Scale, "every value positive")
		p = draw(t, plotSpec("[1, 2, 3]", 3, "plot: {y-scale: log}\n"))
		require.IsType(t, plot.LinearScale{}, p.Y.Scale, "confidence intervals below zero: linear")
	})
	t.Run("bad option", func(t *testing.T) {
		_, err := Parse([]byte(plotSpec("[1, 2]", 1, "plot: {x-scale: logarithmic}\n")), "toy.yaml", fakeCatalog{})
		require.ErrorContains(t, err, `toy.yaml:6: plot.x-scale must be auto, linear or log, got "logarithmic"`)
		_, err = Parse([]byte(plotSpec("[1, 2]", 1, "plot: {z-scale: log}\n")), "toy.yaml", fakeCatalog{})
		require.ErrorContains(t, err, "unknown key plot.z-scale")
	})
	t.Run("written for print", func(t *testing.T) {
		st, err := Execute(context.Background(), parseToy(t, plotSpec("[1, 2]", 1, "")), toyRun, Options{Out: t.TempDir(), Types: types, Cores: 2})
		require.NoError(t, err)
		paths, err := st.WritePlots(t.TempDir())
		require.NoError(t, err)
		var names []string
		for _, p := range paths {
			names = append(names, p[strings.LastIndex(p, "/")+1:])
		}
		require.Equal(t, []string{"plot-a.png", "plot-a.svg", "plot-b.png", "plot-b.svg"}, names)
	})
}

// TestPlotX: plot.x puts the parameter it names on the x axis, not the first that varies.
func TestPlotX(t *testing.T) {
	s := parseToy(t, "model: toy\nparameters:\n  n: [1, 2]\n  rate: [0.5, 1.5, 2.5]\nplot: {x: rate}\n")
	require.Equal(t, 1, s.xParam())
	st, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types})
	require.NoError(t, err)
	p, err := st.Plot(0, s.xParam())
	require.NoError(t, err)
	require.Equal(t, "arrival rate (1/s)", p.X.Label.Text)
	require.Equal(t, 0, parseToy(t, "model: toy\nparameters:\n  n: [1, 2]\n  rate: [0.5, 1.5]\n").xParam(), "the first that varies")
}
