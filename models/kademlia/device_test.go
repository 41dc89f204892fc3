//go:build linux

package kademlia

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// The device model's tests run the device loop (package gpuwarp) on a GPU where there is a
// driver, else on the CUDA stand-in (package gpuoffload/standin), which TestMain builds
// with the system C++ compiler; without either they skip, saying why.

// noDevice says why no CUDA library is available, or "".
var noDevice string

func TestMain(m *testing.M) { standin.Main(m.Run, &noDevice) }

// runType runs Kademlia c to end with dispatcher typ and returns the result and the totals.
func runType(t *testing.T, c Config, end float64, typ string, g kernel.GPUConfig) (kernel.Result, Results) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 11, Type: typ, GPU: g}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps)
}

// TestDeviceDigest checks that the device loop, on state saving, gives the sequential
// digest and results: at several sizes, bucket sizes and alphas, with tuned, bounded and
// unbounded optimism and several executions, and with lists of 8 and 4 slots, which
// overflow (a node's own lookup and the requests of others pile up) and roll back for room.
// A bound below the lookahead (5 < --min-delay 10) runs conservatively: nothing to roll
// back. With alpha = k, lookups end with requests in flight, whose replies are stale.
func TestDeviceDigest(t *testing.T) {
	if noDevice != "" {
		t.Skip(noDevice)
	}
	for _, tc := range []struct {
		name         string
		nodes, k, a  int
		end          float64
		gpu          kernel.GPUConfig
		overflow     bool // lists must have put events back in transit
		minCompleted uint64
		rollsBack    bool // optimistic: the run must roll back (how much varies on a GPU)
	}{
		{"200 nodes, k 4, alpha 2, tuned", 200, 4, 2, 1500, kernel.GPUConfig{}, false, 300, true},
		{"300 nodes, k 8, alpha 3, unbounded", 300, 8, 3, 1000, kernel.GPUConfig{Bound: math.Inf(1)}, false, 200, true},
		{"400 nodes, k 20, alpha 3, bound 30, 3 executions", 400, 20, 3, 1600, kernel.GPUConfig{Bound: 30, Executions: 3}, false, 200, true},
		{"150 nodes, k 2, alpha 1, bound 5 (conservative)", 150, 2, 1, 1500, kernel.GPUConfig{Bound: 5, Executions: 1}, false, 200, false},
		{"200 nodes, k 4, alpha 2, 8 slots, unbounded", 200, 4, 2, 1000, kernel.GPUConfig{Slots: 8, Bound: math.Inf(1)}, true, 150, true},
		{"300 nodes, k 3, alpha 3 (stale replies), bound 40", 300, 3, 3, 1500, kernel.GPUConfig{Bound: 40}, false, 300, true},
		{"100 nodes, k 8, alpha 3, 4 slots, unbounded, 2 executions", 100, 8, 3, 1000,
			kernel.GPUConfig{Slots: 4, Bound: math.Inf(1), Executions: 2}, true, 80, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Nodes, c.K, c.Alpha, c.LookupInterval = tc.nodes, tc.k, tc.a, 300
			want, wantRes := runType(t, c, tc.end, kernel.Sequential, kernel.GPUConfig{})
			got, gotRes := runType(t, c, tc.end, kernel.GPU, tc.gpu)
			t.Logf("%+v: %d committed, %d processed, %d rolled back, %d returned, %d iterations", gotRes,
				got.Stats.EventsCommitted, got.Stats.EventsProcessed, got.Stats.EventsRolledBack, got.Stats.DeviceReturned,
				got.Stats.DeviceIterations)
			require.Equal(t, want.Digest, got.Digest)
			require.Equal(t, wantRes, gotRes)
			require.Equal(t, want.Stats.EventsCommitted, got.Stats.EventsCommitted)
			require.Equal(t, want.Stats.FinalTime, got.Stats.FinalTime)
			require.GreaterOrEqual(t, gotRes.Completed, tc.minCompleted)
			if tc.k == tc.a {
				require.NotZero(t, gotRes.Stale, "no stale replies: alpha = k should leave requests in flight when a lookup ends")
			}
			if tc.rollsBack {
				require.NotZero(t, got.Stats.EventsRolledBack, "nothing rolled back: state saving was not exercised")
			}
			if tc.overflow {
				require.NotZero(t, got.Stats.DeviceReturned, "the lists never overflowed: the case tests nothing")
			}
		})
	}
}

// TestDeviceThreadOrder runs Kademlia's device loop with the stand-in running each
// launch's threads reversed and shuffled: a GPU runs them in no order, so handlers or loop
// kernels that read what another thread of the launch writes would give another digest
// here than in order (a race on a GPU). On a GPU it skips (TestDeviceDigest runs there).
func TestDeviceThreadOrder(t *testing.T) {
	if noDevice != "" {
		t.Skip(noDevice)
	}
	c := DefaultConfig()
	c.Nodes, c.K, c.Alpha, c.LookupInterval = 200, 4, 2, 300
	want, wantRes := runType(t, c, 1000, kernel.Sequential, kernel.GPUConfig{})
	for _, order := range []string{"reverse", "shuffle:3"} {
		t.Run(order, func(t *testing.T) {
			standin.ThreadOrder(t, order)
			for _, g := range []kernel.GPUConfig{{Bound: math.Inf(1), Executions: 3}, {Slots: 8, Bound: math.Inf(1)}} {
				got, gotRes := runType(t, c, 1000, kernel.GPU, g)
				require.Equal(t, want.Digest, got.Digest, "%+v", g)
				require.Equal(t, wantRes, gotRes, "%+v", g)
				require.NotZero(t, got.Stats.EventsRolledBack, "%+v: nothing rolled back", g)
			}
		})
	}
}
