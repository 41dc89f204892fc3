//go:build linux

package gpuwarp_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/gpuwarp"
)

// BenchmarkQueue measures the device loop's committed events per second of loop time
// (and its microseconds per iteration) with the host waiting for each chunk before it
// launches the next (queue=1) and with the default queue, on the fold model at fixed
// settings, so that both run the same iterations: what reading the counters
// asynchronously gains. On a GPU it runs 2^12 and 2^16 LPs (scripts/device-gpu.sh); on
// the stand-in, 256, to check that it runs.
func BenchmarkQueue(b *testing.B) {
	if why != "" {
		b.Skip(why)
	}
	sizes := []int{1 << 12, 1 << 16}
	if os.Getenv(standin.LibraryEnv) != "" {
		sizes = []int{256}
	}
	for _, lps := range sizes {
		in := foldInput(lps, 2, 40)
		for _, q := range []int{1, 3} {
			b.Run(fmt.Sprintf("lps=%d/queue=%d", lps, q), func(b *testing.B) {
				o := gpuwarp.WithQueue(gpuwarp.Options{Bound: 1, Executions: 2, Inactivity: 0.25}, q)
				var loop float64
				var committed, iterations uint64
				for b.Loop() {
					out, err := gpuwarp.Run(context.Background(), foldModel(false, false), in, o)
					if err != nil {
						b.Fatal(err)
					}
					loop += out.LoopSeconds
					committed += out.Committed()
					iterations += uint64(out.Iterations)
				}
				b.ReportMetric(float64(committed)/loop, "events/s")
				b.ReportMetric(loop/float64(iterations)*1e6, "µs/iteration")
			})
		}
	}
}
