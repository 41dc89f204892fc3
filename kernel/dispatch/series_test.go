package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// recorder is a zero-lookahead model that records two series: its event count and a draw
// from its generator, so that a value a rollback undoes and re-records differently would
// show.
type recorder struct {
	kernel.Plain[recorderState]
	id kernel.LPID
}

type recorderState struct{ Events uint64 }

func (r *recorder) Name() string { return fmt.Sprintf("rec%d", r.id) }

func (r *recorder) Init(ctx *kernel.Context) {
	ctx.Record("init", float64(r.id))
	for range 4 {
		ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(1), kernel.Words{})
	}
}

func (r *recorder) Handle(ctx *kernel.Context, _ *kernel.Event) {
	r.S.Events++
	g := ctx.RNG()
	ctx.Record("events", float64(r.S.Events))
	ctx.Record("draw", g.Exponential(1))
	ctx.SendWords(kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1))), ctx.Now()+g.Exponential(1), kernel.Words{})
}

// revRecorder is recorder with reverse computation (Record in Reverse does nothing).
type revRecorder struct{ recorder }

func (r *revRecorder) Reverse(ctx *kernel.Context, _ *kernel.Event) {
	ctx.Record("events", -1) // ignored
	r.S.Events--
}

func recorders(n int) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &recorder{id: kernel.LPID(i)}
	}
	return lps
}

func revRecorders(n int) []kernel.LogicalProcess {
	lps := make([]kernel.LogicalProcess, n)
	for i := range lps {
		lps[i] = &revRecorder{recorder{id: kernel.LPID(i)}}
	}
	return lps
}

// TestSeriesMatchesSequential checks that the series models record under time warp, with
// rollbacks, equal the sequential run's exactly.
func TestSeriesMatchesSequential(t *testing.T) {
	const end = 30
	seq, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 2, RecordSeries: true}, recorders(32))
	require.NoError(t, err)
	want, err := seq.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, want.Series, 32+2*int(want.EventsCommitted))
	var rolled uint64
	for _, tw := range []kernel.TimeWarpConfig{
		{Workers: 4},
		{Workers: 8, Schedulers: 2, StateSavingPeriod: 4},
		{Workers: 4, StateSavingPeriod: 1, Cancellation: "lazy"},
		{Workers: 4, StateSaving: kernel.StateSavingReverse},
		{Workers: 8, Schedulers: 2, StateSaving: kernel.StateSavingReverse},
	} {
		build := recorders
		if tw.StateSaving == kernel.StateSavingReverse {
			build = revRecorders
		}
		s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 2, Type: kernel.TimeWarp, TimeWarp: tw, RecordSeries: true}, build(32))
		require.NoError(t, err)
		got, err := s.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, want.Digest, got.Digest)
		require.Len(t, got.Series, len(want.Series), "%+v", tw)
		for i := range want.Series {
			require.Equal(t, want.Series[i], got.Series[i], "point %d, %+v", i, tw)
		}
		rolled += got.EventsRolledBack
	}
	t.Logf("%d points, %d events rolled back", len(want.Series), rolled)
	require.NotZero(t, rolled, "no rollback happened: the test checks nothing")

	// Without RecordSeries, Record keeps nothing.
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 2, Type: kernel.TimeWarp}, recorders(8))
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Nil(t, r.Series)
}
