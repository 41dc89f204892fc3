package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// swapper keeps one value that two events in three replace with a draw: Reverse cannot
// recompute the old value from the new, so Handle saves it in the event's scratch words
// (ROSS's saved-in-message value) and Reverse restores it from there. The third event
// uses no scratch words, so an LP's first event (and the first events the time-warp engine
// logs) have none kept.
type swapper struct {
	kernel.Plain[swapState]
	id, n kernel.LPID
	// sawDirty records a Handle that found its scratch words not zero.
	sawDirty *bool
}

type swapState struct{ Value, Events uint64 }

func (s *swapper) Name() string { return fmt.Sprintf("swap%d", s.id) }

func (s *swapper) Init(ctx *kernel.Context) { ctx.SendWords(s.id, 1, kernel.Words{}) }

func (s *swapper) Handle(ctx *kernel.Context, _ *kernel.Event) {
	if s.S.Events%3 != 0 {
		w := ctx.Scratch()
		if *w != (kernel.Words{}) {
			*s.sawDirty = true
		}
		w[0] = s.S.Value
		s.S.Value = uint64(ctx.RNG().Next())
	}
	s.S.Events++
	ctx.SendWords((s.id+1)%s.n, ctx.Now()+1+kernel.Time(ctx.RNG().Exponential(1)), kernel.Words{})
}

func (s *swapper) Reverse(ctx *kernel.Context, _ *kernel.Event) {
	if s.S.Events--; s.S.Events%3 != 0 {
		s.S.Value = ctx.Scratch()[0]
	}
}

func swappers(n int, dirty *bool) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &swapper{id: kernel.LPID(i), n: kernel.LPID(n), sawDirty: dirty}
	}
	return lps
}

// TestScratchSequential: under the sequential dispatcher every Handle finds its scratch
// words zero, whatever the previous event wrote.
func TestScratchSequential(t *testing.T) {
	var dirty bool
	r := run(t, kernel.Config{MaxSimTime: 50, Type: kernel.Sequential}, swappers(8, &dirty))
	require.Positive(t, r.EventsCommitted)
	require.False(t, dirty, "a Handle found its scratch words not zero")
}

// TestScratchTimeWarp: the time-warp engine keeps each processed event's scratch words,
// zero when Handle starts (and when coast forward re-executes it), for its Reverse: the
// swappers, which reverse only through them, give the sequential digest with 1, 2 and 4
// workers, reverse computation (CheckRollbacks verifies every Reverse) and periodic state
// saving, both cancellations, workers sharing a schedule queue, and across processes.
func TestScratchTimeWarp(t *testing.T) {
	var dirty bool
	want := run(t, kernel.Config{MaxSimTime: 300, Type: kernel.Sequential}, swappers(32, &dirty))
	var rolledBack uint64
	for _, c := range commitCases() {
		t.Run(c.name, func(t *testing.T) {
			tw := c.tw
			tw.CheckRollbacks = true
			got := run(t, kernel.Config{MaxSimTime: 300, Type: kernel.TimeWarp, TimeWarp: tw}, swappers(32, &dirty))
			require.Equal(t, want.Digest, got.Digest)
			rolledBack += got.EventsRolledBack
		})
	}
	t.Run("2-ranks", func(t *testing.T) {
		res, errs := runRanks(t, 2, comm.LoopbackOptions{}, kernel.Config{MaxSimTime: 300,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingReverse, CheckRollbacks: true}},
			func(int) []kernel.LogicalProcess { return swappers(32, &dirty) }, nil)
		requireRanksMatch(t, want, res, errs)
	})
	require.False(t, dirty, "a Handle found its scratch words not zero")
	t.Logf("%d events rolled back in all", rolledBack)
}

// TestScratchOutsideEvents: Init has no scratch words; asking is a model panic that says so.
func TestScratchOutsideEvents(t *testing.T) {
	for _, typ := range []string{kernel.Sequential, kernel.TimeWarp} {
		t.Run(typ, func(t *testing.T) {
			lp := &bad{name: "b", init: func(ctx *kernel.Context) { ctx.Scratch() }}
			s, err := dispatch.New(kernel.Config{MaxSimTime: 50, Type: typ}, []kernel.LogicalProcess{lp})
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			var p *kernel.ModelPanicError
			require.True(t, errors.As(err, &p), "%v", err)
			require.Contains(t, err.Error(), "Context.Scratch called outside an event")
		})
	}
}

// scratchCommitter is a swapper whose Commit logs the scratch words Handle left: the value
// it replaced, or zero words for an event that used none.
type scratchCommitter struct {
	*swapper
	mu  *sync.Mutex // time warp may commit different LPs' events at once
	log map[kernel.LPID][]scratchSeen
}

type scratchSeen struct {
	At    kernel.Time
	Words kernel.Words
}

func (s *scratchCommitter) Commit(ctx *kernel.Context, _ *kernel.Event) {
	w := *ctx.Scratch()
	s.mu.Lock()
	s.log[ctx.Self()] = append(s.log[ctx.Self()], scratchSeen{ctx.Now(), w})
	s.mu.Unlock()
}

func scratchCommitters(n int, dirty *bool, log map[kernel.LPID][]scratchSeen) []kernel.LogicalProcess {
	lps := swappers(n, dirty)
	var mu sync.Mutex
	for i, lp := range lps {
		lps[i] = &scratchCommitter{swapper: lp.(*swapper), mu: &mu, log: log}
	}
	return lps
}

// TestScratchAtCommit: Commit reads the scratch words the event's Handle left (kept beside
// the time-warp engine's history log, through rollbacks, fossil collection, the log's
// compaction and the end of the run), the same words for the same events as the sequential
// run's, LP by LP.
func TestScratchAtCommit(t *testing.T) {
	var dirty bool
	want := map[kernel.LPID][]scratchSeen{}
	run(t, kernel.Config{MaxSimTime: 200, Type: kernel.Sequential}, scratchCommitters(16, &dirty, want))
	for _, c := range commitCases() {
		t.Run(c.name, func(t *testing.T) {
			got := map[kernel.LPID][]scratchSeen{}
			run(t, kernel.Config{MaxSimTime: 200, Type: kernel.TimeWarp, TimeWarp: c.tw}, scratchCommitters(16, &dirty, got))
			require.Equal(t, want, got)
		})
	}
	t.Run("compacting", func(t *testing.T) {
		got := map[kernel.LPID][]scratchSeen{}
		r, err := dispatch.RunTimeWarpInternalsLogMax(context.Background(), kernel.Config{MaxSimTime: 200,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingReverse}},
			scratchCommitters(16, &dirty, got), 64)
		require.NoError(t, err)
		require.Positive(t, r.Compactions, "the log must have been compacted")
		require.Equal(t, want, got)
	})
	require.False(t, dirty, "a Handle found its scratch words not zero")
}
