package dispatch_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/partition"
)

// The loopback observers of distributed_test.go check TQ-GVT as they check the other
// methods: SetGVT fails a run whose GVT decreases, CheckRollbacks fails one where an event
// arrives or is processed below GVT (a GVT above the true minimum), and runRanks checks
// that no event is left in flight after termination; the digests must be the sequential
// ones.

// TestTQAcrossProcessesMatchesSequential is the determinism matrix of TQ-GVT: PHOLD and
// PCS over 2, 3 and 4 loopback ranks times 1 and 2 workers, with delays, reordering
// across pairs and a slow rank.
func TestTQAcrossProcessesMatchesSequential(t *testing.T) {
	for _, m := range raceShort(smallModels(t)[:2]) {
		want := sequentialResult(t, m, 7)
		for _, ranks := range []int{2, 3, 4} {
			for _, workers := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/ranks=%d/workers=%d", m.name, ranks, workers), func(t *testing.T) {
					t.Parallel() // the runs wait on one another's ranks more than they compute
					var part partition.Partitioner = partition.Blocks{}
					if workers == 2 {
						part = partition.RoundRobin{Block: 3}
					}
					opts := comm.LoopbackOptions{Seed: uint64(ranks*10 + workers), MaxDelay: 5, Reorder: true,
						Slow: map[int]int{ranks - 1: 3}}
					cfg := kernel.Config{MaxSimTime: m.end, Seed: 7, Partition: part,
						TimeWarp: kernel.TimeWarpConfig{Workers: workers, GVTMethod: kernel.GVTTQ, GVTPeriod: 200_000,
							MaxAggregate: 1 + ranks*workers%4, CheckRollbacks: true}}
					sims := make([]*dispatch.Simulation, ranks)
					res, errs := runRanks(t, ranks, opts, cfg, func(int) []kernel.LogicalProcess { return m.build() }, sims)
					requireRanksMatch(t, want, res, errs)
					require.Greater(t, res[0].GVTCycles, uint64(1), "GVT was agreed on at most once")
					// The ranks' quanta stay in step (dist's tqLead): a rank whose workers
					// want GVT does not run its quantum numbers away from the slow rank's,
					// which made the master's GVT ever staler and runs ever slower.
					require.LessOrEqual(t, sims[0].TQWaiting(), 2, "boundaries waiting at the master")
				})
			}
		}
	}
}

// TestTQSlowLinks runs TQ-GVT with links so slow that events stay in flight across many
// quanta (the master keeps incomplete quanta for several boundaries), with a tree of
// masters under slow links, and with a rank without LPs.
func TestTQSlowLinks(t *testing.T) {
	m := raceShort(smallModels(t))[0]
	want := sequentialResult(t, m, 3)
	for seed := range uint64(2) {
		opts := comm.LoopbackOptions{Seed: seed, MaxDelay: 3, Reorder: true,
			SlowPairs: map[[2]int]int{{2, 1}: 400, {1, 0}: 200, {0, 2}: 300}}
		cfg := kernel.Config{MaxSimTime: m.end, Seed: 3,
			TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: kernel.GVTTQ, GVTPeriod: 20_000, CheckRollbacks: true}}
		res, errs := runRanks(t, 3, opts, cfg, func(int) []kernel.LogicalProcess { return m.build() }, nil)
		require.NoError(t, errors.Join(errs...))
		for r := range 3 {
			require.Equal(t, want.Digest, res[r].Digest)
		}
	}
	// 20 ranks: a tree of masters (groups of 5), with slow links from a member to its
	// leader and from a leader to rank 0.
	opts := comm.LoopbackOptions{Seed: 5, MaxDelay: 3, Reorder: true, SlowPairs: map[[2]int]int{{7, 5}: 200, {5, 0}: 300, {12, 3}: 100}}
	tcfg := kernel.Config{MaxSimTime: m.end, Seed: 3,
		TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: kernel.GVTTQ, GVTPeriod: 50_000, CheckRollbacks: true}}
	res, errs := runRanks(t, 20, opts, tcfg, func(int) []kernel.LogicalProcess { return m.build() }, nil)
	require.NoError(t, errors.Join(errs...))
	for r := range 20 {
		require.Equal(t, want.Digest, res[r].Digest)
	}
	require.Greater(t, res[0].GVTCycles, uint64(1))
	cfg := kernel.Config{MaxSimTime: m.end, Seed: 3, Partition: allOnRank{0},
		TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: kernel.GVTTQ, GVTPeriod: 100_000}}
	res, errs = runRanks(t, 3, comm.LoopbackOptions{Seed: 2, MaxDelay: 4}, cfg,
		func(int) []kernel.LogicalProcess { return m.build() }, nil)
	require.NoError(t, errors.Join(errs...))
	for r := range 3 {
		require.Equal(t, want.Digest, res[r].Digest)
	}
}

// TestTQRankFailureStopsEveryRank checks that a model panic on one rank ends a TQ-GVT run
// on every rank with that error.
func TestTQRankFailureStopsEveryRank(t *testing.T) {
	cfg := kernel.Config{MaxSimTime: 50, Seed: 1, TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: kernel.GVTTQ}}
	_, errs := runRanks(t, 3, comm.LoopbackOptions{Seed: 1, MaxDelay: 3}, cfg,
		func(rank int) []kernel.LogicalProcess { return ringLPs(12, 20) }, nil)
	for r := range 3 {
		require.ErrorContains(t, errs[r], "boom at 20", "rank %d", r)
	}
}

// TestGVTMethodsAtManyRanks checks every GVT method at up to 64 loopback ranks (16 under
// the race detector): a small PHOLD, two LPs per rank, with delays and reordering.
func TestGVTMethodsAtManyRanks(t *testing.T) {
	counts := []int{8, 16, 32, 64}
	if raceEnabled || testing.Short() {
		counts = []int{8, 16}
	}
	for _, ranks := range counts {
		build := func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs = 2 * ranks
			c.StartEvents = 1
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}
		end := underRace(25.0, 12) // racesize_test.go
		seq, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 11}, build())
		require.NoError(t, err)
		want, err := seq.Run(t.Context())
		require.NoError(t, err)
		for _, method := range []string{kernel.GVTAsynchronous, kernel.GVTSynchronous, kernel.GVTTQ} {
			t.Run(fmt.Sprintf("ranks=%d/%s", ranks, method), func(t *testing.T) {
				opts := comm.LoopbackOptions{Seed: uint64(ranks), MaxDelay: 3, Reorder: true}
				cfg := kernel.Config{MaxSimTime: end, Seed: 11,
					TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: method, GVTPeriod: 100_000, CheckRollbacks: true}}
				res, errs := runRanks(t, ranks, opts, cfg, func(int) []kernel.LogicalProcess { return build() }, nil)
				for r := range ranks {
					require.NoError(t, errs[r], "rank %d", r)
					require.Equal(t, want.Digest, res[r].Digest, "rank %d digest", r)
				}
				if method == kernel.GVTTQ {
					// (A token round may outlast these short runs at 32 ranks and more.)
					require.Positive(t, res[0].GVTCycles, "no GVT was agreed on")
				}
			})
		}
	}
}
