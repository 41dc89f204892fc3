package dispatch_test

import (
	"cmp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// TestSamplesAndSeriesAcrossProcesses runs three loopback ranks with engine sampling and
// model series: every rank samples its own workers, and the rows of all ranks add up to the
// run's totals; every rank's manager has a row with its time split; the ranks' series
// together are the sequential run's.
func TestSamplesAndSeriesAcrossProcesses(t *testing.T) {
	const end, ranks = 20, 3
	seq, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 5, RecordSeries: true}, recorders(24))
	require.NoError(t, err)
	want, err := seq.Run(t.Context())
	require.NoError(t, err)

	var mu sync.Mutex
	var rows []kernel.Sample
	cfg := kernel.Config{MaxSimTime: end, Seed: 5, RecordSeries: true,
		TimeWarp: kernel.TimeWarpConfig{Workers: 2, GVTPeriod: 200_000},
		Sample: func(s kernel.Sample) {
			mu.Lock()
			rows = append(rows, s)
			mu.Unlock()
		}}
	t0 := time.Now()
	res, errs := runRanks(t, ranks, comm.LoopbackOptions{Seed: 3, MaxDelay: 3, Reorder: true}, cfg,
		func(int) []kernel.LogicalProcess { return recorders(24) }, nil)
	wall := time.Since(t0) // what no worker's split can pass, however slow the run
	var series []kernel.SeriesPoint
	for r := range ranks {
		require.NoError(t, errs[r], "rank %d", r)
		require.Equal(t, want.Digest, res[r].Digest)
		series = append(series, res[r].Series...)
	}
	mu.Lock()
	defer mu.Unlock()
	var processed uint64
	var committed int64
	finals := map[[2]int]bool{}
	var last time.Duration
	split := map[[2]int]time.Duration{} // per rank and worker (-1: the manager)
	comm := map[int]time.Duration{}     // per rank: the manager's
	for _, s := range rows {
		processed += s.Processed
		committed += s.Committed
		if s.Final {
			finals[[2]int{s.Rank, s.Worker}] = true
		}
		last = max(last, s.Elapsed)
		split[[2]int{s.Rank, s.Worker}] += s.Idle + s.Processing + s.GVTTime + s.Comm
		if s.Worker < 0 {
			require.Zero(t, s.Processed)
			require.Zero(t, s.Processing)
			comm[s.Rank] += s.Comm
		}
	}
	require.Len(t, finals, ranks*3, "one final row per rank and worker, and per rank's manager")
	for k, d := range split {
		require.Positive(t, d, "rank %d worker %d", k[0], k[1])
		require.LessOrEqual(t, d, wall, "rank %d worker %d", k[0], k[1])
	}
	for r := range ranks {
		require.Positive(t, comm[r], "rank %d's manager's communication time", r)
	}
	require.Equal(t, res[0].EventsProcessed, processed)
	require.Equal(t, int64(want.EventsCommitted), committed)

	slices.SortStableFunc(series, func(a, b kernel.SeriesPoint) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.LP, b.LP))
	})
	require.Len(t, series, len(want.Series))
	for i := range series {
		require.Equal(t, want.Series[i], series[i], "point %d", i)
	}
}
