package app

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

// TestFlagDefaultsAreTheKernels checks that each time-warp flag shows the default of the
// kernel's table (kernel.DefaultTimeWarp), so the two cannot drift apart.
func TestFlagDefaultsAreTheKernels(t *testing.T) {
	var o options
	fs, _ := newFlagSet(findModel("phold"), &o)
	d := kernel.DefaultTimeWarp()
	for flag, want := range map[string]string{
		"time-warp-worker-threads":              strconv.Itoa(d.Workers),
		"time-warp-scheduler-count":             strconv.Itoa(d.Schedulers),
		"time-warp-queue-type":                  d.QueueType,
		"time-warp-lock-type":                   d.LockType,
		"time-warp-state-saving-period":         strconv.Itoa(d.StateSavingPeriod),
		"time-warp-state-saving-type":           d.StateSaving,
		"time-warp-cancellation":                d.Cancellation,
		"time-warp-gvt-calculation-period":      strconv.FormatFloat(float64(d.GVTPeriod)/float64(time.Millisecond), 'g', -1, 64),
		"time-warp-gvt-calculation-method":      d.GVTMethod,
		"time-warp-communication-max-aggregate": strconv.Itoa(d.MaxAggregate),
	} {
		t.Run(flag, func(t *testing.T) {
			f := fs.Lookup(flag)
			require.NotNil(t, f)
			require.Equal(t, want, f.DefValue)
		})
	}
}
