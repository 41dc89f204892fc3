package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/pcs"
	"github.com/warpedgo/warped/models/phold"
)

// benchRun builds a model with build and runs it with cfg once per iteration, reporting
// committed events per second of Simulation.Run, ns per event and efficiency.
func benchRun(b *testing.B, cfg kernel.Config, build func() ([]kernel.LogicalProcess, error)) {
	b.ReportAllocs()
	var events, processed uint64
	var secs float64
	for b.Loop() {
		lps, err := build()
		if err != nil {
			b.Fatal(err)
		}
		s, err := dispatch.New(cfg, lps)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		events += r.EventsCommitted
		processed += r.EventsProcessed
		secs += r.WallSeconds
	}
	b.ReportMetric(float64(events)/secs/1e6, "Mevents/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(events)/float64(processed)*100, "%efficiency")
}

// benchSequential runs a model with the sequential dispatcher to end.
func benchSequential(b *testing.B, end float64, build func() ([]kernel.LogicalProcess, error)) {
	benchRun(b, kernel.Config{MaxSimTime: end, Seed: 1}, build)
}

// BenchmarkSequentialPHOLD runs the foundation issue's PHOLD configuration (16384 LPs,
// end 500, mean 1.0, lookahead 0.1, remote 0.25).
func BenchmarkSequentialPHOLD(b *testing.B) {
	benchSequential(b, 500, func() ([]kernel.LogicalProcess, error) { return phold.New(phold.DefaultConfig()) })
}

// BenchmarkSequentialPCS runs PCS with WARPED2's defaults (100x100 cells) to end time 200.
func BenchmarkSequentialPCS(b *testing.B) {
	benchSequential(b, 200, func() ([]kernel.LogicalProcess, error) { return pcs.New(pcs.DefaultConfig()) })
}

// benchTimeWarp runs a model under time warp with tw to end.
func benchTimeWarp(b *testing.B, end float64, tw kernel.TimeWarpConfig, build func() ([]kernel.LogicalProcess, error)) {
	benchRun(b, kernel.Config{MaxSimTime: end, Seed: 1, Type: kernel.TimeWarp, TimeWarp: tw}, build)
}

// BenchmarkTimeWarpPHOLD runs the foundation issue's PHOLD configuration under time warp
// with 1 and 2 workers (periodic state saving and reverse computation).
func BenchmarkTimeWarpPHOLD(b *testing.B) {
	build := func() ([]kernel.LogicalProcess, error) { return phold.New(phold.DefaultConfig()) }
	for _, w := range []int{1, 2} {
		for _, ss := range []string{"periodic", "reverse"} {
			b.Run(fmt.Sprintf("workers=%d/%s", w, ss), func(b *testing.B) {
				benchTimeWarp(b, 500, kernel.TimeWarpConfig{Workers: w, Schedulers: w, StateSaving: ss}, build)
			})
		}
	}
}

// BenchmarkTimeWarpPCS runs PCS (100x100, end 200) under time warp with 2 workers.
func BenchmarkTimeWarpPCS(b *testing.B) {
	build := func() ([]kernel.LogicalProcess, error) { return pcs.New(pcs.DefaultConfig()) }
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			benchTimeWarp(b, 200, kernel.TimeWarpConfig{Workers: w, Schedulers: w}, build)
		})
	}
}

// BenchmarkTimeWarpPHOLDShared runs PHOLD with 2 workers sharing one schedule queue
// (group.go), with reverse computation and periodic state saving.
func BenchmarkTimeWarpPHOLDShared(b *testing.B) {
	build := func() ([]kernel.LogicalProcess, error) { return phold.New(phold.DefaultConfig()) }
	for _, ss := range []string{"periodic", "reverse"} {
		for _, lock := range []string{"ticket", "mutex"} {
			b.Run(ss+"/"+lock, func(b *testing.B) {
				benchTimeWarp(b, 200, kernel.TimeWarpConfig{Workers: 2, Schedulers: 1, StateSaving: ss, LockType: lock}, build)
			})
		}
	}
}

// BenchmarkTimeWarpPHOLDOversubscribed runs PHOLD (reverse computation, end 200) with 4
// and 8 workers, one schedule queue each, whatever the number of processors: on a 2-core
// machine, more workers than cores.
func BenchmarkTimeWarpPHOLDOversubscribed(b *testing.B) {
	build := func() ([]kernel.LogicalProcess, error) { return phold.New(phold.DefaultConfig()) }
	for _, w := range []int{4, 8} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			benchTimeWarp(b, 200, kernel.TimeWarpConfig{Workers: w, Schedulers: w, StateSaving: "reverse"}, build)
		})
	}
}

// BenchmarkTimeWarpPHOLDRanks runs the small PHOLD of the scaling script (2048 LPs, remote
// 0.5, end 2000) across 2 loopback ranks of one worker each: the cross-process driver, its
// aggregation and codec, in one process (scripts/pgo.sh profiles it with the others).
func BenchmarkTimeWarpPHOLDRanks(b *testing.B) {
	c := phold.DefaultConfig()
	c.LPs, c.Remote = 2048, 0.5
	build := func(int) []kernel.LogicalProcess {
		lps, err := phold.New(c)
		if err != nil {
			b.Fatal(err)
		}
		return lps
	}
	cfg := kernel.Config{MaxSimTime: 2000, Seed: 1, TimeWarp: kernel.TimeWarpConfig{Workers: 1}}
	var events uint64
	var secs float64
	for b.Loop() {
		res, errs := runRanks(b, 2, comm.LoopbackOptions{}, cfg, build, nil)
		for r, err := range errs {
			if err != nil {
				b.Fatalf("rank %d: %v", r, err)
			}
		}
		events += res[0].EventsCommitted
		secs += res[0].WallSeconds
	}
	b.ReportMetric(float64(events)/secs/1e6, "Mevents/s")
}
