package gvtmethod

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

// net is the omniscient view of a run of n ranks: each rank's pending event times, and
// the events in flight between ranks (destination and time).
type net struct {
	ranks    []Rank
	pending  [][]event.Time
	inFlight [][2]float64
}

// trueMin is the least time of every pending or in-flight event: what GVT must not exceed.
func (w *net) trueMin() event.Time {
	m := math.Inf(1)
	for _, p := range w.pending {
		for _, t := range p {
			m = min(m, t)
		}
	}
	for _, f := range w.inFlight {
		m = min(m, f[1])
	}
	return m
}

// TestCombineAgainstTheOmniscientView drives three ranks through random steps (a rank
// processes its least event and sends one to a random rank, or the network delivers one
// event) and reads them all at random moments, as the stop-the-world all-gather does:
// whenever Combine says ok, its GVT is exactly the true minimum; while an event is in
// flight it says nothing. Both outcomes occur.
func TestCombineAgainstTheOmniscientView(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	w := &net{ranks: make([]Rank, 3), pending: [][]event.Time{{1}, {2}, {3}}}
	var agreed, refused int
	for range 5000 {
		switch step := r.IntN(10); {
		case step < 5: // a rank processes its least event and sends one on
			i := r.IntN(len(w.ranks))
			p := w.pending[i]
			if len(p) == 0 {
				continue
			}
			slices.Sort(p)
			now := p[0]
			w.pending[i] = p[1:]
			to, at := r.IntN(len(w.ranks)), now+1+r.Float64()
			if to == i {
				w.pending[i] = append(w.pending[i], at)
				continue
			}
			w.ranks[i].Sent()
			w.inFlight = append(w.inFlight, [2]float64{float64(to), at})
		case step < 8 && len(w.inFlight) > 0: // the network delivers one event
			k := r.IntN(len(w.inFlight))
			f := w.inFlight[k]
			w.inFlight = slices.Delete(w.inFlight, k, k+1)
			w.ranks[int(f[0])].Received()
			w.pending[int(f[0])] = append(w.pending[int(f[0])], f[1])
		default: // a round: every rank reads at once
			rs := make([]Reading, len(w.ranks))
			for i := range w.ranks {
				m := math.Inf(1)
				for _, t := range w.pending[i] {
					m = min(m, t)
				}
				rs[i] = w.ranks[i].Read(m)
			}
			g, ok := Combine(rs)
			if !ok {
				require.NotEmpty(t, w.inFlight, "a round refused with nothing in flight")
				refused++
				continue
			}
			require.Empty(t, w.inFlight, "a round agreed while an event was in flight")
			require.Equal(t, w.trueMin(), g)
			agreed++
		}
	}
	require.NotZero(t, agreed, "no round agreed")
	require.NotZero(t, refused, "no round met an event in flight")
}
