package chart

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Run is one run's totals for a comparison: a label and its --stats-file values by name.
type Run struct {
	Label  string
	Values map[string]float64
}

// Compare returns bar charts that compare runs side by side: committed event rate,
// efficiency, events rolled back, peak memory and wall time (those the runs have), each
// bar with its value. xLabel names what the runs' labels are ("run" when empty).
func Compare(runs []Run, xLabel string) ([]Chart, error) {
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
	// Labels wider than a bar's share of the axis would run into each other: the bars are
	// then lettered, and a key below says what each letter is.
	var key []string
	if !fitLabels(labels, DefaultOptions().Width) {
		key = make([]string, len(runs))
		for i, l := range labels {
			labels[i] = letter(i)
			key[i] = letter(i) + ": " + strings.ReplaceAll(l, "\n", ", ")
		}
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
		// Each bar's value above it, so a reader need not estimate it from the grid.
		top := 0.0
		xys := make(plotter.XYs, len(vals))
		texts := make([]string, len(vals))
		for i, v := range vals {
			top = max(top, v)
			xys[i] = plotter.XY{X: float64(i), Y: v}
			texts[i] = SI(v)
		}
		values, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", sp.name, err)
		}
		values.Offset = vg.Point{Y: vg.Points(2)} // clear of the bar's edge
		p.Add(values)
		p.NominalX(labels...)
		p.X.Label.Text = cmp.Or(xLabel, "run")
		p.X.Min, p.X.Max = -0.6, float64(len(runs))-0.4 // the outer bars whole
		p.Y.Min = 0
		p.Y.Max = top * 1.15 // room for the values above the highest bar
		if sp.key == "efficiency" {
			p.Y.Max = max(p.Y.Max, 100)
		}
		p.Y.Tick.Marker = SITicks{}
		Style(p)
		for _, k := range key {
			p.Legend.Add(k, noThumb{})
		}
		for i := range values.TextStyle {
			values.TextStyle[i].Font = p.Y.Tick.Label.Font // the axes' face
			values.TextStyle[i].XAlign = -0.5              // centred on the bar
			values.TextStyle[i].YAlign = 0                 // above its top
		}
		out = append(out, Chart{Name: sp.name, Plot: p})
	}
	if len(out) == 0 {
		return nil, errors.New("the runs have none of the compared values: are they --stats-file outputs?")
	}
	return out, nil
}

// fitLabels reports whether labels (lines split at newlines), at a tick label's size,
// each fit a bar's share of a figure width wide.
func fitLabels(labels []string, width vg.Length) bool {
	p := plot.New()
	Style(p)
	ts := p.X.Tick.Label
	share := 0.8 * width / vg.Length(len(labels)) // the y axis takes a fifth
	for _, l := range labels {
		for _, line := range strings.Split(l, "\n") {
			if ts.Width(line) > 0.9*share {
				return false
			}
		}
	}
	return true
}

// letter names bar i: A to Z, then A2, B2, ...
func letter(i int) string {
	s := string(rune('A' + i%26))
	if i >= 26 {
		s += strconv.Itoa(i/26 + 1)
	}
	return s
}

// noThumb is a legend entry without a picture: a line of the key to lettered bars.
type noThumb struct{}

// Thumbnail draws nothing.
func (noThumb) Thumbnail(*draw.Canvas) {}
