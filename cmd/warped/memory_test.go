package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelperProcess is not a test: it lets other tests run the command in a fresh process
// (peak memory is a property of the process). It runs only with WARPED_HELPER_ARGS set.
func TestHelperProcess(t *testing.T) {
	args := os.Getenv("WARPED_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process for other tests")
	}
	os.Exit(run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr))
}

// peakMemory runs the command with args in a fresh process and returns its stats file.
func runInProcess(t *testing.T, args ...string) map[string]any {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "WARPED_HELPER_ARGS="+strings.Join(append(args, "--stats-file", stats), " "))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var kv map[string]any
	require.NoError(t, json.Unmarshal(data, &kv))
	return kv
}

// TestMemoryIsBoundedUnderTimeWarp: a PHOLD run ten times longer in simulated time keeps
// to well under twice the peak memory of the shorter one, because fossil collection
// reclaims everything below GVT and a full history log is compacted. (Measured: 1.01 -
// 1.06 times, 23 - 25 MiB, with other test packages competing for the two cores, as under
// go test ./...; before compaction a starved worker's log could grow to 65536 slots there,
// 57 MiB against 22.)
func TestMemoryIsBoundedUnderTimeWarp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two simulations in child processes")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes peak memory meaningless; plain go test checks it")
	}
	base := []string{"phold", "--lps", "4096", "--time-warp-worker-threads", "2",
		"--time-warp-state-saving-period", "4"}
	short := runInProcess(t, append(base, "--max-sim-time", "100")...)
	long := runInProcess(t, append(base, "--max-sim-time", "1000")...)
	s, l := short["peak_memory_bytes"].(float64), long["peak_memory_bytes"].(float64)
	t.Logf("peak memory: end 100 %.1f MiB (%v events), end 1000 %.1f MiB (%v events)",
		s/(1<<20), short["events_committed"], l/(1<<20), long["events_committed"])
	require.Greater(t, long["events_committed"].(float64), 9*short["events_committed"].(float64))
	require.Less(t, l, 1.75*s, "peak memory must not grow with the run length")
}
