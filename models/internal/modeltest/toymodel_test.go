package modeltest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/internal/modeltest"
)

// This file follows docs/ARCHITECTURE.md, "Where to add", "A model", once: a toy model (a
// ball bounced between LPs at random) checked against the determinism oracle.

// bounceState is one LP's state: a plain struct, so kernel.Plain saves and digests it.
type bounceState struct {
	Caught uint64      // balls this LP caught
	Last   kernel.Time // when it caught the last one
}

// bounceLP throws every ball it catches to a random LP, a random time later.
type bounceLP struct {
	kernel.Plain[bounceState]
	id kernel.LPID
}

func (lp *bounceLP) Name() string { return fmt.Sprintf("bounce%d", lp.id) }

// Init throws one ball per LP, so the LPs' events interleave and roll each other back.
func (lp *bounceLP) Init(ctx *kernel.Context) { lp.throw(ctx) }

// Handle catches a ball and throws it on: everything it draws comes from ctx.RNG(), so a
// re-execution after a rollback draws the same.
func (lp *bounceLP) Handle(ctx *kernel.Context, _ *kernel.Event) {
	lp.S.Caught++
	lp.S.Last = ctx.Now()
	lp.throw(ctx)
}

func (lp *bounceLP) throw(ctx *kernel.Context) {
	g := ctx.RNG()
	to := kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1)))
	ctx.Send(to, ctx.Now()+1+g.Uniform(), nil)
}

// TestToyModelMatchesSequential is the step every model takes: modeltest.Matrix runs it
// under time warp in several arrangements and across loopback ranks, each run's digest
// the sequential one's.
func TestToyModelMatchesSequential(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		lps := make([]kernel.LogicalProcess, 16)
		for i := range lps {
			lps[i] = &bounceLP{id: kernel.LPID(i)}
		}
		return lps
	}
	want := modeltest.Matrix(t, modeltest.Model{Build: build, End: 40, Seed: 3, Short: true})
	require.Greater(t, want.EventsCommitted, uint64(16*20), "every ball bounced on to the end (about one bounce per 1.5 time units)")
}
