package epidemic

import (
	"fmt"
	"math"
)

// Variant selects the model's rules.
type Variant string

// The variants.
const (
	// WARPED2 is WARPED2's epidemic, rule for rule (the package doc lists what still
	// differs).
	WARPED2 Variant = "warped2"
	// Stochastic is this package's own reading of the model: each uninfected person is
	// infected by a draw of its own with the infection probability; asymptomatic people
	// and vaccinated people who resist recover; a fraction of the people start latent;
	// one diffusion interval and one travel time for every location; Watts-Strogatz
	// rewiring moves edges.
	Stochastic Variant = "stochastic"
)

// Config holds the parameters, named as WARPED2's configuration fields where it has them.
type Config struct {
	// Variant selects the rules: WARPED2 (the default) or Stochastic.
	Variant Variant `json:"variant"`
	// Locations is the number of locations.
	Locations int `json:"num-locations"`
	// Population is the number of people who start in each location.
	Population int `json:"population"`
	// InitialInfected is the probability that a person starts latent (Stochastic; WARPED2
	// draws every person's state uniformly from the six).
	InitialInfected float64 `json:"initial-infected"`
	// Vaccinated is the probability that a person is vaccinated (Stochastic; WARPED2's is
	// 1/2).
	Vaccinated float64 `json:"vaccinated"`
	// Transmissibility scales every infectivity.
	Transmissibility float64 `json:"transmissibility"`
	// Dwell times (integer time units) of the latent, incubating, infectious and
	// asymptomatic states.
	LatentDwell     int `json:"latent-dwell-time"`
	IncubatingDwell int `json:"incubating-dwell-time"`
	InfectiousDwell int `json:"infectious-dwell-time"`
	AsymptDwell     int `json:"asympt-dwell-time"`
	// Infectivities of the latent, incubating, infectious and asymptomatic states.
	LatentInfectivity     float64 `json:"latent-infectivity"`
	IncubatingInfectivity float64 `json:"incubating-infectivity"`
	InfectiousInfectivity float64 `json:"infectious-infectivity"`
	AsymptInfectivity     float64 `json:"asympt-infectivity"`
	// ProbULU is the probability that an infected unvaccinated person becomes latent
	// (else incubating). ProbULV and ProbULV+ProbURV are the cumulative thresholds of an
	// infected vaccinated person: latent below ProbULV, else resisting below
	// ProbULV+ProbURV (WARPED2: stays uninfected; Stochastic: recovered), else
	// incubating. Their sum may exceed 1 (WARPED2's generator writes 0.9 and 0.5).
	ProbULU float64 `json:"prob-ul-u"`
	ProbULV float64 `json:"prob-ul-v"`
	ProbURV float64 `json:"prob-ur-v"`
	// ProbUIV and ProbUIU are read from a WARPED2 configuration file and unused, as in
	// WARPED2 (DiseaseModel.hpp stores prob_uiv_ and prob_uiu_ and never reads them).
	ProbUIV float64 `json:"prob-ui-v"`
	ProbUIU float64 `json:"prob-ui-u"`
	// RefreshInterval is the time between disease updates of a location.
	RefreshInterval int `json:"location-state-refresh-interval"`
	// DiffusionInterval is the time between departures from a location and TravelTime
	// the time to reach a neighbour (Stochastic; WARPED2's are per location).
	DiffusionInterval int `json:"diffusion-trigger-interval"`
	TravelTime        int `json:"travel-time"`
	// The ranges of the generated locations' travel times to the hub and diffusion
	// intervals, [Min, Max) as in WARPED2's createConfig (WARPED2 variant).
	MinTravelTimeToHub   int `json:"min-travel-time-to-hub"`
	MaxTravelTimeToHub   int `json:"max-travel-time-to-hub"`
	MinDiffusionInterval int `json:"min-diffusion-interval"`
	MaxDiffusionInterval int `json:"max-diffusion-interval"`
	// Network is the locations' graph: WattsStrogatz, or BarabasiAlbert (WARPED2 only).
	Network Network `json:"network"`
	// WattsStrogatzK is the lattice's degree (Stochastic: even) and WattsStrogatzBeta
	// the rewiring probability.
	WattsStrogatzK    int     `json:"watts-strogatz-k"`
	WattsStrogatzBeta float64 `json:"watts-strogatz-beta"`
	// BarabasiAlbertM is the Barabasi-Albert graph's edges per new node and
	// BarabasiAlbertA the exponent of its attachment test.
	BarabasiAlbertM int     `json:"barabasi-albert-m"`
	BarabasiAlbertA float64 `json:"barabasi-albert-a"`
	// DiffusionSeed seeds the network and the generated locations and people.
	DiffusionSeed uint64 `json:"diffusion-seed"`
	// SampleInterval is the time between samples of the time series.
	SampleInterval int `json:"sample-interval"`
}

// MaxSamples is the most samples the time series holds; later samples are dropped.
const MaxSamples = 256

// DefaultConfig returns the WARPED2 variant's defaults: the parameters WARPED2's
// config/createConfig.cpp writes (lines 13-44) for 1000 locations of 100 people.
func DefaultConfig() Config { return Defaults(WARPED2) }

// Defaults returns variant v's defaults. WARPED2's are its generator's (createConfig.cpp:
// Watts-Strogatz k 8, beta 0.1; transmissibility 0.12; dwell times 200, 100, 400, 200;
// infectivities 0, 0.3, 1, 0.5; ProbULU 0.2, ProbULV 0.9, ProbURV 0.5, ProbUIV 0.1,
// ProbUIU 0.3; refresh interval 50; 100 people a location; travel times to the hub in
// [50, 400) and diffusion intervals in [200, 500)) for 1000 locations (WARPED2's
// generator writes 250,000). Stochastic's are this package's own, picked so that its
// default run shows an epidemic wave.
func Defaults(v Variant) Config {
	c := Config{Variant: v, Locations: 1000, Population: 100, InitialInfected: 0.01, Vaccinated: 0.1,
		DiffusionInterval: 10, TravelTime: 20, MinTravelTimeToHub: 50, MaxTravelTimeToHub: 400,
		MinDiffusionInterval: 200, MaxDiffusionInterval: 500, Network: WattsStrogatz,
		BarabasiAlbertM: 4, BarabasiAlbertA: 1, WattsStrogatzBeta: 0.1, RefreshInterval: 50,
		DiffusionSeed: 1, SampleInterval: 100}
	if v == Stochastic {
		c.Transmissibility, c.WattsStrogatzK = 0.004, 4
		c.LatentDwell, c.IncubatingDwell, c.InfectiousDwell, c.AsymptDwell = 200, 200, 400, 300
		c.LatentInfectivity, c.IncubatingInfectivity, c.InfectiousInfectivity, c.AsymptInfectivity = 0, 0.3, 1, 0.5
		c.ProbULU, c.ProbULV, c.ProbURV = 0.8, 0.2, 0.6
		return c
	}
	c.Transmissibility, c.WattsStrogatzK = 0.12, 8
	c.LatentDwell, c.IncubatingDwell, c.InfectiousDwell, c.AsymptDwell = 200, 100, 400, 200
	c.LatentInfectivity, c.IncubatingInfectivity, c.InfectiousInfectivity, c.AsymptInfectivity = 0, 0.3, 1, 0.5
	c.ProbULU, c.ProbULV, c.ProbURV, c.ProbUIV, c.ProbUIU = 0.2, 0.9, 0.5, 0.1, 0.3
	return c
}

// maxNeighbours is the most neighbour entries of the location network, both ends of each
// edge, that its 32-bit offsets hold.
const maxNeighbours = 1<<32 - 1

// maxTime is the largest time a location, person or interval holds: 32 bits, signed, as
// WARPED2's configuration files have them.
const maxTime = math.MaxInt32

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	if c.Variant != WARPED2 && c.Variant != Stochastic {
		return fmt.Errorf("epidemic: --variant must be %s or %s, got %q", WARPED2, Stochastic, c.Variant)
	}
	if c.Network != WattsStrogatz && c.Network != BarabasiAlbert {
		return fmt.Errorf("epidemic: --network must be %s or %s, got %q", WattsStrogatz, BarabasiAlbert, c.Network)
	}
	for _, p := range []struct {
		name   string
		v, min int
		time   bool // a time, kept in 32 bits as WARPED2's file has it (maxTime)
	}{
		{"num-locations", c.Locations, 2, false}, {"population", c.Population, 0, false},
		{"latent-dwell-time", c.LatentDwell, 0, true}, {"incubating-dwell-time", c.IncubatingDwell, 0, true},
		{"infectious-dwell-time", c.InfectiousDwell, 0, true}, {"asympt-dwell-time", c.AsymptDwell, 0, true},
		{"location-state-refresh-interval", c.RefreshInterval, 1, true},
		{"diffusion-trigger-interval", c.DiffusionInterval, 1, true}, {"travel-time", c.TravelTime, 1, true},
		{"min-travel-time-to-hub", c.MinTravelTimeToHub, 1, true}, {"max-travel-time-to-hub", c.MaxTravelTimeToHub, 1, true},
		{"min-diffusion-interval", c.MinDiffusionInterval, 1, true}, {"max-diffusion-interval", c.MaxDiffusionInterval, 1, true},
		{"watts-strogatz-k", c.WattsStrogatzK, 0, false}, {"barabasi-albert-m", c.BarabasiAlbertM, 0, false},
		{"sample-interval", c.SampleInterval, 1, true},
	} {
		switch {
		case p.v < p.min:
			return fmt.Errorf("epidemic: --%s must be at least %d, got %d", p.name, p.min, p.v)
		case p.time && p.v > maxTime:
			// Times are 32 bits wide (as in WARPED2's files): 2^32+7 was 7.
			return fmt.Errorf("epidemic: --%s must be at most %d, got %d", p.name, maxTime, p.v)
		}
	}
	for _, r := range []struct {
		name    string
		min, hi int
	}{{"travel-time-to-hub", c.MinTravelTimeToHub, c.MaxTravelTimeToHub}, {"diffusion-interval", c.MinDiffusionInterval, c.MaxDiffusionInterval}} {
		if r.hi < r.min {
			return fmt.Errorf("epidemic: --max-%s (%d) must be at least --min-%s (%d)", r.name, r.hi, r.name, r.min)
		}
	}
	if !(c.BarabasiAlbertA >= 0) || math.IsInf(c.BarabasiAlbertA, 0) {
		return fmt.Errorf("epidemic: --barabasi-albert-a must be a finite number >= 0, got %v", c.BarabasiAlbertA)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"initial-infected", c.InitialInfected}, {"vaccinated", c.Vaccinated},
		{"transmissibility", c.Transmissibility}, {"latent-infectivity", c.LatentInfectivity},
		{"incubating-infectivity", c.IncubatingInfectivity}, {"infectious-infectivity", c.InfectiousInfectivity},
		{"asympt-infectivity", c.AsymptInfectivity}, {"prob-ul-u", c.ProbULU}, {"prob-ul-v", c.ProbULV},
		{"prob-ur-v", c.ProbURV}, {"watts-strogatz-beta", c.WattsStrogatzBeta},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("epidemic: --%s is a probability in [0, 1], got %v", p.name, p.v)
		}
	}
	n := c.Locations
	switch {
	case n > 1<<30:
		return fmt.Errorf("epidemic: --num-locations must be at most %d, got %d", 1<<30, n)
	case uint64(n)*uint64(c.Population) > 1<<32-2:
		return fmt.Errorf("epidemic: %d locations of %d people is too many people (at most 2^32-2)", n, c.Population)
	case c.Variant == Stochastic && c.Network != WattsStrogatz:
		return fmt.Errorf("epidemic: --network %s needs --variant %s", c.Network, WARPED2)
	case c.Variant == Stochastic && (c.WattsStrogatzK < 2 || c.WattsStrogatzK%2 != 0 || c.WattsStrogatzK >= n):
		return fmt.Errorf("epidemic: --watts-strogatz-k must be even, at least 2 and less than --num-locations (%d), got %d",
			n, c.WattsStrogatzK)
	case c.Network == WattsStrogatz && c.WattsStrogatzK >= n:
		return fmt.Errorf("epidemic: --watts-strogatz-k must be less than --num-locations (%d), got %d", n, c.WattsStrogatzK)
	case c.Variant == WARPED2 && c.Network == WattsStrogatz && n < 3 && uint32(c.WattsStrogatzBeta*betaPrecision) > 0:
		return fmt.Errorf("epidemic: WARPED2's rewiring needs at least 3 locations (it draws a third), got %d", n)
	case c.Network == BarabasiAlbert && c.BarabasiAlbertM >= n:
		return fmt.Errorf("epidemic: --barabasi-albert-m must be less than --num-locations (%d), got %d", n, c.BarabasiAlbertM)
	case c.Network == WattsStrogatz && uint64(n)*uint64(c.WattsStrogatzK+1) > maxNeighbours:
		// A location has k neighbours (WARPED2's odd k: k+1), and the adjacency list's
		// offsets are 32-bit (network.go).
		return fmt.Errorf("epidemic: --num-locations %d x --watts-strogatz-k %d is too many neighbours in all (at most 2^32-1); give fewer locations or a smaller k", n, c.WattsStrogatzK)
	case c.Network == BarabasiAlbert && 2*uint64(n)*uint64(c.BarabasiAlbertM) > maxNeighbours:
		return fmt.Errorf("epidemic: --num-locations %d x 2 --barabasi-albert-m %d is too many neighbours in all (at most 2^32-1); give fewer locations or a smaller m", n, c.BarabasiAlbertM)
	}
	return nil
}
