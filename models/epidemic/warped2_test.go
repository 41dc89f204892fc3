package epidemic

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// writeConfig writes c and sites in WARPED2's configuration format, as createConfig does
// (one region holding every location).
func writeConfig(c Config, sites []Site) string {
	var b strings.Builder
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if c.Network == BarabasiAlbert {
		fmt.Fprintf(&b, "Barabasi-Albert,%d,%s\n", c.BarabasiAlbertM, f(c.BarabasiAlbertA))
	} else {
		fmt.Fprintf(&b, "Watts-Strogatz,%d,%s\n", c.WattsStrogatzK, f(c.WattsStrogatzBeta))
	}
	fmt.Fprintf(&b, "%s\n%d,%s\n%d,%s\n%d,%s\n%d,%s\n", f(c.Transmissibility), c.LatentDwell, f(c.LatentInfectivity),
		c.IncubatingDwell, f(c.IncubatingInfectivity), c.InfectiousDwell, f(c.InfectiousInfectivity),
		c.AsymptDwell, f(c.AsymptInfectivity))
	fmt.Fprintf(&b, "%s,%s,%s,%s,%s\n%d\n1\nr0,%d\n", f(c.ProbULU), f(c.ProbULV), f(c.ProbURV), f(c.ProbUIV),
		f(c.ProbUIU), c.RefreshInterval, len(sites))
	for i, s := range sites {
		fmt.Fprintf(&b, "l%d,%d,%d,%d\n", i, s.TravelTimeToHub, s.DiffusionInterval, len(s.People))
		for _, p := range s.People {
			v := 0
			if p.Vaccinated {
				v = 1
			}
			fmt.Fprintf(&b, "%d,%s,%d,%d\n", p.ID, f(p.Susceptibility), v, p.State)
		}
	}
	return b.String()
}

// handChecked is the case TestWARPED2HandChecked works out by hand: two locations joined
// by one edge (k 1, no rewiring); only infectious people infect (infectivity 1,
// transmissibility 0.5, so each escapes with probability 1/2 a time unit); infected
// unvaccinated people become latent (PROB_ULU 1); infected vaccinated ones resist (PROB_ULV
// 0, PROB_URV 1). A (hub 3, no departure before 1000) holds pid 1 infectious, 2 and 3
// (vaccinated) uninfected, 5 asymptomatic, 6 incubating and 8 uninfected with
// susceptibility 0.5; B (hub 5, a departure every 25) holds pid 4, uninfected.
const handChecked = `Watts-Strogatz,1,0
0.5
30,0
20,0
1000,1
40,0
1,0,1,0.1,0.3
10
1
r0,2
A,3,1000,6
1,1,0,3
2,1,0,0
3,1,1,0
5,1,0,4
6,1,0,2
8,0.5,0,0
B,5,25,1
4,1,0,0
`

// TestWARPED2HandChecked pins the WARPED2 variant on handChecked, worked out by hand from
// WARPED2's rules (DiseaseModel.hpp, epidemic.cpp). Updates every 10 at both locations.
// An uninfected person is infected when 1 - (1/2)^(infectious*(t - arrival)) is 1.0 in
// double precision, that is when infectious*(t - arrival) >= 54 (2^-54 rounds away; 2^-53
// does not); for pid 8 (susceptibility 1/2, escape 3/4) when infectious*(t - arrival) >= 131.
//
//	t=20  pid 6 incubating -> asymptomatic (since 20)
//	t=25  B sends pid 4 (its only person, to its only neighbour A): arrives at 25+5+3 = 33
//	t=40  pid 5 asymptomatic -> uninfected (WARPED2: not recovered), since 0
//	t=50  nobody infected: 1 - 2^-50 truncates to 0
//	t=60  pid 6 asymptomatic -> uninfected; 1 infectious: pids 2, 5, 6 (t - 0 = 60) infected,
//	      latent with since 0 (an infection sets no time); pid 3 infected and resists,
//	      staying uninfected; pid 4 (60 - 33 = 27) and pid 8 (60 < 131) not
//	t=70  pids 2, 5, 6: 70 - 0 >= 30, latent -> infectious (since 30); 4 infectious:
//	      pid 4 (4*37) and pid 8 (4*70 = 280) infected, latent; pid 3 resists
//	t=80  pids 4, 8 latent -> infectious (since 30)
//
// so at the end (95) A holds pid 3 uninfected and six infectious people, B nobody, after
// 5 infections and 1 arrival.
func TestWARPED2HandChecked(t *testing.T) {
	c, sites, err := ParseConfig("hand.dat", strings.NewReader(handChecked), DefaultConfig())
	require.NoError(t, err)
	c.SampleInterval = 1000
	type who struct {
		ID, Since, Arrival uint32
		State              Disease
	}
	for _, tc := range []struct {
		end  kernel.Time
		a, b []who
	}{
		{5, []who{{1, 0, 0, Infectious}, {2, 0, 0, Uninfected}, {3, 0, 0, Uninfected}, {5, 0, 0, Asymptomatic},
			{6, 0, 0, Incubating}, {8, 0, 0, Uninfected}}, []who{{4, 0, 0, Uninfected}}},
		{21, []who{{1, 0, 0, Infectious}, {2, 0, 0, Uninfected}, {3, 0, 0, Uninfected}, {5, 0, 0, Asymptomatic},
			{6, 20, 0, Asymptomatic}, {8, 0, 0, Uninfected}}, []who{{4, 0, 0, Uninfected}}},
		{26, []who{{1, 0, 0, Infectious}, {2, 0, 0, Uninfected}, {3, 0, 0, Uninfected}, {5, 0, 0, Asymptomatic},
			{6, 20, 0, Asymptomatic}, {8, 0, 0, Uninfected}}, nil}, // pid 4 travelling
		{34, []who{{1, 0, 0, Infectious}, {2, 0, 0, Uninfected}, {3, 0, 0, Uninfected}, {4, 0, 33, Uninfected},
			{5, 0, 0, Asymptomatic}, {6, 20, 0, Asymptomatic}, {8, 0, 0, Uninfected}}, nil},
		{51, []who{{1, 0, 0, Infectious}, {2, 0, 0, Uninfected}, {3, 0, 0, Uninfected}, {4, 0, 33, Uninfected},
			{5, 0, 0, Uninfected}, {6, 20, 0, Asymptomatic}, {8, 0, 0, Uninfected}}, nil},
		{61, []who{{1, 0, 0, Infectious}, {2, 0, 0, Latent}, {3, 0, 0, Uninfected}, {4, 0, 33, Uninfected},
			{5, 0, 0, Latent}, {6, 0, 0, Latent}, {8, 0, 0, Uninfected}}, nil},
		{71, []who{{1, 0, 0, Infectious}, {2, 30, 0, Infectious}, {3, 0, 0, Uninfected}, {4, 0, 33, Latent},
			{5, 30, 0, Infectious}, {6, 30, 0, Infectious}, {8, 0, 0, Latent}}, nil},
		{95, []who{{1, 0, 0, Infectious}, {2, 30, 0, Infectious}, {3, 0, 0, Uninfected}, {4, 30, 33, Infectious},
			{5, 30, 0, Infectious}, {6, 30, 0, Infectious}, {8, 30, 0, Infectious}}, nil},
	} {
		t.Run(fmt.Sprintf("end=%v", tc.end), func(t *testing.T) {
			for _, tw := range []bool{false, true} {
				lps, err := Build(c, sites)
				require.NoError(t, err)
				cfg := kernel.Config{MaxSimTime: tc.end, Seed: 3}
				if tw {
					cfg.Type, cfg.TimeWarp = kernel.TimeWarp, kernel.TimeWarpConfig{Workers: 2, StateSavingPeriod: 2}
				}
				s, err := dispatch.New(cfg, lps)
				require.NoError(t, err)
				_, err = s.Run(context.Background())
				require.NoError(t, err)
				for i, want := range [][]who{tc.a, tc.b} {
					var got []who
					for _, p := range lps[i].(*Location).people {
						got = append(got, who{p.ID, p.Since, p.Arrival, p.State})
					}
					require.Equal(t, want, got, "location %d, time warp %v", i, tw)
				}
				if tc.end == 95 {
					r := Summarize(lps)
					require.Equal(t, [NumDiseaseStates]uint64{Uninfected: 1, Infectious: 6}, r.Final)
					require.Equal(t, uint64(5), r.Infections)
					require.Equal(t, uint64(1), r.Moves)
				}
			}
		})
	}
}

// TestPercent: WARPED2's thresholds are computed in float, not double.
func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		p    []float64
		want uint32
	}{
		{[]float64{0.29}, 29}, {[]float64{0.57}, 57}, {[]float64{0.2}, 20}, {[]float64{1}, 100},
		{[]float64{0.5, 0.9}, 140}, {[]float64{0}, 0},
	} {
		require.Equal(t, tc.want, percent(tc.p...), "%v", tc.p)
	}
}

// TestGenerate: the generated sites follow createConfig.cpp's rules.
func TestGenerate(t *testing.T) {
	c := DefaultConfig()
	c.Locations, c.Population = 40, 50
	sites := Generate(c)
	require.Len(t, sites, 40)
	require.Equal(t, sites, Generate(c), "a function of the seed")
	require.Equal(t, "r0l0", sites[0].Name)
	require.Equal(t, "r3l9", sites[39].Name)
	var states [NumDiseaseStates]int
	var vaccinated int
	suscs := map[float64]bool{}
	pid := uint32(1)
	for _, s := range sites {
		require.True(t, s.TravelTimeToHub >= 50 && s.TravelTimeToHub < 400, s.TravelTimeToHub)
		require.True(t, s.DiffusionInterval >= 200 && s.DiffusionInterval < 500, s.DiffusionInterval)
		require.Len(t, s.People, 50)
		for _, p := range s.People {
			require.Equal(t, pid, p.ID, "numbered from 1 in location order")
			pid++
			states[p.State]++
			if p.Vaccinated {
				vaccinated++
			}
			suscs[p.Susceptibility] = true
			require.Zero(t, p.Since)
			require.Zero(t, p.Arrival)
		}
	}
	for s, n := range states {
		require.InDelta(t, 2000/6, n, 80, "state %v drawn uniformly", Disease(s))
	}
	require.InDelta(t, 1000, vaccinated, 100)
	require.True(t, suscs[0.5] || suscs[0.1], "0.5 (from 5) or 0.1 (from 1 or 10)")
	require.False(t, suscs[0.05], "createConfig never writes 0.05")
	for v := range suscs {
		require.True(t, v >= 0 && v < 1, v)
	}

	c.MinDiffusionInterval, c.MaxDiffusionInterval = 300, 300
	for _, s := range Generate(c) {
		require.Equal(t, uint32(300), s.DiffusionInterval, "the minimum when the range is empty")
	}
}

// TestParseConfig: a file round-trips, and every kind of error names the file and line.
func TestParseConfig(t *testing.T) {
	c, sites, err := ParseConfig("hand.dat", strings.NewReader(strings.ReplaceAll(handChecked, "\n", " \r\n")), Defaults(Stochastic))
	require.NoError(t, err)
	require.Equal(t, WARPED2, c.Variant)
	require.Equal(t, 2, c.Locations)
	require.Equal(t, 0.5, c.Transmissibility)
	require.Equal(t, []int{30, 20, 1000, 40}, []int{c.LatentDwell, c.IncubatingDwell, c.InfectiousDwell, c.AsymptDwell})
	require.Equal(t, []float64{1, 0, 1, 0.1, 0.3}, []float64{c.ProbULU, c.ProbULV, c.ProbURV, c.ProbUIV, c.ProbUIU})
	require.Equal(t, 10, c.RefreshInterval)
	require.Equal(t, WattsStrogatz, c.Network)
	require.Equal(t, 1, c.WattsStrogatzK)
	require.Equal(t, []string{"r0A", "r0B"}, []string{sites[0].Name, sites[1].Name})
	require.Equal(t, Site{Name: "r0B", TravelTimeToHub: 5, DiffusionInterval: 25,
		People: []Person{{ID: 4, Susceptibility: 1}}}, sites[1])
	require.Equal(t, Person{ID: 3, Susceptibility: 1, Vaccinated: true}, sites[0].People[2])

	gen := DefaultConfig()
	gen.Locations, gen.Population, gen.Network, gen.BarabasiAlbertA = 5, 3, BarabasiAlbert, 0.5
	c2, sites2, err := ParseConfig("gen.dat", strings.NewReader(writeConfig(gen, Generate(gen))), Defaults(Stochastic))
	require.NoError(t, err)
	require.Equal(t, BarabasiAlbert, c2.Network)
	require.Equal(t, 0.5, c2.BarabasiAlbertA)
	for i, s := range Generate(gen) {
		s.Name = "r0l" + strconv.Itoa(i)
		require.Equal(t, s, sites2[i])
	}

	path := filepath.Join(t.TempDir(), "bad.dat")
	for _, tc := range []struct {
		name, file, want string
	}{
		{"network", strings.Replace(handChecked, "Watts-Strogatz", "Erdos-Renyi", 1), `bad.dat:1: the network must be Watts-Strogatz or Barabasi-Albert, got "Erdos-Renyi"`},
		{"fields", strings.Replace(handChecked, "30,0\n", "30\n", 1), "bad.dat:3: expected latent dwell time,infectivity (2 comma-separated fields), got 1 fields"},
		{"probability", strings.Replace(handChecked, "\n0.5\n", "\n1.5\n", 1), `bad.dat:2: the transmissibility must be a number in [0, 1], got "1.5"`},
		{"integer", strings.Replace(handChecked, "\n10\n", "\nten\n", 1), `bad.dat:8: the location state refresh interval must be an integer from 1 to 2147483647, got "ten"`},
		{"zero refresh", strings.Replace(handChecked, "\n10\n", "\n0\n", 1), `bad.dat:8: the location state refresh interval must be an integer from 1`},
		{"zero hub", strings.Replace(handChecked, "A,3,", "A,0,", 1), `bad.dat:11: the travel time to the hub must be an integer from 1`},
		{"state", strings.Replace(handChecked, "1,1,0,3\n", "1,1,0,6\n", 1), `bad.dat:12: the disease state must be an integer from 0 to 5, got "6"`},
		{"vaccination", strings.Replace(handChecked, "1,1,0,3\n", "1,1,2,3\n", 1), `bad.dat:12: the vaccination status must be an integer from 0 to 1, got "2"`},
		{"susceptibility", strings.Replace(handChecked, "8,0.5,", "8,2,", 1), `bad.dat:17: the susceptibility must be a number in [0, 1], got "2"`},
		{"duplicate", strings.Replace(handChecked, "4,1,0,0\n", "2,1,0,0\n", 1), "bad.dat:19: person id 2 is used again (first on line 13)"},
		{"short", strings.TrimSuffix(handChecked, "4,1,0,0\n"), "bad.dat:19: the file ends here; expected a person: PID,SUSCEPTIBILITY,VACCINATED,STATE"},
		{"long", handChecked + "\n9,1,0,0\n", "bad.dat:21: a line after the last person"},
		{"one location", "Watts-Strogatz,0,0\n0.1\n1,0\n1,0\n1,0\n1,0\n0,0,0,0,0\n1\n1\nr,1\nl,1,1,0\n", "bad.dat: holds 1 location(s); the model needs at least 2"},
		{"k", strings.Replace(handChecked, "Watts-Strogatz,1,0", "Watts-Strogatz,2,0", 1), "--watts-strogatz-k must be less than --num-locations (2), got 2 (" + path + ":1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o600))
			_, _, err := ReadConfigFile(path, DefaultConfig())
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	_, _, err = ReadConfigFile(filepath.Join(t.TempDir(), "none.dat"), DefaultConfig())
	require.ErrorContains(t, err, "epidemic: --warped2-config: open ")
}

// TestWattsStrogatzWARPED2: WARPED2's lattice puts k/2 neighbours on the left and k - k/2 on
// the right, and its rewiring only deletes edges (both endpoints' lists stay symmetric).
func TestWattsStrogatzWARPED2(t *testing.T) {
	adj, off := wattsStrogatzWARPED2(10, 3, 0, 1)
	require.Equal(t, []uint32{1, 2, 8, 9}, adj[off[0]:off[1]], "k 3: one on the left, two on the right, both ways")
	lattice, _ := wattsStrogatzWARPED2(50, 4, 0, 1)
	require.Len(t, lattice, 50*4)
	adj, off = wattsStrogatzWARPED2(50, 4, 0.3, 7)
	require.Less(t, len(adj), len(lattice), "rewiring deletes")
	for i := range 50 {
		for _, j := range adj[off[i]:off[i+1]] {
			d := (int(j) - i + 50) % 50
			require.True(t, d == 1 || d == 2 || d == 48 || d == 49, "edge %d-%d is not a lattice edge: nothing was added", i, j)
			require.Contains(t, adj[off[j]:off[j+1]], uint32(i))
		}
	}
	adj, _ = wattsStrogatzWARPED2(50, 4, 1, 7)
	require.Empty(t, adj, "beta 1 deletes every edge")
}

// TestBarabasiAlbert: nodes 0 to m start fully joined; the graph is simple and symmetric.
func TestBarabasiAlbert(t *testing.T) {
	adj, off := barabasiAlbert(40, 3, 1, 5)
	require.Equal(t, []uint32{1, 2, 3}, adj[off[0]:off[1]][:3])
	require.LessOrEqual(t, len(adj), 2*(6+3*36))
	require.Greater(t, len(adj), 2*6, "later nodes attach")
	for i := range 40 {
		nb := adj[off[i]:off[i+1]]
		require.True(t, slices.IsSorted(nb))
		require.NotContains(t, nb, uint32(i))
		for _, j := range nb {
			require.Contains(t, adj[off[j]:off[j+1]], uint32(i))
		}
	}
	adj2, _ := barabasiAlbert(40, 3, 1, 5)
	require.Equal(t, adj, adj2)
}

// TestWARPED2Wave: WARPED2's generated configuration infects most of the population (its
// infection test passes once a person has stayed long enough beside infectious people),
// and asymptomatic people return to uninfected.
func TestWARPED2Wave(t *testing.T) {
	c := smallWARPED2()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: 2000, Seed: 2}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	r := Summarize(lps)
	total := uint64(c.Locations * c.Population)
	require.Greater(t, r.Infections, total/2)
	require.Positive(t, r.Moves)
	require.Positive(t, r.Final[Recovered])
	require.NotEmpty(t, r.Series)
}
