package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
)

// committing is a PHOLD LP that logs its committed events, as irreversible output would
// be written: the log lives outside the LP's state, so a rollback could not undo it.
type committing struct {
	*phold.LP
	mu  *sync.Mutex // time warp may commit different LPs' events at once
	log *[]commitRecord
	// sendFromCommit makes Commit send, which it must not.
	sendFromCommit bool
}

type commitRecord struct {
	lp kernel.LPID
	at kernel.Time
}

func (c *committing) Commit(ctx *kernel.Context, ev *kernel.Event) {
	if c.sendFromCommit {
		ctx.SendWords(ctx.Self(), ctx.Now()+1, kernel.Words{})
	}
	c.mu.Lock()
	*c.log = append(*c.log, commitRecord{ctx.Self(), ev.RecvTime})
	c.mu.Unlock()
}

func committingPHOLD(t *testing.T, log *[]commitRecord) []kernel.LogicalProcess {
	t.Helper()
	c := phold.DefaultConfig()
	c.LPs = 16
	lps, err := phold.New(c)
	require.NoError(t, err)
	var mu sync.Mutex
	for i, lp := range lps {
		lps[i] = &committing{LP: lp.(*phold.LP), mu: &mu, log: log}
	}
	return lps
}

// TestCommitHookSequential: the sequential dispatcher calls Commit once per committed
// event, in each LP's timestamp order, and the hook changes nothing of the run.
func TestCommitHookSequential(t *testing.T) {
	var log []commitRecord
	r := run(t, kernel.Config{MaxSimTime: 20, Type: kernel.Sequential, Seed: 3}, committingPHOLD(t, &log))
	require.EqualValues(t, r.EventsCommitted, len(log))
	last := map[kernel.LPID]kernel.Time{}
	for _, c := range log {
		require.GreaterOrEqual(t, c.at, last[c.lp], "LP %d commits in timestamp order", c.lp)
		last[c.lp] = c.at
	}
	plain := phold.DefaultConfig()
	plain.LPs = 16
	lps, err := phold.New(plain)
	require.NoError(t, err)
	require.Equal(t, run(t, kernel.Config{MaxSimTime: 20, Type: kernel.Sequential, Seed: 3}, lps).Digest, r.Digest)
}

// TestCommitHookRules: a send from Commit is a model panic, under every dispatcher.
func TestCommitHookRules(t *testing.T) {
	for _, cfg := range []kernel.Config{
		{MaxSimTime: 20, Type: kernel.Sequential},
		{MaxSimTime: 20, Type: kernel.TimeWarp, TimeWarp: kernel.TimeWarpConfig{Workers: 2}},
	} {
		t.Run(cfg.Type, func(t *testing.T) {
			var log []commitRecord
			lps := committingPHOLD(t, &log)
			lps[3].(*committing).sendFromCommit = true
			s, err := dispatch.New(cfg, lps)
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			var p *kernel.ModelPanicError
			require.True(t, errors.As(err, &p), "%v", err)
			require.Contains(t, err.Error(), "sent an event from Commit")
		})
	}
}

// commitCase is a time-warp configuration the commit hook and the trace are tested in.
type commitCase struct {
	name string
	tw   kernel.TimeWarpConfig
}

// commitCases are the time-warp configurations of the commit hook's and the trace's
// tests: 1, 2 and 4 workers, both state savings, both cancellations, a group of workers
// sharing a schedule queue.
func commitCases() []commitCase {
	var cs []commitCase
	for _, w := range []int{1, 2, 4} {
		for _, ss := range []string{kernel.StateSavingReverse, kernel.StateSavingPeriodic} {
			for _, c := range []string{kernel.CancelAggressive, kernel.CancelLazy} {
				cs = append(cs, commitCase{fmt.Sprintf("workers=%d/%s/%s", w, ss, c),
					kernel.TimeWarpConfig{Workers: w, StateSaving: ss, Cancellation: c}})
			}
		}
	}
	return append(cs,
		commitCase{"shared-queue/reverse", kernel.TimeWarpConfig{Workers: 3, Schedulers: 1, StateSaving: kernel.StateSavingReverse}},
		commitCase{"shared-queue/periodic", kernel.TimeWarpConfig{Workers: 4, Schedulers: 2, StateSaving: kernel.StateSavingPeriodic}})
}

// TestCommitHookTimeWarp: the time-warp engine calls Commit once for each committed event
// (as fossil collection drops it, or at the end of the run), in each LP's timestamp order,
// never for one that rolls back: the same calls as the sequential dispatcher's, and the
// run's digest unchanged; across processes each rank for its own LPs.
func TestCommitHookTimeWarp(t *testing.T) {
	var seq []commitRecord
	want := run(t, kernel.Config{MaxSimTime: 100, Type: kernel.Sequential, Seed: 3}, committingPHOLD(t, &seq))
	check := func(t *testing.T, tw []commitRecord) {
		require.Equal(t, perLP(seq), perLP(tw), "the same events commit, each once, in each LP's order")
	}
	for _, c := range commitCases() {
		t.Run(c.name, func(t *testing.T) {
			var tw []commitRecord
			r := run(t, kernel.Config{MaxSimTime: 100, Type: kernel.TimeWarp, Seed: 3, TimeWarp: c.tw}, committingPHOLD(t, &tw))
			require.Equal(t, want.Digest, r.Digest)
			check(t, tw)
		})
	}
	t.Run("2-ranks", func(t *testing.T) {
		var tw []commitRecord
		var mu sync.Mutex // the ranks' LPs share one log
		res, errs := runRanks(t, 2, comm.LoopbackOptions{}, kernel.Config{MaxSimTime: 100, Seed: 3},
			func(int) []kernel.LogicalProcess {
				lps := committingPHOLD(t, &tw)
				for _, lp := range lps {
					lp.(*committing).mu = &mu
				}
				return lps
			}, nil)
		requireRanksMatch(t, want, res, errs)
		check(t, tw)
	})
}

// perLP groups commit records by LP, each LP's in the order they came.
func perLP(log []commitRecord) map[kernel.LPID][]kernel.Time {
	m := map[kernel.LPID][]kernel.Time{}
	for _, c := range log {
		m[c.lp] = append(m[c.lp], c.at)
	}
	return m
}

// traced records a run's trace by LP: each event's time and sender, in the order traced.
type traced struct {
	mu sync.Mutex // the trace is called one event at a time; across ranks, two traces share it
	m  map[kernel.LPID][]event.Key
}

func (tr *traced) trace(lp kernel.LPID, ev *kernel.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if lp != ev.Receiver {
		panic(fmt.Sprintf("trace of LP %d given an event of LP %d", lp, ev.Receiver))
	}
	if tr.m == nil {
		tr.m = map[kernel.LPID][]event.Key{}
	}
	tr.m[lp] = append(tr.m[lp], event.KeyOf(ev))
}

// TestTraceSequential: Config.Trace sees every committed event once, in time order.
func TestTraceSequential(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 16
	lps, err := phold.New(c)
	require.NoError(t, err)
	var n uint64
	var last kernel.Time
	r := run(t, kernel.Config{MaxSimTime: 20, Type: kernel.Sequential, Trace: func(lp kernel.LPID, ev *kernel.Event) {
		require.Equal(t, lp, ev.Receiver)
		require.GreaterOrEqual(t, ev.RecvTime, last)
		last = ev.RecvTime
		n++
	}}, lps)
	require.Equal(t, r.EventsCommitted, n)
}

// TestTraceTimeWarp: under time warp, Config.Trace sees the same events per LP, in the same
// order, as under the sequential dispatcher, in every configuration of commitCases, with
// batched offload, with history log compaction, and across processes (with and without remote safe events).
func TestTraceTimeWarp(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 16
	build := func(int) []kernel.LogicalProcess {
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	var seq traced
	want := run(t, kernel.Config{MaxSimTime: 200, Seed: 3, Trace: seq.trace}, build(0))
	be := cpuBackend(t)
	cases := append(commitCases(), // batched offload: the batch kernels' results commit too
		commitCase{"offload", kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingReverse, Offload: be, BatchSize: 16}},
		commitCase{"offload/shared-queue", kernel.TimeWarpConfig{Workers: 2, Schedulers: 1, StateSaving: kernel.StateSavingReverse,
			Offload: be, BatchSize: 16}})
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			var tw traced
			r := run(t, kernel.Config{MaxSimTime: 200, Seed: 3, Type: kernel.TimeWarp, TimeWarp: k.tw, Trace: tw.trace}, build(0))
			require.Equal(t, want.Digest, r.Digest)
			require.Equal(t, seq.m, tw.m)
			if k.tw.Offload != nil {
				require.Positive(t, r.BatchedEvents)
			}
		})
	}
	t.Run("compaction", func(t *testing.T) { // compact commits entries from inside the log
		var tw traced
		r, err := dispatch.RunTimeWarpInternalsLogMax(context.Background(), kernel.Config{MaxSimTime: 200, Seed: 3,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingPeriodic}, Trace: tw.trace}, build(0), 64)
		require.NoError(t, err)
		require.Positive(t, r.Compactions)
		require.Equal(t, want.Digest, r.Digest)
		require.Equal(t, seq.m, tw.m)
	})
	for _, workers := range []int{1, 2} { // one worker a rank: remote safe events (off with a trace)
		t.Run(fmt.Sprintf("2-ranks/workers=%d", workers), func(t *testing.T) {
			var tw traced
			res, errs := runRanks(t, 2, comm.LoopbackOptions{}, kernel.Config{MaxSimTime: 200, Seed: 3, Trace: tw.trace,
				TimeWarp: kernel.TimeWarpConfig{Workers: workers, StateSaving: kernel.StateSavingReverse}}, build, nil)
			requireRanksMatch(t, want, res, errs)
			require.Equal(t, seq.m, tw.m)
		})
	}
}
