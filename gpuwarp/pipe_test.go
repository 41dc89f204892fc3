//go:build linux

package gpuwarp_test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/gpuwarp"
)

// chunk is the iterations of a chunk (run_linux.go's checkEvery).
const chunk = 32

// TestQueueAhead checks that chunks launched ahead of the host's reads change nothing:
// with fixed settings (so the tuner does not depend on the machine's speed) a run gives
// the same result, counters and iterations with 1 chunk in flight (the host waits for each
// before launching the next) as with 2, 3 (the default) and 5, at several bounds; every
// case's end falls in the middle of a chunk, so the iterations after it are no-ops.
func TestQueueAhead(t *testing.T) {
	need(t)
	for _, tc := range []struct {
		name       string
		ties       bool
		lps, start int
		end        float64
		o          gpuwarp.Options
	}{
		{"ties, bound 0.5", true, 40, 3, 12, gpuwarp.Options{Bound: 0.5, Executions: 2, Inactivity: 0.25}},
		{"ties, bound 2", true, 40, 3, 12, gpuwarp.Options{Bound: 2, Executions: 3, Inactivity: 0.1}},
		{"unbounded", false, 40, 3, 10, gpuwarp.Options{Bound: math.Inf(1), Executions: 1, Inactivity: 0.5}},
		{"4 slots, unbounded", false, 30, 6, 8, gpuwarp.Options{Slots: 4, Bound: math.Inf(1), Executions: 2, Inactivity: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := foldInput(tc.lps, tc.start, tc.end)
			wantState, wantGens, committed := foldSequential(in, tc.ties, false)
			var first gpuwarp.Result
			for _, q := range []int{1, 2, 3, 5} {
				out, err := gpuwarp.Run(context.Background(), foldModel(tc.ties, false), in, gpuwarp.WithQueue(tc.o, q))
				require.NoError(t, err, "%d chunks in flight", q)
				require.Equal(t, wantState, out.State, "%d chunks in flight", q)
				require.Equal(t, wantGens, out.RNG, "%d chunks in flight", q)
				require.Equal(t, committed, out.Committed(), "%d chunks in flight", q)
				out.LoopSeconds = 0
				if q == 1 {
					first = out
					require.NotZero(t, out.Iterations%chunk, "the end falls at a chunk's end: the case does not test the no-ops")
					t.Logf("%d iterations, %d processed, %d rolled back, %d returned", out.Iterations, out.Processed,
						out.RolledBack, out.Returned)
					continue
				}
				require.Equal(t, first, out, "%d chunks in flight against 1", q)
			}
		})
	}
}

// TestObserve checks the counters the host reads as the run goes: one Progress call per
// read, totals that only grow, the settings the chunks ran with, and a last read marked
// Done whose totals and iterations are the result's.
func TestObserve(t *testing.T) {
	need(t)
	in := foldInput(40, 6, 10)
	var seen []gpuwarp.Counters
	var progress []float64
	o := gpuwarp.Options{Slots: 4, Bound: math.Inf(1), Executions: 2, Inactivity: 0.25,
		Observe: func(c gpuwarp.Counters) { seen = append(seen, c) }, Progress: func(g float64) { progress = append(progress, g) }}
	out, err := gpuwarp.Run(context.Background(), foldModel(false, false), in, o)
	require.NoError(t, err)
	require.Greater(t, len(seen), 2, "a run of several chunks")
	require.Len(t, progress, len(seen), "one progress call per read")
	for i, c := range seen {
		require.Equal(t, i == len(seen)-1, c.Done, "read %d: only the last is done", i)
		require.Equal(t, min(c.GVT, in.End), progress[i], "read %d", i)
		require.Equal(t, math.Inf(1), c.Bound, "read %d: the chunk's bound", i)
		require.Equal(t, 2, c.Executions, "read %d", i)
		require.Equal(t, 0.25, c.Inactivity, "read %d", i)
		if i == 0 {
			continue
		}
		p := seen[i-1]
		require.GreaterOrEqual(t, c.Elapsed, p.Elapsed, "read %d", i)
		require.Greater(t, c.Iterations, p.Iterations, "read %d", i)
		require.GreaterOrEqual(t, c.Processed, p.Processed, "read %d", i)
		require.GreaterOrEqual(t, c.RolledBack, p.RolledBack, "read %d", i)
		require.GreaterOrEqual(t, c.Returned, p.Returned, "read %d", i)
		require.GreaterOrEqual(t, c.GVT, p.GVT, "read %d: GVT never goes back", i)
	}
	last := seen[len(seen)-1]
	require.GreaterOrEqual(t, last.GVT, in.End)
	require.Equal(t, out.Processed, last.Processed)
	require.Equal(t, out.RolledBack, last.RolledBack)
	require.Equal(t, out.Returned, last.Returned)
	require.NotZero(t, last.Returned, "the lists overflowed")
	require.Equal(t, uint64(out.Iterations), last.Iterations)
	require.Less(t, seen[0].Processed, out.Processed, "the first read is of the first chunk, not the end")
}

// TestDriverFaults checks that the driver's failures in the asynchronous path end the
// run with the driver's error: pinned memory refused, and the tally kernel failing, which
// the wait for the chunk's event reports.
func TestDriverFaults(t *testing.T) {
	need(t)
	lib := os.Getenv(standin.LibraryEnv)
	if _, err := standin.Count(lib, "launches"); lib == "" || err != nil {
		t.Skip("faults are injected by the CUDA stand-in, which is not in use")
	}
	in := foldInput(20, 3, 8)
	for _, tc := range []struct{ fault, want string }{
		{"hostalloc", "cuMemAllocHost_v2 failed: CUDA_ERROR_OUT_OF_MEMORY"},
		{"launch:wtw_tally", "cuEventSynchronize failed: CUDA_ERROR_LAUNCH_FAILED"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			require.NoError(t, standin.SetFaults(lib, tc.fault))
			t.Cleanup(func() { require.NoError(t, standin.SetFaults(lib, "")) })
			_, err := gpuwarp.Run(context.Background(), foldModel(true, false), in, gpuwarp.Options{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}
