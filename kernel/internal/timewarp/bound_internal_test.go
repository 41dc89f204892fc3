package timewarp

import (
	"math"
	"math/rand/v2"
	"testing"
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
