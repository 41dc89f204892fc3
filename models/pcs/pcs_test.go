package pcs

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/rng"
)

func runPCS(t *testing.T, c Config, end float64, seed uint64) (kernel.Result, Results, []kernel.LogicalProcess) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps), lps
}

func small() Config {
	c := DefaultConfig()
	c.CellsX, c.CellsY = 8, 6
	c.Portables = 20
	return c
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.CellsX = 0 }, "--num-cells-x must be at least 1"},
		{func(c *Config) { c.CellsY = -2 }, "--num-cells-y must be at least 1"},
		{func(c *Config) { c.Channels = -1 }, "--channel-cnt must be in [0, "},
		{func(c *Config) { c.CallInterval = -1 }, "--call-interval"},
		{func(c *Config) { c.Portables = 0 }, "--portable-count must be in [1, "},
		{func(c *Config) { c.Portables = -1 }, "--portable-count must be in [1, "},
		{func(c *Config) { c.MaxHops = 0 }, "--max-hops must be in [1, 65536], got 0"},
		{func(c *Config) { c.MaxHops = 1 << 62 }, "--max-hops must be in [1, 65536]"},
		{func(c *Config) { c.CellsX, c.CellsY = 1<<20, 1<<20 }, "too many"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestInvariants(t *testing.T) {
	c := small()
	r, res, lps := runPCS(t, c, 500, 11)
	require.Greater(t, res.CallAttempts, uint64(100))
	require.Greater(t, res.ChannelBlocks, uint64(0), "20 portables on 15 channels do block")
	require.LessOrEqual(t, res.HandoffBlocks, res.ChannelBlocks)
	for _, l := range lps {
		require.LessOrEqual(t, l.(*Cell).S.IdleChannels, uint64(c.Channels))
	}
	// Every event causes exactly one event: the portables are conserved.
	require.Equal(t, c.CellsX*c.CellsY*c.Portables, r.PeakPendingEvents)
}

func TestMoreChannelsFewerBlocks(t *testing.T) {
	c := small()
	_, few, _ := runPCS(t, c, 500, 3)
	c.Channels = 40
	_, many, _ := runPCS(t, c, 500, 3)
	require.Less(t, many.ChannelBlocks, few.ChannelBlocks)
	require.Zero(t, many.ChannelBlocks, "40 channels for at most ~20 portables never block")
}

func TestSeedDeterminism(t *testing.T) {
	a, ra, _ := runPCS(t, small(), 200, 1)
	b, rb, _ := runPCS(t, small(), 200, 1)
	c, _, _ := runPCS(t, small(), 200, 2)
	require.Equal(t, a.Digest, b.Digest)
	require.Equal(t, ra, rb)
	require.NotEqual(t, a.Digest, c.Digest)
}

func TestMinTS(t *testing.T) {
	require.Equal(t, actComplete, minTS(1, 2, 3))
	require.Equal(t, actMove, minTS(3, 4, 3), "a move wins a tie with a completion")
	require.Equal(t, actNext, minTS(5, 2, 3))
	require.Equal(t, actMove, minTS(5, 3, 3), "a move wins a tie with a call")
	require.Equal(t, actComplete, minTS(2, 2, 9))
}

// TestRandomMoveStaysNear: with MaxHops 1 (WARPED2's random_move) a move is one draw and
// reaches the four neighbours on the torus (left, right, down, up: draws 0 to 3); with
// MaxHops 3 it reaches every cell within torus distance 3.
func TestRandomMoveStaysNear(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxHops int
		cells   int // distinct cells reached from the corner
	}{
		{"one hop", 1, 4},
		// 1 to 3 hops reach the 25 cells within torus distance 3, the start included
		// (after out-and-back hops).
		{"1 to 3 hops", 3, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := shared{Config: Config{CellsX: 10, CellsY: 7, MaxHops: tc.maxHops}}
			g := kernel.RNG{D: 1, V: [5]uint32{9, 8, 7, 6, 5}}
			seen := map[kernel.LPID]bool{}
			for range 5000 {
				before := g
				to := cfg.randomMove(0, &g) // from a corner: moves wrap around the torus
				require.Less(t, int(to), 70)
				x, y := int(to)%10, int(to)/10
				dx, dy := min(x, 10-x), min(y, 7-y)
				require.LessOrEqual(t, dx+dy, tc.maxHops)
				if tc.maxHops == 1 {
					require.EqualValues(t, 1, rng.Draws(before, g), "one hop is one draw")
					require.Equal(t, []kernel.LPID{9, 1, 60, 10}[before.Range(0, 3)], to,
						"draw 0 goes left, 1 right, 2 down, 3 up")
				}
				seen[to] = true
			}
			require.Len(t, seen, tc.cells)
		})
	}
}

func TestPartitionerTilesTheTorus(t *testing.T) {
	c := DefaultConfig()
	c.CellsX, c.CellsY = 10, 6
	for _, parts := range []int{1, 2, 3, 4, 6, 7} {
		part, err := partition.Check(c.Partitioner(), 60, parts)
		require.NoError(t, err)
		sizes := partition.Sizes(part, parts)
		for p, s := range sizes {
			require.Positive(t, s, "parts=%d: part %d empty", parts, p)
		}
	}
	// Four parts of a 10x6 grid: 2x2 tiles of 5x3 cells.
	part := c.Partitioner().Partition(60, 4)
	require.Equal(t, 0, part[0])
	require.Equal(t, 1, part[5])
	require.Equal(t, 2, part[3*10])
	require.Equal(t, 3, part[59])
}

// TestReverseUndoesStep: for every event kind, on random states (no idle channel, one, and
// more) and random times and generators, Reverse's unstep given the draws step made
// restores the state step found, whichever branch step took; with WARPED2's means and
// with the smallest a reversible configuration allows (call interval and move interval 0,
// whose Poissons make no draws, call duration 1).
func TestReverseUndoesStep(t *testing.T) {
	small := DefaultConfig()
	small.CallInterval, small.MoveInterval, small.CallDuration = 0, 0, 1
	for _, c := range []Config{DefaultConfig(), small} {
		m := newShared(c)
		r := rand.New(rand.NewPCG(7, 11))
		branches := map[[2]uint64]bool{} // (kind, change in ChannelBlocks) seen
		for i := range 20000 {
			s0 := State{IdleChannels: uint64(r.IntN(4)), CallAttempts: r.Uint64N(100) + 10,
				ChannelBlocks: r.Uint64N(100) + 10, HandoffBlocks: r.Uint64N(100) + 10}
			w := kernel.Words{uint64(i % int(numMethods)), r.Uint64N(300), r.Uint64N(300), r.Uint64N(300)}
			g0 := randomGen(r)
			s, g := s0, g0
			m.step(5, 5, &s, &g, w)
			branches[[2]uint64{w[0], s.ChannelBlocks - s0.ChannelBlocks}] = true
			m.unstep(&s, &g0, rng.Draws(g0, g), w)
			require.Equal(t, s0, s, "%+v: event %v", c, w)
		}
		for k := range uint64(numMethods) {
			require.True(t, branches[[2]uint64{k, 0}], "kind %d never left the blocks alone", k)
		}
		require.True(t, branches[[2]uint64{uint64(NextCall), 1}], "no call was blocked")
		require.True(t, branches[[2]uint64{uint64(MoveCallIn), 1}], "no hand-off was blocked")
	}
}

// TestIrreversibleWithoutCallDraws: with a call duration of mean 0 (no draws), a blocked
// call draws as much as one that took the last channel, so the cells say they cannot be
// reversed: the default state saving is then periodic, with the sequential result, and
// asking for reverse computation is an error.
func TestIrreversibleWithoutCallDraws(t *testing.T) {
	c := small()
	c.CallDuration = 0
	seq, _, _ := runPCS(t, c, 60, 3)
	lps, err := New(c)
	require.NoError(t, err)
	require.False(t, lps[0].(*Cell).Reversible())
	s, err := dispatch.New(kernel.Config{MaxSimTime: 60, Seed: 3, Type: kernel.TimeWarp,
		TimeWarp: kernel.TimeWarpConfig{Workers: 3}}, lps)
	require.NoError(t, err)
	require.Equal(t, kernel.StateSavingPeriodic, s.StateSaving())
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, seq.Digest, r.Digest)
	lps, err = New(c)
	require.NoError(t, err)
	_, err = dispatch.New(kernel.Config{MaxSimTime: 60, Type: kernel.TimeWarp,
		TimeWarp: kernel.TimeWarpConfig{StateSaving: kernel.StateSavingReverse}}, lps)
	require.ErrorContains(t, err, "cannot reverse its events in this configuration")
	lps, err = New(small())
	require.NoError(t, err)
	require.True(t, lps[0].(*Cell).Reversible())
}
