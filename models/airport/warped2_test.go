package airport

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/modeltest"
)

func warped2Config() Config {
	c := small()
	c.Variant = VariantWARPED2
	return c
}

// TestWARPED2ByHand pins WARPED2's airport on a case worked out by hand: one airport (a
// 1 x 1 torus, so every flight comes back), 2 planes, mean ground and flight times 0 (every
// delay is 1), run to end times inclusively (WARPED2's end rule). Each plane departs at 1
// (initializeLP), arrives at 2, departs at 3 and so on: by an odd end T each plane has made
// (T+1)/2 departures and (T-1)/2 arrivals and is in the air; by an even T, T/2 of each and
// is on the ground. The runway variant of the same case lands and takes off in between.
func TestWARPED2ByHand(t *testing.T) {
	c := Config{Variant: VariantWARPED2, AirportsX: 1, AirportsY: 1, Planes: 2, Runways: 1, HoldTime: 1}
	for _, tc := range []struct {
		end                            float64
		events                         uint64
		departures, arrivals, grounded uint64
	}{
		{1, 2, 2, 0, 0},
		{2, 4, 2, 2, 2},
		{9, 18, 10, 8, 0},
		{10, 20, 10, 10, 2},
	} {
		lps, err := New(c)
		require.NoError(t, err)
		s, err := dispatch.New(kernel.Config{MaxSimTime: tc.end, EndInclusive: true, Seed: 4}, lps)
		require.NoError(t, err)
		r, err := s.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, tc.events, r.EventsCommitted, "events by %v", tc.end)
		require.Equal(t, Results{Arrivals: tc.arrivals, Departures: tc.departures, Grounded: tc.grounded},
			Summarize(lps), "by %v", tc.end)
		require.EqualValues(t, tc.end, r.FinalTime)
	}

	c.Variant = VariantRunways
	_, res, _ := run(t, c, 11)
	require.Positive(t, res.Landings, "the runway variant adds landings")
}

// TestWARPED2ReverseUndoesStep: unstepWARPED2 restores the state stepWARPED2 found, for both
// event kinds.
func TestWARPED2ReverseUndoesStep(t *testing.T) {
	c := warped2Config()
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		s0 := State{Grounded: r.Uint64N(5) + 1, Arrivals: r.Uint64N(100) + 5, Departures: r.Uint64N(100) + 5}
		k := []Kind{Arrival, Departure}[i%2]
		g := kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32() | 1, r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
		s := s0
		c.step(&s, &g, 1000, 5, k)
		c.unstep(&s, 0, k)
		require.Equal(t, s0, s, "kind %d", k)
	}
	require.Panics(t, func() { var s State; c.step(&s, &kernel.RNG{}, 0, 0, Landing) })
}

// TestWARPED2DeterminismMatrix: the WARPED2 variant, run with WARPED2's end rule, commits
// the sequential result in every time-warp configuration; planes are conserved and never
// held.
func TestWARPED2DeterminismMatrix(t *testing.T) {
	c := warped2Config()
	want := modeltest.Matrix(t, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(t, err)
			return lps
		},
		End: 1500, EndInclusive: true, Seed: 8, Partition: c.Partitioner(), Reversible: true, Short: raceEnabled,
	})
	require.Greater(t, want.EventsCommitted, uint64(1000))
	r, res, _ := run(t, c, 1500)
	require.Equal(t, c.AirportsX*c.AirportsY*c.Planes, r.PeakPendingEvents)
	require.Zero(t, res.Holds+res.Landings)
	require.LessOrEqual(t, res.Grounded, uint64(c.AirportsX*c.AirportsY*c.Planes))
}

func TestVariantIsChecked(t *testing.T) {
	c := DefaultConfig()
	c.Variant = "fujimoto"
	require.ErrorContains(t, c.Validate(), `--variant must be runways or warped2, got "fujimoto"`)
}

// TestWARPED2ReadsNoRunways: the WARPED2 variant has no runways, so the runway parameters
// change nothing, not even the digest (its state holds no free runways), and need no
// valid values.
func TestWARPED2ReadsNoRunways(t *testing.T) {
	run := func(runways, land, hold int) kernel.Result {
		c := warped2Config()
		c.Runways, c.LandTime, c.TakeoffTime, c.HoldTime = runways, land, land, hold
		require.NoError(t, c.Validate())
		return modeltest.Sequential(t, modeltest.Model{End: 200, Seed: 3, Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(t, err)
			return lps
		}})
	}
	want := run(2, 2, 5)
	for _, c := range []struct {
		name                string
		runways, land, hold int
	}{{"three runways", 3, 2, 5}, {"no runways", 0, 0, 0}, {"other times", 1, 9, 7}} {
		require.Equal(t, want.Digest, run(c.runways, c.land, c.hold).Digest, c.name)
	}
}
