package app

import (
	"fmt"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/models/epidemic"
)

// epidemicNotes is the epidemic's part of 'warped help epidemic' before its flags: what each
// variant is (wilseypa/warped2-models, models/epidemic; the package doc has the details).
// epidemicWARPED2 follows the flags: where the WARPED2 variant still differs from WARPED2.
const epidemicNotes = `--variant warped2 (the default) follows WARPED2's models/epidemic rule for rule:
one draw r in [0,100) per location and update (epidemic.cpp:31-33); an uninfected person
is infected when trunc(1 - prod_s (1 - sigma T I_s)^(n_s (t - arrival))) * 100 > r, i.e.
once that probability rounds to 1.0 (DiseaseModel.hpp:64-92); asymptomatic people return
to uninfected (DiseaseModel.hpp:146), and an infected vaccinated person below
prob-ul-v + prob-ur-v stays uninfected (DiseaseModel.hpp:101); an infection sets no state
change time (DiseaseModel.hpp:94-111, 150-153); per-person susceptibility, per-location
diffusion intervals and hub travel times, a trip taking both hubs' times
(DiffusionNetwork.hpp:34); Watts-Strogatz rewiring deletes edges (Graph.hpp:90-93);
generated people in uniformly drawn states (createConfig.cpp:92-126), whose parameters are
the defaults (createConfig.cpp:13-44). --warped2-config FILE reads WARPED2's own
configuration file (epidemic.cpp:100-245).

--variant stochastic is this package's own model: a draw per person with the plain
probability, asymptomatic and resisting vaccinated people recover, --initial-infected and
--vaccinated fractions, one --diffusion-trigger-interval and --travel-time, Watts-Strogatz
rewiring that moves edges; its defaults are its own (see --variant).
`

// epidemicFlags registers the epidemic's parameters on fs, bound to c.
func epidemicFlags(fs *pflag.FlagSet, c *epidemic.Config) {
	fs.StringVar((*string)(&c.Variant), "variant", string(c.Variant), "the model's rules: warped2 (WARPED2's, rule for rule) or stochastic (this package's own: a draw per person, asymptomatic people recover; its defaults differ: transmissibility 0.004, dwell times 200, 200, 400, 300, prob-ul-u 0.8, prob-ul-v 0.2, prob-ur-v 0.6, watts-strogatz-k 4)")
	fs.IntVar(&c.Locations, "num-locations", c.Locations, "number of locations")
	fs.IntVar(&c.Population, "population", c.Population, "people starting in each location")
	fs.Float64Var(&c.InitialInfected, "initial-infected", c.InitialInfected, "probability that a person starts latent (stochastic; warped2 draws each person's state uniformly from the six)")
	fs.Float64Var(&c.Vaccinated, "vaccinated", c.Vaccinated, "probability that a person is vaccinated (stochastic; warped2: 1/2)")
	fs.Float64Var(&c.Transmissibility, "transmissibility", c.Transmissibility, "scales every infectivity")
	fs.IntVar(&c.LatentDwell, "latent-dwell-time", c.LatentDwell, "time latent before infectious")
	fs.IntVar(&c.IncubatingDwell, "incubating-dwell-time", c.IncubatingDwell, "time incubating before asymptomatic")
	fs.IntVar(&c.InfectiousDwell, "infectious-dwell-time", c.InfectiousDwell, "time infectious before recovered")
	fs.IntVar(&c.AsymptDwell, "asympt-dwell-time", c.AsymptDwell, "time asymptomatic before uninfected again (stochastic: recovered)")
	fs.Float64Var(&c.LatentInfectivity, "latent-infectivity", c.LatentInfectivity, "infectivity of latent people")
	fs.Float64Var(&c.IncubatingInfectivity, "incubating-infectivity", c.IncubatingInfectivity, "infectivity of incubating people")
	fs.Float64Var(&c.InfectiousInfectivity, "infectious-infectivity", c.InfectiousInfectivity, "infectivity of infectious people")
	fs.Float64Var(&c.AsymptInfectivity, "asympt-infectivity", c.AsymptInfectivity, "infectivity of asymptomatic people")
	fs.Float64Var(&c.ProbULU, "prob-ul-u", c.ProbULU, "probability that an infected unvaccinated person is latent (else incubating)")
	fs.Float64Var(&c.ProbULV, "prob-ul-v", c.ProbULV, "probability that an infected vaccinated person is latent")
	fs.Float64Var(&c.ProbURV, "prob-ur-v", c.ProbURV, "probability that an infected vaccinated person is not latent but resists: stays uninfected (stochastic: recovers); prob-ul-v + prob-ur-v may exceed 1, as WARPED2's thresholds")
	fs.IntVar(&c.RefreshInterval, "location-state-refresh-interval", c.RefreshInterval, "time between disease updates of a location")
	fs.IntVar(&c.DiffusionInterval, "diffusion-trigger-interval", c.DiffusionInterval, "time between departures from a location (stochastic)")
	fs.IntVar(&c.TravelTime, "travel-time", c.TravelTime, "time to reach a neighbouring location (stochastic)")
	fs.IntVar(&c.MinTravelTimeToHub, "min-travel-time-to-hub", c.MinTravelTimeToHub, "least travel time from a generated location to the hub (warped2; a trip takes both locations' times)")
	fs.IntVar(&c.MaxTravelTimeToHub, "max-travel-time-to-hub", c.MaxTravelTimeToHub, "bound (excluded) of the travel times to the hub (warped2)")
	fs.IntVar(&c.MinDiffusionInterval, "min-diffusion-interval", c.MinDiffusionInterval, "least time between departures from a generated location (warped2)")
	fs.IntVar(&c.MaxDiffusionInterval, "max-diffusion-interval", c.MaxDiffusionInterval, "bound (excluded) of the locations' diffusion intervals (warped2)")
	fs.StringVar((*string)(&c.Network), "network", string(c.Network), "the location network: watts-strogatz, or barabasi-albert (warped2)")
	fs.IntVar(&c.WattsStrogatzK, "watts-strogatz-k", c.WattsStrogatzK, "degree of the ring lattice (stochastic: even)")
	fs.Float64Var(&c.WattsStrogatzBeta, "watts-strogatz-beta", c.WattsStrogatzBeta, "rewiring probability of the location network (warped2: a rewired edge is deleted with another of the node's)")
	fs.IntVar(&c.BarabasiAlbertM, "barabasi-albert-m", c.BarabasiAlbertM, "edges each new node tries to make (barabasi-albert)")
	fs.Float64Var(&c.BarabasiAlbertA, "barabasi-albert-a", c.BarabasiAlbertA, "exponent of the attachment test (barabasi-albert)")
	fs.Uint64Var(&c.DiffusionSeed, "diffusion-seed", c.DiffusionSeed, "seed of the location network and of the generated locations and people")
	fs.IntVar(&c.SampleInterval, "sample-interval", c.SampleInterval, "time between samples of the time series")
}

// epidemicResolve gives every parameter flag that neither the command line nor the
// --config file set its variant's default (the flag set holds the WARPED2 variant's).
func epidemicResolve(fs *pflag.FlagSet) error {
	if err := epidemicUnused(fs); err != nil {
		return err
	}
	if epidemic.Variant(fs.Lookup("variant").Value.String()) != epidemic.Stochastic {
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	d := epidemic.Defaults(epidemic.Stochastic)
	defaults := pflag.NewFlagSet("epidemic", pflag.ContinueOnError)
	epidemicFlags(defaults, &d)
	var err error
	defaults.VisitAll(func(f *pflag.Flag) {
		if !set[f.Name] && err == nil && fs.Lookup(f.Name).Value.String() != f.DefValue {
			err = fs.Set(f.Name, f.DefValue)
		}
	})
	return err
}

// epidemicOnly are the epidemic's flags that one variant or network alone reads: given
// with the other, a run would go on without them, as if they had not been given.
var epidemicOnly = []readBy{
	{"initial-infected", "variant", string(epidemic.Stochastic), ""},
	{"vaccinated", "variant", string(epidemic.Stochastic), ""},
	{"diffusion-trigger-interval", "variant", string(epidemic.Stochastic), ""},
	{"travel-time", "variant", string(epidemic.Stochastic), ""},
	{"min-travel-time-to-hub", "variant", string(epidemic.WARPED2), ""},
	{"max-travel-time-to-hub", "variant", string(epidemic.WARPED2), ""},
	{"min-diffusion-interval", "variant", string(epidemic.WARPED2), ""},
	{"max-diffusion-interval", "variant", string(epidemic.WARPED2), ""},
	{"barabasi-albert-m", "network", string(epidemic.BarabasiAlbert), ""},
	{"barabasi-albert-a", "network", string(epidemic.BarabasiAlbert), ""},
	{"watts-strogatz-k", "network", string(epidemic.WattsStrogatz), ""},
	{"watts-strogatz-beta", "network", string(epidemic.WattsStrogatz), ""},
}

// epidemicUnused refuses a flag given (on the command line or in --config) that the chosen
// variant or network does not read (epidemicOnly).
func epidemicUnused(fs *pflag.FlagSet) error { return refuseUnread(fs, "epidemic", epidemicOnly) }

// epidemicFileConflicts reports a flag set beside --warped2-config that the file sets too.
func epidemicFileConflicts(fs *pflag.FlagSet, c epidemic.Config) error {
	if c.Variant != epidemic.WARPED2 {
		return fmt.Errorf("epidemic: --warped2-config needs --variant %s, got %s", epidemic.WARPED2, c.Variant)
	}
	var err error
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "variant", "diffusion-seed", "sample-interval", "time-series", "warped2-config":
		default:
			replay := pflag.NewFlagSet("epidemic", pflag.ContinueOnError)
			epidemicFlags(replay, &epidemic.Config{})
			if replay.Lookup(f.Name) != nil && err == nil {
				err = fmt.Errorf("epidemic: --%s cannot be used with --warped2-config: the file sets the model's parameters", f.Name)
			}
		}
	})
	return err
}

const epidemicWARPED2 = `  Where --variant warped2 (the default) still differs from WARPED2:
  - random numbers: the kernel's per-LP generator, not std::default_random_engine seeded
    with the location's index in its region (epidemic.hpp:109); the network and generated
    people from --diffusion-seed, not a default-seeded engine and rand() (Graph.hpp:75,
    createConfig.cpp:98-126): runs agree in distribution, not draw for draw
  - generated worlds: --num-locations locations of --population people (default 1000 x
    100), not 25,000 regions of 10 locations (createConfig.cpp:34-40)
  - refused with an error where WARPED2 goes on: probabilities or susceptibilities outside
    [0,1], zero times, a person id used twice (its map drops one, epidemic.hpp:37), fewer
    than 3 locations with rewiring (it loops forever, Graph.hpp:86-89), malformed lines
  - math.Pow may differ from C's pow in the last bit (matters only at the rounding edge)
  - counts and a time series instead of WARPED2's heatmap (epidemic.cpp:275-315); the order
    of simultaneous events is the kernel's
  - the end time: use --max-sim-time-inclusive (WARPED2 handles timestamps <= the end)
`
