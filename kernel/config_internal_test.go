package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWithDefaultsFillsZeroFieldsFromTheTable checks that WithDefaults takes every default
// from DefaultTimeWarp, resolves one schedule queue per worker, and keeps what is set.
func TestWithDefaultsFillsZeroFieldsFromTheTable(t *testing.T) {
	want := DefaultTimeWarp()
	want.Schedulers = want.Workers
	require.Equal(t, want, TimeWarpConfig{}.WithDefaults(), "zero config")

	set := TimeWarpConfig{Workers: 3, Schedulers: 1, QueueType: QueueCalendar, LockType: "ticket",
		StateSavingPeriod: 4, StateSaving: StateSavingPeriodic, Cancellation: CancelLazy,
		GVTPeriod: time.Second, GVTMethod: GVTTQ, MaxAggregate: 1}
	require.Equal(t, set, set.WithDefaults(), "every field set")

	require.Equal(t, 5, TimeWarpConfig{Workers: 5}.WithDefaults().Schedulers, "one queue per worker")
}

// TestValidateNamesTheBadSetting checks each time-warp setting's check once, by name.
func TestValidateNamesTheBadSetting(t *testing.T) {
	for name, c := range map[string]struct {
		tw   TimeWarpConfig
		want string
	}{
		"cancellation":    {TimeWarpConfig{Cancellation: "eager"}, `unknown time-warp cancellation "eager"`},
		"lock type":       {TimeWarpConfig{LockType: "spin"}, `unknown lock type "spin"`},
		"queue type":      {TimeWarpConfig{QueueType: "fifo"}, `unknown queue type "fifo" (want calendar, heap, splay, ladder or parallel-heap)`},
		"too many queues": {TimeWarpConfig{Workers: 2, Schedulers: 3}, "must not exceed the worker threads"},
		"defaults":        {TimeWarpConfig{}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{MaxSimTime: 1, Type: TimeWarp, TimeWarp: c.tw}
			err := cfg.Validate()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}
