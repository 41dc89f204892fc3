package kernel_test

import (
	"context"
	"testing"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/pcs"
	"github.com/warpedgo/warped/models/phold"
)

// benchSequential builds a model with build and runs it to end once per iteration,
// reporting committed events per second of Simulation.Run.
func benchSequential(b *testing.B, end float64, build func() ([]kernel.LogicalProcess, error)) {
	b.ReportAllocs()
	var events uint64
	var secs float64
	for b.Loop() {
		lps, err := build()
		if err != nil {
			b.Fatal(err)
		}
		s, err := kernel.New(kernel.Config{MaxSimTime: end, Seed: 1}, lps)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		events += r.EventsCommitted
		secs += r.WallSeconds
	}
	b.ReportMetric(float64(events)/secs/1e6, "Mevents/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
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
