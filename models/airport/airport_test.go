package airport

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/modeltest"
	"github.com/warpedgo/warped/rng"
)

func small() Config {
	c := DefaultConfig()
	c.AirportsX, c.AirportsY, c.Planes, c.Runways = 6, 4, 10, 1
	return c
}

func run(t *testing.T, c Config, end float64) (kernel.Result, Results, []kernel.LogicalProcess) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 3}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps), lps
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.AirportsX = 0 }, "--num-airports-x must be at least 1, got 0"},
		{func(c *Config) { c.AirportsY = -3 }, "--num-airports-y must be at least 1"},
		{func(c *Config) { c.Planes = 0 }, "--num-planes must be at least 1"},
		{func(c *Config) { c.GroundTime = -1 }, "--ground-time must be at least 0"},
		{func(c *Config) { c.FlightTime = -1 }, "--flight-time must be at least 0"},
		{func(c *Config) { c.Runways = 0 }, "--runways must be at least 1"},
		{func(c *Config) { c.HoldTime = 0 }, "--hold-time must be at least 1"},
		{func(c *Config) { c.AirportsX, c.AirportsY = 1<<20, 1<<20 }, "too many"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, DefaultConfig().Validate())
}

// TestPlanesAreConserved: every plane is on the ground, on a runway, holding or flying, and
// each event leads to exactly one more, so one event per plane is pending throughout;
// runways are never over-used; counts add up.
func TestPlanesAreConserved(t *testing.T) {
	c := small()
	r, res, lps := run(t, c, 3000)
	planes := c.AirportsX * c.AirportsY * c.Planes
	require.Equal(t, planes, r.PeakPendingEvents)
	require.Positive(t, res.Landings)
	require.Positive(t, res.Holds, "one runway for 10 planes is contended")
	require.LessOrEqual(t, res.Landings, res.Arrivals)
	require.LessOrEqual(t, res.Departures, uint64(planes)+res.Landings)
	require.LessOrEqual(t, res.Grounded, uint64(planes))
	for _, l := range lps {
		require.LessOrEqual(t, l.(*Airport).S.FreeRunways, uint64(c.Runways))
	}
}

func TestMoreRunwaysFewerHolds(t *testing.T) {
	c := small()
	c.Planes = 30
	_, one, _ := run(t, c, 3000)
	c.Runways = 3
	_, three, _ := run(t, c, 3000)
	require.Less(t, three.Holds, one.Holds)
	require.Less(t, three.AverageDelay, one.AverageDelay+1)
}

// TestReverseUndoesStep: for every event kind, on random states with no free runway, one
// and more, unstep given the draws step made restores the state step found, whichever
// branch step took (runway taken or hold).
func TestReverseUndoesStep(t *testing.T) {
	c := DefaultConfig()
	c.LandTime, c.TakeoffTime = 0, 0 // delays still take one draw
	r := rand.New(rand.NewPCG(1, 2))
	held := map[Kind]bool{}
	for i := range 20000 {
		s0 := State{FreeRunways: r.Uint64N(3), Grounded: r.Uint64N(5) + 1, Arrivals: r.Uint64N(100) + 5,
			Landings: r.Uint64N(100) + 5, Departures: r.Uint64N(100) + 5, Holds: r.Uint64N(100) + 5,
			HoldTime: r.Uint64N(1000) + 500}
		k := Kind(i % int(numKinds))
		g0 := kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32() | 1, r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
		s, g := s0, g0
		c.step(&s, &g, 1000, 5, k)
		if s.Holds != s0.Holds {
			held[k] = true
		}
		c.unstep(&s, rng.Draws(g0, g), k)
		require.Equal(t, s0, s, "kind %d", k)
	}
	require.True(t, held[Arrival] && held[HoldLand] && held[Departure])
}

func TestDeterminismMatrix(t *testing.T) {
	c := small()
	want := modeltest.Matrix(t, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(t, err)
			return lps
		},
		End: 1500, Seed: 8, Partition: c.Partitioner(), Reversible: true, Short: raceEnabled,
	})
	require.Greater(t, want.EventsCommitted, uint64(1000))
}

// BenchmarkRun runs the default airport model (50x50 airports) to time 500, sequentially
// and under time warp with 1 and 2 workers (see modeltest.Bench).
func BenchmarkRun(b *testing.B) {
	c := DefaultConfig()
	modeltest.Bench(b, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(b, err)
			return lps
		},
		End: 500, Seed: 1, Partition: c.Partitioner(),
	})
}

// TestDelaysBounded: a delay past 2^53 (a time's exact integers) is refused.
func TestDelaysBounded(t *testing.T) {
	c := DefaultConfig()
	c.FlightTime = 1<<53 + 1
	require.ErrorContains(t, c.Validate(), "--flight-time must be at most 9007199254740992")
}
