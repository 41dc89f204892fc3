package timewarp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/dist"
)

// TestTakeBound checks takeBound against its rule, written out: an event at t may be
// taken (t below the bound) when, and only when, it is below the limit and not past GVT,
// or past GVT by at most the window while the worker is not ahead; at and about GVT, the
// window's edge and the limit, with the worker ahead or not.
func TestTakeBound(t *testing.T) {
	d := &timeWarpDispatcher{logMax: 1 << 20}
	w := &worker{d: d, q: &queue{th: newThrottle(), aheadMax: aheadFirst}}
	r := rand.New(rand.NewPCG(1, 2))
	near := func(x Time) []Time {
		return []Time{x, math.Nextafter(x, math.Inf(-1)), math.Nextafter(x, math.Inf(1)), x - 0.5, x + 0.5}
	}
	for i := range 20000 {
		g := []Time{0, 1, 3.25, 1e6, math.Floor(r.Float64() * 100)}[i%5]
		w.q.th.win = []Time{math.Inf(1), 0, 1, 0.125, r.Float64() * 10}[i/5%5]
		lim := []Time{math.Inf(1), g + 5, g, 2*g + 1, g + r.Float64()*20}[i/25%5]
		w.q.ahead = []int{0, aheadFirst - 1, aheadFirst}[i/125%3]
		for _, t0 := range []Time{g, g + w.q.th.win, lim, r.Float64() * 2 * (g + 10)} {
			for _, ti := range near(t0) {
				if ti < 0 || math.IsNaN(ti) {
					continue
				}
				b := w.takeBound(g, lim)
				past := ti >= lim || ti > g && (w.aheadFull() || ti > g+w.q.th.win)
				if take := ti < b; take == past || w.pastLimit(ti, lim, g) != past {
					t.Fatalf("t %v, GVT %v, window %v, limit %v, ahead %d: below the bound %v is %v, past the limit is %v",
						ti, g, w.q.th.win, lim, w.q.ahead, b, take, past)
				}
			}
		}
	}
}

// TestAheadFollowsRounds checks the ahead bound's rule (queue.followRounds): it starts at
// aheadFirst; rounds that end before the bound move it towards aheadRounds times their
// events, within [aheadLeast, the log's bound]; a round that the bound cut short (a
// stalled peer) leaves it where it is, so that stalls do not push it up.
func TestAheadFollowsRounds(t *testing.T) {
	const logMax = 1 << 14
	newQueue := func() *queue { return &queue{aheadMax: aheadFirst, aheadMean: aheadFirst / aheadRounds} }
	rounds := func(q *queue, n, events int) {
		for range n {
			q.ahead = min(events, q.aheadMax)
			q.followRounds(logMax)
		}
	}
	t.Run("short rounds lower it to the floor", func(t *testing.T) {
		q := newQueue()
		rounds(q, 200, aheadLeast/aheadRounds/2)
		if q.aheadMax != aheadLeast {
			t.Fatalf("after rounds of %d events the bound is %d, want %d", aheadLeast/aheadRounds/2, q.aheadMax, aheadLeast)
		}
	})
	// The mean is kept in whole events, moving by an eighth of the difference: it settles
	// within 8 events of the rounds' count.
	t.Run("it settles at a multiple of the round's events", func(t *testing.T) {
		q := newQueue()
		rounds(q, 200, 700)
		if q.aheadMax < aheadRounds*(700-8) || q.aheadMax > aheadRounds*(700+8) {
			t.Fatalf("after rounds of 700 events the bound is %d, want about %d", q.aheadMax, aheadRounds*700)
		}
	})
	t.Run("longer rounds raise it up to the log's bound", func(t *testing.T) {
		q := newQueue()
		rounds(q, 200, 3*logMax) // every round cut short by the bound: not counted
		if q.aheadMax != aheadFirst {
			t.Fatalf("rounds cut short by the bound moved it to %d", q.aheadMax)
		}
		rounds(q, 200, aheadFirst-1) // rounds that end just below it count
		if q.aheadMax < logMax-aheadRounds*8 {
			t.Fatalf("after rounds of %d events the bound is %d, want about %d", aheadFirst-1, q.aheadMax, logMax)
		}
		rounds(q, 200, 5000)
		if q.aheadMax != logMax {
			t.Fatalf("after rounds of 5000 events the bound is %d, want the log's %d", q.aheadMax, logMax)
		}
	})
	t.Run("a stalled peer does not move it", func(t *testing.T) {
		q := newQueue()
		rounds(q, 200, 500)
		before := q.aheadMax
		rounds(q, 50, 1<<30) // every round held up until the bound stopped the worker
		if q.aheadMax != before {
			t.Fatalf("stalled rounds moved the bound from %d to %d", before, q.aheadMax)
		}
	})
}

// TestRoundEvents: the events between the GVT rounds a worker starts, chosen once per run.
func TestRoundEvents(t *testing.T) {
	tw := func(workers, queues int) core.TimeWarpConfig {
		return core.TimeWarpConfig{Workers: workers, Schedulers: queues}
	}
	for _, c := range []struct {
		name  string
		d     *timeWarpDispatcher
		procs int
		want  int
	}{
		{"2 workers on 2 processors", &timeWarpDispatcher{cfg: tw(2, 2), reverse: true}, 2, gvtEvents},
		{"3 workers on 2 processors", &timeWarpDispatcher{cfg: tw(3, 3), reverse: true}, 2, crowdedGVTEvents},
		{"16 workers on 2 processors", &timeWarpDispatcher{cfg: tw(16, 16), reverse: true}, 2, crowdedGVTEvents},
		{"16 workers on 16 processors", &timeWarpDispatcher{cfg: tw(16, 16), reverse: true}, 16, gvtEvents},
		{"periodic state saving", &timeWarpDispatcher{cfg: tw(16, 16)}, 2, slowGVTEvents},
		{"shared schedule queues", &timeWarpDispatcher{cfg: tw(4, 2), reverse: true}, 2, slowGVTEvents},
		{"across processes", &timeWarpDispatcher{cfg: tw(1, 1), reverse: true, dist: &dist.Driver{}}, 2, slowGVTEvents},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.d.roundEvents(c.procs); got != c.want {
				t.Fatalf("roundEvents = %d, want %d", got, c.want)
			}
		})
	}
}
