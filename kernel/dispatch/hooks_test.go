package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// hookRecord is what the model's hooks and its LPs' Init saw in one process.
type hookRecord struct {
	started bool   // the init hook ran
	early   bool   // an LP's Init ran before it
	calls   int    // calls of either hook
	total   uint64 // the events the LPs handled, as the final hook added them up
}

// hooked is an LP of a ring whose Init checks that the model's init hook ran before it.
type hooked struct {
	kernel.Plain[hookedState]
	id, n kernel.LPID
	rec   *hookRecord
}

type hookedState struct{ Handled uint64 }

func (h *hooked) Name() string { return fmt.Sprintf("hooked%d", h.id) }

func (h *hooked) Init(ctx *kernel.Context) {
	if !h.rec.started {
		h.rec.early = true
	}
	ctx.SendWords(h.id, 1, kernel.Words{})
}

func (h *hooked) Handle(ctx *kernel.Context, _ *kernel.Event) {
	h.S.Handled++
	ctx.SendWords((h.id+1)%h.n, ctx.Now()+1+kernel.Time(ctx.RNG().Exponential(1)), kernel.Words{})
}

func (h *hooked) Reverse(*kernel.Context, *kernel.Event) { h.S.Handled-- }

// hookedLPs returns a ring of n hooked LPs that share rec.
func hookedLPs(n int, rec *hookRecord) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &hooked{id: kernel.LPID(i), n: kernel.LPID(n), rec: rec}
	}
	return lps
}

// hookedConfig is a configuration with the model's hooks for hooked LPs: the init hook
// marks the model started, the final hook adds up the LPs' events; both write to the
// record of the LPs they are given (one per process).
func hookedConfig(typ string) kernel.Config {
	return kernel.Config{MaxSimTime: 200, Seed: 5, Type: typ,
		ModelInit: func(lps []kernel.LogicalProcess) error {
			rec := lps[0].(*hooked).rec
			rec.calls++
			rec.started = true
			return nil
		},
		ModelFinal: func(lps []kernel.LogicalProcess) error {
			rec := lps[0].(*hooked).rec
			rec.calls++
			rec.total = 0
			for _, lp := range lps {
				rec.total += lp.(*hooked).S.Handled
			}
			return nil
		}}
}

// TestModelHooks: the model's init hook runs once before any LP's Init, and its final hook
// once after the run with every LP's final state (the events they handled add up to the
// events committed), under the sequential dispatcher, time warp with 1, 2 and 4 workers,
// both state savings and cancellations, shared queues, and on each of 2 ranks, each of
// whose final hooks sees the whole model.
func TestModelHooks(t *testing.T) {
	const n = 16
	check := func(t *testing.T, rec *hookRecord, want uint64) {
		t.Helper()
		require.Equal(t, 2, rec.calls, "each hook once")
		require.False(t, rec.early, "an LP's Init ran before the model's init hook")
		require.Equal(t, want, rec.total, "the final hook sees every LP's final state")
	}
	var seq hookRecord
	want := run(t, hookedConfig(kernel.Sequential), hookedLPs(n, &seq))
	check(t, &seq, want.EventsCommitted)
	for _, c := range commitCases() {
		t.Run(c.name, func(t *testing.T) {
			var rec hookRecord
			cfg := hookedConfig(kernel.TimeWarp)
			cfg.TimeWarp = c.tw
			r := run(t, cfg, hookedLPs(n, &rec))
			require.Equal(t, want.Digest, r.Digest)
			check(t, &rec, want.EventsCommitted)
		})
	}
	t.Run("2-ranks", func(t *testing.T) {
		recs := make([]hookRecord, 2)
		cfg := hookedConfig(kernel.TimeWarp)
		cfg.TimeWarp = kernel.TimeWarpConfig{Workers: 2}
		res, errs := runRanks(t, 2, comm.LoopbackOptions{}, cfg,
			func(rank int) []kernel.LogicalProcess { return hookedLPs(n, &recs[rank]) }, nil)
		requireRanksMatch(t, want, res, errs)
		for r := range recs {
			check(t, &recs[r], want.EventsCommitted)
		}
	})
}

// TestModelHookErrors: an error from the init hook ends the run before any LP's Init, one
// from the final hook is the run's error; both say which hook failed.
func TestModelHookErrors(t *testing.T) {
	for _, typ := range []string{kernel.Sequential, kernel.TimeWarp} {
		t.Run(typ, func(t *testing.T) {
			var rec hookRecord
			cfg := hookedConfig(typ)
			cfg.ModelInit = func([]kernel.LogicalProcess) error { return errors.New("no input file") }
			s, err := dispatch.New(cfg, hookedLPs(4, &rec))
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			require.EqualError(t, err, "model init hook: no input file")
			require.False(t, rec.early || rec.started, "no LP's Init ran")

			cfg = hookedConfig(typ)
			cfg.ModelFinal = func([]kernel.LogicalProcess) error { return errors.New("disk full") }
			s, err = dispatch.New(cfg, hookedLPs(4, &rec))
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			require.EqualError(t, err, "model final hook: disk full")
		})
	}
}
