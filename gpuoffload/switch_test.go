package gpuoffload

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// switchTrace runs workers tuners sharing a Switch over the given number of 1 ms steps of a
// made-up clock. In each step every worker processes rate(size)/workers/1000 net events
// at its tuner's size (0: off), times noise (1 ± noise, uniform), and observes. It returns
// the fraction of steps with batching on and the tuners.
func switchTrace(workers, steps int, noise float64, rate func(size int) float64) (float64, []Tuner) {
	sw := NewSwitch(0)
	ts := make([]Tuner, workers)
	for i := range ts {
		ts[i] = NewSharedTuner(0, sw, 0)
	}
	nets := make([]float64, workers)
	r := rand.New(rand.NewPCG(3, uint64(workers)))
	now := time.Unix(0, 0)
	on := 0
	for range steps {
		now = now.Add(time.Millisecond)
		if sw.On() {
			on++
		}
		for i := range ts {
			n := rate(ts[i].Size()) / float64(workers) / 1000 * (1 + noise*(2*r.Float64()-1))
			nets[i] += n
			ts[i].Observe(now, uint64(nets[i])+1, int64(nets[i]))
		}
	}
	return float64(on) / float64(steps), ts
}

// TestSwitch drives a process's shared auto decision with made-up rates: it keeps every
// worker batching when batching pays, off but for rare probes when it does not, and each
// worker climbs its own batch size while on.
func TestSwitch(t *testing.T) {
	pays := func(best int) func(int) float64 {
		return func(s int) float64 {
			if s == 0 {
				return 1e6
			}
			d := math.Log2(float64(s)) - math.Log2(float64(best))
			return 2e6 * (1 - 0.05*d*d)
		}
	}
	slow := func(s int) float64 {
		if s == 0 {
			return 1e6
		}
		return 2e5
	}
	for _, workers := range []int{1, 4, 16} {
		frac, ts := switchTrace(workers, 20000, 0, pays(64))
		require.Greater(t, frac, 0.9, "%d workers: batching pays", workers)
		for i := range ts {
			require.Equal(t, 64, ts[i].Size(), "worker %d's batch size", i)
		}
		frac, _ = switchTrace(workers, 20000, 0, slow)
		require.Less(t, frac, 0.05, "%d workers: batching does not pay", workers)
		require.Greater(t, frac, 0.0, "%d workers: probes", workers)

		// Each worker's rate is noisy (±40%), the process's much less.
		frac, _ = switchTrace(workers, 20000, 0.4, pays(256))
		require.Greater(t, frac, 0.85, "%d workers, noisy: batching pays", workers)
		frac, _ = switchTrace(workers, 20000, 0.4, slow)
		require.Less(t, frac, 0.05, "%d workers, noisy: batching does not pay", workers)
	}

	// Off at first, then one probe window: the sizes are 0 until the first decision.
	sw := NewSwitch(0)
	tu := NewSharedTuner(0, sw, 0)
	require.Zero(t, tu.Size())
	tu.Observe(time.Unix(0, 0), 1, 1)
	tu.Observe(time.Unix(0, int64(DefaultSwitchWindow)), 1000, 1000)
	require.True(t, sw.On(), "the probe follows the first window")
	require.Equal(t, 1<<tuneStartLog, tu.Size())

	// A fixed size is only switched on and off.
	sw = NewSwitch(0)
	tu = NewSharedTuner(32, sw, 0)
	require.Zero(t, tu.Size())
	sw.set(switchOn, true, 1)
	require.Equal(t, 32, tu.Size())
}

// TestSwitchConcurrent has goroutines share a Switch on the real clock (run it with -race):
// every flip is seen by every tuner, and sizes stay in range.
func TestSwitchConcurrent(t *testing.T) {
	sw := NewSwitch(time.Millisecond)
	var wg sync.WaitGroup
	sizes := make([][]int, 8)
	for g := range sizes {
		wg.Go(func() {
			tu := NewSharedTuner(0, sw, 100*time.Microsecond)
			var net int64
			deadline := time.Now().Add(50 * time.Millisecond)
			for now := time.Now(); now.Before(deadline); now = time.Now() {
				net += int64(1 + tu.Size())
				tu.Observe(now, uint64(net), net)
				sizes[g] = append(sizes[g], tu.Size())
			}
		})
	}
	wg.Wait()
	require.Positive(t, sw.gen.Load(), "the switch flipped")
	for _, ss := range sizes {
		for _, s := range ss {
			require.True(t, s == 0 || s >= 1 && s <= 4096 && s&(s-1) == 0, "size %d", s)
		}
	}
}
