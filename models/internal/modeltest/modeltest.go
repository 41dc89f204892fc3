// Package modeltest checks the bundled models against the project's correctness oracle: the
// digest of every time-warp configuration, inside one process and across loopback ranks,
// equals the sequential digest, with the rollback check on.
package modeltest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
)

// Model is what Matrix runs: a builder of fresh LPs and the run's settings.
type Model struct {
	// Build returns a fresh copy of the model's LPs.
	Build func() []kernel.LogicalProcess
	// End is the end time and Seed the seed of every run.
	End  kernel.Time
	Seed uint64
	// EndInclusive runs every configuration with WARPED2's end rule (kernel.Config's).
	EndInclusive bool
	// Partition is the model's partitioner (nil: blocks).
	Partition partition.Partitioner
	// Payloads is the model's payload registry (nil when it sends only words).
	Payloads *kernel.Registry
	// Reversible says whether the LPs implement Reverse, so that the matrix includes
	// reverse computation.
	Reversible bool
	// Short runs a smaller matrix (for the race detector).
	Short bool
}

// Sequential runs m with the sequential dispatcher and returns the result.
func Sequential(t testing.TB, m Model) kernel.Result {
	t.Helper()
	s, err := dispatch.New(kernel.Config{MaxSimTime: m.End, EndInclusive: m.EndInclusive, Seed: m.Seed, Payloads: m.Payloads}, m.Build())
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r
}

// matches runs m under time warp with tw in one process and checks that it commits what
// the sequential run want did.
func matches(t *testing.T, m Model, tw kernel.TimeWarpConfig, want kernel.Result) kernel.Result {
	t.Helper()
	s, err := dispatch.New(kernel.Config{MaxSimTime: m.End, EndInclusive: m.EndInclusive, Seed: m.Seed, Type: kernel.TimeWarp,
		Partition: m.Partition, Payloads: m.Payloads, TimeWarp: tw}, m.Build())
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, want.Digest, r.Digest)
	require.Equal(t, want.EventsCommitted, r.EventsCommitted)
	return r
}

// Matrix checks that every time-warp configuration gives the sequential digest and the
// sequential number of committed events: 1, 2 and 4 workers; periodic state saving (and
// reverse computation where the model is reversible); aggressive and lazy cancellation;
// with and without the rollback check; workers sharing one schedule queue; and 2 and 3
// loopback ranks with delays and reordering, with the rollback check on. It returns the
// sequential result.
func Matrix(t *testing.T, m Model) kernel.Result {
	t.Helper()
	want := Sequential(t, m)
	require.NotZero(t, want.EventsCommitted, "the model commits no event before the end time")
	savings := []string{kernel.StateSavingPeriodic}
	if m.Reversible {
		savings = append(savings, kernel.StateSavingReverse)
	}
	workers := []int{1, 2, 4}
	if m.Short {
		workers = []int{2}
	}
	for _, w := range workers {
		for _, ss := range savings {
			for _, cancel := range []string{"aggressive", "lazy"} {
				for _, check := range []bool{true, false} {
					if !check && (cancel == "lazy" || m.Short) {
						continue // lazy cancellation is checked with the rollback check on
					}
					tw := kernel.TimeWarpConfig{Workers: w, StateSaving: ss, Cancellation: cancel,
						CheckRollbacks: check, GVTPeriod: 100 * time.Microsecond}
					if ss == kernel.StateSavingPeriodic {
						tw.StateSavingPeriod = 3
					}
					name := fmt.Sprintf("workers=%d/%s/%s/check=%v", w, ss, cancel, check)
					t.Run(name, func(t *testing.T) { matches(t, m, tw, want) })
				}
			}
		}
	}
	for _, w := range workers[1:] {
		if m.Short && w != 2 {
			continue
		}
		for _, ss := range savings {
			// Workers sharing one schedule queue (kernel/internal/timewarp/group.go), lazy, every rollback checked.
			t.Run(fmt.Sprintf("workers=%d/shared/%s", w, ss), func(t *testing.T) {
				tw := kernel.TimeWarpConfig{Workers: w, Schedulers: 1, StateSaving: ss, Cancellation: "lazy",
					CheckRollbacks: true, GVTPeriod: 100 * time.Microsecond}
				if ss == kernel.StateSavingPeriodic {
					tw.StateSavingPeriod = 3
				}
				r := matches(t, m, tw, want)
				require.Equal(t, fmt.Sprintf("calendar, 1 shared by %d workers", w), r.ScheduleQueues)
			})
		}
	}
	ranks := []int{2, 3}
	if m.Short {
		ranks = []int{2}
	}
	for _, n := range ranks {
		for _, ss := range savings {
			t.Run(fmt.Sprintf("ranks=%d/%s", n, ss), func(t *testing.T) {
				tw := kernel.TimeWarpConfig{Workers: 2, StateSaving: ss, CheckRollbacks: true,
					GVTPeriod: 200 * time.Microsecond}
				if ss == kernel.StateSavingPeriodic {
					tw.StateSavingPeriod = 3
				}
				cfg := kernel.Config{MaxSimTime: m.End, EndInclusive: m.EndInclusive, Seed: m.Seed, Type: kernel.TimeWarp,
					Partition: m.Partition, Payloads: m.Payloads, TimeWarp: tw}
				res := Ranks(t, n, cfg, m.Build)
				for r := range n {
					require.Equal(t, want.Digest, res[r].Digest, "rank %d", r)
					require.Equal(t, want.EventsCommitted, res[r].EventsCommitted, "rank %d", r)
				}
			})
		}
	}
	return want
}

// Ranks runs cfg over n loopback ranks (with delays and reordering), each with a fresh
// model, and returns every rank's result; any rank's error fails the test.
func Ranks(t *testing.T, n int, cfg kernel.Config, build func() []kernel.LogicalProcess) []kernel.Result {
	t.Helper()
	trs := comm.NewLoopback(n, comm.LoopbackOptions{Seed: uint64(n), MaxDelay: 3, Reorder: true})
	res := make([]kernel.Result, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Transport = trs[r]
			s, err := dispatch.New(c, build())
			if err == nil {
				res[r], err = s.Run(ctx)
			}
			if err != nil {
				errs[r] = err
				trs[r].Close()
			}
		}()
	}
	wg.Wait()
	for r := range n {
		trs[r].Close()
	}
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
	}
	return res
}

// Bench runs m once per iteration of b with the sequential dispatcher and with time warp on
// 1 and 2 workers (every other setting at its default), as sub-benchmarks seq, tw1 and
// tw2, reporting committed events per second of Simulation.Run, efficiency and
// allocations. Compare the three within one run of the benchmark: the machines these run
// on are shared and noisy (docs/PERFORMANCE.md).
func Bench(b *testing.B, m Model) {
	for _, c := range []struct {
		name    string
		workers int
	}{{"seq", 0}, {"tw1", 1}, {"tw2", 2}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := kernel.Config{MaxSimTime: m.End, EndInclusive: m.EndInclusive, Seed: m.Seed, Partition: m.Partition, Payloads: m.Payloads}
			if c.workers > 0 {
				cfg.Type, cfg.TimeWarp = kernel.TimeWarp, kernel.TimeWarpConfig{Workers: c.workers}
			}
			b.ReportAllocs()
			var events, processed uint64
			var secs float64
			for b.Loop() {
				s, err := dispatch.New(cfg, m.Build())
				if err != nil {
					b.Fatal(err)
				}
				r, err := s.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				events, processed, secs = events+r.EventsCommitted, processed+r.EventsProcessed, secs+r.WallSeconds
			}
			b.ReportMetric(float64(events)/secs/1e6, "Mevents/s")
			b.ReportMetric(float64(events)/float64(processed)*100, "%efficiency")
		})
	}
}
