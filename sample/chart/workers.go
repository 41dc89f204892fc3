package chart

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/warpedgo/warped/sample"
)

// linesUpTo is the most workers a per-worker chart draws as lines, one each. With more,
// lines would hide one another: the chart draws, per rank, the median over the workers
// and their range (least to greatest) as a band.
const linesUpTo = 4

// workerID names a worker across ranks.
type workerID struct{ rank, worker int }

// workerPoint is the values of one rank's workers at one wall time (a level: a sample
// set) or over one window (a rate, held from from to to), by worker.
type workerPoint struct {
	rank      int
	from, to  float64
	step      bool // a rate held over [from, to], not a level at to
	gapBefore bool // no samples for long before it: the lines break
	values    map[int]float64
}

// workerView is a per-worker quantity: its points, and the workers that have any.
type workerView struct {
	points  []workerPoint
	workers []workerID // in rank and worker order
}

// add records w's value v at point p (a value that is not finite is left out).
func (v *workerView) add(p *workerPoint, id workerID, x float64) {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return
	}
	if !slices.Contains(v.workers, id) {
		v.workers = append(v.workers, id)
	}
	p.values[id.worker] = x
}

// finish sorts the workers.
func (v *workerView) finish() *workerView {
	slices.SortFunc(v.workers, func(a, b workerID) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.worker, b.worker))
	})
	return v
}

// workerRates is value(row) of each worker summed over each window and divided by its
// length (a rate per second of wall time), held over the window.
func workerRates(ws []window, value func(r *sample.Row) float64) *workerView {
	v := &workerView{}
	for i := range ws {
		w := &ws[i]
		p := workerPoint{rank: w.rank, from: w.from, to: w.to, step: true, gapBefore: w.gap, values: map[int]float64{}}
		if !w.gap {
			sums := map[int]float64{}
			for _, s := range w.sets {
				for j := range s.rows {
					if r := &s.rows[j]; r.Worker >= 0 { // a rank's manager has no counts of its own
						sums[r.Worker] += value(r)
					}
				}
			}
			for worker, x := range sums {
				v.add(&p, workerID{w.rank, worker}, x/(w.to-w.from))
			}
		}
		v.points = append(v.points, p)
	}
	return v.finish()
}

// workerLevels is the level value(row) of each worker at each sample set, broken where
// samples are missing for long.
func workerLevels(ss []set, value func(r *sample.Row) float64) *workerView {
	v := &workerView{}
	limit := gapAfter(ss)
	last := map[int]float64{}
	for i := range ss {
		s := &ss[i]
		prev, seen := last[s.rank]
		p := workerPoint{rank: s.rank, from: s.wall, to: s.wall, gapBefore: seen && s.wall-prev > limit, values: map[int]float64{}}
		last[s.rank] = s.wall
		for j := range s.rows {
			if r := &s.rows[j]; r.Worker >= 0 {
				v.add(&p, workerID{r.Rank, r.Worker}, value(r))
			}
		}
		v.points = append(v.points, p)
	}
	return v.finish()
}

// appendPoint appends x at p to xy: held over the window for a rate, at its time for a
// level, after a gap where p has one.
func appendPoint(xy plotter.XYs, p *workerPoint, x float64) plotter.XYs {
	if p.gapBefore {
		xy = append(xy, gap)
	}
	if p.step {
		return append(xy, plotter.XY{X: p.from, Y: x}, plotter.XY{X: p.to, Y: x})
	}
	return append(xy, plotter.XY{X: p.to, Y: x})
}

// lines returns one line per worker ("worker 3", or "rank 1 worker 3" across ranks).
func (v *workerView) lines() []series {
	multi := len(v.workers) > 0 && v.workers[0].rank != v.workers[len(v.workers)-1].rank
	out := make([]series, len(v.workers))
	for i, id := range v.workers {
		out[i].name = fmt.Sprintf("worker %d", id.worker)
		if multi {
			out[i].name = fmt.Sprintf("rank %d worker %d", id.rank, id.worker)
		}
		for j := range v.points {
			p := &v.points[j]
			if p.rank != id.rank {
				continue
			}
			if x, ok := p.values[id.worker]; ok {
				out[i].xy = appendPoint(out[i].xy, p, x)
			} else if p.gapBefore {
				out[i].xy = append(out[i].xy, gap)
			}
		}
	}
	return out
}

// band is a rank's workers' median and range over them: three lines broken at the same
// gaps.
type band struct {
	rank           int
	workers        int
	median, lo, hi plotter.XYs
}

// bands returns one band per rank.
func (v *workerView) bands() []band {
	var out []band
	for _, id := range v.workers {
		if len(out) == 0 || out[len(out)-1].rank != id.rank {
			out = append(out, band{rank: id.rank})
		}
		out[len(out)-1].workers++
	}
	for i := range out {
		b := &out[i]
		for j := range v.points {
			p := &v.points[j]
			if p.rank != b.rank {
				continue
			}
			if len(p.values) == 0 {
				if p.gapBefore {
					b.median, b.lo, b.hi = append(b.median, gap), append(b.lo, gap), append(b.hi, gap)
				}
				continue
			}
			xs := make([]float64, 0, len(p.values))
			for _, x := range p.values {
				xs = append(xs, x)
			}
			slices.Sort(xs)
			b.median = appendPoint(b.median, p, median(xs))
			b.lo = appendPoint(b.lo, p, xs[0])
			b.hi = appendPoint(b.hi, p, xs[len(xs)-1])
		}
	}
	return out
}

// median is the median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// addBands draws bs on p: each rank's range as a shaded band, its median as a line, with
// legend entries; it returns the number of bands with data.
func addBands(p *plot.Plot, bs []band) (int, error) {
	n := 0
	for i, b := range bs {
		los, his := segments(b.lo), segments(b.hi)
		if len(los) == 0 {
			continue
		}
		n++
		c := plotutil.Color(i)
		r, g, bl, _ := c.RGBA()
		fill := color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 0x50}
		var poly *plotter.Polygon
		for k := range los {
			ring := slices.Clone(his[k])
			for j := len(los[k]) - 1; j >= 0; j-- {
				ring = append(ring, los[k][j])
			}
			pg, err := plotter.NewPolygon(ring)
			if err != nil {
				return 0, err
			}
			pg.Color, pg.LineStyle.Width = fill, 0
			p.Add(pg)
			poly = pg
		}
		prefix := ""
		if len(bs) > 1 {
			prefix = fmt.Sprintf("rank %d ", b.rank)
		}
		first := true
		for _, seg := range segments(b.median) {
			line, err := plotter.NewLine(seg)
			if err != nil {
				return 0, err
			}
			line.Color, line.Width = c, vg.Points(1)
			p.Add(line)
			if first {
				p.Legend.Add(fmt.Sprintf("%smedian of %d workers", prefix, b.workers), line)
				first = false
			}
		}
		p.Legend.Add(prefix+"least to greatest", poly)
	}
	return n, nil
}
