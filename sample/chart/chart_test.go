package chart

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
)

// rows are the samples of a made-up run: two workers, three sets.
func rows() []sample.Row {
	var rs []sample.Row
	for i, wall := range []float64{0.1, 0.2, 0.3} {
		for w := range 2 {
			rs = append(rs, sample.Row{WallSeconds: wall, GVT: float64(10 * (i + 1)), Worker: w,
				Processed: uint64(1000 + 100*w), Committed: int64(900 + 10*i), RolledBack: uint64(100 + 100*w - 10*i),
				PendingEvents: 50 * (i + 1), HistoryLength: 20, MemoryBytes: uint64(i+1) << 20, Final: i == 2})
		}
	}
	return rs
}

// TestWriteFiles writes the charts and checks that every PNG decodes and every SVG parses.
func TestWriteFiles(t *testing.T) {
	charts, err := Make(rows())
	require.NoError(t, err)
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"event-rate", "efficiency", "gvt", "rollbacks", "memory", "pending"}, names)
	dir := filepath.Join(t.TempDir(), "charts")
	o := DefaultOptions()
	o.Formats = Formats()
	paths, err := WriteFiles(context.Background(), dir, charts, o)
	require.NoError(t, err)
	require.Len(t, paths, 3*len(charts))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			require.NoError(t, err, p)
			require.Equal(t, 1050, img.Bounds().Dx(), "3.5 in at 300 dpi") // a one-column figure
		case ".svg":
			d := xml.NewDecoder(bytes.NewReader(data))
			var root struct {
				XMLName xml.Name
			}
			require.NoError(t, d.Decode(&root), p)
			require.Equal(t, "svg", root.XMLName.Local, p)
		}
	}
}

// TestMakeEmpty checks that no samples is an error.
func TestMakeEmpty(t *testing.T) {
	_, err := Make(nil)
	require.EqualError(t, err, "no samples to chart")
}

// TestCompare draws bar charts of two runs' totals.
func TestCompare(t *testing.T) {
	charts, err := Compare([]Run{
		{"a", map[string]float64{"committed_events_per_second": 1e6, "efficiency": 0.9, "peak_memory_bytes": 1 << 24}},
		{"b", map[string]float64{"committed_events_per_second": 2e6, "efficiency": 0.8}},
	}, "")
	require.NoError(t, err)
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		_, err := c.Render("png", DefaultOptions())
		require.NoError(t, err)
	}
	require.Equal(t, []string{"compare-rate", "compare-efficiency", "compare-memory"}, names)
	// Labels too wide for their bars: lettered bars, and a key below says which is which.
	long := "time-warp-worker-threads 16\nmax-sim-time 100000"
	charts, err = Compare([]Run{
		{long, map[string]float64{"committed_events_per_second": 1e6}},
		{long + "0", map[string]float64{"committed_events_per_second": 2e6}},
		{"c", map[string]float64{"committed_events_per_second": 3e6}},
	}, "")
	require.NoError(t, err)
	svg, err := charts[0].Render("svg", DefaultOptions())
	require.NoError(t, err)
	for _, want := range []string{">A<", ">B<", ">C<", "A: time-warp-worker-threads 16, max-sim-time 100000", "C: c"} {
		require.Contains(t, string(svg), want)
	}
	require.True(t, fitLabels([]string{"1", "2", "4"}, DefaultOptions().Width), "short labels stay")
	_, err = Compare([]Run{{"a", map[string]float64{"x": 1}}}, "")
	require.ErrorContains(t, err, "none of the compared values")
	_, err = Compare(nil, "")
	require.EqualError(t, err, "no runs to compare")
}

// TestSplit checks the time-split chart: made from rows that split their time, a rank's
// manager included, and absent from rows that do not.
func TestSplit(t *testing.T) {
	rs := rows()
	for i := range rs {
		rs[i].IdleSeconds, rs[i].ProcessingSeconds, rs[i].GVTSeconds, rs[i].CommSeconds = 0.01, 0.07, 0.01, 0.01
	}
	rs = append(rs, sample.Row{WallSeconds: 0.3, Worker: -1, IdleSeconds: 0.2, GVTSeconds: 0.05, CommSeconds: 0.05})
	charts, err := Make(rs)
	require.NoError(t, err)
	last := charts[len(charts)-1]
	require.Equal(t, "time-split", last.Name)
	svg, err := last.Render("svg", DefaultOptions())
	require.NoError(t, err)
	require.Contains(t, string(svg), "mgr")
	for _, c := range charts[:len(charts)-1] {
		require.NotEqual(t, "time-split", c.Name)
	}
	sc, err := split(rows())
	require.NoError(t, err)
	require.Nil(t, sc)
}

// TestSeries draws a model's series: all in one chart (per unit), a legend entry each in
// the order the model first records them, values at one time summed.
func TestSeries(t *testing.T) {
	pts := []kernel.SeriesPoint{{Time: 0, LP: 0, Series: "infected", Value: 1}, {Time: 0, LP: 1, Series: "infected", Value: 2},
		{Time: 0, LP: 1, Series: "exposed", Value: 2}, {Time: 5, LP: 0, Series: "infected", Value: 4},
		{Time: 5, LP: 1, Series: "queue/north", Value: 3}}
	t.Run("one chart", func(t *testing.T) {
		charts, err := Series(pts, "", nil)
		require.NoError(t, err)
		require.Len(t, charts, 1)
		require.Equal(t, "series", charts[0].Name)
		svg, err := charts[0].Render("svg", DefaultOptions())
		require.NoError(t, err)
		text := string(svg)
		for _, want := range []string{"Model series", "value, summed over LPs", "simulated time"} {
			require.Contains(t, text, want)
		}
		i, e, q := strings.Index(text, ">infected<"), strings.Index(text, ">exposed<"), strings.Index(text, ">queue/north<")
		require.True(t, i >= 0 && i < e && e < q, "the legend in the order first recorded")
		require.Zero(t, charts[0].Plot.Y.Min, "amounts from zero")
	})
	t.Run("labels and units", func(t *testing.T) {
		charts, err := Series(pts, "Epidemic", map[string]Label{"infected": {"infected people", "people"},
			"exposed": {Unit: "people"}, "queue/north": {"queue north", "cars"}})
		require.NoError(t, err)
		var names []string
		for _, c := range charts {
			names = append(names, c.Name)
		}
		require.Equal(t, []string{"series-people", "series-cars"}, names, "a chart per unit")
		svg, err := charts[0].Render("svg", DefaultOptions())
		require.NoError(t, err)
		for _, want := range []string{"Epidemic", "people, summed over LPs", ">infected people<", ">exposed<"} {
			require.Contains(t, string(svg), want)
		}
		require.NotContains(t, string(svg), "queue north")
		paths, err := WriteFiles(context.Background(), t.TempDir(), charts, DefaultOptions())
		require.NoError(t, err)
		require.Len(t, paths, 4)
	})
	_, err := Series(nil, "", nil)
	require.Error(t, err)
	names, lines := seriesLines(pts)
	require.Equal(t, []string{"infected", "exposed", "queue/north"}, names)
	require.Equal(t, plotter.XYs{{X: 0, Y: 3}, {X: 5, Y: 4}}, lines["infected"])
}

// manyWorkers are the samples of a made-up run with n workers on one rank, worker w
// rolling back 10*w events per set, three sets 0.1 s apart.
func manyWorkers(n int) []sample.Row {
	var rs []sample.Row
	for i, wall := range []float64{0.1, 0.2, 0.3} {
		for w := range n {
			rs = append(rs, sample.Row{WallSeconds: wall, GVT: float64(i), Worker: w, Processed: 100, Committed: 90,
				RolledBack: uint64(10 * w), PendingEvents: 100 + w, MemoryBytes: 4 << 20, ResidentBytes: 12 << 20})
		}
	}
	return rs
}

// TestPerWorker: up to four workers, a line each; more, the median and range over them.
func TestPerWorker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		want    []string // in the rollbacks chart's SVG
		notWant []string
	}{
		{"lines", 4, []string{"per worker", ">worker 0<", ">worker 3<"}, []string{"median"}},
		{"band", 16, []string{">median of 16 workers<", ">least to greatest<"}, []string{">worker 0<", "per worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			charts, err := Make(manyWorkers(tc.workers))
			require.NoError(t, err)
			for _, c := range charts {
				if c.Name != "rollbacks" && c.Name != "pending" {
					continue
				}
				svg, err := c.Render("svg", DefaultOptions())
				require.NoError(t, err)
				for _, w := range tc.want {
					require.Contains(t, string(svg), w, c.Name)
				}
				for _, w := range tc.notWant {
					require.NotContains(t, string(svg), w, c.Name)
				}
			}
		})
	}
	t.Run("band values", func(t *testing.T) {
		ss := sets(manyWorkers(5))
		bs := workerRates(windows(ss), func(r *sample.Row) float64 { return float64(r.RolledBack) }).bands()
		require.Len(t, bs, 1)
		require.Equal(t, 5, bs[0].workers)
		// Workers roll back 0, 10, 20, 30, 40 events per 0.1 s.
		require.InDelta(t, 200, bs[0].median[0].Y, 1e-9)
		require.InDelta(t, 0, bs[0].lo[0].Y, 1e-9)
		require.InDelta(t, 400, bs[0].hi[0].Y, 1e-9)
		lv := workerLevels(ss, func(r *sample.Row) float64 { return float64(r.PendingEvents) }).bands()
		require.Equal(t, plotter.XYs{{X: 0.1, Y: 102}, {X: 0.2, Y: 102}, {X: 0.3, Y: 102}}, lv[0].median)
	})
	t.Run("a band per rank", func(t *testing.T) {
		rs := manyWorkers(5)
		for _, r := range manyWorkers(5) {
			r.Rank = 1
			rs = append(rs, r)
		}
		charts, err := Make(rs)
		require.NoError(t, err)
		for _, c := range charts {
			if c.Name == "rollbacks" {
				svg, err := c.Render("svg", DefaultOptions())
				require.NoError(t, err)
				for _, want := range []string{">rank 0 median of 5 workers<", ">rank 1 median of 5 workers<", ">rank 1 least to greatest<"} {
					require.Contains(t, string(svg), want)
				}
				require.Contains(t, c.Caption, "With 10 workers on 2 ranks, each rank's line")
			}
		}
	})
	require.InDelta(t, 2.5, median([]float64{1, 2, 3, 4}), 0)
}

// TestMemory: the memory chart labels resident memory and the Go heap, and shows the heap
// alone, labelled, for a file without resident memory.
func TestMemory(t *testing.T) {
	find := func(rs []sample.Row) string {
		charts, err := Make(rs)
		require.NoError(t, err)
		for _, c := range charts {
			if c.Name == "memory" {
				svg, err := c.Render("svg", DefaultOptions())
				require.NoError(t, err)
				return string(svg)
			}
		}
		t.Fatal("no memory chart")
		return ""
	}
	both := find(manyWorkers(2))
	require.Contains(t, both, ">resident<")
	require.Contains(t, both, ">Go heap in use<")
	heap := find(rows())
	require.Contains(t, heap, ">Go heap in use<")
	require.NotContains(t, heap, ">resident<")
}

// TestWindows: rates are taken over intervals at least half the median long, so that a
// last sample set a moment after the one before joins the window before it (no spike),
// and a long stretch without samples is a gap.
func TestWindows(t *testing.T) {
	set := func(wall float64, committed int64) sample.Row {
		return sample.Row{WallSeconds: wall, Committed: committed, Processed: uint64(committed)}
	}
	for _, tc := range []struct {
		name  string
		rows  []sample.Row
		rates []float64 // committed per second of each window; NaN: a gap
	}{
		{"even", []sample.Row{set(0, 0), set(0.1, 100), set(0.2, 100), set(0.3, 100)}, []float64{1000, 1000, 1000}},
		{"last set a moment later", []sample.Row{set(0, 0), set(0.1, 100), set(0.2, 100), set(0.2005, 5)}, []float64{1000, 105 / 0.1005}},
		{"short intervals join", []sample.Row{set(0, 0), set(0.1, 100), set(0.12, 20), set(0.2, 80), set(0.3, 100)}, []float64{1000, 1000, 1000}},
		{"one set, from the run's start", []sample.Row{set(0.05, 100)}, []float64{2000}},
		{"a gap", []sample.Row{set(0, 0), set(0.1, 100), set(0.2, 100), set(2.2, 50), set(2.3, 100)}, []float64{1000, 1000, math.NaN(), 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := windows(sets(tc.rows))
			var got []float64
			for i := range ws {
				v := sum(&ws[i], func(r *sample.Row) float64 { return float64(r.Committed) }) / (ws[i].to - ws[i].from)
				if ws[i].gap {
					v = math.NaN()
				}
				got = append(got, v)
			}
			require.Len(t, got, len(tc.rates))
			for i := range got {
				if math.IsNaN(tc.rates[i]) {
					require.True(t, math.IsNaN(got[i]), "window %d is a gap", i)
				} else {
					require.InDelta(t, tc.rates[i], got[i], 1e-6, "window %d", i)
				}
			}
		})
	}
}

// TestSegments: a line breaks at its gaps.
func TestSegments(t *testing.T) {
	xy := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}, gap, {X: 3, Y: 4}, {X: 4, Y: 4}, gap}
	require.Equal(t, []plotter.XYs{{{X: 0, Y: 1}, {X: 1, Y: 2}}, {{X: 3, Y: 4}, {X: 4, Y: 4}}}, segments(xy))
}

// TestSI: tick labels with SI prefixes.
func TestSI(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{12e6, "12 M"}, {1500, "1.5 k"}, {250, "250"}, {0, "0"}, {2.5e9, "2.5 G"}, {-3e6, "-3 M"}, {0.25, "0.25"}} {
		t.Run(tc.want, func(t *testing.T) { require.Equal(t, tc.want, SI(tc.v)) })
	}
}

// TestSITicks: SI labels, and at least three labelled ticks where the default labels two.
func TestSITicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (SITicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	require.Equal(t, []string{"0", "5 M", "10 M"}, labels(0, 12e6))
	require.GreaterOrEqual(t, len(labels(0, 2600)), 3, "%v", labels(0, 2600))
}

// TestAxes: counts start at zero with SI ticks, shares are percent from 0 to 100, memory
// starts at zero in MiB, or GiB from a GiB on, in plain numbers.
func TestAxes(t *testing.T) {
	charts, err := Make(rows())
	require.NoError(t, err)
	by := map[string]Chart{}
	for _, c := range charts {
		by[c.Name] = c
	}
	for _, name := range []string{"event-rate", "rollbacks", "pending"} {
		require.Zero(t, by[name].Plot.Y.Min, name)
		require.IsType(t, SITicks{}, by[name].Plot.Y.Tick.Marker, name)
	}
	mem := by["memory"].Plot
	require.Zero(t, mem.Y.Min)
	require.Equal(t, "memory (MiB)", mem.Y.Label.Text)
	require.InDelta(t, 3.15, mem.Y.Max, 0.01, "the peak of 3 MiB, with headroom")
	big := rows()
	for i := range big {
		big[i].MemoryBytes <<= 10 // 1 to 3 GiB
	}
	charts, err = Make(big)
	require.NoError(t, err)
	for _, c := range charts {
		if c.Name == "memory" {
			require.Equal(t, "memory (GiB)", c.Plot.Y.Label.Text)
			require.InDelta(t, 3.15, c.Plot.Y.Max, 0.01)
		}
	}
	eff := by["efficiency"].Plot
	require.Equal(t, [2]float64{0, 100}, [2]float64{eff.Y.Min, eff.Y.Max})
	require.IsType(t, PercentTicks{}, eff.Y.Tick.Marker)
}

// TestOptions: bad formats, widths and resolutions are refused with what to give.
func TestOptions(t *testing.T) {
	require.NoError(t, DefaultOptions().Check())
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"format", func(o *Options) { o.Formats = []string{"gif"} }, `unknown chart format "gif": want png, svg, pdf`},
		{"none", func(o *Options) { o.Formats = nil }, "no chart format"},
		{"width", func(o *Options) { o.Width = 0.5 * vg.Inch }, "chart width 0.5 in is out of range"},
		{"width NaN", func(o *Options) { o.Width = vg.Length(math.NaN()) }, "chart width NaN in is out of range"},
		{"dpi", func(o *Options) { o.DPI = 10 }, "chart resolution 10 dpi is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.edit(&o)
			require.ErrorContains(t, o.Check(), tc.want)
		})
	}
}

// TestPDF: a chart renders as a PDF.
func TestPDF(t *testing.T) {
	charts, err := Make(rows())
	require.NoError(t, err)
	pdf, err := charts[0].Render("pdf", DefaultOptions())
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")))
}

// TestThreadsChart checks the threads chart's lines: the threads running the workers as a
// level, and the growth of the cumulative CPU wait per second of each window; and that
// rows without them (older files, gpu runs) have no such chart.
func TestThreadsChart(t *testing.T) {
	var rs []sample.Row
	for i, c := range []struct {
		wall, wait float64
		threads    int
	}{{0.1, 0, 2}, {0.2, 0.05, 2}, {0.3, 0.25, 1}} {
		for w := range 2 {
			rs = append(rs, sample.Row{WallSeconds: c.wall, GVT: float64(i + 1), Worker: w, Processed: 10, Committed: 10,
				CPUWaitSeconds: c.wait, WorkerThreads: c.threads})
		}
	}
	ss := sets(rs)
	lines := threads(ss, windows(ss))
	require.Len(t, lines, 2)
	require.Equal(t, "running the workers", lines[0].name)
	require.Equal(t, plotter.XYs{{X: 0.1, Y: 2}, {X: 0.2, Y: 2}, {X: 0.3, Y: 1}}, lines[0].xy)
	require.Equal(t, "waiting for a processor", lines[1].name)
	var ys []float64
	for _, p := range lines[1].xy {
		ys = append(ys, p.Y)
	}
	require.InDeltaSlice(t, []float64{0, 0, 0.5, 0.5, 2, 2}, ys, 1e-9, "seconds waited per second of each window")

	charts, err := Make(rs)
	require.NoError(t, err)
	require.True(t, containsChart(charts, "threads"))
	charts, err = Make(rows())
	require.NoError(t, err)
	require.False(t, containsChart(charts, "threads"), "no threads chart without the columns")
}

func containsChart(cs []Chart, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// TestWrap: a title or label wider than its room goes in lines that each fit (but for a
// word wider than the room), words in order, the lines given kept; one that fits is left.
func TestWrap(t *testing.T) {
	p := plot.New()
	Style(p)
	ts := p.Title.TextStyle
	room := 2 * vg.Inch
	short := "phold: efficiency"
	require.Equal(t, short, wrap(ts, short, room))
	long := "phold: efficiency (committed / processed) of every run at this point\nmean and 95% CI of 5 seeds"
	got := wrap(ts, long, room)
	require.Greater(t, strings.Count(got, "\n"), 1)
	for _, line := range strings.Split(got, "\n") {
		require.LessOrEqual(t, ts.Width(line), room, "line %q", line)
	}
	require.Equal(t, strings.Fields(long), strings.Fields(got), "the same words in the same order")
	require.Contains(t, got, "\nmean and 95% CI of 5 seeds")
}

// TestOneSampleSet: a run short enough for one sample set has charts that show it (a line
// of one point draws nothing: a dot does), on a wall-time axis from zero, and GVT's axis
// labelled with SI prefixes.
func TestOneSampleSet(t *testing.T) {
	one := rows()[:2] // the first set: two workers at 0.1 s
	charts, err := Make(one)
	require.NoError(t, err)
	by := map[string]*plot.Plot{}
	for _, c := range charts {
		by[c.Name] = c.Plot
	}
	gvt := by["gvt"]
	require.NotNil(t, gvt)
	data, err := Chart{Name: "gvt", Plot: gvt}.Render("png", DefaultOptions())
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	want := plotutil.Color(0)
	wr, wg, wb, _ := want.RGBA()
	shown := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r == wr && g == wg && b == wb {
				shown++
			}
		}
	}
	require.Greater(t, shown, 20, "pixels of the one sample set's colour")
	require.Equal(t, 0.0, gvt.X.Min)
	require.GreaterOrEqual(t, gvt.X.Max, 0.1)
	require.IsType(t, SITicks{}, gvt.Y.Tick.Marker)
}

// TestWriteFilesStopsWithItsContext: a context that has ended writes no chart and returns
// its cause.
func TestWriteFilesStopsWithItsContext(t *testing.T) {
	charts, err := Make(rows())
	require.NoError(t, err)
	why := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(why)
	dir := filepath.Join(t.TempDir(), "charts")
	_, err = WriteFiles(ctx, dir, charts, DefaultOptions())
	require.ErrorIs(t, err, why)
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "no chart directory made: %v", err)
}

// TestPDFWithoutTMPDIR: a PDF's fonts go to TMPDIR; where it cannot be written, rendering
// fails with an error that says so, not gonum's panic. In a process of its own: gonum
// keeps the fonts of the first PDF a process renders.
func TestPDFWithoutTMPDIR(t *testing.T) {
	if os.Getenv("WARPED_TEST_PDF_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPDFWithoutTMPDIR$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WARPED_TEST_PDF_CHILD=1", "TMPDIR="+filepath.Join(t.TempDir(), "missing"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return
	}
	charts, err := Make(rows())
	require.NoError(t, err)
	_, err = charts[0].Render("pdf", DefaultOptions())
	require.ErrorContains(t, err, "set TMPDIR to a writable directory")
}
