package chart

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"

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
	paths, err := WriteFiles(dir, charts)
	require.NoError(t, err)
	require.Len(t, paths, 2*len(charts))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			require.NoError(t, err, p)
			require.Greater(t, img.Bounds().Dx(), 100)
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
	})
	require.NoError(t, err)
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		_, err := c.PNG()
		require.NoError(t, err)
	}
	require.Equal(t, []string{"compare-rate", "compare-efficiency", "compare-memory"}, names)
	_, err = Compare([]Run{{"a", map[string]float64{"x": 1}}})
	require.ErrorContains(t, err, "none of the compared values")
	_, err = Compare(nil)
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
	svg, err := last.SVG()
	require.NoError(t, err)
	require.Contains(t, string(svg), "mgr")
	for _, c := range charts[:len(charts)-1] {
		require.NotEqual(t, "time-split", c.Name)
	}
	sc, err := split(rows())
	require.NoError(t, err)
	require.Nil(t, sc)
}

// TestSeries draws a model's series: one chart per name, values at one time summed.
func TestSeries(t *testing.T) {
	pts := []kernel.SeriesPoint{{Time: 0, LP: 0, Series: "infected", Value: 1}, {Time: 0, LP: 1, Series: "infected", Value: 2},
		{Time: 5, LP: 0, Series: "infected", Value: 4}, {Time: 5, LP: 1, Series: "queue/north", Value: 3}}
	charts, err := Series(pts)
	require.NoError(t, err)
	require.Len(t, charts, 2)
	require.Equal(t, "series-infected", charts[0].Name)
	require.Equal(t, "series-queue_north", charts[1].Name)
	paths, err := WriteFiles(t.TempDir(), charts)
	require.NoError(t, err)
	require.Len(t, paths, 4)
	_, err = Series(nil)
	require.Error(t, err)
	names, lines := seriesLines(pts)
	require.Equal(t, []string{"infected", "queue/north"}, names)
	require.Equal(t, plotter.XYs{{X: 0, Y: 3}, {X: 5, Y: 4}}, lines["infected"])
}
