package dispatch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/pcs"
	"github.com/warpedgo/warped/models/phold"
)

// model builds a fresh set of LPs for one run.
type model struct {
	name  string
	end   float64
	build func() []kernel.LogicalProcess
	// reversible: every LP implements kernel.Reverser.
	reversible bool
	// raceEnd is the end time of the model's runs in the matrices under the race detector
	// (raceShort; 0: end).
	raceEnd float64
}

// smallModels are the models of the determinism matrices: a few thousand events each
// (PHOLD about 3,800, PCS 2,500, zero-lookahead PHOLD 1,200), about 40% of that in the
// matrices under the race detector (raceShort).
func smallModels(t *testing.T) []model {
	return []model{
		{"phold", 30, func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs = 64
			c.StartEvents = 2
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}, true, 12},
		{"pcs", 150, func() []kernel.LogicalProcess {
			c := pcs.DefaultConfig()
			c.CellsX, c.CellsY, c.Portables = 4, 4, 8
			c.CallInterval, c.CallDuration, c.MoveInterval = 30, 10, 20
			lps, err := pcs.New(c)
			require.NoError(t, err)
			return lps
		}, true, 60},
		{"phold-zero-lookahead", 10, func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs = 32
			c.Lookahead = 0
			c.Remote = 1
			c.StartEvents = 4
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}, true, 4},
	}
}

// runTW runs a time-warp simulation and checks what every correct run leaves behind: no
// held outputs, every LP released and queued exactly when it has pending events, no leaked
// event record, and processed = committed + rolled back.
func runTW(t *testing.T, cfg kernel.Config, lps []kernel.LogicalProcess) dispatch.TimeWarpInternals {
	t.Helper()
	in, err := dispatch.RunTimeWarpInternals(context.Background(), cfg, lps)
	require.NoError(t, err)
	requireSettled(t, in, cfg.TimeWarp.Cancellation == "lazy", len(lps))
	return in
}

func requireSettled(t *testing.T, in dispatch.TimeWarpInternals, lazy bool, lps int) {
	t.Helper()
	require.Zero(t, in.Held, "outputs still held at the end")
	require.Zero(t, in.Unsettled, "LPs not released or wrongly queued at the end: %v", in.Debug)
	require.Zero(t, in.LeakedEvents, "event records leaked")
	require.Equal(t, in.EventsProcessed, in.EventsCommitted+in.EventsRolledBack)
	if lazy {
		require.Equal(t, lps, in.LazyLPs)
	} else {
		require.Zero(t, in.LazyLPs)
		require.Zero(t, in.Suppressed)
	}
}

// twCase is one time-warp configuration of a determinism matrix. Its name (String) lists
// every field, so each subtest says what it ran.
type twCase struct {
	workers, schedulers int    // schedulers 0: one schedule queue per worker
	offload             int    // -1: no offload; else the CPU backend with this batch size (0: tuned)
	lock, stateSaving   string // stateSaving reverse runs periodic for a model without Reverse
	period              int    // state-saving period
	gvtMicros           int    // GVT period in microseconds
	window              bool   // an optimism window of a tenth of the end time
	cancellation        string
	check               bool // CheckRollbacks
	namedQueue          bool // QueueType calendar given, not left to the default
}

func (c twCase) String() string {
	s := fmt.Sprintf("w%d-s%d-off%d-%s-%s-p%d-gvt%dus-win%v-%s-check%v", c.workers, c.schedulers,
		c.offload, c.lock, c.stateSaving, c.period, c.gvtMicros, c.window, c.cancellation, c.check)
	if c.namedQueue {
		s += "-calendar"
	}
	return s
}

// config returns the case's configuration for model m, with be as the CPU backend.
func (c twCase) config(m model, be gpuoffload.Backend) kernel.TimeWarpConfig {
	tw := kernel.TimeWarpConfig{Workers: c.workers, Schedulers: c.schedulers, LockType: c.lock,
		StateSaving: c.stateSaving, StateSavingPeriod: c.period, Cancellation: c.cancellation,
		GVTPeriod: time.Duration(c.gvtMicros) * time.Microsecond, CheckRollbacks: c.check}
	if !m.reversible {
		tw.StateSaving = kernel.StateSavingPeriodic
	}
	if c.window {
		tw.OptimismWindow = m.end / 10
	}
	if c.namedQueue {
		tw.QueueType = kernel.QueueCalendar
	}
	if c.offload >= 0 {
		tw.Offload, tw.BatchSize = be, c.offload
	}
	return tw
}

// sharedCases are TestDeterminismMatrixSharedQueues' configurations: for 2, 3, 4 and 8 workers,
// each of no offload and offload with a tuned and a fixed batch size, with both lock
// types; across them every schedule-queue count from 1 to workers-1 at least once for 2
// to 4 workers, both state-saving types, every period, both cancellations, the three GVT
// periods, with and without a window and the rollback check.
var sharedCases = []twCase{
	// workers, schedulers, offload, lock, state saving, period, GVT µs, window, cancellation, check, named queue
	{2, 1, -1, "ticket", "reverse", 2, 500, false, "aggressive", false, false},
	{2, 1, -1, "mutex", "periodic", 7, 900, false, "lazy", true, false},
	{2, 1, 0, "ticket", "periodic", 32, 100, true, "aggressive", true, false},
	{2, 1, 0, "mutex", "reverse", 1, 500, false, "aggressive", false, false},
	{2, 1, 16, "ticket", "periodic", 2, 900, false, "lazy", false, false},
	{2, 1, 16, "mutex", "reverse", 7, 100, true, "aggressive", false, false},
	{3, 2, -1, "ticket", "reverse", 32, 500, false, "lazy", true, false},
	{3, 1, -1, "mutex", "periodic", 1, 900, false, "lazy", false, false},
	{3, 2, 0, "ticket", "periodic", 2, 100, true, "aggressive", false, false},
	{3, 1, 0, "mutex", "periodic", 7, 500, false, "lazy", true, false},
	{3, 2, 16, "ticket", "periodic", 32, 900, false, "aggressive", false, false},
	{3, 1, 16, "mutex", "reverse", 1, 100, true, "aggressive", true, false},
	{4, 2, -1, "ticket", "reverse", 2, 500, false, "lazy", false, false},
	{4, 3, -1, "mutex", "periodic", 7, 900, false, "aggressive", false, false},
	{4, 1, 0, "ticket", "reverse", 32, 100, true, "lazy", false, false},
	{4, 2, 0, "mutex", "periodic", 1, 500, false, "lazy", false, false},
	{4, 3, 16, "ticket", "periodic", 2, 900, false, "aggressive", true, false},
	{4, 1, 16, "mutex", "reverse", 7, 100, true, "lazy", false, false},
	{8, 6, -1, "ticket", "reverse", 32, 500, false, "aggressive", false, false},
	{8, 7, -1, "mutex", "reverse", 1, 900, false, "aggressive", false, false},
	{8, 1, 0, "ticket", "reverse", 2, 100, true, "lazy", false, false},
	{8, 2, 0, "mutex", "periodic", 7, 500, false, "aggressive", true, false},
	{8, 3, 16, "ticket", "periodic", 32, 900, false, "lazy", false, false},
	{8, 4, 16, "mutex", "reverse", 1, 100, true, "lazy", true, false},
}

// TestDeterminismMatrixSharedQueues is the core oracle for shared schedule queues (fewer schedule
// queues than workers: groups of workers share a queue, group.go): every configuration
// of sharedCases commits exactly what the sequential dispatcher commits, digest for digest.
func TestDeterminismMatrixSharedQueues(t *testing.T) {
	be := cpuBackend(t)
	for _, m := range raceShort(smallModels(t)) {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5}, m.build())
		var cov coverage
		for _, c := range sharedCases {
			tw := c.config(m, be)
			t.Run(m.name+"/"+c.String(), func(t *testing.T) {
				r := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 5, Type: kernel.TimeWarp, TimeWarp: tw}, m.build())
				require.Equal(t, fmt.Sprintf("calendar, %d shared by %d workers", tw.Schedulers, tw.Workers), r.ScheduleQueues)
				require.Equal(t, seq.Digest, r.Digest)
				require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
				cov.add(r.Result)
			})
		}
		cov.check(t, m.name, true)
	}
}

// ownCases are TestDeterminismMatrixOwnQueues' configurations (one schedule queue per
// worker): 1, 2, 3, 4 and 8 workers, each with both lock types and both state-saving
// types; across them every period, both cancellations, the three GVT periods, with and
// without a window and the rollback check, offload with batch sizes tuned, 1 and 16, and
// the queue type named or left to its default (which must be the same).
var ownCases = []twCase{
	// workers, schedulers, offload, lock, state saving, period, GVT µs, window, cancellation, check, named queue
	{1, 0, 1, "ticket", "periodic", 2, 500, false, "aggressive", true, false},
	{1, 0, -1, "ticket", "reverse", 7, 900, false, "lazy", true, true},
	{1, 0, -1, "mutex", "periodic", 32, 100, true, "aggressive", false, false},
	{1, 0, -1, "mutex", "reverse", 1, 500, false, "aggressive", true, true},
	{2, 0, 16, "ticket", "periodic", 2, 900, false, "lazy", false, false},
	{2, 0, -1, "ticket", "reverse", 7, 100, true, "aggressive", false, true},
	{2, 0, -1, "mutex", "periodic", 32, 500, false, "lazy", true, false},
	{2, 0, -1, "mutex", "reverse", 1, 900, false, "lazy", false, true},
	{3, 0, 0, "ticket", "periodic", 2, 100, true, "aggressive", false, false},
	{3, 0, -1, "ticket", "reverse", 7, 500, false, "lazy", true, true},
	{3, 0, -1, "mutex", "periodic", 32, 900, false, "aggressive", false, false},
	{3, 0, -1, "mutex", "reverse", 1, 100, true, "aggressive", true, true},
	{4, 0, 1, "ticket", "periodic", 2, 500, false, "lazy", true, false},
	{4, 0, -1, "ticket", "reverse", 7, 900, false, "aggressive", false, true},
	{4, 0, -1, "mutex", "periodic", 32, 100, true, "lazy", false, false},
	{4, 0, -1, "mutex", "reverse", 1, 500, false, "lazy", true, true},
	{8, 0, 16, "ticket", "periodic", 2, 900, false, "aggressive", true, false},
	{8, 0, -1, "ticket", "reverse", 7, 100, true, "lazy", false, true},
	{8, 0, -1, "mutex", "periodic", 32, 500, false, "aggressive", true, false},
	{8, 0, -1, "mutex", "reverse", 1, 900, false, "aggressive", false, true},
}

// TestDeterminismMatrixOwnQueues is the determinism oracle for one schedule queue per
// worker: every configuration of ownCases commits what the sequential dispatcher commits.
func TestDeterminismMatrixOwnQueues(t *testing.T) {
	be := cpuBackend(t)
	for _, m := range raceShort(smallModels(t)) {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5}, m.build())
		var cov coverage
		for _, c := range ownCases {
			tw := c.config(m, be)
			t.Run(m.name+"/"+c.String(), func(t *testing.T) {
				r := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 5, Type: kernel.TimeWarp, TimeWarp: tw}, m.build())
				require.Equal(t, "calendar, one per worker", r.ScheduleQueues)
				require.Equal(t, seq.Digest, r.Digest)
				require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
				cov.add(r.Result)
			})
		}
		cov.check(t, m.name, true)
	}
}

// TestInitSendsAcrossWorkers checks the engine's parallel Init: initial
// events for another worker's LPs (here the last LP of each worker's block sends to the
// next worker's first) reach them, and the run matches the sequential one.
func TestInitSendsAcrossWorkers(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		lps := ringLPs(64, -1)
		for _, lp := range lps {
			lp.(*ringLP).initNext = true
		}
		return lps
	}
	seq := run(t, kernel.Config{MaxSimTime: 30, Seed: 2}, build())
	for _, workers := range []int{2, 3} {
		r := runTW(t, kernel.Config{MaxSimTime: 30, Seed: 2, Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: workers}}, build())
		require.Equal(t, seq.Digest, r.Digest, "workers %d", workers)
		require.Equal(t, seq.EventsCommitted, r.EventsCommitted, "workers %d", workers)
	}
}

// TestRollbacksHappenPerStateSaving is TestRollbacksHappen for each state-saving kind,
// with one schedule queue per worker: rollbacks, anti-messages, secondary rollbacks and
// (periodic) coast forward occur, and the result is the sequential one.
func TestRollbacksHappenPerStateSaving(t *testing.T) {
	build := zeroLookaheadPHOLD(t, 64, 8)
	end := underRace(20.0, 8) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 9}, build())
	for _, ss := range []string{"periodic", "reverse"} {
		var rolled, anti, coast, second uint64
		for attempt := 0; attempt < 5 && (rolled == 0 || anti == 0 || second == 0 || (coast == 0 && ss == "periodic")); attempt++ {
			r := runTW(t, kernel.Config{MaxSimTime: end, Seed: 9, Type: kernel.TimeWarp,
				TimeWarp: kernel.TimeWarpConfig{Workers: 8, StateSavingPeriod: 4, StateSaving: ss}}, build())
			require.Equal(t, seq.Digest, r.Digest)
			rolled += r.EventsRolledBack
			anti += r.AntiMessagesSent
			coast += r.CoastForwardEvents
			second += r.SecondaryRollbacks
		}
		require.NotZero(t, rolled, "%s: no rollback happened", ss)
		require.NotZero(t, anti, "%s: no anti-message was sent", ss)
		require.NotZero(t, second, "%s: no anti-message rolled back a processed twin", ss)
		if ss == "periodic" {
			require.NotZero(t, coast, "no coast forward happened")
		}
	}
}

// TestLogCompaction runs the engine with its history log bounded to a
// few dozen entries, so that full logs are compacted again and again ([statemgr.History] compaction drops
// rolled-back and committed entries from anywhere in the log and renumbers the rest), on
// models with rollbacks, under both state-saving kinds: the result must stay the
// sequential one, and the log must stay near its bound.
func TestLogCompaction(t *testing.T) {
	for _, m := range smallModels(t) {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 3}, m.build())
		for _, workers := range []int{2, 3, 4} {
			for _, ss := range []string{"periodic", "reverse"} {
				if ss == "reverse" && !m.reversible {
					continue
				}
				for _, period := range []int{1, 3} {
					name := fmt.Sprintf("%s/w%d-%s-p%d", m.name, workers, ss, period)
					t.Run(name, func(t *testing.T) {
						cfg := kernel.Config{MaxSimTime: m.end, Seed: 3, Type: kernel.TimeWarp,
							TimeWarp: kernel.TimeWarpConfig{Workers: workers, StateSaving: ss, StateSavingPeriod: period,
								GVTPeriod: 200 * time.Microsecond}}
						in, err := dispatch.RunTimeWarpInternalsLogMax(context.Background(), cfg, m.build(), 48)
						require.NoError(t, err)
						requireSettled(t, in, false, 0)
						require.Equal(t, seq.Digest, in.Digest)
						require.Equal(t, seq.EventsCommitted, in.EventsCommitted)
						require.NotZero(t, in.Compactions, "the log was never compacted")
						require.LessOrEqual(t, in.CompactPeak, 2*48, "the log grew far past its bound")
					})
				}
			}
		}
	}
}

// TestCommitHorizon: in a run in one process, fossil collection commits events at GVT's
// time too, those below the commit horizon's key (PCS's times are integers, so most of its
// events share their time with others), and the result is the sequential one. (Across
// processes the horizon is GVT's time; the distributed tests cover that path.)
func TestCommitHorizon(t *testing.T) {
	m := smallModels(t)[1]
	seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 3}, m.build())
	for _, workers := range []int{1, 2, 3} {
		for _, ss := range []string{"periodic", "reverse"} {
			cfg := kernel.Config{MaxSimTime: m.end, Seed: 3, Type: kernel.TimeWarp,
				TimeWarp: kernel.TimeWarpConfig{Workers: workers, StateSaving: ss, StateSavingPeriod: 3,
					GVTPeriod: 100 * time.Microsecond}}
			in, err := dispatch.RunTimeWarpInternals(context.Background(), cfg, m.build())
			require.NoError(t, err)
			requireSettled(t, in, false, 0)
			require.Equal(t, seq.Digest, in.Digest, "%d workers, %s", workers, ss)
			if workers == 1 && ss == "reverse" {
				// One worker's events are safe once a round ended (TestSafeEvents): how
				// many were logged before depends on when that was.
				continue
			}
			require.NotZero(t, in.CommittedAtGVT, "%d workers, %s: nothing committed at GVT's time", workers, ss)
		}
	}
}

// TestLongGVTPeriod: a GVT period far longer than the run does not hold its end: the
// manager must not wait for its next tick once the workers have finished.
func TestLongGVTPeriod(t *testing.T) {
	m := smallModels(t)[0]
	seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 2}, m.build())
	for _, tw := range []kernel.TimeWarpConfig{{Workers: 1}, {Workers: 2}, {Workers: 2, Schedulers: 1}} {
		tw.GVTPeriod = time.Hour
		cfg := kernel.Config{MaxSimTime: m.end, Seed: 2, Type: kernel.TimeWarp, TimeWarp: tw}
		in, err := dispatch.RunTimeWarpInternals(context.Background(), cfg, m.build()) // a hang: go test -timeout
		require.NoError(t, err, "%+v", tw)
		require.Equal(t, seq.Digest, in.Digest, "%+v", tw)
	}
}

// TestSafeEvents: with reverse computation in one process, a worker commits the events
// below its safe bound as it processes them, without logging them (with one worker, all
// once a GVT round ended), and the results are the sequential ones; with periodic state
// saving, whose coast forward needs every event, none. The models are larger than
// smallModels', so that the workers run side by side long enough: PHOLD declares its
// lookahead, and its zero-lookahead form rolls back a lot.
func TestSafeEvents(t *testing.T) {
	pholdOf := func(lps int, lookahead, remote float64) func() []kernel.LogicalProcess {
		return func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs, c.Lookahead, c.Remote = lps, lookahead, remote
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}
	}
	models := raceShort([]model{
		{"phold", 20, pholdOf(2048, 0.1, 0.25), true, 8},
		{"phold-zero-lookahead", 10, pholdOf(512, 0, 1), true, 4},
		{"pcs", 100, func() []kernel.LogicalProcess {
			c := pcs.DefaultConfig()
			c.CellsX, c.CellsY = 16, 16
			lps, err := pcs.New(c)
			require.NoError(t, err)
			return lps
		}, true, 60},
	})
	var shared uint64 // safe events with more than one worker, which depend on timing
	for _, m := range models {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5}, m.build())
		for _, workers := range []int{1, 2, 3} {
			for _, ss := range []string{"periodic", "reverse"} {
				cfg := kernel.Config{MaxSimTime: m.end, Seed: 5, Type: kernel.TimeWarp,
					TimeWarp: kernel.TimeWarpConfig{Workers: workers, StateSaving: ss}}
				in := runTW(t, cfg, m.build())
				name := fmt.Sprintf("%s, %d workers, %s", m.name, workers, ss)
				t.Logf("%s: %d of %d events safe, %d rolled back", name, in.SafeEvents, in.EventsProcessed, in.EventsRolledBack)
				require.Equal(t, seq.Digest, in.Digest, name)
				require.Equal(t, seq.EventsCommitted, in.EventsCommitted, name)
				switch {
				case ss == "periodic":
					require.Zero(t, in.SafeEvents, name)
				case workers == 1:
					require.Greater(t, in.SafeEvents, in.EventsProcessed/2, name)
				default:
					shared += in.SafeEvents
				}
			}
		}
	}
	require.NotZero(t, shared, "no safe events with more than one worker")
}

// TestStateSavingAuto: the default state saving is reverse computation when every LP
// implements Reverser and no period is set, periodic otherwise; the result says which,
// and is the sequential one either way.
func TestStateSavingAuto(t *testing.T) {
	models := smallModels(t)
	phold, pcs := models[0], models[1]
	for _, c := range []struct {
		m    model
		tw   kernel.TimeWarpConfig
		want string
	}{
		{phold, kernel.TimeWarpConfig{Workers: 2}, kernel.StateSavingReverse},
		{phold, kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingAuto}, kernel.StateSavingReverse},
		{phold, kernel.TimeWarpConfig{Workers: 2, StateSavingPeriod: 4}, kernel.StateSavingPeriodic},
		{phold, kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingPeriodic}, kernel.StateSavingPeriodic},
		{pcs, kernel.TimeWarpConfig{Workers: 2}, kernel.StateSavingReverse},
		{model{"ping-pong", 20, pingPong, false, 0}, kernel.TimeWarpConfig{Workers: 2}, kernel.StateSavingPeriodic},
	} {
		seq := run(t, kernel.Config{MaxSimTime: c.m.end, Seed: 5}, c.m.build())
		s, err := dispatch.New(kernel.Config{MaxSimTime: c.m.end, Seed: 5, Type: kernel.TimeWarp, TimeWarp: c.tw}, c.m.build())
		require.NoError(t, err)
		require.Equal(t, c.want, s.StateSaving(), "%s %+v", c.m.name, c.tw)
		r, err := s.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, c.want, r.StateSaving)
		require.Equal(t, seq.Digest, r.Digest)
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: 1}, phold.build())
	require.NoError(t, err)
	require.Empty(t, s.StateSaving(), "a sequential run saves no state")
}

// TestRollbacksHappen runs a rollback-heavy configuration (zero lookahead, every event
// remote, more workers than cores) and checks that rollbacks, anti-messages and coast
// forward really occur, and that the result is still the sequential one.
func TestRollbacksHappen(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs = 64
		c.Lookahead = 0
		c.Remote = 1
		c.StartEvents = 8
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	end := underRace(20.0, 8) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 9}, build())
	var rolled, anti, coast uint64
	for attempt := 0; attempt < 5 && (rolled == 0 || anti == 0 || coast == 0); attempt++ {
		r := runTW(t, kernel.Config{MaxSimTime: end, Seed: 9, Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: 8, Schedulers: 2, StateSavingPeriod: 4}}, build())
		require.Equal(t, seq.Digest, r.Digest)
		rolled += r.EventsRolledBack
		anti += r.AntiMessagesSent
		coast += r.CoastForwardEvents
	}
	require.NotZero(t, rolled, "no rollback happened")
	require.NotZero(t, anti, "no anti-message was sent")
	require.NotZero(t, coast, "no coast forward happened")
}

func TestTimeWarpConfigErrors(t *testing.T) {
	lps := pingPong()
	for _, tc := range []struct {
		tw   kernel.TimeWarpConfig
		want string
	}{
		{kernel.TimeWarpConfig{Workers: -1}, "worker threads must be at least 1"},
		{kernel.TimeWarpConfig{Workers: kernel.MaxWorkers + 1}, "worker threads must be at most 4096, got 4097"},
		{kernel.TimeWarpConfig{Workers: 2, Schedulers: 3}, "must not exceed the worker threads"},
		{kernel.TimeWarpConfig{QueueType: "fifo"}, `time-warp queue type: unknown queue type "fifo" (want calendar, heap, splay, ladder or parallel-heap)`},
		{kernel.TimeWarpConfig{LockType: "spin"}, `unknown lock type "spin"`},
		{kernel.TimeWarpConfig{StateSavingPeriod: -2}, "state-saving period must be at least 1"},
		{kernel.TimeWarpConfig{OptimismWindow: -1}, "optimism window must be >= 0"},
		{kernel.TimeWarpConfig{Cancellation: "eager"}, `unknown time-warp cancellation "eager" (want aggressive or lazy)`},
		{kernel.TimeWarpConfig{StateSaving: "x"}, `unknown time-warp state-saving type "x" (want auto, periodic or reverse)`},
		{kernel.TimeWarpConfig{StateSaving: "reverse"}, `time-warp state-saving type reverse needs every LP to implement Reverse; LP "ping0" (id 0) does not`},
	} {
		_, err := dispatch.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp, TimeWarp: tc.tw}, lps)
		require.ErrorContains(t, err, tc.want)
	}
}

// rollbackHeavy is a configuration that rolls back a lot on small models: more workers
// than cores, two schedule queues, and coast forward after most rollbacks.
func rollbackHeavy(cancellation string, check bool) kernel.TimeWarpConfig {
	return kernel.TimeWarpConfig{Workers: 8, Schedulers: 2, StateSavingPeriod: 4,
		Cancellation: cancellation, CheckRollbacks: check}
}

// zeroLookaheadPHOLD is PHOLD at its most rollback-prone: zero lookahead, every event remote.
func zeroLookaheadPHOLD(t *testing.T, lps, start int) func() []kernel.LogicalProcess {
	return func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs = lps
		c.Lookahead = 0
		c.Remote = 1
		c.StartEvents = start
		m, err := phold.New(c)
		require.NoError(t, err)
		return m
	}
}

// relay is a model on which lazy cancellation pays: tokens hop between random LPs and
// drop notes on the way. A note changes its receiver's state but draws nothing and sends
// nothing, so when a late note rolls an LP back, the tokens it re-executes regenerate
// exactly the sends they made before, which lazy cancellation suppresses.
type relay struct {
	kernel.Plain[relayState]
	id     kernel.LPID
	tokens int
}

type relayState struct {
	Tokens, Notes, Sum uint64
}

func (r *relay) Name() string { return fmt.Sprintf("relay%d", r.id) }

func (r *relay) Init(ctx *kernel.Context) {
	for range r.tokens {
		ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(1), kernel.Words{})
	}
}

func (r *relay) Handle(ctx *kernel.Context, ev *kernel.Event) {
	if ev.Words[0] == 1 { // a note
		r.S.Notes++
		r.S.Sum = r.S.Sum*31 + ev.Words[1] // order-sensitive
		return
	}
	r.S.Tokens++
	g := ctx.RNG()
	n := uint64(ctx.NumLPs())
	ctx.SendWords(kernel.LPID(g.Range(0, n-1)), ctx.Now()+g.Exponential(1), kernel.Words{})
	ctx.SendWords(kernel.LPID(g.Range(0, n-1)), ctx.Now()+g.Exponential(0.5), kernel.Words{1, uint64(g.Next())})
}

func relays(n, tokens int) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &relay{id: kernel.LPID(i), tokens: tokens}
	}
	return lps
}

// TestLazyCancellationSuppresses runs lazy cancellation rollback-heavy on the relay model
// and checks that regenerated sends are suppressed, that held outputs that were not
// regenerated are cancelled, and that the result is the sequential one.
func TestLazyCancellationSuppresses(t *testing.T) {
	end := underRace(20.0, 10) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 3}, relays(64, 4))
	var suppressed, anti, rolled uint64
	for attempt := 0; attempt < 10 && (suppressed == 0 || anti == 0 || rolled == 0); attempt++ {
		in := runTW(t, kernel.Config{MaxSimTime: end, Seed: 3, TimeWarp: rollbackHeavy("lazy", false)}, relays(64, 4))
		require.Equal(t, seq.Digest, in.Digest)
		require.Equal(t, seq.EventsCommitted, in.EventsCommitted)
		suppressed += in.Suppressed
		anti += in.AntiMessagesSent
		rolled += in.EventsRolledBack
	}
	require.NotZero(t, rolled, "no rollback happened")
	require.NotZero(t, suppressed, "no send was suppressed")
	require.NotZero(t, anti, "no held output was cancelled")
}

// TestLazyCancellationRollbacksHappen is TestRollbacksHappen with lazy cancellation, on
// zero-lookahead PHOLD (a re-execution regenerates its sends only when the straggler that
// caused the rollback is itself cancelled before it is processed) and PCS (whose events
// carry payload words, so that a regenerated send may differ only in content).
func TestLazyCancellationRollbacksHappen(t *testing.T) {
	for _, m := range []struct {
		name  string
		end   float64
		build func() []kernel.LogicalProcess
	}{
		// End times under the race detector: racesize_test.go.
		{"phold", underRace(20.0, 8), zeroLookaheadPHOLD(t, 64, 8)},
		{"pcs", underRace(300.0, 150), smallModels(t)[1].build},
	} {
		t.Run(m.name, func(t *testing.T) {
			seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 9}, m.build())
			var rolled, anti uint64
			for attempt := 0; attempt < 10 && (rolled == 0 || anti == 0); attempt++ {
				in := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 9, TimeWarp: rollbackHeavy("lazy", false)}, m.build())
				require.Equal(t, seq.Digest, in.Digest)
				rolled += in.EventsRolledBack
				anti += in.AntiMessagesSent
			}
			require.NotZero(t, rolled, "no rollback happened")
			require.NotZero(t, anti, "no anti-message was sent")
		})
	}
}

// noise is what the non-deterministic model reads: shared by all its LPs.
var noise atomic.Uint64

// noisy is PHOLD-like, but its handler also folds a shared counter into its state, so a
// re-executed event leaves another state than the first time.
type noisy struct {
	kernel.Plain[struct{ Events, Noise uint64 }]
	id kernel.LPID
}

func (n *noisy) Name() string { return fmt.Sprintf("noisy%d", n.id) }

func (n *noisy) Init(ctx *kernel.Context) {
	for range 8 {
		ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(1), kernel.Words{})
	}
}

func (n *noisy) Handle(ctx *kernel.Context, _ *kernel.Event) {
	n.S.Events++
	n.S.Noise += noise.Add(1) // the bug: not a function of the state, the event and the RNG
	g := ctx.RNG()
	ctx.SendWords(kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1))), ctx.Now()+g.Exponential(1), kernel.Words{})
}

// aliasing keeps its state in a slice and its Snapshot returns that very slice, so saved
// states change with the live one and a rollback restores the present.
type aliasing struct {
	counts []uint64
	id     kernel.LPID
}

func (a *aliasing) Name() string         { return fmt.Sprintf("alias%d", a.id) }
func (a *aliasing) Snapshot(dst any) any { return a.counts } // the bug: no copy
func (a *aliasing) Restore(src any)      { a.counts = src.([]uint64) }

func (a *aliasing) Init(ctx *kernel.Context) {
	a.counts = make([]uint64, 4)
	for range 8 {
		ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(1), kernel.Words{})
	}
}

func (a *aliasing) Handle(ctx *kernel.Context, _ *kernel.Event) {
	g := ctx.RNG()
	a.counts[g.Range(0, 3)]++
	ctx.SendWords(kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1))), ctx.Now()+g.Exponential(1), kernel.Words{})
}

// checkFails runs build rollback-heavy with CheckRollbacks until a run fails (a run without
// a rollback that needs checking succeeds) and returns the error.
func checkFails(t *testing.T, cancellation string, build func() []kernel.LogicalProcess) error {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		s, err := dispatch.New(kernel.Config{MaxSimTime: 20, Seed: 4, Type: kernel.TimeWarp,
			TimeWarp: rollbackHeavy(cancellation, true)}, build())
		require.NoError(t, err)
		if _, err = s.Run(context.Background()); err != nil {
			return err
		}
	}
	t.Fatal("no run failed the rollback check")
	return nil
}

func TestCheckRollbacksCatchesNondeterminism(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		lps := make([]kernel.LogicalProcess, 32)
		for i := range lps {
			lps[i] = &noisy{id: kernel.LPID(i)}
		}
		return lps
	}
	for _, c := range []string{"aggressive", "lazy"} {
		t.Run(c, func(t *testing.T) {
			err := checkFails(t, c, build)
			require.Regexp(t, `^time-warp check: LP "noisy\d+" \(id \d+\) differs after re-executing its event at time \S+ \(from LP \d+, sequence \d+\): `+
				`the model is not deterministic under re-execution \(does its handler read anything besides its state, the event and ctx.RNG\(\)\?\)$`, err.Error())
		})
	}
}

// noisyReverser is noisy with reverse computation: its Reverse undoes exactly what its
// Handle did (it keeps the noise it added in the scratch words), but a second run of the
// handler adds other noise.
type noisyReverser struct{ noisy }

func (n *noisyReverser) Handle(ctx *kernel.Context, _ *kernel.Event) {
	n.S.Events++
	x := noise.Add(1)
	n.S.Noise += x
	ctx.Scratch()[0] = x
	g := ctx.RNG()
	ctx.SendWords(kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1))), ctx.Now()+g.Exponential(1), kernel.Words{})
}

func (n *noisyReverser) Reverse(ctx *kernel.Context, _ *kernel.Event) {
	n.S.Events--
	n.S.Noise -= ctx.Scratch()[0]
}

// TestCheckRollbacksCatchesNondeterminismUnderReverse: with reverse computation no
// rollback re-executes an event from the state it first had, so the check runs each logged
// event twice (reversing it between), whether or not a rollback comes; a handler that
// reads something besides its state, event and generator fails it. The same model without
// the check runs to its end. (Workers sharing a queue replay a handler's results staged
// outside the queue's lock: not run twice.)
func TestCheckRollbacksCatchesNondeterminismUnderReverse(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		lps := make([]kernel.LogicalProcess, 32)
		for i := range lps {
			lps[i] = &noisyReverser{noisy{id: kernel.LPID(i)}}
		}
		return lps
	}
	for _, cancellation := range []string{"aggressive", "lazy"} {
		t.Run(cancellation, func(t *testing.T) {
			for _, check := range []bool{false, true} {
				s, err := dispatch.New(kernel.Config{MaxSimTime: 20, Seed: 4, Type: kernel.TimeWarp,
					TimeWarp: kernel.TimeWarpConfig{Workers: 4, Schedulers: 4, StateSaving: "reverse",
						Cancellation: cancellation, CheckRollbacks: check}}, build())
				require.NoError(t, err)
				_, err = s.Run(context.Background())
				if !check {
					require.NoError(t, err)
					continue
				}
				require.Error(t, err)
				require.Regexp(t, `^time-warp check: LP "noisy\d+" \(id \d+\) differs after re-executing its event at time \S+ \(from LP \d+, sequence \d+\): `+
					`the model is not deterministic under re-execution`, err.Error())
			}
		})
	}
}

func TestCheckRollbacksCatchesSharedSnapshots(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		lps := make([]kernel.LogicalProcess, 32)
		for i := range lps {
			lps[i] = &aliasing{id: kernel.LPID(i)}
		}
		return lps
	}
	err := checkFails(t, "aggressive", build)
	require.Regexp(t, `^time-warp check: LP "alias\d+" \(id \d+\) differs after restoring (its initial state|its newest committed saved state|the state saved after its event at time .*): `+
		`its Snapshot and Restore do not reproduce the state`, err.Error())
}

// TestCheckRollbacksPassesDeterministicModels checks rollback-heavy runs of deterministic
// models with CheckRollbacks on: they pass, commit the sequential result, and really
// coast forward (so the check had work to do).
func TestCheckRollbacksPassesDeterministicModels(t *testing.T) {
	for _, m := range []struct {
		name  string
		end   float64
		build func() []kernel.LogicalProcess
	}{
		// End times under the race detector: racesize_test.go.
		{"phold", underRace(20.0, 8), zeroLookaheadPHOLD(t, 64, 8)},
		{"pcs", underRace(300.0, 150), smallModels(t)[1].build},
		{"relay", underRace(20.0, 10), func() []kernel.LogicalProcess { return relays(64, 4) }},
	} {
		for _, c := range []string{"aggressive", "lazy"} {
			t.Run(m.name+"/"+c, func(t *testing.T) {
				seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 11}, m.build())
				var coast uint64
				for attempt := 0; attempt < 10 && coast == 0; attempt++ {
					in := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 11, TimeWarp: rollbackHeavy(c, true)}, m.build())
					require.Equal(t, seq.Digest, in.Digest)
					coast += in.CoastForwardEvents
				}
				require.NotZero(t, coast, "no coast forward happened")
			})
		}
	}
}

// TestGroupSafe runs workers sharing one schedule queue with reverse computation and a
// lookahead, where a batch's events below its safe bound (group.go's groupBound) are
// committed unlogged: the digest is the sequential one, run after run, and most events are
// safe. A pending straggler for one LP may sort below another LP's safe event there (a
// rollback the engine's checks must allow), which a larger PHOLD with few events per LP
// meets often.
func TestGroupSafe(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs = 2048
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	end := underRace(40.0, 8) // under the race detector: 2048 LPs still, fewer events each (racesize_test.go)
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 3}, build())
	reps := 4
	if testing.Short() || raceEnabled {
		reps = 1
	}
	for _, workers := range []int{2, 3, 4} {
		for _, c := range []string{"aggressive", "lazy"} {
			for rep := range reps {
				tw := kernel.TimeWarpConfig{Workers: workers, Schedulers: 1, StateSaving: "reverse",
					Cancellation: c, CheckRollbacks: rep == 0}
				t.Run(fmt.Sprintf("w%d-%s-%d", workers, c, rep), func(t *testing.T) {
					r := runTW(t, kernel.Config{MaxSimTime: end, Seed: 3, Type: kernel.TimeWarp, TimeWarp: tw}, build())
					require.Equal(t, seq.Digest, r.Digest)
				})
			}
		}
	}
	// Periodic state saving: nothing is safe.
	tw := kernel.TimeWarpConfig{Workers: 2, Schedulers: 1, StateSaving: "periodic"}
	r := runTW(t, kernel.Config{MaxSimTime: end, Seed: 3, Type: kernel.TimeWarp, TimeWarp: tw}, build())
	require.Equal(t, seq.Digest, r.Digest)
	require.Zero(t, r.SafeEvents)

	// Batched offload: the staged events run on the backend outside the group's lock
	// (stageBatches), and are committed safe as Handle's are.
	be := cpuBackend(t)
	for _, size := range []int{0, 16, 200} {
		for _, workers := range []int{2, 3} {
			tw := kernel.TimeWarpConfig{Workers: workers, Schedulers: 1, StateSaving: "reverse", Offload: be,
				BatchSize: size, CheckRollbacks: size == 16}
			r := runTW(t, kernel.Config{MaxSimTime: end, Seed: 3, Type: kernel.TimeWarp, TimeWarp: tw}, build())
			require.Equal(t, seq.Digest, r.Digest, "batch size %d, %d workers", size, workers)
			require.Positive(t, r.BatchedEvents, "batch size %d, %d workers", size, workers)
		}
	}
}

// TestGPUWithoutDeviceCodeIsAConfigurationError: the device loop's refusal of an LP without
// device code comes from New, before anything runs (a configuration error, not a failed run).
func TestGPUWithoutDeviceCodeIsAConfigurationError(t *testing.T) {
	lps := make([]kernel.LogicalProcess, 4)
	for i := range lps {
		lps[i] = &noisy{id: kernel.LPID(i)}
	}
	_, err := dispatch.New(kernel.Config{MaxSimTime: 10, Seed: 1, Type: kernel.GPU}, lps)
	require.ErrorContains(t, err, `LP noisy0 (*dispatch_test.noisy) has no device code`)
}

// looper sends to itself at its own time, forever: a zero-delay loop.
type looper struct {
	kernel.Plain[struct{ N uint64 }]
	id kernel.LPID
}

func (l *looper) Name() string             { return fmt.Sprintf("looper%d", l.id) }
func (l *looper) Init(ctx *kernel.Context) { ctx.SendWords(ctx.Self(), 1, kernel.Words{}) }
func (l *looper) Handle(ctx *kernel.Context, _ *kernel.Event) {
	l.S.N++
	ctx.SendWords(ctx.Self(), ctx.Now(), kernel.Words{})
}

// TestZeroDelayLoopFails: a loop of zero-delay sends, which holds time still, fails the run
// naming the LP and the time, under every dispatcher, instead of running forever.
func TestZeroDelayLoopFails(t *testing.T) {
	if raceEnabled {
		t.Skip("4 million events a dispatcher: 20 s under the race detector; the plain suite runs it")
	}
	for _, typ := range []string{kernel.Sequential, kernel.TimeWarp} {
		t.Run(typ, func(t *testing.T) {
			s, err := dispatch.New(kernel.Config{MaxSimTime: 10, Seed: 1, Type: typ,
				TimeWarp: kernel.TimeWarpConfig{Workers: 1}}, []kernel.LogicalProcess{&looper{}})
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			require.ErrorContains(t, err, `LP "looper0" (id 0) at time 1 sent an event to "looper0" (id 0) at that same time, the 4194304-th generation of such sends: a loop of zero-delay sends`)
		})
	}
}

// parcel is a payload type; carrier sends one with each event.
type parcel struct{ N int }

type carrier struct {
	kernel.Plain[struct{ N uint64 }]
	id kernel.LPID
}

func (c *carrier) Name() string             { return fmt.Sprintf("carrier%d", c.id) }
func (c *carrier) Init(ctx *kernel.Context) { ctx.Send(ctx.Self(), 1, &parcel{}) }
func (c *carrier) Handle(ctx *kernel.Context, _ *kernel.Event) {
	c.S.N++
	ctx.Send(ctx.Self(), ctx.Now()+1, &parcel{N: int(c.S.N)})
}

// TestCheckRollbacksCatchesUnregisteredPayloads: the check fails a run in one process that
// sends a payload whose type a run across processes could not encode, naming the LP and the
// type; registered, or without the check, the run goes on.
func TestCheckRollbacksCatchesUnregisteredPayloads(t *testing.T) {
	registered := kernel.NewRegistry()
	require.NoError(t, registered.Register("parcel", &parcel{}))
	for _, c := range []struct {
		name  string
		check bool
		reg   *kernel.Registry
		want  string
	}{
		{"unregistered", true, nil, `sent a payload of type *dispatch_test.parcel, which is not registered: a run across processes could not send it`},
		{"another type registered", true, kernel.NewRegistry(), "which is not registered"},
		{"registered", true, registered, ""},
		{"no check", false, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lps := []kernel.LogicalProcess{&carrier{id: 0}, &carrier{id: 1}}
			s, err := dispatch.New(kernel.Config{MaxSimTime: 10, Seed: 1, Type: kernel.TimeWarp, Payloads: c.reg,
				TimeWarp: kernel.TimeWarpConfig{Workers: 2, CheckRollbacks: c.check}}, lps)
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			if c.want == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, c.want)
			}
		})
	}
}

// TestWindowBelowGVTsResolution: an optimism window so small that GVT + W == GVT still lets
// the events at GVT through (it held back every event: a livelock), and the run gives the
// sequential digest.
func TestWindowBelowGVTsResolution(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs = 64
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	run := func(cfg kernel.Config) string {
		s, err := dispatch.New(cfg, build())
		require.NoError(t, err)
		res, err := s.Run(context.Background())
		require.NoError(t, err)
		return res.Digest
	}
	want := run(kernel.Config{MaxSimTime: 4, Seed: 1})
	got := run(kernel.Config{MaxSimTime: 4, Seed: 1, Type: kernel.TimeWarp,
		TimeWarp: kernel.TimeWarpConfig{Workers: 2, OptimismWindow: 1e-17}})
	require.Equal(t, want, got)
}

// TestSendIntoThePastBeyond2to53: a send into the past at a time beyond 2^53 says what
// likely happened (a model's integer times overflowed), and what to do.
func TestSendIntoThePastBeyond2to53(t *testing.T) {
	e := &kernel.SendError{From: 1, FromName: "a", Now: 1 << 60, To: 2, ToName: "b", At: 5}
	require.Contains(t, e.Error(), "times beyond 2^53 overflow a model that counts time in integers; give a smaller end time")
	e.Now = 10
	require.Contains(t, e.Error(), "which is in its past; send at or after Now()")
}
