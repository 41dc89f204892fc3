package traffic

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/grid"
	"github.com/warpedgo/warped/models/internal/modeltest"
	"github.com/warpedgo/warped/rng"
)

func small() Config {
	c := DefaultConfig()
	c.IntersectionsX, c.IntersectionsY, c.Cars, c.MeanInterval, c.MaxDistance = 6, 5, 8, 10, 6
	return c
}

func run(t *testing.T, c Config, end float64) (kernel.Result, Results) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 5}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.IntersectionsX = 0 }, "--num-intersections-x must be at least 1, got 0"},
		{func(c *Config) { c.IntersectionsY = -1 }, "--num-intersections-y must be at least 1"},
		{func(c *Config) { c.Cars = 0 }, "--number-of-cars must be at least 1"},
		{func(c *Config) { c.MeanInterval = -1 }, "--mean-interval must be at least 0"},
		{func(c *Config) { c.MaxCarsOnRoad = 0 }, "--max-cars-on-road must be at least 1"},
		{func(c *Config) { c.MaxDistance = -1 }, "--max-distance must be at least 0"},
		{func(c *Config) { c.MaxDistance = 1 << 31 }, "--max-distance must be at most"},
		{func(c *Config) { c.IntersectionsX, c.IntersectionsY = 1<<20, 1<<20 }, "too many"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, DefaultConfig().Validate())
}

// TestEveryTripEnds: every step brings a car one block closer, so with a long enough end
// time every car finishes, congestion or not; with destinations 0 away every car finishes
// on its first arrival.
func TestEveryTripEnds(t *testing.T) {
	c := small()
	c.MaxCarsOnRoad = 1 // congested
	_, res := run(t, c, 1e6)
	total := uint64(c.IntersectionsX * c.IntersectionsY * c.Cars)
	require.Equal(t, total, res.CarsFinished)
	require.Zero(t, res.CarsInLanes)
	require.Zero(t, res.CarsOnRoads)
	require.Positive(t, res.FullRoads)
	require.Positive(t, res.AverageTravelTime)

	c.MaxDistance = 0
	_, res = run(t, c, 1e6)
	require.Equal(t, Results{CarsFinished: total}, res)
}

func TestCongestionSlowsTrips(t *testing.T) {
	c := small()
	c.Cars = 30
	_, free := run(t, c, 1e6)
	c.MaxCarsOnRoad = 1
	_, jam := run(t, c, 1e6)
	require.Greater(t, jam.FullRoads, free.FullRoads)
	require.Greater(t, jam.AverageTravelTime, free.AverageTravelTime)
	require.Equal(t, free.CarsArrived, jam.CarsArrived, "the same trips, block by block")
}

func TestCandidates(t *testing.T) {
	c, n := candidates(grid.East, 3, -2)
	require.Equal(t, 2, n)
	require.Equal(t, [2]grid.Direction{grid.East, grid.South}, c)
	c, n = candidates(grid.North, 3, -2) // straight on does not help: x first
	require.Equal(t, 2, n)
	require.Equal(t, [2]grid.Direction{grid.East, grid.South}, c)
	c, n = candidates(grid.South, 0, -2)
	require.Equal(t, 1, n)
	require.Equal(t, grid.South, c[0])
	c, n = candidates(grid.West, 0, 5)
	require.Equal(t, 1, n)
	require.Equal(t, grid.North, c[0])
}

// TestReverseUndoesStep: for every event kind, on random states (roads empty, full and
// in between) and random cars and generators, unstep given the draws step made restores the
// state step found, for every branch: finished and passing arrivals, a first, second or no
// useful road free, departures.
func TestReverseUndoesStep(t *testing.T) {
	c := DefaultConfig()
	c.MaxCarsOnRoad = 2
	r := rand.New(rand.NewPCG(3, 9))
	branches := map[[2]uint64]bool{}
	for i := range 30000 {
		var s0 State
		s0.Arrived, s0.Finished, s0.TravelTime, s0.FullRoads = r.Uint64N(50)+5, r.Uint64N(50)+5, r.Uint64N(1e6)+1e6, r.Uint64N(50)+5
		for d := range 4 {
			s0.In[d], s0.Out[d] = r.Uint64N(4)+1, r.Uint64N(4)
		}
		k := Kind(i % int(numKinds))
		x, y := r.Int64N(5)-2, r.Int64N(5)-2
		if k != Arrival && x == 0 && y == 0 {
			x = 1
		}
		if k == DirectionSelect {
			s0.In[0], s0.In[1], s0.In[2], s0.In[3] = 1, 1, 1, 1
		}
		h := grid.Direction(r.IntN(4))
		if k == Departure {
			s0.Out[h]++
		}
		w := car(k, h, x, y, r.Uint64N(1000))
		g0 := kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32() | 1, r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
		s, g := s0, g0
		c.step(&s, &g, 5000, 7, w)
		branches[[2]uint64{uint64(k), s.FullRoads - s0.FullRoads + 10*(s.Finished-s0.Finished)}] = true
		unstep(&s, 5000, rng.Draws(g0, g), w)
		require.Equal(t, s0, s, "event %v", w)
	}
	for _, b := range [][2]uint64{{0, 0}, {0, 10}, {1, 0}, {1, 1}, {1, 2}, {2, 0}} {
		require.True(t, branches[b], "branch %v never taken", b)
	}
}

func TestDeterminismMatrix(t *testing.T) {
	c := small()
	c.MaxCarsOnRoad = 2
	want := modeltest.Matrix(t, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(t, err)
			return lps
		},
		End: 300, Seed: 9, Partition: c.Partitioner(), Reversible: true, Short: raceEnabled,
	})
	require.Greater(t, want.EventsCommitted, uint64(1000))
}

// BenchmarkRun runs the default traffic model (100x100 intersections) to time 2000,
// sequentially and under time warp with 1 and 2 workers (see modeltest.Bench).
func BenchmarkRun(b *testing.B) {
	c := DefaultConfig()
	modeltest.Bench(b, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(b, err)
			return lps
		},
		End: 2000, Seed: 1, Partition: c.Partitioner(),
	})
}
