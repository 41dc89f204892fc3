// Package chart draws engine samples (package sample) as charts with gonum/plot: event rate,
// efficiency and GVT against wall time, rolled-back events per worker, memory, pending
// events and the time split per worker; and a model's time series (kernel.SeriesPoint), one
// chart per series against simulated time; written as PNG and SVG.
package chart

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/sample"
)

// Width and Height are the size of every chart.
var (
	Width  = 6 * vg.Inch
	Height = 3.5 * vg.Inch
)

// Chart is one chart and the file name it is written under (without extension).
type Chart struct {
	Name string
	Plot *plot.Plot
}

// set is the rows of one rank taken at one time.
type set struct {
	rank int
	wall float64
	rows []sample.Row
}

// sets groups rows by rank and wall time, in time order.
func sets(rows []sample.Row) []set {
	rs := slices.Clone(rows)
	slices.SortStableFunc(rs, func(a, b sample.Row) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.WallSeconds, b.WallSeconds))
	})
	var out []set
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].rank == r.Rank && out[n-1].wall == r.WallSeconds {
			out[n-1].rows = append(out[n-1].rows, r)
			continue
		}
		out = append(out, set{rank: r.Rank, wall: r.WallSeconds, rows: []sample.Row{r}})
	}
	return out
}

// ranks returns the ranks present in ss.
func ranks(ss []set) []int {
	var rs []int
	for _, s := range ss {
		if !slices.Contains(rs, s.rank) {
			rs = append(rs, s.rank)
		}
	}
	return rs
}

// series is one named line.
type series struct {
	name string
	xy   plotter.XYs
}

// perRank makes one line per rank of value(set, previous set of the rank), skipping the
// first set of each rank when needPrev (a rate needs an interval) and values that are not
// finite.
func perRank(ss []set, needPrev bool, value func(s, prev *set) float64) []series {
	var out []series
	multi := len(ranks(ss)) > 1
	for _, rank := range ranks(ss) {
		line := series{name: "events"}
		if multi {
			line.name = fmt.Sprintf("rank %d", rank)
		}
		var prev *set
		for i := range ss {
			s := &ss[i]
			if s.rank != rank {
				continue
			}
			if prev != nil || !needPrev {
				if v := value(s, prev); !math.IsInf(v, 0) && !math.IsNaN(v) {
					line.xy = append(line.xy, plotter.XY{X: s.wall, Y: v})
				}
			}
			prev = s
		}
		out = append(out, line)
	}
	return out
}

// perWorker makes one line per rank and worker of value(row).
func perWorker(ss []set, value func(r *sample.Row) float64) []series {
	type id struct{ rank, worker int }
	var order []id
	lines := map[id]*series{}
	multi := len(ranks(ss)) > 1
	for i := range ss {
		for j := range ss[i].rows {
			r := &ss[i].rows[j]
			if r.Worker < 0 {
				continue // a rank's manager: no counts of its own
			}
			k := id{r.Rank, r.Worker}
			l := lines[k]
			if l == nil {
				name := fmt.Sprintf("worker %d", r.Worker)
				if multi {
					name = fmt.Sprintf("rank %d worker %d", r.Rank, r.Worker)
				}
				l = &series{name: name}
				lines[k] = l
				order = append(order, k)
			}
			if v := value(r); !math.IsInf(v, 0) && !math.IsNaN(v) {
				l.xy = append(l.xy, plotter.XY{X: ss[i].wall, Y: v})
			}
		}
	}
	out := make([]series, 0, len(order))
	for _, k := range order {
		out = append(out, *lines[k])
	}
	return out
}

// sum adds up f over a set's rows.
func sum(s *set, f func(r *sample.Row) float64) float64 {
	var t float64
	for i := range s.rows {
		t += f(&s.rows[i])
	}
	return t
}

// Make returns the charts of rows: event rate, efficiency, GVT, rolled-back events per
// worker, memory, pending events (only where the engine keeps them) and the time split per
// worker and rank's manager (only where the engine splits its time).
func Make(rows []sample.Row) ([]Chart, error) {
	if len(rows) == 0 {
		return nil, errors.New("no samples to chart")
	}
	ss := sets(rows)
	committed := func(r *sample.Row) float64 { return float64(r.Committed) }
	processed := func(r *sample.Row) float64 { return float64(r.Processed) }
	specs := []struct {
		name, title, y string
		lines          []series
	}{
		{"event-rate", "Committed event rate", "events per second", perRank(ss, true, func(s, p *set) float64 {
			return sum(s, committed) / (s.wall - p.wall)
		})},
		{"efficiency", "Efficiency (committed / processed since the previous sample)", "efficiency", perRank(ss, false, func(s, _ *set) float64 {
			return sum(s, committed) / sum(s, processed)
		})},
		{"gvt", "GVT against wall time", "GVT (simulated time)", perRank(ss, false, func(s, _ *set) float64 {
			return s.rows[0].GVT
		})},
		{"rollbacks", "Rolled-back events per worker", "events rolled back since the previous sample", perWorker(ss, func(r *sample.Row) float64 {
			return float64(r.RolledBack)
		})},
		{"memory", "Go heap in use", "MiB", perRank(ss, false, func(s, _ *set) float64 {
			return float64(s.rows[0].MemoryBytes) / (1 << 20)
		})},
		{"pending", "Pending events per worker", "events", perWorker(ss, func(r *sample.Row) float64 {
			if r.PendingEvents < 0 {
				return math.NaN()
			}
			return float64(r.PendingEvents)
		})},
	}
	var out []Chart
	for _, sp := range specs {
		var args []any
		for _, l := range sp.lines {
			if len(l.xy) > 0 {
				args = append(args, l.name, l.xy)
			}
		}
		if len(args) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = sp.title
		p.X.Label.Text = "wall time (s)"
		p.Y.Label.Text = sp.y
		p.Add(plotter.NewGrid())
		if err := plotutil.AddLines(p, args...); err != nil {
			return nil, fmt.Errorf("chart %s: %w", sp.name, err)
		}
		if len(args) == 2 {
			p.Legend = plot.NewLegend() // one line: no legend
		} else {
			p.Legend.Top = true
		}
		p.BackgroundColor = color.White
		out = append(out, Chart{Name: sp.name, Plot: p})
	}
	sc, err := split(rows)
	if err != nil {
		return nil, err
	}
	if sc != nil {
		out = append(out, *sc)
	}
	return out, nil
}

// PNG renders c as a PNG image.
func (c Chart) PNG() ([]byte, error) {
	img := vgimg.New(Width, Height)
	c.Plot.Draw(draw.New(img))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render chart %s: %w", c.Name, err)
	}
	return b.Bytes(), nil
}

// SVG renders c as an SVG image.
func (c Chart) SVG() ([]byte, error) {
	img := vgsvg.New(Width, Height)
	c.Plot.Draw(draw.New(img))
	var b bytes.Buffer
	if _, err := img.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render chart %s: %w", c.Name, err)
	}
	return b.Bytes(), nil
}

// WriteFiles writes each chart as NAME.png and NAME.svg in dir (made if missing) and
// returns the paths written.
func WriteFiles(dir string, charts []Chart) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make chart directory: %w", err)
	}
	var paths []string
	for _, c := range charts {
		for _, f := range []struct {
			ext    string
			render func() ([]byte, error)
		}{{".png", c.PNG}, {".svg", c.SVG}} {
			data, err := f.render()
			if err != nil {
				return paths, err
			}
			path := filepath.Join(dir, c.Name+f.ext)
			if err := outfile.WriteFile(path, data); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
