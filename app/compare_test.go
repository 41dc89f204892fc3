package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/sample/chart"
)

// TestLabelByDifferences checks how `warped plot` names compared runs: by the one setting
// in which they differ (its name on the axis, a missing flag as "default"), by every
// differing setting, one a line, or by file name when nothing differs; what is the same in
// every run never names a run.
func TestLabelByDifferences(t *testing.T) {
	runs := func() []chart.Run { return []chart.Run{{Label: "a"}, {Label: "b"}} }
	for _, tc := range []struct {
		name     string
		settings []map[string]string
		axis     string
		labels   []string
	}{
		{"one flag, one run default",
			[]map[string]string{{"--lps": "64"}, {"--lps": "64", "--time-warp-worker-threads": "1"}},
			"time-warp-worker-threads", []string{"default", "1"}},
		{"two settings",
			[]map[string]string{{"dispatcher": "sequential", "--seed": "1"}, {"dispatcher": "time-warp", "--seed": "2"}},
			"run", []string{"seed 1\nsequential", "seed 2\ntime-warp"}},
		{"nothing differs", []map[string]string{{"--lps": "64"}, {"--lps": "64"}}, "", []string{"a", "b"}},
		{"two models: the model first, no other model's flag as default",
			[]map[string]string{{"model": "phold", "--lps": "1024"}, {"model": "pcs", "--num-cells-x": "10"}},
			"run", []string{"phold\nlps 1024", "pcs\nnum-cells-x 10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runs()
			require.Equal(t, tc.axis, labelByDifferences(r, tc.settings))
			require.Equal(t, tc.labels, []string{r[0].Label, r[1].Label})
		})
	}
}

// TestRunSettings checks that a stats object's output flags are not settings of its run.
func TestRunSettings(t *testing.T) {
	s := runSettings(map[string]any{"model": "phold", "config": map[string]any{"lps": 64.0, "stats-file": "x.json", "report": "r.html"},
		"provenance": map[string]any{"dispatcher": "gpu", "host": "h"}})
	require.Equal(t, map[string]string{"model": "phold", "--lps": "64", "dispatcher": "gpu"}, s)
}
