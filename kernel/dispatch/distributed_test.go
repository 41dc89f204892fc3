package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
)

// The protocol properties are checked by observers that see every rank of a loopback run
// (all ranks live in this test process), over many seeded runs with delays, reordering and
// slow ranks and links:
//
//   - GVT never decreases: every rank installs each GVT with gvt.Fujimoto.SetGVT, which
//     fails the run on a decrease;
//   - GVT never exceeds the true minimum over unprocessed and in-flight events, and no
//     event arrives below GVT: with CheckRollbacks (set in these tests) a rank panics,
//     failing the run, when an event is delivered below its GVT or processed below it (an
//     event below a GVT that exceeded the true minimum must do one or the other, or be
//     annihilated by an anti-message that does);
//   - termination only when nothing is pending or in flight: runRanks checks that no event
//     message is left in the loopback network, and every rank must commit exactly the
//     sequential number of events and reach the sequential digest;
//   - more than two token laps in some runs: TestGVTTokenNeedsMoreLaps.

// runRanks runs one simulation per rank of a loopback network concurrently, each with a
// freshly built model, and returns every rank's result and error.
func runRanks(t testing.TB, ranks int, opts comm.LoopbackOptions, cfg kernel.Config,
	build func(rank int) []kernel.LogicalProcess, sims []*dispatch.Simulation) ([]kernel.Result, []error) {
	t.Helper()
	trs := comm.NewLoopback(ranks, opts)
	res := make([]kernel.Result, ranks)
	errs := make([]error, ranks)
	// No deadline: an honest run on a loaded machine may take long; a hang is caught by
	// go test's -timeout.
	ctx := context.Background()
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Type = kernel.TimeWarp
			c.Transport = trs[r]
			s, err := dispatch.New(c, build(r))
			if err != nil {
				errs[r] = err
				return
			}
			if sims != nil {
				sims[r] = s
			}
			res[r], errs[r] = s.Run(ctx)
			if errs[r] != nil {
				trs[r].Close() // a failed rank leaves; collectives of the others must not wait for it
			}
		}()
	}
	wg.Wait()
	ok := true
	for r := range ranks {
		ok = ok && errs[r] == nil
	}
	if ok {
		// Termination is declared only when no event is in flight (Run fails if an event
		// arrives after it), and Run receives every message sent to its rank before it
		// returns, as MPI_Finalize requires.
		for r := range ranks {
			all, events := comm.LoopbackWaiting(trs[r])
			require.Zero(t, events, "events still in flight to rank %d after termination", r)
			require.Zero(t, all, "messages left unreceived at rank %d after the run", r)
		}
	}
	for r := range ranks {
		trs[r].Close()
	}
	return res, errs
}

// requireRanksMatch checks that every rank of a run across processes succeeded and
// committed what the sequential run want did: its digest and its number of events, and
// that each rank's processed events are its committed and rolled-back ones.
func requireRanksMatch(t *testing.T, want kernel.Result, res []kernel.Result, errs []error) {
	t.Helper()
	for r := range res {
		require.NoError(t, errs[r], "rank %d", r)
		require.Equal(t, want.Digest, res[r].Digest, "rank %d digest", r)
		require.Equal(t, want.EventsCommitted, res[r].EventsCommitted, "rank %d committed", r)
		require.Equal(t, res[r].EventsProcessed, res[r].EventsCommitted+res[r].EventsRolledBack)
	}
}

func sequentialResult(t *testing.T, m model, seed uint64) kernel.Result {
	t.Helper()
	s, err := dispatch.New(kernel.Config{MaxSimTime: m.end, Seed: seed}, m.build())
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r
}

// TestAcrossProcessesMatchesSequential is the determinism matrix across processes: PHOLD
// and PCS digests over loopback ranks equal the sequential digests for 2, 3 and 4 ranks
// times 1 and 2 workers, with fault injection (delays, reordering across pairs, a slow
// rank), both GVT methods and both partitioners, every rollback checked, aggressive and lazy
// cancellation, and batched event handling on the CPU backend in some.
func TestAcrossProcessesMatchesSequential(t *testing.T) {
	be := cpuBackend(t)
	for _, m := range raceShort(smallModels(t)) {
		want := sequentialResult(t, m, 7)
		var cov coverage
		// The runs wait on one another's ranks more than they compute: side by side.
		t.Run(m.name, func(t *testing.T) {
			for _, ranks := range []int{2, 3, 4} {
				for _, workers := range []int{1, 2, 3} {
					for _, method := range []string{kernel.GVTAsynchronous, kernel.GVTSynchronous} {
						if workers == 3 && method == kernel.GVTSynchronous {
							continue
						}
						var part partition.Partitioner = partition.Blocks{}
						if workers >= 2 {
							part = partition.RoundRobin{Block: 3}
						}
						// Reuse: half the runs treat the driver's buffers as MPI's transport does.
						opts := comm.LoopbackOptions{Seed: uint64(ranks*10 + workers), MaxDelay: 5, Reorder: true,
							Slow: map[int]int{ranks - 1: 3}, Reuse: (ranks+workers)%2 == 1}
						cfg := kernel.Config{MaxSimTime: m.end, Seed: 7, Partition: part,
							TimeWarp: kernel.TimeWarpConfig{Workers: workers, GVTMethod: method, GVTPeriod: 200_000,
								MaxAggregate: 1 + ranks*workers%4, CheckRollbacks: true, Cancellation: kernel.CancelAggressive}}
						if (ranks+workers)%2 == 0 {
							cfg.TimeWarp.Cancellation = kernel.CancelLazy
						}
						if ranks == 3 && method == kernel.GVTSynchronous {
							cfg.TimeWarp.Offload, cfg.TimeWarp.BatchSize = be, 8
						}
						arrangement := "calendar, one per worker"
						if workers == 3 { // two schedule queues: workers 0 and 2 share one (group.go)
							cfg.TimeWarp.Schedulers = 2
							if ranks == 2 {
								cfg.TimeWarp.Offload, cfg.TimeWarp.BatchSize = be, 8
							}
							arrangement = "calendar, 2 shared by 3 workers"
						}
						// The name says every setting that varies, so a reader sees what ran.
						name := fmt.Sprintf("ranks=%d/workers=%d/queues=%d/%s/%s/aggregate=%d/%s/offload=%v/reuse=%v", ranks, workers,
							cfg.TimeWarp.Schedulers, method, cfg.TimeWarp.Cancellation, cfg.TimeWarp.MaxAggregate,
							strings.TrimPrefix(fmt.Sprintf("%T", part), "partition."), cfg.TimeWarp.Offload != nil, opts.Reuse)
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							res, errs := runRanks(t, ranks, opts, cfg, func(int) []kernel.LogicalProcess { return m.build() }, nil)
							requireRanksMatch(t, want, res, errs)
							for r := range ranks {
								require.Contains(t, []string{kernel.StateSavingPeriodic, kernel.StateSavingReverse}, res[r].StateSaving,
									"rank %d state saving", r)
								require.Equal(t, arrangement, res[r].ScheduleQueues, "rank %d arrangement", r)
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

// TestGVTTokenNeedsMoreLaps checks that with slow ranks and delays some GVT rounds need more
// than two laps of the token (white events still in flight after the second), and that
// such runs still end with the sequential result. The seeds vary the delays of one
// arrangement; under the race detector the test stops at the first that shows such a round.
func TestGVTTokenNeedsMoreLaps(t *testing.T) {
	m := smallModels(t)[0]
	want := sequentialResult(t, m, 3)
	most := uint32(0)
	for seed := range uint64(3) {
		opts := comm.LoopbackOptions{Seed: seed, MaxDelay: 3, Reorder: true, SlowPairs: map[[2]int]int{{2, 1}: 400, {1, 0}: 200}}
		cfg := kernel.Config{MaxSimTime: m.end, Seed: 3,
			TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTPeriod: 50_000, CheckRollbacks: true}}
		sims := make([]*dispatch.Simulation, 3)
		res, errs := runRanks(t, 3, opts, cfg, func(r int) []kernel.LogicalProcess { return m.build() }, sims)
		for r := range 3 {
			require.NoError(t, errs[r])
			require.Equal(t, want.Digest, res[r].Digest)
		}
		most = max(most, sims[0].GVTLaps())
		t.Logf("seed %d: most laps %d", seed, sims[0].GVTLaps())
		if raceEnabled && most > 2 {
			break
		}
	}
	require.Greater(t, most, uint32(2), "no GVT round needed more than two laps")
}

// TestRankFailureStopsEveryRank checks that a model panic on one rank ends the run on every
// rank with that error, under both GVT methods, instead of hanging.
func TestRankFailureStopsEveryRank(t *testing.T) {
	for _, method := range []string{kernel.GVTAsynchronous, kernel.GVTSynchronous} {
		t.Run(method, func(t *testing.T) {
			cfg := kernel.Config{MaxSimTime: 50, Seed: 1, TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: method}}
			res, errs := runRanks(t, 3, comm.LoopbackOptions{Seed: 1, MaxDelay: 3}, cfg,
				func(rank int) []kernel.LogicalProcess { return ringLPs(12, 20) }, nil)
			_ = res
			for r := range 3 {
				require.Error(t, errs[r], "rank %d", r)
				require.Contains(t, errs[r].Error(), "boom at 20", "rank %d", r)
			}
		})
	}
}

// TestConfigurationMismatchNamesTheKey checks that ranks started with different settings
// all stop before running, naming the setting; where the model differs (an MPMD launch of
// two models), naming the model, not one of the flags that differ with it.
func TestConfigurationMismatchNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agree func(r int) map[string]string
		want  string
	}{
		{"a flag", func(r int) map[string]string {
			return map[string]string{"lps": "12", "remote": fmt.Sprint(0.25 * float64(r+1))}
		}, "configuration differs between ranks: remote is"},
		{"the model", func(r int) map[string]string {
			if r == 0 {
				return map[string]string{"model": "phold", "--grain": "0"}
			}
			return map[string]string{"model": "pcs", "--channel-cnt": "15"}
		}, `configuration differs between ranks: model is "phold" on rank 0 but "pcs" on rank 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kernel.Config{MaxSimTime: 50, Seed: 1, TimeWarp: kernel.TimeWarpConfig{Workers: 1}}
			trs := comm.NewLoopback(2, comm.LoopbackOptions{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := cfg
					c.Type, c.Transport = kernel.TimeWarp, trs[r]
					c.Agree = tc.agree(r)
					s, err := dispatch.New(c, ringLPs(12, -1))
					require.NoError(t, err)
					_, errs[r] = s.Run(context.Background())
				}()
			}
			wg.Wait()
			for r := range 2 {
				require.ErrorContains(t, errs[r], tc.want)
			}
		})
	}
}

// TestRankWithoutLPs checks that a rank that runs no LP at all neither blocks the protocols
// nor changes the result.
func TestRankWithoutLPs(t *testing.T) {
	m := smallModels(t)[0]
	want := sequentialResult(t, m, 5)
	for _, method := range []string{kernel.GVTAsynchronous, kernel.GVTSynchronous} {
		cfg := kernel.Config{MaxSimTime: m.end, Seed: 5, Partition: allOnRank{0},
			TimeWarp: kernel.TimeWarpConfig{Workers: 1, GVTMethod: method, GVTPeriod: 100_000}}
		res, errs := runRanks(t, 3, comm.LoopbackOptions{Seed: 2, MaxDelay: 4}, cfg,
			func(int) []kernel.LogicalProcess { return m.build() }, nil)
		for r := range 3 {
			require.NoError(t, errs[r])
			require.Equal(t, want.Digest, res[r].Digest)
		}
	}
}

// allOnRank puts every LP into one part.
type allOnRank struct{ part int }

func (a allOnRank) Partition(n, parts int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = a.part
	}
	return out
}

// ringLP passes events around a ring of LPs; the last LP panics at time panicAt (never
// when panicAt < 0).
type ringLP struct {
	kernel.Plain[struct{ Count int }]
	id, n    int
	panicAt  float64
	initNext bool // Init sends to the next LP, not to itself
}

func ringLPs(n int, panicAt float64) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &ringLP{id: i, n: n, panicAt: panicAt}
	}
	return lps
}

func (l *ringLP) Name() string { return fmt.Sprint("ring", l.id) }

func (l *ringLP) Init(ctx *kernel.Context) {
	to := ctx.Self()
	if l.initNext {
		to = kernel.LPID((l.id + 1) % l.n)
	}
	ctx.SendWords(to, 1, kernel.Words{})
}

func (l *ringLP) Handle(ctx *kernel.Context, _ *kernel.Event) {
	if l.id == l.n-1 && ctx.Now() == l.panicAt {
		panic(fmt.Sprintf("boom at %v", ctx.Now()))
	}
	l.S.Count++
	ctx.SendWords(kernel.LPID((l.id+1)%l.n), ctx.Now()+1, kernel.Words{})
}

// TestLocalTransportRunsInOneProcess checks that a single-rank transport runs the model as
// a run without one does.
func TestLocalTransportRunsInOneProcess(t *testing.T) {
	m := smallModels(t)[1]
	want := sequentialResult(t, m, 9)
	s, err := dispatch.New(kernel.Config{MaxSimTime: m.end, Seed: 9, Type: kernel.TimeWarp, Transport: comm.NewLocal(),
		TimeWarp: kernel.TimeWarpConfig{Workers: 2}}, m.build())
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, want.Digest, r.Digest)
}
