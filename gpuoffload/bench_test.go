package gpuoffload

import (
	"flag"
	"testing"
	"time"

	"github.com/warpedgo/warped/rng"
)

var (
	benchGens  = flag.Int("gpuoffload.gens", 1<<20, "BenchmarkXORWOW: number of generators")
	benchSteps = flag.Uint("gpuoffload.steps", 0, "BenchmarkXORWOW: steps per generator "+
		"(0: 64 on the CPU, 8192 on CUDA)")
)

// residentBencher is implemented by the CUDA backend: XORWOW kernels on states that stay
// on the device, timing the kernels alone.
type residentBencher interface {
	benchResident(n int, steps uint32, reverse bool, iters int) (time.Duration, error)
}

// BenchmarkXORWOW measures batched XORWOW generation (Advance) and reversal (Reverse)
// over -gpuoffload.gens generators (2^20 by default), each stepped -gpuoffload.steps
// times per call, and reports steps per second as gen/s and rev/s:
//
//	cpu            the CPU backend (all cores)
//	cuda           the CUDA backend through Advance/Reverse: states copied to the device
//	               and back on every call
//	cuda-resident  the CUDA kernels alone on states resident on the device (the seed
//	               paper's measurement)
//
// The CUDA variants skip, saying why, without a GPU.
func BenchmarkXORWOW(b *testing.B) {
	steps := func(def uint32) uint32 {
		if *benchSteps > 0 {
			return uint32(*benchSteps)
		}
		return def
	}
	cases := backendCases()
	for _, c := range []struct {
		bc    backendCase
		steps uint32
	}{{cases[0], steps(64)}, {cases[2], steps(8192)}} {
		b.Run(c.bc.name, func(b *testing.B) {
			be := openOrSkip(b, c.bc)
			n := *benchGens
			states := make([]rng.XORWOW, n)
			counts := make([]uint32, n)
			for i := range states {
				states[i] = rng.New(1, uint64(i))
				counts[i] = c.steps
			}
			var adv, rev time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := be.Advance(states, counts); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := be.Reverse(states, counts); err != nil {
					b.Fatal(err)
				}
				adv += t1.Sub(t0)
				rev += time.Since(t1)
			}
			work := float64(n) * float64(c.steps) * float64(b.N)
			b.ReportMetric(work/adv.Seconds(), "gen/s")
			b.ReportMetric(work/rev.Seconds(), "rev/s")
		})
	}
	b.Run("cuda-resident", func(b *testing.B) {
		be := openOrSkip(b, cases[2])
		rb, ok := be.(residentBencher)
		if !ok {
			b.Skip("not the CUDA backend")
		}
		n, s := *benchGens, steps(8192)
		const iters = 10
		var adv, rev time.Duration
		for b.Loop() {
			d, err := rb.benchResident(n, s, false, iters)
			if err != nil {
				b.Fatal(err)
			}
			adv += d
			if d, err = rb.benchResident(n, s, true, iters); err != nil {
				b.Fatal(err)
			}
			rev += d
		}
		work := float64(n) * float64(s) * iters * float64(b.N)
		b.ReportMetric(work/adv.Seconds(), "gen/s")
		b.ReportMetric(work/rev.Seconds(), "rev/s")
	})
}
