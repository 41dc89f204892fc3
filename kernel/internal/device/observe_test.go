package device

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// TestObserver feeds counters to an observer: in gvt mode every read is a row, whose
// counts are the differences from the row before, so the rows add up to the last
// counters; with a long interval only the final read makes a row; without progress or
// samples there is no observer.
func TestObserver(t *testing.T) {
	reads := []gpuwarp.Counters{
		{GVT: 1, Iterations: 32, Processed: 100, RolledBack: 10, Returned: 1, Pending: 50, History: 20, Bound: 2},
		{GVT: 3, Iterations: 64, Processed: 180, RolledBack: 12, Pending: 40, History: 10, Bound: 4},
		{GVT: math.Inf(1), Iterations: 70, Processed: 200, RolledBack: 12, Bound: 4, Done: true},
	}
	for _, tc := range []struct {
		name string
		cfg  core.Config
		rows int
	}{
		{"gvt", core.Config{}, 3},
		{"real-time, long interval", core.Config{SampleMode: core.SampleRealTime, SampleInterval: time.Hour}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rows []core.Sample
			tc.cfg.Sample = func(s core.Sample) { rows = append(rows, s) }
			tc.cfg.MaxSimTime = 10
			o := newObserver(&tc.cfg, time.Now())
			for _, c := range reads {
				o.observe(c)
			}
			require.Len(t, rows, tc.rows)
			var processed, rolled, iterations uint64
			var committed int64
			for i, r := range rows {
				require.Equal(t, i == len(rows)-1, r.Final, "row %d", i)
				processed += r.Processed
				rolled += r.RolledBack
				committed += r.Committed
				iterations += r.DeviceIterations
			}
			last := reads[len(reads)-1]
			require.Equal(t, last.Processed, processed)
			require.Equal(t, last.RolledBack, rolled)
			require.Equal(t, int64(last.Processed-last.RolledBack), committed)
			require.Equal(t, last.Iterations, iterations)
			require.Equal(t, math.Inf(1), rows[len(rows)-1].GVT)
			require.Equal(t, 4.0, rows[len(rows)-1].DeviceBound)
			if tc.rows == 3 {
				require.Equal(t, core.Sample{Elapsed: rows[1].Elapsed, GVT: 3, Processed: 80, Committed: 78, RolledBack: 2,
					PendingEvents: 40, HistoryLength: 10, MemoryBytes: rows[1].MemoryBytes, DeviceIterations: 32,
					DeviceBound: 4}, rows[1])
			}
		})
	}
	require.Nil(t, newObserver(&core.Config{}, time.Now()), "neither progress nor samples")

	var progress []core.Progress
	o := newObserver(&core.Config{MaxSimTime: 10, Progress: func(p core.Progress) { progress = append(progress, p) }}, time.Now())
	o.observe(reads[1])
	o.observe(reads[2])
	require.Len(t, progress, 2, "an interval of 0: every read")
	require.Equal(t, core.Progress{Now: 3, EndTime: 10, EventsProcessed: 180, Elapsed: progress[0].Elapsed}, progress[0])
	require.Equal(t, 10.0, progress[1].Now, "GVT past the end shows as the end")
}
