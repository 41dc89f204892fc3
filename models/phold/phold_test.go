package phold_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
)

func runPHOLD(t *testing.T, c phold.Config, end float64, seed uint64) (kernel.Result, phold.Results) {
	t.Helper()
	lps, err := phold.New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, phold.Summarize(lps)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*phold.Config)
		want string
	}{
		{func(c *phold.Config) { c.LPs = 0 }, "--lps must be at least 1"},
		{func(c *phold.Config) { c.Remote = 1.5 }, "--remote is a probability"},
		{func(c *phold.Config) { c.Remote = -0.1 }, "--remote is a probability"},
		{func(c *phold.Config) { c.Lookahead = -1 }, "--lookahead must be"},
		{func(c *phold.Config) { c.Mean = 0 }, "--mean must be"},
		{func(c *phold.Config) { c.Mean = 0.05 }, "must be at least --lookahead"},
		{func(c *phold.Config) { c.StartEvents = 0 }, "--start-events must be at least 1"},
		{func(c *phold.Config) { c.Grain = -1 }, "--grain must be in [0, 268435456], got -1"},
		{func(c *phold.Config) { c.Grain = 1 << 62 }, "--grain must be in [0, 268435456]"},
	} {
		c := phold.DefaultConfig()
		tc.mod(&c)
		_, err := phold.New(c)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, phold.DefaultConfig().Validate())
}

// With one LP, no remote events and mean == lookahead, every delay is exactly the lookahead:
// events come at 0.5, 1.0, ... so an end time of 10 admits 19 events.
func TestDeterministicDelaysByHand(t *testing.T) {
	c := phold.Config{LPs: 1, Remote: 0, Mean: 0.5, Lookahead: 0.5, StartEvents: 1}
	r, res := runPHOLD(t, c, 10, 1)
	require.EqualValues(t, 19, r.EventsCommitted)
	require.EqualValues(t, 19, res.Events)
	require.EqualValues(t, 0, res.Remote)
	require.EqualValues(t, 9.5, r.FinalTime)
}

func TestCommittedCountsAndRemoteFraction(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 512
	r, res := runPHOLD(t, c, 100, 3)
	require.Equal(t, r.EventsCommitted, res.Events, "the model's count equals the kernel's")
	// About 512 LPs * 100 time units / mean 1.0 events.
	require.InDelta(t, 51200, float64(res.Events), 2000)
	require.InDelta(t, 0.25, float64(res.Remote)/float64(res.Events), 0.01)
	// One event per LP is pending at any time.
	require.Equal(t, 512, r.PeakPendingEvents)
}

func TestGrainAddsWorkButKeepsTheEventPattern(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 64
	r0, res0 := runPHOLD(t, c, 30, 5)
	c.Grain = 100
	r1, res1 := runPHOLD(t, c, 30, 5)
	require.Equal(t, res0, res1)
	require.Equal(t, r0.FinalTime, r1.FinalTime)
	require.NotEqual(t, r0.Digest, r1.Digest, "the work is part of the state")
}

func TestWorkIsAFunctionOfTheGenerator(t *testing.T) {
	g := kernel.RNG{D: 1, V: [5]uint32{1, 2, 3, 4, 5}}
	before := g
	require.Equal(t, phold.Work(g, 1000), phold.Work(g, 1000))
	require.NotEqual(t, phold.Work(g, 1000), phold.Work(g, 999))
	require.Equal(t, before, g)
	require.Zero(t, phold.Work(g, 0))
}

func TestStartEvents(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 16
	c.StartEvents = 4
	r, _ := runPHOLD(t, c, 20, 1)
	require.Equal(t, 16*4, r.PeakPendingEvents)
}
