package dispatch_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/rng"
)

// TestReverseComputationRollbacksHappen runs rollback-heavy PHOLD with reverse computation,
// with both cancellations and with and without CheckRollbacks (which compares the state
// after every reversal with the state recorded before the reversed events), and checks that
// rollbacks and anti-messages really occur, that nothing coasts forward, and that the
// result is the sequential one.
func TestReverseComputationRollbacksHappen(t *testing.T) {
	build := zeroLookaheadPHOLD(t, 64, 8)
	end := underRace(20.0, 8) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 9}, build())
	for _, c := range []string{"aggressive", "lazy"} {
		for _, check := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/check%v", c, check), func(t *testing.T) {
				tw := rollbackHeavy(c, check)
				tw.StateSaving = "reverse"
				var rolled, anti uint64
				for attempt := 0; attempt < 10 && (rolled == 0 || anti == 0); attempt++ {
					in := runTW(t, kernel.Config{MaxSimTime: end, Seed: 9, TimeWarp: tw}, build())
					require.Equal(t, seq.Digest, in.Digest)
					require.Equal(t, seq.EventsCommitted, in.EventsCommitted)
					require.Zero(t, in.CoastForwardEvents, "reverse computation coasted forward")
					rolled += in.EventsRolledBack
					anti += in.AntiMessagesSent
				}
				require.NotZero(t, rolled, "no rollback happened")
				require.NotZero(t, anti, "no anti-message was sent")
			})
		}
	}
}

func TestReverseNeedsEveryLPToReverse(t *testing.T) {
	lps, err := phold.New(phold.Config{LPs: 2, Remote: 0.5, Mean: 1, Lookahead: 0.1, StartEvents: 1})
	require.NoError(t, err)
	lps = append(lps, &pinger{id: 7})
	_, err = dispatch.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp,
		TimeWarp: kernel.TimeWarpConfig{StateSaving: "reverse"}}, lps)
	require.EqualError(t, err, `time-warp state-saving type reverse needs every LP to implement Reverse; LP "ping7" (id 2) does not`)
	// Periodic state saving and the sequential dispatcher do not need Reverse.
	for _, cfg := range []kernel.Config{
		{MaxSimTime: 5, Type: kernel.TimeWarp},
		{MaxSimTime: 5, Type: kernel.TimeWarp, TimeWarp: kernel.TimeWarpConfig{StateSaving: "periodic"}},
		{MaxSimTime: 5, TimeWarp: kernel.TimeWarpConfig{StateSaving: "reverse"}},
	} {
		_, err = dispatch.New(cfg, lps)
		require.NoError(t, err)
	}
}

// TestPHOLDReverse handles one event on a PHOLD LP in a random state and undoes it as
// reverse computation does: the LP's state, generator and sequence number must be exactly
// what they were, for every mix of grain, remote probability and lookahead.
func TestPHOLDReverse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, grain := range []int{0, 1, 37} {
		for _, remote := range []float64{0, 1, 0.25, 0.9} {
			for _, lookahead := range []float64{0, 0.1} {
				c := phold.Config{LPs: 1 + r.IntN(100), Remote: remote, Mean: 1, Lookahead: lookahead,
					StartEvents: 1, Grain: grain}
				lps, err := phold.New(c)
				require.NoError(t, err)
				var remotes int
				for range 300 {
					self := kernel.LPID(r.IntN(c.LPs))
					lp := lps[self].(*phold.LP)
					lp.S = phold.State{Events: r.Uint64(), Remote: r.Uint64(), Work: r.Uint32()}
					if r.IntN(10) == 0 {
						lp.S = phold.State{}
					}
					before := lp.S
					g := rng.New(r.Uint64(), r.Uint64())
					g.Advance(uint64(r.IntN(50)))
					seq := r.Uint64() >> 1
					ev := &kernel.Event{RecvTime: r.Float64() * 100, Depth: uint32(r.IntN(3))}
					handled, back, seqHandled, seqBack, sends := dispatch.HandleThenReverse(lp, self, c.LPs, g, seq, ev)
					require.Equal(t, 1, sends)
					require.Equal(t, seq+1, seqHandled)
					require.NotEqual(t, g, handled, "Handle drew nothing")
					require.Equal(t, before, lp.S, "state not restored (grain %d, remote %v)", grain, remote)
					require.Equal(t, g, back, "generator not restored")
					require.Equal(t, seq, seqBack, "sequence number not restored")

					h := g // Handle's first draw from the LP's generator decides remote
					if h.Uniform() <= remote {
						remotes++
					}
				}
				switch remote {
				case 0:
					require.Zero(t, remotes)
				case 1:
					require.Equal(t, 300, remotes)
				default:
					require.NotZero(t, remotes)
					require.Less(t, remotes, 300)
				}
			}
		}
	}
}

// badReverse is PHOLD-like, but its Reverse forgets to undo one counter.
type badReverse struct {
	kernel.Plain[struct{ Events, Sum uint64 }]
	id kernel.LPID
}

func (b *badReverse) Name() string { return fmt.Sprintf("bad%d", b.id) }

func (b *badReverse) Init(ctx *kernel.Context) {
	for range 8 {
		ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(1), kernel.Words{})
	}
}

func (b *badReverse) Handle(ctx *kernel.Context, _ *kernel.Event) {
	b.S.Events++
	b.S.Sum++
	g := ctx.RNG()
	ctx.SendWords(kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1))), ctx.Now()+g.Exponential(1), kernel.Words{})
}

func (b *badReverse) Reverse(*kernel.Context, *kernel.Event) { b.S.Events-- } // the bug: Sum stays

func TestCheckRollbacksCatchesBadReverse(t *testing.T) {
	for _, c := range []string{"aggressive", "lazy"} {
		t.Run(c, func(t *testing.T) {
			var err error
			for attempt := 0; attempt < 20 && err == nil; attempt++ {
				lps := make([]kernel.LogicalProcess, 32)
				for i := range lps {
					lps[i] = &badReverse{id: kernel.LPID(i)}
				}
				tw := rollbackHeavy(c, true)
				tw.StateSaving = "reverse"
				var s *dispatch.Simulation
				s, err = dispatch.New(kernel.Config{MaxSimTime: 20, Seed: 4, Type: kernel.TimeWarp, TimeWarp: tw}, lps)
				require.NoError(t, err)
				_, err = s.Run(t.Context())
			}
			require.Error(t, err, "no run failed the rollback check")
			require.Regexp(t, `^time-warp check: LP "bad\d+" \(id \d+\) differs after reversing its events from time \S+ \(from LP \d+, sequence \d+\): `+
				`its Reverse does not undo exactly what Handle did$`, err.Error())
		})
	}
}

// sendingReverse is PHOLD-like, but its Reverse sends, which it must not.
type sendingReverse struct {
	badReverse
}

func (s *sendingReverse) Reverse(ctx *kernel.Context, _ *kernel.Event) {
	s.S.Events--
	s.S.Sum--
	ctx.SendWords(ctx.Self(), ctx.Now(), kernel.Words{})
}

func TestReverseMustNotSend(t *testing.T) {
	var err error
	for attempt := 0; attempt < 20 && err == nil; attempt++ {
		lps := make([]kernel.LogicalProcess, 32)
		for i := range lps {
			lps[i] = &sendingReverse{badReverse{id: kernel.LPID(i)}}
		}
		tw := rollbackHeavy("aggressive", false)
		tw.StateSaving = "reverse"
		var s *dispatch.Simulation
		s, err = dispatch.New(kernel.Config{MaxSimTime: 20, Seed: 4, Type: kernel.TimeWarp, TimeWarp: tw}, lps)
		require.NoError(t, err)
		_, err = s.Run(t.Context())
	}
	var pe *kernel.ModelPanicError
	require.ErrorAs(t, err, &pe)
	require.Regexp(t, `^model panic in LP "bad\d+" \(id \d+\) at its event at time \S+: LP "bad\d+" sent an event from Reverse; Reverse must not send$`, err.Error())
}
