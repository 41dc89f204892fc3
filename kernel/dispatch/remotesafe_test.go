package dispatch_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
)

// TestRemoteSafeMatchesSequential is the determinism matrix of safe events across
// processes (remotesafe.go): one worker per rank, 2, 3 and 4 loopback ranks with delays,
// reordering and a slow rank, PHOLD (also with a lookahead of 0.9, most of its events
// safe, and without one) and PCS (its lookahead of one time unit), reverse and periodic state saving, aggressive and lazy cancellation,
// every rollback checked, give the sequential digest. A broken promise fails the run (the
// receiving rank checks every event against its sender's promise).
func TestRemoteSafeMatchesSequential(t *testing.T) {
	models := raceShort(append(smallModels(t), model{"phold-long-lookahead", 6, func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs, c.Lookahead = 4096, 0.9 // most events safe (see TestRemoteSafeCommitsMostEvents)
		c.LPs = underRace(c.LPs, 2048) // racesize_test.go
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}, true, 0}))
	for _, m := range models {
		want := sequentialResult(t, m, 11)
		var cov coverage
		// The runs wait on one another's ranks more than they compute: side by side.
		t.Run(m.name, func(t *testing.T) {
			for _, ranks := range []int{2, 3, 4} {
				for _, saving := range []string{kernel.StateSavingReverse, kernel.StateSavingPeriodic} {
					for _, cancel := range []string{"aggressive", "lazy"} {
						reuse := cancel == "lazy" // the driver's buffers as MPI's transport treats them
						name := fmt.Sprintf("ranks=%d/%s/%s/reuse=%v", ranks, saving, cancel, reuse)
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							opts := comm.LoopbackOptions{Seed: uint64(ranks), MaxDelay: 4, Reorder: true,
								Slow: map[int]int{ranks - 1: 2}, Reuse: reuse}
							cfg := kernel.Config{MaxSimTime: m.end, Seed: 11,
								TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTPeriod: 200_000, StateSaving: saving,
									Cancellation: cancel, CheckRollbacks: true}}
							res, errs := runRanks(t, ranks, opts, cfg, func(int) []kernel.LogicalProcess { return m.build() }, nil)
							requireRanksMatch(t, want, res, errs)
							if saving == kernel.StateSavingPeriodic || m.name == "phold-zero-lookahead" {
								require.Zero(t, res[0].SafeEvents, "safe events where the feature is off")
								require.Zero(t, res[0].PromisesSent, "promises where the feature is off")
							} else {
								require.NotZero(t, res[0].PromisesSent, "no promise sent")
							}
							t.Logf("safe %d of %d committed, %d promises", res[0].SafeEvents, res[0].EventsCommitted, res[0].PromisesSent)
							for r := range res {
								cov.add(res[r])
							}
						})
					}
				}
			}
		})
		cov.check(t, m.name, true)
	}
}

// TestRemoteSafeCommitsMostEvents checks that PHOLD across 2 loopback ranks, one worker
// each, commits most of its events safe (unlogged), as one process does, and none with
// the feature turned off; both give the sequential digest. The lookahead is most of the
// delay (0.9 of a mean 1), so that the promises' round trips between the ranks' goroutines
// on a loaded test machine stay well within it (see docs/DECISIONS.md for PHOLD's 0.1).
func TestRemoteSafeCommitsMostEvents(t *testing.T) {
	end := underRace(10.0, 4) // racesize_test.go
	build, want := lookaheadPHOLD(t, 16384, end, 4)
	for _, off := range []bool{false, true} {
		cfg := kernel.Config{MaxSimTime: end, Seed: 4,
			TimeWarp: kernel.TimeWarpConfig{Workers: 1, StateSaving: kernel.StateSavingReverse, NoRemoteSafe: off}}
		res, errs := runRanks(t, 2, comm.LoopbackOptions{}, cfg, build, nil)
		for r := range 2 {
			require.NoError(t, errs[r], "rank %d", r)
			require.Equal(t, want.Digest, res[r].Digest, "rank %d digest", r)
		}
		r := res[0]
		t.Logf("remote safe off=%v: %d of %d committed events safe, %d promises, %d rolled back",
			off, r.SafeEvents, r.EventsCommitted, r.PromisesSent, r.EventsRolledBack)
		if off {
			require.Zero(t, r.SafeEvents)
			require.Zero(t, r.PromisesSent)
			continue
		}
		require.Greater(t, float64(r.SafeEvents), 0.5*float64(r.EventsCommitted), "most events committed safe")
	}
}

// TestRemoteSafeMixedRanks checks that ranks that decide differently (one with the feature
// off, one with more workers) still give the sequential digest: a rank without it ignores
// promises, and a rank with it bounds such ranks by GVT alone.
func TestRemoteSafeMixedRanks(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs, c.Lookahead = 2048, 0.9
	build := func() []kernel.LogicalProcess {
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	const end = 8
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 6}, build())
	require.NoError(t, err)
	want, err := s.Run(t.Context())
	require.NoError(t, err)
	trs := comm.NewLoopback(3, comm.LoopbackOptions{Seed: 3, MaxDelay: 3, Reorder: true})
	res := make([]kernel.Result, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			tw := kernel.TimeWarpConfig{Workers: 1, StateSaving: kernel.StateSavingReverse, CheckRollbacks: true,
				NoRemoteSafe: r == 1}
			if r == 2 {
				tw.Workers = 2
			}
			s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 6, Type: kernel.TimeWarp, Transport: trs[r],
				TimeWarp: tw}, build())
			if err != nil {
				errs[r] = err
				return
			}
			res[r], errs[r] = s.Run(t.Context())
			if errs[r] != nil {
				trs[r].Close()
			}
		})
	}
	wg.Wait()
	for r := range 3 {
		require.NoError(t, errs[r], "rank %d", r)
		require.Equal(t, want.Digest, res[r].Digest, "rank %d digest", r)
	}
	for r := range 3 {
		trs[r].Close()
	}
	t.Logf("%d of %d committed events safe, %d promises", res[0].SafeEvents, res[0].EventsCommitted, res[0].PromisesSent)
}

// TestRemoteSafeOffWhenCrowded checks that safe events across processes are off by
// default where the launcher says the node runs more ranks than it has CPUs, and on there
// with RemoteSafeCrowded; both give the sequential digest.
func TestRemoteSafeOffWhenCrowded(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1000000") // more ranks on the node than any has CPUs
	require.True(t, comm.Crowded())
	const end = 8
	build, want := lookaheadPHOLD(t, 2048, end, 5)
	for _, tc := range []struct {
		name    string
		crowded bool
	}{{"default: off", false}, {"RemoteSafeCrowded: on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kernel.Config{MaxSimTime: end, Seed: 5, TimeWarp: kernel.TimeWarpConfig{Workers: 1,
				StateSaving: kernel.StateSavingReverse, RemoteSafeCrowded: tc.crowded}}
			res, errs := runRanks(t, 2, comm.LoopbackOptions{}, cfg, build, nil)
			requireRanksMatch(t, want, res, errs)
			if tc.crowded {
				require.NotZero(t, res[0].PromisesSent, "no promise sent with RemoteSafeCrowded")
			} else {
				require.Zero(t, res[0].PromisesSent, "promises sent on a crowded node")
				require.Zero(t, res[0].SafeEvents, "safe events on a crowded node")
			}
		})
	}
}

// lookaheadPHOLD returns the builder of PHOLD with lps LPs and a lookahead of 0.9 (most of
// its events safe across processes), and the result of its sequential run to end with seed.
func lookaheadPHOLD(t *testing.T, lps int, end float64, seed uint64) (func(int) []kernel.LogicalProcess, kernel.Result) {
	t.Helper()
	c := phold.DefaultConfig()
	c.LPs, c.Lookahead = lps, 0.9
	build := func(int) []kernel.LogicalProcess {
		ls, err := phold.New(c)
		require.NoError(t, err)
		return ls
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed}, build(0))
	require.NoError(t, err)
	want, err := s.Run(t.Context())
	require.NoError(t, err)
	return build, want
}
