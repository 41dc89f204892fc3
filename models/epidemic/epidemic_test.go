package epidemic

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/modeltest"
)

// small is a small stochastic-variant configuration.
func small() Config {
	c := Defaults(Stochastic)
	c.Locations, c.Population, c.InitialInfected = 24, 40, 0.05
	return c
}

// smallWARPED2 is a small generated WARPED2-variant configuration whose people move often.
func smallWARPED2() Config {
	c := DefaultConfig()
	c.Locations, c.Population, c.WattsStrogatzK = 12, 20, 4
	c.MinTravelTimeToHub, c.MaxTravelTimeToHub, c.MinDiffusionInterval, c.MaxDiffusionInterval = 5, 30, 10, 40
	return c
}

func run(t *testing.T, c Config, end float64) (kernel.Result, Results) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 2}, lps)
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
		{func(c *Config) { c.Variant = "seir" }, `--variant must be warped2 or stochastic, got "seir"`},
		{func(c *Config) { c.Network = "ring" }, `--network must be watts-strogatz or barabasi-albert, got "ring"`},
		{func(c *Config) { c.Locations = 1 }, "--num-locations must be at least 2, got 1"},
		{func(c *Config) { c.Locations, c.WattsStrogatzK = 2, 1 }, "WARPED2's rewiring needs at least 3 locations"},
		{func(c *Config) { c.MinTravelTimeToHub = 0 }, "--min-travel-time-to-hub must be at least 1"},
		{func(c *Config) { c.Network, c.BarabasiAlbertM = BarabasiAlbert, 1000 }, "--barabasi-albert-m must be less than --num-locations"},
		{func(c *Config) { c.Variant, c.Network = Stochastic, BarabasiAlbert }, "--network barabasi-albert needs --variant warped2"},
		{func(c *Config) { c.Variant, c.WattsStrogatzK = Stochastic, 3 }, "--watts-strogatz-k must be even"},
		{func(c *Config) { c.Population = -1 }, "--population must be at least 0"},
		{func(c *Config) { c.LatentDwell = 1<<32 + 7 }, "--latent-dwell-time must be at most 2147483647, got 4294967303"},
		{func(c *Config) { c.MinDiffusionInterval = 1<<32 + 7 }, "--min-diffusion-interval must be at most 2147483647"},
		{func(c *Config) { c.MaxTravelTimeToHub = 1 }, "--max-travel-time-to-hub (1) must be at least --min-travel-time-to-hub (50)"},
		{func(c *Config) { c.MaxDiffusionInterval = -1 }, "--max-diffusion-interval must be at least 1, got -1"},
		{func(c *Config) { c.BarabasiAlbertA = math.NaN() }, "--barabasi-albert-a must be a finite number >= 0, got NaN"},
		{func(c *Config) { c.BarabasiAlbertA = -1 }, "--barabasi-albert-a must be a finite number >= 0"},
		{func(c *Config) { c.TravelTime = 0 }, "--travel-time must be at least 1"},
		{func(c *Config) { c.RefreshInterval = 0 }, "--location-state-refresh-interval must be at least 1"},
		{func(c *Config) { c.Transmissibility = 1.5 }, "--transmissibility is a probability"},
		{func(c *Config) { c.ProbULU = -0.1 }, "--prob-ul-u is a probability"},
		{func(c *Config) { c.Locations, c.WattsStrogatzK = 4, 4 }, "less than --num-locations"},
		{func(c *Config) { c.Locations, c.Population = 1<<30, 1<<10 }, "too many people"},
		{func(c *Config) { c.Locations, c.WattsStrogatzK = 1<<17, 1<<15 }, "--num-locations 131072 x --watts-strogatz-k 32768 is too many neighbours in all (at most 2^32-1)"},
		{func(c *Config) { c.Locations, c.Network, c.BarabasiAlbertM = 1<<17, BarabasiAlbert, 1<<14 }, "--num-locations 131072 x 2 --barabasi-albert-m 16384 is too many neighbours in all"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		require.ErrorContains(t, err, tc.want)
	}
	require.NoError(t, DefaultConfig().Validate())
	require.NoError(t, Defaults(Stochastic).Validate())
	c := DefaultConfig()
	require.Equal(t, 1.4, c.ProbULV+c.ProbURV, "WARPED2's generator's thresholds, accepted")
	c.Variant = Stochastic
	require.NoError(t, c.Validate(), "with the same meaning in the stochastic variant")
	c.Locations, c.WattsStrogatzK, c.WattsStrogatzBeta = 2, 1, 0
	c.Variant = WARPED2
	require.NoError(t, c.Validate(), "2 locations are fine without rewiring")
	c = DefaultConfig()
	c.Locations, c.WattsStrogatzK = 1<<17, 1<<15-2
	require.NoError(t, c.Validate(), "131072 x 32767 neighbours fit 32-bit offsets")
}

// TestRingLattice checks the ring lattice, built a node's sorted list at a time, against
// the lattice linked edge by edge (what ringLattice did before), on rings where the lists
// wrap below 0 and past n-1, where they cover the whole ring, with left and right unequal
// (WARPED2's odd k) and with no neighbours at all.
func TestRingLattice(t *testing.T) {
	byEdges := func(n, left, right int) graph {
		g := make(graph, n)
		for i := range n {
			for j := 1; j <= left; j++ {
				g.link(uint32(i), uint32((i+n-j)%n))
			}
			for j := 1; j <= right; j++ {
				g.link(uint32(i), uint32((i+j)%n))
			}
		}
		return g
	}
	for _, c := range [][3]int{{10, 2, 2}, {10, 1, 2}, {10, 4, 5}, {9, 4, 4}, {7, 3, 4}, {5, 2, 2}, {3, 1, 1}, {100, 0, 0},
		{1000, 10, 10}, {1000, 3, 4}, {64, 31, 32}, {64, 20, 21}} {
		n, left, right := c[0], c[1], c[2]
		want, got := byEdges(n, left, right), ringLattice(n, left, right)
		for x := range n {
			if len(want[x]) != len(got[x]) || (len(want[x]) > 0 && !slices.Equal(want[x], got[x])) {
				t.Fatalf("n %d, left %d, right %d: node %d's neighbours %v, want %v", n, left, right, x, got[x], want[x])
			}
		}
	}
}

func TestWattsStrogatz(t *testing.T) {
	for _, beta := range []float64{0, 0.3, 1} {
		adj, off := wattsStrogatz(50, 4, beta, 7)
		require.Len(t, adj, 50*4, "n*k/2 edges, each listed twice")
		for i := range 50 {
			nb := adj[off[i]:off[i+1]]
			require.NotEmpty(t, nb)
			require.True(t, slices.IsSorted(nb))
			for _, j := range nb {
				require.NotEqual(t, uint32(i), j, "self loop")
				require.Contains(t, adj[off[j]:off[j+1]], uint32(i), "edge %d-%d not symmetric", i, j)
			}
		}
		adj2, _ := wattsStrogatz(50, 4, beta, 7)
		require.Equal(t, adj, adj2, "the network is a function of the seed")
		if beta == 0 {
			require.Equal(t, []uint32{1, 2, 48, 49}, adj[off[0]:off[1]], "a ring lattice")
		}
	}
}

// TestWave: with the defaults on a small world, an epidemic takes off and ends: people get
// infected and recover, the time series holds every sample, and nobody is lost (people
// travelling at a sample are at most one per location per travel time / diffusion interval).
func TestWave(t *testing.T) {
	c := small()
	_, r := run(t, c, 3000)
	total := uint64(c.Locations * c.Population)
	require.Greater(t, r.Infections, total/4, "an epidemic")
	require.Positive(t, r.Final[Recovered])
	require.Positive(t, r.Moves)
	require.Positive(t, r.PeakInfected)
	require.Len(t, r.Series, 3000/c.SampleInterval-1)
	travelling := uint64(c.Locations * (c.TravelTime/c.DiffusionInterval + 1))
	for _, p := range r.Series {
		var sum uint64
		for _, n := range p.Counts {
			sum += n
		}
		require.LessOrEqual(t, sum, total)
		require.GreaterOrEqual(t, sum+travelling, total, "at %d", p.Time)
	}
	csv := string(r.CSV())
	require.True(t, strings.HasPrefix(csv, "time,uninfected,latent,incubating,infectious,asymptomatic,recovered\n100,"))
	require.Equal(t, len(r.Series)+1, strings.Count(csv, "\n"))

	c.Transmissibility = 0
	_, r = run(t, c, 3000)
	require.Zero(t, r.Infections, "no transmission, no infections")
}

func TestObserverReverseUndoesHandle(t *testing.T) {
	o := &Observer{}
	o.S.Reports[3] = 5
	before := o.S
	ev := &kernel.Event{Words: kernel.Words{uint64(Report) | 3<<8, 1 | 2<<32, 3 | 4<<32, 5 | 6<<32}}
	o.Handle(nil, ev)
	require.Equal(t, [NumDiseaseStates]uint64{1, 2, 3, 4, 5, 6}, o.S.Counts[3])
	o.Reverse(nil, ev)
	require.Equal(t, before, o.S)
}

// TestDeterminismMatrix runs the determinism matrix for each variant: the WARPED2 one
// generated on each network and read from a configuration file, and the stochastic one.
func TestDeterminismMatrix(t *testing.T) {
	sto := small()
	sto.Locations, sto.Population = 12, 20
	ba := smallWARPED2()
	ba.Network, ba.BarabasiAlbertM = BarabasiAlbert, 2
	file, sites, err := ParseConfig("matrix.dat", strings.NewReader(writeConfig(smallWARPED2(), Generate(smallWARPED2()))), DefaultConfig())
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		build func() ([]kernel.LogicalProcess, error)
	}{
		{"warped2", func() ([]kernel.LogicalProcess, error) { return New(smallWARPED2()) }},
		{"warped2/barabasi-albert", func() ([]kernel.LogicalProcess, error) { return New(ba) }},
		{"warped2/file", func() ([]kernel.LogicalProcess, error) { return Build(file, sites) }},
		{"stochastic", func() ([]kernel.LogicalProcess, error) { return New(sto) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := modeltest.Matrix(t, modeltest.Model{
				Build: func() []kernel.LogicalProcess {
					lps, err := tc.build()
					require.NoError(t, err)
					return lps
				},
				End: 1200, Seed: 4, Short: raceEnabled,
			})
			require.Greater(t, want.EventsCommitted, uint64(1000))
		})
	}
}

// TestObserverSnapshot: the observer saves only the rows in use, and restoring a copy after
// more reports (in rows at, above and below its bound) gives back the state it was taken
// from, whatever kind of copy it is written into.
func TestObserverSnapshot(t *testing.T) {
	report := func(j uint64) *kernel.Event {
		return &kernel.Event{Words: kernel.Words{uint64(Report) | j<<8, 1 | 2<<32, 3 | 4<<32, 5 | 6<<32}}
	}
	o := &Observer{}
	for _, j := range []uint64{1, 1, 2} {
		o.Handle(nil, report(j))
	}
	before := o.S
	loc := &Location{people: []Person{{ID: 7}}}
	for _, dst := range []any{nil, loc.Snapshot(nil)} {
		snap := o.Snapshot(dst).(*snapshot)
		require.Len(t, snap.Counts, 3, "rows 0 to 2 are in use")
		require.Empty(t, snap.People)
		for _, j := range []uint64{2, 3, 9} {
			o.Handle(nil, report(j))
		}
		require.NotEqual(t, before, o.S)
		o.Restore(snap)
		require.Equal(t, before, o.S)
		require.Equal(t, 3, o.used)
		// A location reusing the observer's copy sees only its own state.
		ls := loc.Snapshot(snap).(*snapshot)
		require.Empty(t, ls.Counts)
		require.Equal(t, []Person{{ID: 7}}, ls.People)
	}
	// The final state crosses processes as a fresh observer's Restore.
	fresh := &Observer{}
	fresh.Restore(o.Snapshot(nil))
	require.Equal(t, o.S, fresh.S)
	require.Equal(t, o.AppendState(nil), fresh.AppendState(nil))
}

// BenchmarkRun runs the default epidemic of each variant (1000 locations of 100 people) to
// its default end time 5000, sequentially and under time warp with 1 and 2 workers (see
// modeltest.Bench).
func BenchmarkRun(b *testing.B) {
	for _, v := range []Variant{WARPED2, Stochastic} {
		b.Run(string(v), func(b *testing.B) {
			modeltest.Bench(b, modeltest.Model{
				Build: func() []kernel.LogicalProcess {
					lps, err := New(Defaults(v))
					require.NoError(b, err)
					return lps
				},
				End: 5000, Seed: 1,
			})
		})
	}
}

// TestSeriesUnderTimeWarp: the disease-state counts the locations record through the kernel
// (Context.Record) are, under time warp with rollbacks (2 and 4 workers, periodic state
// saving, aggressive and lazy cancellation; 2 loopback ranks), exactly the sequential run's;
// and summed over locations they are the observer's time series.
func TestSeriesUnderTimeWarp(t *testing.T) {
	c := small()
	c.Locations, c.Population = 12, 20
	const end, seed = 1200, 4
	build := func() []kernel.LogicalProcess {
		lps, err := New(c)
		require.NoError(t, err)
		return lps
	}
	lps := build()
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed, RecordSeries: true}, lps)
	require.NoError(t, err)
	want, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, want.Series, c.Locations*int(NumDiseaseStates)*(end/c.SampleInterval-1))

	// Summed over locations, the recorded counts are the observer's series.
	sums := map[[2]uint64]uint64{} // (time, state) -> count
	for _, p := range want.Series {
		st := slices.IndexFunc([]Disease{Uninfected, Latent, Incubating, Infectious, Asymptomatic, Recovered},
			func(d Disease) bool { return d.String() == p.Series })
		require.GreaterOrEqual(t, st, 0, p.Series)
		sums[[2]uint64{uint64(p.Time), uint64(st)}] += uint64(p.Value)
	}
	obs := Summarize(lps).Series
	require.NotEmpty(t, obs)
	for _, p := range obs {
		for st, n := range p.Counts {
			require.Equal(t, n, sums[[2]uint64{p.Time, uint64(st)}], "time %d state %d", p.Time, st)
		}
	}

	var rolledBack uint64 // over the runs in one process: the series survived rollbacks
	for _, w := range []int{2, 4} {
		for _, cancel := range []string{"aggressive", "lazy"} {
			t.Run(fmt.Sprintf("workers=%d/%s", w, cancel), func(t *testing.T) {
				s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed, Type: kernel.TimeWarp, RecordSeries: true,
					TimeWarp: kernel.TimeWarpConfig{Workers: w, StateSavingPeriod: 3, Cancellation: cancel,
						GVTPeriod: 100 * time.Microsecond}}, build())
				require.NoError(t, err)
				r, err := s.Run(context.Background())
				require.NoError(t, err)
				require.Equal(t, want.Digest, r.Digest)
				require.Equal(t, want.Series, r.Series)
				rolledBack += r.EventsRolledBack
				t.Logf("%d events rolled back", r.EventsRolledBack)
			})
		}
	}
	require.Positive(t, rolledBack, "no run rolled back: the test shows nothing")
	t.Run("ranks=2", func(t *testing.T) {
		cfg := kernel.Config{MaxSimTime: end, Seed: seed, Type: kernel.TimeWarp, RecordSeries: true,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSavingPeriod: 3, GVTPeriod: 200 * time.Microsecond}}
		res := modeltest.Ranks(t, 2, cfg, build)
		var got []kernel.SeriesPoint
		for r := range res {
			require.Equal(t, want.Digest, res[r].Digest, "rank %d", r)
			got = append(got, res[r].Series...)
		}
		// Each rank has its own LPs' points: merged in Result.Series' order (time, then LP,
		// then recording order, which the stable sort keeps), they are the sequential run's.
		slices.SortStableFunc(got, func(a, b kernel.SeriesPoint) int {
			return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.LP, b.LP))
		})
		require.Equal(t, want.Series, got)
	})
}
