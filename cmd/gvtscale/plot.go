package main

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writePlot writes a PNG of four panels against the rank count (log scales): GVT values
// per second, mean lag, messages per value and rank 0's busy time, one line per method.
func writePlot(path string, rs []Result) error {
	panels := []struct {
		title string
		value func(Result) float64
	}{
		{"GVT values per second", func(r Result) float64 { return r.RoundsPerSec }},
		{"mean GVT lag (ms)", func(r Result) float64 { return r.LagMean / 1e3 }},
		{"control messages per GVT value", func(r Result) float64 { return r.MsgsPerRound }},
		{"rank 0 manager busy (%)", func(r Result) float64 { return 100 * r.MasterBusy }},
	}
	plots := make([][]*plot.Plot, 2)
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "ranks"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		var lines []any
		for _, method := range methods {
			var xy plotter.XYs
			for _, r := range rs {
				if v := pn.value(r); r.Method == method && v > 0 {
					xy = append(xy, plotter.XY{X: float64(r.Ranks), Y: v})
				}
			}
			if len(xy) > 0 {
				lines = append(lines, method, xy)
			}
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return fmt.Errorf("plot %s: %w", pn.title, err)
		}
		p.Legend.Top, p.Legend.Left = true, true
		if i == 0 {
			p.Y.Min, p.Y.Max = 10, 1000
			p.Legend.Top = false
		}
		plots[i/2] = append(plots[i/2], p)
	}
	img := vgimg.New(vg.Points(900), vg.Points(700))
	dc := draw.New(img)
	t := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(16), PadY: vg.Points(16), PadTop: vg.Points(6),
		PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	cs := plot.Align(plots, t, dc)
	for j := range plots {
		for i, p := range plots[j] {
			p.Draw(cs[j][i])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
