package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/partition"
)

// pholdWithLPStats is PHOLD registered as a model of one's own would be, with the events
// of each LP as a per-LP statistic.
func pholdWithLPStats() *Model {
	c := phold.DefaultConfig()
	return &Model{
		Name: "ph", Summary: "PHOLD with per-LP statistics", EndTime: 10,
		Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			fs.IntVar(&c.LPs, "lps", 16, "LPs")
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				lps, err := phold.New(c)
				return lps, nil, err
			}
		},
		Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
			return []Result{{Label: "Events", Key: "events", Value: phold.Summarize(lps).Events}}
		},
		LPStats: []LPStat{{Label: "Events", Key: "lp_events", Value: func(lp kernel.LogicalProcess) float64 {
			return float64(lp.(*phold.LP).S.Events)
		}}},
	}
}

// TestLPStats: a per-LP statistic is reduced over the LPs into the printed results, the
// stats file and a study's results: its sum is the model's total, its mean the sum over the
// LPs, between its minimum and maximum.
func TestLPStats(t *testing.T) {
	c := New("mysim", pholdWithLPStats())
	stats := filepath.Join(t.TempDir(), "s.json")
	var out, errOut bytes.Buffer
	code := c.Run(context.Background(), []string{"ph", "--lps", "16", "--gpu", "off", "--stats-file", stats}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "Events (mean over LPs):")
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(data, &st))
	kv := st["results"].(map[string]any)
	sum, lo, hi, mean := kv["lp_events_sum"].(float64), kv["lp_events_min"].(float64), kv["lp_events_max"].(float64), kv["lp_events_mean"].(float64)
	require.Equal(t, kv["events"], sum)
	require.InDelta(t, sum/16, mean, 1e-9)
	require.True(t, lo <= mean && mean <= hi && lo < hi, "min %v mean %v max %v", lo, mean, hi)

	require.Equal(t, []string{"events", "lp_events_sum", "lp_events_min", "lp_events_max", "lp_events_mean"},
		catalog{c}.ResultKeys("ph"), "a study may summarise them")

	// Help and errors name the command: mysim, not warped.
	out.Reset()
	errOut.Reset()
	require.Equal(t, exitUsage, c.Run(context.Background(), []string{"ph", "--lpz", "3"}, &out, &errOut))
	require.Equal(t, "mysim ph: unknown flag --lpz (did you mean --lps?); run 'mysim help ph' for the flags\n", errOut.String())
	out.Reset()
	require.Equal(t, exitOK, c.Run(context.Background(), []string{"help"}, &out, &errOut))
	require.True(t, strings.HasPrefix(out.String(), "mysim: "), out.String())
}

// TestNewRefusesBadModels: a model without its name, flags or results, or with a name
// taken by another model or a command, is the program's mistake: New panics.
func TestNewRefusesBadModels(t *testing.T) {
	ok := pholdWithLPStats
	for name, ms := range map[string][]*Model{
		"no name":    {{Flags: ok().Flags, Results: ok().Results}},
		"no flags":   {{Name: "a", Results: ok().Results}},
		"no results": {{Name: "a", Flags: ok().Flags}},
		"twice":      {ok(), ok()},
		"a command":  {{Name: "study", Flags: ok().Flags, Results: ok().Results}},
	} {
		require.Panics(t, func() { New("x", ms...) }, name)
	}
}

// TestModelHooksInCommand: a model's Init and Final hooks run once each around the run,
// sequential and time warp, and Final's model-wide total is what Results prints; a failing
// hook fails the run (exit status 1), naming the hook.
func TestModelHooksInCommand(t *testing.T) {
	for _, simType := range []string{kernel.Sequential, kernel.TimeWarp} {
		t.Run(simType, func(t *testing.T) {
			var inits, finals int
			var total uint64
			m := pholdWithLPStats()
			m.Init = func(lps []kernel.LogicalProcess) error {
				inits++
				return nil
			}
			m.Final = func(lps []kernel.LogicalProcess) error {
				finals++
				total = phold.Summarize(lps).Events
				return nil
			}
			m.Results = func([]kernel.LogicalProcess, *pflag.FlagSet) []Result {
				return []Result{{Label: "Events (final hook)", Key: "events", Value: total}}
			}
			var out, errOut bytes.Buffer
			code := New("mysim", m).Run(context.Background(), []string{"ph", "--gpu", "off",
				"--simulation-type", simType, "--time-warp-worker-threads", "2"}, &out, &errOut)
			require.Equal(t, exitOK, code, errOut.String())
			require.Equal(t, 1, inits, "the init hook runs once")
			require.Equal(t, 1, finals, "the final hook runs once")
			require.Positive(t, total)
			require.Regexp(t, fmt.Sprintf(`Events \(final hook\): +%d\n`, total), out.String())

			m.Final = func([]kernel.LogicalProcess) error { return errors.New("cannot write the summary") }
			out.Reset()
			errOut.Reset()
			code = New("mysim", m).Run(context.Background(), []string{"ph", "--gpu", "off",
				"--simulation-type", simType}, &out, &errOut)
			require.Equal(t, exitRun, code)
			require.Contains(t, errOut.String(), "model final hook: cannot write the summary")
		})
	}
}

// TestNaNResults: a result with no value (NaN, a mean over nothing) is printed, is null in
// the stats file (whose other keys are all there) and unmeasured in a study's run; a
// per-LP statistic that does not apply to an LP (NaN) is left out of its reductions.
func TestNaNResults(t *testing.T) {
	m := *Bundled()[0] // PHOLD, as another model
	m.Name = "nan"
	m.Results = func([]kernel.LogicalProcess, *pflag.FlagSet) []Result {
		return []Result{{Label: "Mean wait", Key: "mean_wait", Value: math.NaN()}}
	}
	calls := 0 // the LPs in order: every other one is of another kind
	m.LPStats = []LPStat{{Label: "Odd LP", Key: "odd", Value: func(kernel.LogicalProcess) float64 {
		if calls++; calls%2 == 1 {
			return math.NaN() // does not apply
		}
		return 3
	}}}
	c := New("warped", &m)
	stats := filepath.Join(t.TempDir(), "s.json")
	var out, errOut strings.Builder
	code := c.Run(context.Background(), []string{"nan", "--lps=16", "--max-sim-time=5", "--stats-file", stats}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "Mean wait")
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var kv struct{ Results map[string]any }
	require.NoError(t, json.Unmarshal(data, &kv))
	v, ok := kv.Results["mean_wait"]
	require.True(t, ok, "%s", data)
	require.Nil(t, v)
	require.Equal(t, map[string]any{"odd_sum": 24.0, "odd_min": 3.0, "odd_max": 3.0, "odd_mean": 3.0},
		map[string]any{"odd_sum": kv.Results["odd_sum"], "odd_min": kv.Results["odd_min"], "odd_max": kv.Results["odd_max"], "odd_mean": kv.Results["odd_mean"]})

	o, err := c.runForStudy(context.Background(), "nan", []string{"--lps=16", "--max-sim-time=5"}, nil)
	require.NoError(t, err)
	require.Contains(t, o.Unmeasured, "mean_wait")
	require.NotContains(t, o.Results, "mean_wait")
}
