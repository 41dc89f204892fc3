package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrace: --trace writes every committed event (every Nth with --trace-every) of a
// sequential run, the same events whatever N samples; a time-warp run's trace has the
// same lines, each LP's in the same order (LPs interleaved as the workers commit).
func TestTrace(t *testing.T) {
	dir := t.TempDir()
	stats := filepath.Join(dir, "s.json")
	lines := func(every string) []string {
		trace := filepath.Join(dir, "t"+every+".csv")
		code, _, errOut := warped("phold", "--lps", "16", "--max-sim-time", "20", "--simulation-type", "sequential",
			"--trace", trace, "--trace-every", every, "--stats-file", stats)
		require.Equal(t, 0, code, errOut)
		data, err := os.ReadFile(trace)
		require.NoError(t, err)
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	all := lines("1")
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var kv map[string]any
	require.NoError(t, json.Unmarshal(data, &kv))
	committed := int(kv["events_committed"].(float64))
	require.Equal(t, "time,lp,name,kind", all[0])
	require.Len(t, all, 1+committed)
	require.Regexp(t, `^[0-9.e+-]+,\d+,LP_\d+,words$`, all[1])
	third := lines("3")
	require.Len(t, third, 1+(committed+2)/3)
	for i, l := range third[1:] {
		require.Equal(t, all[1+3*i], l, "every third event of the full trace")
	}

	trace := filepath.Join(dir, "tw.csv")
	code, _, errOut := warped("phold", "--lps", "16", "--max-sim-time", "20", "--simulation-type", "time-warp",
		"--time-warp-worker-threads", "2", "--trace", trace)
	require.Equal(t, 0, code, errOut)
	data, err = os.ReadFile(trace)
	require.NoError(t, err)
	tw := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	byLP := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines[1:] {
			f := strings.Split(l, ",")
			m[f[1]] = append(m[f[1]], l)
		}
		return m
	}
	require.Equal(t, all[0], tw[0])
	require.Equal(t, byLP(all), byLP(tw))
}
