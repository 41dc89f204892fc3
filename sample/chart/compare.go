package chart

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Run is one run's totals for a comparison: a label and its --stats-file values by name.
type Run struct {
	Label  string
	Values map[string]float64
}

// Compare returns bar charts that compare runs side by side: committed event rate,
// efficiency, events rolled back, peak memory and wall time (those the runs have).
func Compare(runs []Run) ([]Chart, error) {
	if len(runs) == 0 {
		return nil, errors.New("no runs to compare")
	}
	specs := []struct {
		name, key, title, y string
		scale               float64
	}{
		{"compare-rate", "committed_events_per_second", "Committed event rate", "committed events / s", 1},
		{"compare-efficiency", "efficiency", "Efficiency (committed / processed)", "efficiency (%)", 100},
		{"compare-rolled-back", "events_rolled_back", "Events rolled back", "events", 1},
		{"compare-memory", "peak_memory_bytes", "Peak memory", "MiB", 1.0 / (1 << 20)},
		{"compare-wall", "wall_seconds", "Wall time", "seconds", 1},
	}
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = r.Label
	}
	var out []Chart
	for _, sp := range specs {
		vals := make(plotter.Values, len(runs))
		have := false
		for i, r := range runs {
			if v, ok := r.Values[sp.key]; ok {
				vals[i], have = v*sp.scale, true
			}
		}
		if !have {
			continue
		}
		p := plot.New()
		p.Title.Text = sp.title
		p.Y.Label.Text = sp.y
		p.BackgroundColor = color.White
		p.Add(plotter.NewGrid())
		bars, err := plotter.NewBarChart(vals, vg.Points(24))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", sp.name, err)
		}
		bars.Color = color.RGBA{R: 0x4a, G: 0x7e, B: 0xbb, A: 0xff}
		p.Add(bars)
		p.NominalX(labels...)
		p.X.Min, p.X.Max = -0.6, float64(len(runs))-0.4 // the outer bars whole
		p.Y.Min = 0
		if sp.key == "efficiency" {
			p.Y.Max = max(p.Y.Max, 100)
		}
		p.Y.Tick.Marker = SITicks{}
		Style(p)
		out = append(out, Chart{Name: sp.name, Plot: p})
	}
	if len(out) == 0 {
		return nil, errors.New("the runs have none of the compared values: are they --stats-file outputs?")
	}
	return out, nil
}
