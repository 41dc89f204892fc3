package app

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/study"
)

// TestStudyThroughput measures the example benchmark studies (256 PHOLD runs, 64 PCS
// runs) against the same runs one after another in this process, interleaved, and logs
// runs/s, the cores the process used (CPU time over wall time) and the cores a spin loop
// found free just before each pair. It runs only with WARPED_STUDY_BENCH=1 (go test -v
// -run StudyThroughput ./app/).
func TestStudyThroughput(t *testing.T) {
	if os.Getenv("WARPED_STUDY_BENCH") == "" {
		t.Skip("set WARPED_STUDY_BENCH=1 to measure")
	}
	rounds := 3
	for _, name := range []string{"bench-phold", "bench-pcs"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "study", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := study.Parse(data, name, catalog{testCommand()})
		if err != nil {
			t.Fatal(err)
		}
		var one, many, merged, free []float64
		var oneCores, manyCores, mergedCores []float64
		var calls, batches uint64
		for r := range rounds {
			free = append(free, freeCores())
			for _, ex := range []study.Execution{{Jobs: 1, SimulationType: kernel.Sequential}, {}, {MergeBatches: true, Jobs: 4}} {
				dir := t.TempDir()
				cpu0 := cpuTime()
				t0 := time.Now()
				st, err := study.Execute(context.Background(), s, testCommand().runForStudy, study.Options{Out: dir, Execution: ex, Types: kernel.Types(), OpenMerge: openMerge(s, nil)})
				if err != nil {
					t.Fatal(err)
				}
				wall := time.Since(t0).Seconds()
				cores := (cpuTime() - cpu0) / wall
				rate := float64(len(st.Runs)) / wall
				switch {
				case ex.MergeBatches:
					merged, mergedCores = append(merged, rate), append(mergedCores, cores)
					calls, batches = st.MergedCalls, st.MergedBatches
				case ex.Jobs == 1:
					one, oneCores = append(one, rate), append(oneCores, cores)
				default:
					many, manyCores = append(many, rate), append(manyCores, cores)
					if r == 0 {
						t.Logf("%s: %s, %d at once", name, st.Plan.SimulationType, st.Plan.Jobs)
					}
				}
			}
		}
		t.Logf("%s: one after another %.1f runs/s (%.2f cores), study %.1f runs/s (%.2f cores), ratio %.2fx; free cores %.2f (medians of %d interleaved pairs; ratios %v)",
			name, median(one), median(oneCores), median(many), median(manyCores), median(many)/median(one), median(free), rounds, ratios(many, one))
		t.Logf("%s: merged batches, 4 time-warp runs at once with 1 worker: %.1f runs/s (%.2f cores), %d batches in %d calls", name, median(merged), median(mergedCores), batches, calls)
	}
}

func median(xs []float64) float64 {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = float64(int(100*a[i]/b[i])) / 100
	}
	return out
}

// cpuTime returns the process's user and system time in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// freeCores spins one goroutine per core for 300 ms and returns the cores they got.
func freeCores() float64 {
	cpu0, t0 := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for time.Since(t0) < 300*time.Millisecond {
				for range 10000 {
					x = x*6364136223846793005 + 1
				}
			}
			_ = x
		}()
	}
	wg.Wait()
	return (cpuTime() - cpu0) / time.Since(t0).Seconds()
}
