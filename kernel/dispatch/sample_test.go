package dispatch_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// TestSampleRowsAddUp checks that the engine samples of a time-warp run add up to its
// totals, with one schedule queue per worker (in both modes) and with shared queues, and
// that sampling leaves the results alone; and that a worker's time split covers the run.
func TestSampleRowsAddUp(t *testing.T) {
	build := zeroLookaheadPHOLD(t, 64, 8)
	end := underRace(60.0, 20) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 3}, build())
	for _, tc := range []struct {
		name string
		tw   kernel.TimeWarpConfig
		mode string
	}{
		{"own-queues-gvt", kernel.TimeWarpConfig{Workers: 4, GVTPeriod: 200 * time.Microsecond}, kernel.SampleGVT},
		{"own-queues-real-time", kernel.TimeWarpConfig{Workers: 4, GVTPeriod: 200 * time.Microsecond}, kernel.SampleRealTime},
		{"shared-queues-gvt", kernel.TimeWarpConfig{Workers: 4, Schedulers: 2, StateSavingPeriod: 4, GVTPeriod: 200 * time.Microsecond}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex // the manager calls Sample; the test reads after Run
			var rows []kernel.Sample
			cfg := kernel.Config{MaxSimTime: end, Seed: 3, Type: kernel.TimeWarp, TimeWarp: tc.tw,
				SampleMode: tc.mode, SampleInterval: time.Millisecond / 2,
				Sample: func(s kernel.Sample) {
					mu.Lock()
					rows = append(rows, s)
					mu.Unlock()
				}}
			t0 := time.Now()
			r := runTW(t, cfg, build())
			wall := time.Since(t0) // what no worker's split can pass, however slow the run
			require.Equal(t, seq.Digest, r.Digest)
			mu.Lock()
			defer mu.Unlock()
			var processed, rolled, primary, secondary, anti uint64
			var committed int64
			finals := map[int]bool{}
			last := time.Duration(-1)
			split := map[int]time.Duration{} // per worker: its time split, summed
			processing := map[int]time.Duration{}
			var end time.Duration
			for _, s := range rows {
				for _, d := range []time.Duration{s.Idle, s.Processing, s.GVTTime, s.Comm} {
					require.GreaterOrEqual(t, d, time.Duration(0))
				}
				split[s.Worker] += s.Idle + s.Processing + s.GVTTime + s.Comm
				processing[s.Worker] += s.Processing
				end = max(end, s.Elapsed)
				processed += s.Processed
				committed += s.Committed
				rolled += s.RolledBack
				primary += s.PrimaryRollbacks
				secondary += s.SecondaryRollbacks
				anti += s.AntiMessages
				require.Equal(t, int64(s.Processed)-int64(s.RolledBack), s.Committed)
				require.GreaterOrEqual(t, s.Elapsed, last, "rows out of time order")
				last = s.Elapsed
				require.Less(t, s.Worker, 4)
				require.NotZero(t, s.MemoryBytes)
				if s.Final {
					require.False(t, finals[s.Worker], "two final rows for worker %d", s.Worker)
					finals[s.Worker] = true
				}
				require.GreaterOrEqual(t, s.PendingEvents, 0)
				require.GreaterOrEqual(t, s.HistoryLength, 0)
			}
			require.Len(t, finals, 4)
			for w := range 4 {
				// A worker's split covers the run, to the last row (taken just before it),
				// and no more than the run's wall time (bounded by the test's own clock, not
				// by a margin that a descheduled manager could pass).
				require.GreaterOrEqual(t, split[w], end, "worker %d", w)
				require.LessOrEqual(t, split[w], wall, "worker %d", w)
				require.Positive(t, processing[w], "worker %d", w)
			}
			require.Equal(t, r.EventsProcessed, processed)
			require.Equal(t, int64(r.EventsCommitted), committed)
			require.Equal(t, r.EventsRolledBack, rolled)
			require.Equal(t, r.PrimaryRollbacks, primary)
			require.Equal(t, r.SecondaryRollbacks, secondary)
			require.Equal(t, r.AntiMessagesSent, anti)
			t.Logf("%d rows, %d events, %d rolled back", len(rows), processed, rolled)
		})
	}
}

// TestSampleConfigErrors checks the sampling settings' validation.
func TestSampleConfigErrors(t *testing.T) {
	_, err := dispatch.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp, SampleMode: "often"}, pingPong())
	require.ErrorContains(t, err, `unknown sample mode "often" (want gvt or real-time)`)
	_, err = dispatch.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp, SampleInterval: -1}, pingPong())
	require.ErrorContains(t, err, "sample interval must not be negative")
}
