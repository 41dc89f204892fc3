//go:build linux

package app

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/sample"
)

// TestStandinGPUSamples runs PHOLD with --simulation-type gpu on the stand-in with
// --sample-file in both formats: the digest is the sequential one, the rows (one for the
// device at each read of its counters) add up to the totals of --stats-file, the last is
// the only final one, and warped plot and --report draw them.
func TestStandinGPUSamples(t *testing.T) {
	m := []string{"phold", "--lps", "64", "--max-sim-time", "40"}
	code, out, errOut := warped(append(m, "--simulation-type", "sequential")...)
	require.Equal(t, 0, code, errOut)
	want := digestOf(t, out)
	dir := t.TempDir()
	for _, c := range []struct{ format, mode, bound string }{{"csv", "gvt", "0"}, {"jsonl", "real-time", "inf"}} {
		t.Run(c.format, func(t *testing.T) {
			path, stats, report := filepath.Join(dir, "s."+c.format), filepath.Join(dir, c.format+".json"), filepath.Join(dir, c.format+".html")
			code, out, errOut := warpedStandin(t, "", append(m, "--simulation-type", "gpu", "--gpu-bound", c.bound,
				"--sample-file", path, "--sample-format", c.format, "--sample-mode", c.mode, "--sample-period", "0",
				"--stats-file", stats, "--report", report)...)
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			require.Equal(t, want, digestOf(t, out))

			f, err := os.Open(path)
			require.NoError(t, err)
			rows, err := sample.Read(f)
			f.Close()
			require.NoError(t, err)
			require.NotEmpty(t, rows)
			data, err := os.ReadFile(stats)
			require.NoError(t, err)
			var kv map[string]any
			require.NoError(t, json.Unmarshal(data, &kv))
			var processed, rolled, iterations uint64
			var committed int64
			for i, r := range rows {
				require.Equal(t, i == len(rows)-1, r.Final, "row %d: only the last is final", i)
				require.Equal(t, 0, r.Worker, "row %d: the device", i)
				require.Positive(t, r.DeviceBound, "row %d", i)
				require.Positive(t, r.DeviceIterations, "row %d", i)
				processed += r.Processed
				rolled += r.RolledBack
				committed += r.Committed
				iterations += r.DeviceIterations
			}
			require.GreaterOrEqual(t, rows[len(rows)-1].GVT, 40.0)
			require.Equal(t, kv["events_processed"].(float64), float64(processed))
			require.Equal(t, kv["events_rolled_back"].(float64), float64(rolled))
			require.Equal(t, kv["events_committed"].(float64), float64(committed))
			require.Equal(t, kv["device_iterations"].(float64), float64(iterations))
			if c.bound == "inf" {
				require.True(t, math.IsInf(rows[0].DeviceBound, 1), "an unbounded run's bound reads back infinite (null in JSON)")
				v, ok := kv["device_bound"]
				require.True(t, ok && v == nil, "--stats-file's infinite bound is null, got %v", v)
			}

			html, err := os.ReadFile(report)
			require.NoError(t, err)
			require.NotContains(t, string(html), "No engine charts")
			require.Contains(t, string(html), `id="chart-event-rate"`)
			code, stdout, errOut := warped("plot", path, "--out", filepath.Join(dir, c.format+"-charts"))
			require.Equal(t, 0, code, errOut)
			require.Contains(t, stdout, "event-rate.png")
		})
	}
}

// TestStandinGPUFaults checks that a failure of the device loop's asynchronous path ends a
// gpu run with one line saying what failed, and keeps the samples taken so far.
func TestStandinGPUFaults(t *testing.T) {
	for _, tc := range []struct{ fault, want string }{
		{"hostalloc", "pinned host memory on cuda:0 (warped CUDA stand-in (host CPU), sm_90): cuMemAllocHost_v2 failed: CUDA_ERROR_OUT_OF_MEMORY"},
		{"launch:wtw_tally", "cuda:0 (warped CUDA stand-in (host CPU), sm_90): cuEventSynchronize failed: CUDA_ERROR_LAUNCH_FAILED"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			// A new file each: a failed run's samples go beside one that is there.
			path := filepath.Join(t.TempDir(), "s.csv")
			code, _, errOut := warpedStandin(t, tc.fault, "phold", "--lps", "64", "--max-sim-time", "20",
				"--simulation-type", "gpu", "--sample-file", path)
			require.Equal(t, 1, code, errOut)
			require.Regexp(t, `^warped phold: run failed: gpuoffload: .*; its samples so far are in .*/s\.csv\n$`, errOut)
			require.Contains(t, errOut, tc.want)
			f, err := os.Open(path)
			require.NoError(t, err, "a failed run's sample file is kept")
			rows, err := sample.Read(f)
			f.Close()
			require.NoError(t, err)
			require.Empty(t, rows, "the header only: no read came before the failure")
		})
	}
}
