package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
)

// TestEndInclusiveByHand: with EndInclusive the ping-pong of TestPingPongByHand also handles
// its event at the end time 10 (WARPED2's rule), and nothing after it: the same run as one
// to any end in (10, 11].
func TestEndInclusiveByHand(t *testing.T) {
	lps := pingPong()
	r := run(t, kernel.Config{MaxSimTime: 10, EndInclusive: true}, lps)
	require.EqualValues(t, 10, r.EventsCommitted)
	require.EqualValues(t, 10, r.FinalTime)
	require.Equal(t, pingState{Handled: 5, LastAt: 10}, lps[0].(*pinger).S)
	require.Equal(t, pingState{Handled: 5, LastAt: 9}, lps[1].(*pinger).S)

	for _, end := range []float64{10.5, 11} {
		other := run(t, kernel.Config{MaxSimTime: end}, pingPong())
		require.Equal(t, r.Digest, other.Digest, "exclusive end %v", end)
	}
	exclusive := run(t, kernel.Config{MaxSimTime: 10}, pingPong())
	require.NotEqual(t, r.Digest, exclusive.Digest)
}

// TestEndInclusiveEveryDispatcher is the determinism check of the end-time rule: PCS (integer
// times, so events fall on the end) run to its end inclusively gives the sequential digest
// under time warp on 1 to 3 workers, with either cancellation, and across 2 and 3 loopback
// processes, and commits more events than the exclusive run.
func TestEndInclusiveEveryDispatcher(t *testing.T) {
	m := smallModels(t)[1]
	require.Equal(t, "pcs", m.name)
	seq := func(inclusive bool) kernel.Result {
		s, err := dispatch.New(kernel.Config{MaxSimTime: m.end, EndInclusive: inclusive, Seed: 5}, m.build())
		require.NoError(t, err)
		r, err := s.Run(context.Background())
		require.NoError(t, err)
		return r
	}
	want := seq(true)
	require.Greater(t, want.EventsCommitted, seq(false).EventsCommitted, "no event at the end time: the test shows nothing")
	require.Equal(t, m.end, want.FinalTime)

	for _, workers := range []int{1, 2, 3} {
		for _, cancel := range []string{"aggressive", "lazy"} {
			t.Run(fmt.Sprintf("timewarp/workers=%d/%s", workers, cancel), func(t *testing.T) {
				r := run(t, kernel.Config{MaxSimTime: m.end, EndInclusive: true, Seed: 5, Type: kernel.TimeWarp,
					TimeWarp: kernel.TimeWarpConfig{Workers: workers, Cancellation: cancel, CheckRollbacks: true}}, m.build())
				require.Equal(t, want.Digest, r.Digest)
				require.Equal(t, want.EventsCommitted, r.EventsCommitted)
			})
		}
	}
	for _, ranks := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", ranks), func(t *testing.T) {
			cfg := kernel.Config{MaxSimTime: m.end, EndInclusive: true, Seed: 5, Partition: partition.Blocks{},
				TimeWarp: kernel.TimeWarpConfig{Workers: 1, CheckRollbacks: true}}
			res, errs := runRanks(t, ranks, comm.LoopbackOptions{Seed: uint64(ranks), MaxDelay: 3, Reorder: true}, cfg,
				func(int) []kernel.LogicalProcess { return m.build() }, nil)
			requireRanksMatch(t, want, res, errs)
		})
	}
}

// TestEndInclusiveRanksMustAgree: ranks that disagree on the end rule fail, naming the end
// time, as they do for any other setting.
func TestEndInclusiveRanksMustAgree(t *testing.T) {
	m := smallModels(t)[1]
	trs := comm.NewLoopback(2, comm.LoopbackOptions{})
	errs := make([]error, 2)
	done := make(chan struct{})
	for r := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			s, err := dispatch.New(kernel.Config{MaxSimTime: m.end, EndInclusive: r == 0, Seed: 5, Type: kernel.TimeWarp,
				Transport: trs[r]}, m.build())
			if err == nil {
				_, err = s.Run(context.Background())
			}
			errs[r] = err
			trs[r].Close()
		}()
	}
	<-done
	<-done
	for r := range 2 {
		require.ErrorContains(t, errs[r], "max-sim-time", "rank %d", r)
	}
}
