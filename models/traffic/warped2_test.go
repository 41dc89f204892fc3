package traffic

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/grid"
	"github.com/warpedgo/warped/rng"
)

// TestDestinationRange: destinations lie in [-(d-1), d], WARPED2's [-99, 100] for d = 100,
// both ends reached.
func TestDestinationRange(t *testing.T) {
	g := rng.New(1, 2)
	lo, hi := int64(0), int64(0)
	for range 20000 {
		x := destination(&g, 100)
		require.True(t, x >= -99 && x <= 100, "%d", x)
		lo, hi = min(lo, x), max(hi, x)
	}
	require.Equal(t, [2]int64{-99, 100}, [2]int64{lo, hi})
	require.Zero(t, destination(&g, 0))
	for range 100 {
		require.Contains(t, []int64{0, 1}, destination(&g, 1))
	}
}

// TestWARPED2ByHand pins a tiny case worked out by hand: one intersection (a 1 x 1 torus,
// so every departure comes back), 4 cars, mean interval 0 (every step takes exactly 1),
// destinations at most 1 block east and north, no congestion. The cars share one initial
// heading (WARPED2's one initial lane per intersection). A car with n = x + y blocks to go
// first arrives at 1; each block is a DirectionSelect, a Departure and an Arrival one time
// unit apart, so it finishes at 1 + 3n with travel time 3n, after 1 + 3n events. The
// destinations are the intersection's generator's draws, replayed here in Init's order.
func TestWARPED2ByHand(t *testing.T) {
	c := Config{IntersectionsX: 1, IntersectionsY: 1, Cars: 4, MeanInterval: 0, MaxCarsOnRoad: 5, MaxDistance: 1}
	const seed = 3
	g := rng.New(seed, 0)
	g.Range(0, 3)                            // the shared heading, drawn first
	blocks, events := [3]uint64{}, uint64(0) // cars with 0, 1 and 2 blocks to go
	for range c.Cars {
		x, y := destination(&g, 1), destination(&g, 1)
		require.EqualValues(t, 1, c.delay(&g))
		blocks[x+y]++
		events += 1 + 3*uint64(x+y)
	}
	require.NotZero(t, blocks[1]+blocks[2], "seed %d sends no car anywhere: the test shows nothing", seed)

	for _, tc := range []struct {
		end              float64
		finished, events uint64
	}{
		{1, blocks[0], blocks[0] + blocks[1] + blocks[2]}, // every car's first arrival
		{4, blocks[0] + blocks[1], blocks[0] + 4*(blocks[1]+blocks[2])},
		{7, blocks[0] + blocks[1] + blocks[2], events},
	} {
		lps, err := New(c)
		require.NoError(t, err)
		s, err := dispatch.New(kernel.Config{MaxSimTime: tc.end, EndInclusive: true, Seed: seed}, lps)
		require.NoError(t, err)
		r, err := s.Run(context.Background())
		require.NoError(t, err)
		res := Summarize(lps)
		require.Equal(t, tc.finished, res.CarsFinished, "finished by %v", tc.end)
		require.Equal(t, tc.events, r.EventsCommitted, "events by %v", tc.end)
		if tc.end == 7 {
			require.Equal(t, Results{CarsArrived: blocks[1] + 2*blocks[2], CarsFinished: uint64(c.Cars),
				AverageTravelTime: float64(3*(blocks[1]+2*blocks[2])) / float64(c.Cars)}, res)
		}
	}

	// The heading is shared: every car's first arrival queues in the same incoming lane.
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: 1, EndInclusive: true, Seed: seed}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	st := lps[0].(*Intersection).S
	g = rng.New(seed, 0)
	h := grid.Direction(g.Range(0, 3))
	require.Equal(t, blocks[1]+blocks[2], st.In[h], "cars in the shared heading's lane")
}
