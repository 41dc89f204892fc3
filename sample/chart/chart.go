// Package chart draws engine samples (package sample) as charts with gonum/plot: event rate,
// efficiency and GVT against wall time, rollbacks per second per worker, memory, pending
// events and the time split per worker; and a model's time series (kernel.SeriesPoint), one
// chart per series against simulated time; rendered for print as PNG, SVG or PDF.
package chart

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/warpedgo/warped/sample"
)

// Chart is one chart, the file name it is written under (without extension) and a
// caption that says what to read from it (a page's figure caption; empty: none).
type Chart struct {
	Name    string
	Plot    *plot.Plot
	Caption string
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

// series is one named line. A NaN Y breaks it: the data has a gap there.
type series struct {
	name string
	xy   plotter.XYs
}

// gap is a break in a line.
var gap = plotter.XY{X: math.NaN(), Y: math.NaN()}

// A stretch without samples is drawn as a gap when it lasts over gapTimes the median
// interval between sample sets and over gapShare of the samples' span. GVT rounds come
// irregularly when workers outnumber cores (a tenth of the intervals over three times the
// median), and a run on a busy machine stalls for milliseconds: a gap narrower than a
// line's width would make the line look dashed without showing anything.
const (
	gapTimes = 10
	gapShare = 0.02
)

// gapLimit is the least stretch without samples drawn as a gap, given the median interval
// between sample sets and the wall time of the last.
func gapLimit(median, span float64) float64 { return max(gapTimes*median, gapShare*span) }

// window is an interval of one rank's wall time, (from, to], over which rates are taken:
// the sets in it.
type window struct {
	rank     int
	from, to float64
	sets     []*set
	gap      bool // no samples for much longer than usual: drawn as a gap
}

// maxWindows is about the most windows a rate is taken over: a step narrower than a
// pixel of a one-column figure shows noise, not the rate.
const maxWindows = 200

// windows divides each rank's sets (their counts are since the set before, the first's
// since the run's start) into windows at least half the rank's median interval between
// samples long (and a maxWindows-th of the samples' span), so that a last sample taken a
// moment after the one before does not make a spike: a short interval joins the next,
// and a short remainder the window before it. A window longer than
// gapLimit holds no samples in between and is marked as a gap.
func windows(ss []set) []window {
	var out []window
	for _, rank := range ranks(ss) {
		var rs []*set
		for i := range ss {
			if ss[i].rank == rank {
				rs = append(rs, &ss[i])
			}
		}
		ds := make([]float64, 0, len(rs))
		for i, s := range rs {
			if i == 0 {
				ds = append(ds, s.wall) // the first set counts from the run's start
			} else {
				ds = append(ds, s.wall-rs[i-1].wall)
			}
		}
		slices.Sort(ds)
		median := ds[len(ds)/2]
		span := rs[len(rs)-1].wall
		limit, least := gapLimit(median, span), max(median/2, span/maxWindows)
		first := len(out)
		w := window{rank: rank}
		for _, s := range rs {
			w.to, w.sets = s.wall, append(w.sets, s)
			if w.to-w.from >= least {
				w.gap = len(w.sets) == 1 && w.to-w.from > limit
				out = append(out, w)
				w = window{rank: rank, from: s.wall}
			}
		}
		if len(w.sets) > 0 {
			if len(out) > first { // a short remainder joins the window before it
				last := &out[len(out)-1]
				last.to, last.sets, last.gap = w.to, append(last.sets, w.sets...), false
			} else {
				out = append(out, w)
			}
		}
	}
	return out
}

// perRankRate makes one line per rank of value(window) held over each window (a step),
// broken at gaps and at values that are not finite.
func perRankRate(ws []window, value func(w *window) float64) []series {
	var out []series
	var rs []int
	for _, w := range ws {
		if !slices.Contains(rs, w.rank) {
			rs = append(rs, w.rank)
		}
	}
	for _, rank := range rs {
		line := series{name: "events"}
		if len(rs) > 1 {
			line.name = fmt.Sprintf("rank %d", rank)
		}
		for i := range ws {
			if w := &ws[i]; w.rank == rank {
				line.xy = appendStep(line.xy, w, value(w))
			}
		}
		out = append(out, line)
	}
	return out
}

// appendStep appends value v held over window w to xy, or a gap.
func appendStep(xy plotter.XYs, w *window, v float64) plotter.XYs {
	if w.gap || math.IsInf(v, 0) || math.IsNaN(v) {
		return append(xy, gap)
	}
	return append(xy, plotter.XY{X: w.from, Y: v}, plotter.XY{X: w.to, Y: v})
}

// gapAfter returns the wall-time interval between samples beyond which a line of levels
// breaks (gapLimit).
func gapAfter(ss []set) float64 {
	var ds []float64
	span := 0.0
	for i := 1; i < len(ss); i++ {
		span = max(span, ss[i].wall)
		if ss[i].rank == ss[i-1].rank {
			ds = append(ds, ss[i].wall-ss[i-1].wall)
		}
	}
	if len(ds) == 0 {
		return math.Inf(1)
	}
	slices.Sort(ds)
	return gapLimit(ds[len(ds)/2], span)
}

// perRank makes one line per rank of the level value(set), broken where samples are
// missing for long and at values that are not finite.
func perRank(ss []set, value func(s *set) float64) []series {
	var out []series
	multi := len(ranks(ss)) > 1
	limit := gapAfter(ss)
	for _, rank := range ranks(ss) {
		line := series{name: "events"}
		if multi {
			line.name = fmt.Sprintf("rank %d", rank)
		}
		last := math.NaN()
		for i := range ss {
			s := &ss[i]
			if s.rank != rank {
				continue
			}
			line.xy = appendLevel(line.xy, s.wall, value(s), s.wall-last > limit)
			last = s.wall
		}
		out = append(out, line)
	}
	return out
}

// appendLevel appends the level v at wall time x to xy, after a gap when broken, or a
// gap when v is not finite.
func appendLevel(xy plotter.XYs, x, v float64, broken bool) plotter.XYs {
	if broken || math.IsInf(v, 0) || math.IsNaN(v) {
		xy = append(xy, gap)
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return xy
		}
	}
	return append(xy, plotter.XY{X: x, Y: v})
}

// sum adds up f over the rows of a window's sets.
func sum(w *window, f func(r *sample.Row) float64) float64 {
	var t float64
	for _, s := range w.sets {
		for i := range s.rows {
			t += f(&s.rows[i])
		}
	}
	return t
}

// axis says how a chart's y axis is drawn.
type axis int

const (
	countAxis   axis = iota // from zero, SI tick labels
	percentAxis             // 0 to 100 %, or above where the data goes
	levelAxis               // the data's range (GVT)
	sizeAxis                // from zero, in the unit of the axis's label (MiB, GiB): plain numbers
)

// Make returns the charts of rows: event rate, efficiency, GVT, rollbacks per second per
// worker, memory (resident and Go heap), pending events per worker (only where the engine
// keeps them) and the time split per worker and rank's manager (only where the engine
// splits its time). A per-worker chart of more than four workers shows per rank the
// median over the workers and their range, not a line each.
func Make(rows []sample.Row) ([]Chart, error) {
	if len(rows) == 0 {
		return nil, errors.New("no samples to chart")
	}
	ss := sets(rows)
	ws := windows(ss)
	committed := func(r *sample.Row) float64 { return float64(r.Committed) }
	processed := func(r *sample.Row) float64 { return float64(r.Processed) }
	// Memory in MiB, or in GiB from a GiB on (SI prefixes on MiB read "4 k MiB").
	memUnit, memScale := "MiB", float64(1<<20)
	for _, r := range rows {
		if max(r.ResidentBytes, r.MemoryBytes) >= 1<<30 {
			memUnit, memScale = "GiB", 1<<30
			break
		}
	}
	inUnit := func(b uint64) float64 {
		if b == 0 {
			return math.NaN() // not sampled (a file written before resident memory was)
		}
		return float64(b) / memScale
	}
	memory := append(named(perRank(ss, func(s *set) float64 { return inUnit(s.rows[0].ResidentBytes) }), "resident"),
		named(perRank(ss, func(s *set) float64 { return inUnit(s.rows[0].MemoryBytes) }), "Go heap in use")...)
	specs := []struct {
		name, title, y string
		axis           axis
		lines          []series
		workers        *workerView // a per-worker chart: lines or bands
		legend         bool        // a legend even for one line
		caption        string
	}{
		{name: "event-rate", title: "Committed event rate", y: "committed events / s", lines: perRankRate(ws, func(w *window) float64 {
			return sum(w, committed) / (w.to - w.from)
		}), caption: "Committed events per second of wall time, over windows at least half the usual interval between samples: " +
			"the run's throughput as it went. A dip is a stretch of rollbacks or waiting; a gap, a stretch without samples."},
		{name: "efficiency", title: "Efficiency (committed / processed per interval)", y: "efficiency", axis: percentAxis, lines: perRankRate(ws, func(w *window) float64 {
			return 100 * sum(w, committed) / sum(w, processed)
		}), caption: "The share of the events processed in each window that were committed. What is missing to 100 % was " +
			"rolled back: a low stretch is where optimism cost the most."},
		{name: "gvt", title: "GVT against wall time", y: "GVT (simulated time)", axis: levelAxis, lines: perRank(ss, func(s *set) float64 {
			return s.rows[0].GVT
		}), caption: "Global virtual time, the simulated time every LP has passed, against wall time. Its slope is the " +
			"simulated time the run advances per second; a flat stretch is a stall."},
		{name: "rollbacks", title: "Rolled-back events per second", y: "rolled-back events / s", workers: workerRates(ws, func(r *sample.Row) float64 {
			return float64(r.RolledBack)
		}), caption: "Events undone per second of wall time. A worker far above the others is the one that stragglers " +
			"(events from the past) hit most: its LPs run ahead of their senders."},
		{name: "memory", title: "Memory of the process", y: "memory (" + memUnit + ")", axis: sizeAxis, lines: memory, legend: true,
			caption: "The process's resident memory (what the totals' peak memory reports) and the Go heap in use (the " +
				"events, states and logs the run holds). A heap that grows without bound is history not fossil-collected."},
		{name: "pending", title: "Pending events", y: "pending events", workers: workerLevels(ss, func(r *sample.Row) float64 {
			if r.PendingEvents < 0 {
				return math.NaN()
			}
			return float64(r.PendingEvents)
		}), caption: "Events waiting in each worker's calendar, as of its last GVT report. Workers at one level share the " +
			"load evenly; one far above the others holds more of the model."},
		{name: "threads", title: "Threads running the workers, and waiting for a processor", y: "threads", lines: threads(ss, ws),
			legend: true, caption: "The threads that ran the workers when each set of samples was taken (the engine's " +
				"hosts: as many as the CPUs allow, fewer while other processes take them), and how many of the process's " +
				"threads were ready to run but waited for a processor, on average over each window (its CPU wait per " +
				"second). Where the second line rises, the load took the run's time."},
	}
	var out []Chart
	for _, sp := range specs {
		p := plot.New()
		p.Title.Text = sp.title
		p.X.Label.Text = "wall time (s)"
		p.Y.Label.Text = sp.y
		p.Add(plotter.NewGrid())
		var n int
		var err error
		switch v := sp.workers; {
		case v == nil:
			n, err = addLines(p, sp.lines, sp.legend)
		case len(v.workers) > linesUpTo: // the legend says median and range
			bs := v.bands()
			n, err = addBands(p, bs)
			if len(bs) > 1 {
				sp.caption += fmt.Sprintf(" With %d workers on %d ranks, each rank's line is its workers' median and its band their range, least to greatest.", len(v.workers), len(bs))
			} else {
				sp.caption += fmt.Sprintf(" With %d workers, the line is their median and the band their range, least to greatest.", len(v.workers))
			}
		default:
			p.Title.Text += " per worker"
			n, err = addLines(p, v.lines(), false)
		}
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", sp.name, err)
		}
		if n == 0 {
			continue
		}
		switch sp.axis {
		case countAxis:
			p.Y.Min = 0
			p.Y.Max = max(1.05*p.Y.Max, 1) // headroom: a peak at the top edge looks cut off
			p.Y.Tick.Marker = SITicks{}
		case percentAxis:
			p.Y.Min, p.Y.Max = 0, max(p.Y.Max, 100)
			p.Y.Tick.Marker = PercentTicks{}
		case levelAxis:
			p.Y.Tick.Marker = SITicks{} // 2.8e14 reads 280 T, not 3e+14
		case sizeAxis:
			p.Y.Min, p.Y.Max = 0, 1.05*p.Y.Max
		}
		// Wall time from the run's start, on every chart alike (one sample set alone
		// left an axis around its time, into negative seconds).
		p.X.Min, p.X.Max = 0, max(p.X.Max, 1e-3)
		Style(p)
		p.BackgroundColor = color.White
		out = append(out, Chart{Name: sp.name, Plot: p, Caption: sp.caption})
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

// threads returns the lines of the threads chart: per rank, the threads running the
// workers (a level), and the process's CPU wait per second of wall time over each window
// (the growth of its cumulative cpu_wait_seconds); none where the rows do not have them
// (a gpu run, or a file written before they were sampled).
func threads(ss []set, ws []window) []series {
	if !slices.ContainsFunc(ss, func(s set) bool { return s.rows[0].WorkerThreads > 0 }) {
		return nil
	}
	before := map[*set]float64{} // each set's rank's cumulative wait at the set before it
	last := map[int]float64{}
	for i := range ss {
		s := &ss[i]
		before[s] = last[s.rank]
		last[s.rank] = s.rows[0].CPUWaitSeconds
	}
	waiting := perRankRate(ws, func(w *window) float64 {
		first, end := w.sets[0], w.sets[len(w.sets)-1]
		return max(0, end.rows[0].CPUWaitSeconds-before[first]) / (w.to - w.from)
	})
	running := perRank(ss, func(s *set) float64 { return float64(s.rows[0].WorkerThreads) })
	return append(named(running, "running the workers"), named(waiting, "waiting for a processor")...)
}

// named names lines (one per rank) what, prefixed by their rank's name across ranks.
func named(lines []series, what string) []series {
	for i := range lines {
		if len(lines) > 1 {
			lines[i].name += " " + what
		} else {
			lines[i].name = what
		}
	}
	return lines
}

// addLines adds lines to p, each in its own colour (and dashes after the colours run
// out), broken at its gaps, with a legend entry when there is more than one (or always,
// with legend); it returns the number of lines with data.
func addLines(p *plot.Plot, lines []series, legend bool) (int, error) {
	var withData []series
	for _, l := range lines {
		if slices.ContainsFunc(l.xy, func(xy plotter.XY) bool { return !math.IsNaN(xy.Y) }) {
			withData = append(withData, l)
		}
	}
	for i, l := range withData {
		first := true
		for _, seg := range segments(l.xy) {
			line, err := plotter.NewLine(seg)
			if err != nil {
				return 0, err
			}
			line.Color = plotutil.Color(i)
			line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
			line.Width = vg.Points(1)
			p.Add(line)
			if len(seg) == 1 { // a line of one point draws nothing: a dot shows it
				dot, err := plotter.NewScatter(seg)
				if err != nil {
					return 0, err
				}
				dot.Color, dot.Radius, dot.Shape = line.Color, vg.Points(1.5), draw.CircleGlyph{}
				p.Add(dot)
			}
			if first && (legend || len(withData) > 1) {
				p.Legend.Add(l.name, line)
			}
			first = false
		}
	}
	return len(withData), nil
}

// segments splits xy at its gaps (NaN points).
func segments(xy plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for _, p := range xy {
		if math.IsNaN(p.Y) {
			flush()
			continue
		}
		cur = append(cur, p)
	}
	flush()
	return out
}
