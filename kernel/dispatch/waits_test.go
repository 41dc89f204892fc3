package dispatch_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/kernel/internal/timewarp"
	"github.com/warpedgo/warped/models/phold"
)

// TestHostedWorkers runs more workers than GOMAXPROCS (set to 1 and 2 here, whatever the
// machine), which the engine hosts on GOMAXPROCS goroutines taking turns by their least
// events (host.go): every arrangement, both state savings and both cancellations, gives
// the sequential digest.
func TestHostedWorkers(t *testing.T) {
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
		for _, m := range raceShort(smallModels(t)) {
			seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 9}, m.build())
			for _, workers := range []int{procs + 1, 5, 16} {
				for _, ss := range []string{"periodic", "reverse"} {
					if ss == "reverse" && !m.reversible {
						continue
					}
					for _, cancel := range []string{"aggressive", "lazy"} {
						name := fmt.Sprintf("procs%d/%s/w%d-%s-%s", procs, m.name, workers, ss, cancel)
						t.Run(name, func(t *testing.T) {
							tw := kernel.TimeWarpConfig{Workers: workers, StateSaving: ss, Cancellation: cancel,
								CheckRollbacks: workers == 5}
							r := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 9, Type: kernel.TimeWarp, TimeWarp: tw}, m.build())
							require.Equal(t, seq.Digest, r.Digest)
							require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
						})
					}
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestParkedWorkersWake runs PHOLD with about as many LPs as workers, so that workers
// often hold no event, with parking after a nanosecond of idling instead of parkAfter's
// milliseconds (park.go), and a GVT period far longer than the run: a parked worker must
// be woken by the events handed to it and by the rounds the others start, and the run
// must end (and match the sequential one) without waiting for the period.
func TestParkedWorkersWake(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs, c.StartEvents, c.Remote = 3, 1, 1
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	end := underRace(3000.0, 1000) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 4}, build())
	for _, workers := range []int{2, 3, 8} {
		t.Run(fmt.Sprintf("w%d", workers), func(t *testing.T) {
			// A host per worker (a host with one worker parks), on any machine.
			old := runtime.GOMAXPROCS(max(workers, runtime.GOMAXPROCS(0)))
			defer runtime.GOMAXPROCS(old)
			cfg := kernel.Config{MaxSimTime: end, Seed: 4, Type: kernel.TimeWarp,
				TimeWarp: kernel.TimeWarpConfig{Workers: workers, GVTPeriod: time.Hour}}
			r, err := dispatch.RunTimeWarpInternalsTuned(context.Background(), cfg, build(),
				// An idle machine, whatever this one does: a host for each worker throughout.
				timewarp.Tuning{ParkAfter: time.Nanosecond, HostLoad: func() float64 { return 0 }})
			require.NoError(t, err)
			require.Equal(t, seq.Digest, r.Digest)
			require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
			require.Positive(t, r.Parks, "no worker parked")
			require.Equal(t, float64(workers), r.WorkerThreads, "a thread for each worker throughout")
		})
	}
}

// TestAdaptiveHosts runs the workers on hosts whose number follows a load that the test
// makes up (adapt.go), looked at after every turn of host 0: every few looks the hosts'
// threads seem to lose half their time, then none, so that hosts are taken away and added
// back many times during a run, workers passing from host to host (one host a worker,
// several, and hosts with two workers and one), with both state savings. Every run must
// match the sequential one.
func TestAdaptiveHosts(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	build := func() []kernel.LogicalProcess { return adaptPHOLD(t) }
	const end = 30 // (shorter under the race detector, host changes become too few to assert)
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 5}, build())
	for _, c := range []struct {
		workers int
		ss      string
	}{{2, "reverse"}, {4, "periodic"}, {7, "reverse"}} {
		workers, ss := c.workers, c.ss
		{
			t.Run(fmt.Sprintf("w%d-%s", workers, ss), func(t *testing.T) {
				var calls atomic.Int64
				load := func() float64 {
					if calls.Add(1)/6%2 == 0 {
						return 0.5
					}
					return 0
				}
				cfg := kernel.Config{MaxSimTime: end, Seed: 5, Type: kernel.TimeWarp,
					TimeWarp: kernel.TimeWarpConfig{Workers: workers, StateSaving: ss}}
				r, err := dispatch.RunTimeWarpInternalsTuned(context.Background(), cfg, build(),
					timewarp.Tuning{HostLoad: load, LoadWindow: time.Nanosecond})
				require.NoError(t, err)
				require.Equal(t, seq.Digest, r.Digest)
				require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
				require.Greater(t, r.HostChanges, 2, "the number of active hosts hardly changed")
				// Stats.WorkerThreads: the hosts' mean over the run shows the times at fewer.
				require.GreaterOrEqual(t, r.WorkerThreads, 1.0)
				require.Less(t, r.WorkerThreads, float64(min(workers, 4)))
			})
		}
	}
}

// adaptPHOLD is the adaptation tests' model: PHOLD with 512 LPs and 4 events each.
func adaptPHOLD(t *testing.T) []kernel.LogicalProcess {
	t.Helper()
	c := phold.DefaultConfig()
	c.LPs, c.StartEvents = 512, 4
	lps, err := phold.New(c)
	require.NoError(t, err)
	return lps
}

// TestAdaptiveHostsTryOnlyWhereACoreIsFree: after a busy first window takes a host off,
// one more is tried only where the machine had a core idle (Tuning.HostIdle stands for
// /proc/stat's measure): never into a full machine, soon where a core is free.
func TestAdaptiveHostsTryOnlyWhereACoreIsFree(t *testing.T) {
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	build := func() []kernel.LogicalProcess { return adaptPHOLD(t) }
	const end = 30
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 5}, build())
	for _, c := range []struct {
		name    string
		idle    float64
		changes func(t *testing.T, n int)
	}{
		{"full machine", 0, func(t *testing.T, n int) { require.Equal(t, 1, n, "a host was tried into a full machine") }},
		{"a core free", 1, func(t *testing.T, n int) { require.Greater(t, n, 1, "no host was tried where a core was free") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			load := func() float64 { // the first window busy, every later one quiet
				if calls.Add(1) == 1 {
					return 0.5
				}
				return 0
			}
			cfg := kernel.Config{MaxSimTime: end, Seed: 5, Type: kernel.TimeWarp,
				TimeWarp: kernel.TimeWarpConfig{Workers: 2}}
			r, err := dispatch.RunTimeWarpInternalsTuned(context.Background(), cfg, build(),
				timewarp.Tuning{HostLoad: load, HostIdle: func() float64 { return c.idle }, LoadWindow: time.Nanosecond})
			require.NoError(t, err)
			require.Equal(t, seq.Digest, r.Digest)
			c.changes(t, r.HostChanges)
		})
	}
}

// TestMemoryPressure runs under constant memory pressure (Config.MemoryPressure): every
// worker narrows its window at each round's end, and the run must still match the
// sequential one, across both state savings and a shared queue.
func TestMemoryPressure(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs, c.StartEvents = 256, 2
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	const end = 40
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 6}, build())
	for _, c := range []struct {
		name string
		tw   kernel.TimeWarpConfig
	}{
		{"w2-reverse", kernel.TimeWarpConfig{Workers: 2, StateSaving: "reverse"}},
		{"w3-periodic", kernel.TimeWarpConfig{Workers: 3, StateSaving: "periodic"}},
		{"w2-one-queue", kernel.TimeWarpConfig{Workers: 2, Schedulers: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var looks atomic.Int64
			cfg := kernel.Config{MaxSimTime: end, Seed: 6, Type: kernel.TimeWarp, TimeWarp: c.tw,
				MemoryPressure: func() bool { looks.Add(1); return true }}
			r := runTW(t, cfg, build())
			require.Equal(t, seq.Digest, r.Digest)
			require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
			require.Positive(t, looks.Load(), "the engine never looked at the pressure")
		})
	}
}
