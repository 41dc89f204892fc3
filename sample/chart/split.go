package chart

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/warpedgo/warped/sample"
)

// splitColours are the colours of the time split's phases: idle, processing, GVT,
// communication.
var splitColours = []color.Color{
	color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff},
	color.RGBA{R: 0x4a, G: 0x7e, B: 0xbb, A: 0xff},
	color.RGBA{R: 0xe0, G: 0x8a, B: 0x2e, A: 0xff},
	color.RGBA{R: 0x5b, G: 0xa8, B: 0x5b, A: 0xff},
}

// split returns the chart of the time split: per worker (and per rank's manager), the
// shares of its time spent idle, processing, in GVT and in communication over the run, as
// stacked bars; nil when the rows have no time split (a file written before the split was
// sampled).
func split(rows []sample.Row) (*Chart, error) {
	type id struct{ rank, worker int }
	totals := map[id]*[4]float64{}
	var ids []id
	for i := range rows {
		r := &rows[i]
		k := id{r.Rank, r.Worker}
		t := totals[k]
		if t == nil {
			t = &[4]float64{}
			totals[k] = t
			ids = append(ids, k)
		}
		t[0] += r.IdleSeconds
		t[1] += r.ProcessingSeconds
		t[2] += r.GVTSeconds
		t[3] += r.CommSeconds
	}
	slices.SortFunc(ids, func(a, b id) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.worker, b.worker)) })
	multi := len(ids) > 0 && ids[0].rank != ids[len(ids)-1].rank
	var labels []string
	shares := make([]plotter.Values, 4)
	for _, k := range ids {
		t := totals[k]
		sum := t[0] + t[1] + t[2] + t[3]
		if sum <= 0 {
			continue // no split for this worker
		}
		label := fmt.Sprintf("w%d", k.worker)
		if k.worker < 0 {
			label = "mgr"
		}
		if multi {
			label = fmt.Sprintf("r%d %s", k.rank, label)
		}
		labels = append(labels, label)
		for ph := range t {
			shares[ph] = append(shares[ph], 100*t[ph]/sum)
		}
	}
	if len(labels) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Time split per worker over the run"
	p.X.Label.Text = "worker"
	p.Y.Label.Text = "share of wall time (%)"
	p.BackgroundColor = color.White
	p.Add(plotter.NewGrid())
	var below *plotter.BarChart
	width := vg.Points(max(4, min(16, 160/float64(len(labels)))))
	for ph, name := range []string{"idle", "processing", "GVT", "communication"} {
		bars, err := plotter.NewBarChart(shares[ph], width)
		if err != nil {
			return nil, fmt.Errorf("chart time-split: %w", err)
		}
		bars.Color = splitColours[ph]
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	if every := (len(labels) + 11) / 12; every > 1 { // at most 12 labels: 7 pt type side by side
		for i := range labels {
			if i%every != 0 {
				labels[i] = ""
			}
		}
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4 // room on both sides of the bars
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = PercentTicks{}
	p.Y.Label.Text = "share of wall time"
	Style(p)
	return &Chart{Name: "time-split", Plot: p, Caption: "The share of each worker's wall time (and each rank's " +
		"manager's) spent idle, processing events, in GVT rounds and handing events between workers, over the run. " +
		"Processing is the useful part; much idle time means too little work for the workers."}, nil
}
