package gpuoffload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// tuneTrace runs a tuner with a fixed batch size (0: tuned) and auto for the given number
// of measurement windows, rate giving the event rate measured at a batch size (0: batching
// off), and returns the size it chose for each window.
func tuneTrace(fixed int, auto bool, windows int, rate func(size int) float64) []int {
	t := NewTuner(fixed, auto, 0)
	sizes := make([]int, windows)
	for i := range sizes {
		sizes[i] = t.Size()
		t.decide(rate(sizes[i]))
	}
	return sizes
}

// countSize returns how many of sizes equal s.
func countSize(sizes []int, s int) int {
	n := 0
	for _, x := range sizes {
		if x == s {
			n++
		}
	}
	return n
}

// TestTuner drives the tuner with made-up rates: it finds the best batch size, keeps
// batching off (probing rarely) when batching does not pay, and stays on when it does.
func TestTuner(t *testing.T) {
	peak := func(best int) func(int) float64 {
		return func(s int) float64 {
			if s == 0 {
				return 1e5
			}
			d := math.Log2(float64(s)) - math.Log2(float64(best))
			return 1e6 * (1 - 0.05*d*d)
		}
	}
	for _, best := range []int{1, 32, 512, 4096} {
		sizes := tuneTraceOK(t, 0, false, 1000, peak(best))
		require.Greater(t, countSize(sizes, best), 850, "best %d: %v", best, sizes[:40])
		require.Equal(t, best, sizes[len(sizes)-1])
		require.Zero(t, countSize(sizes, 0), "never off without auto")
	}

	// Auto, batching pays: mostly at the best size, off in few windows.
	sizes := tuneTraceOK(t, 0, true, 2000, peak(1024))
	require.Greater(t, countSize(sizes, 1024), 1800)
	require.Less(t, countSize(sizes, 0), 60)

	// Auto, batching does not pay (at any size): off but for rare probes.
	slow := func(s int) float64 {
		if s == 0 {
			return 1e6
		}
		return 2e5
	}
	sizes = tuneTraceOK(t, 0, true, 2000, slow)
	require.Less(t, 2000-countSize(sizes, 0), 40, "probes: %v", sizes[:80])
	require.Zero(t, sizes[0], "auto starts off")

	// A fixed size with auto is only switched on and off.
	sizes = tuneTraceOK(t, 64, true, 500, func(s int) float64 { return 1e5 + 4e5*float64(min(s, 1)) })
	require.Equal(t, 500, countSize(sizes, 64)+countSize(sizes, 0))
	require.Greater(t, countSize(sizes, 64), 470)
	sizes = tuneTraceOK(t, 64, true, 500, slow)
	require.Greater(t, countSize(sizes, 0), 480)

	// Noisy rates keep the size in range.
	r := rand.New(rand.NewPCG(1, 1))
	sizes = tuneTraceOK(t, 0, true, 3000, func(s int) float64 { return peak(256)(s) * (0.8 + 0.4*r.Float64()) })
	for _, s := range sizes {
		require.True(t, s == 0 || s >= 1 && s <= 4096 && s&(s-1) == 0, "size %d", s)
	}
}

// tuneTraceOK is tuneTrace, checking every size it chose is possible.
func tuneTraceOK(t *testing.T, fixed int, auto bool, windows int, rate func(int) float64) []int {
	t.Helper()
	sizes := tuneTrace(fixed, auto, windows, rate)
	for _, s := range sizes {
		require.True(t, s >= 0 && s <= 4096, "size %d", s)
		if !auto {
			require.NotZero(t, s)
		}
	}
	return sizes
}
