package chart

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
