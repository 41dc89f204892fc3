package epidemic

import (
	"fmt"
	"slices"

	"github.com/warpedgo/warped/kernel"
)

// Disease is a person's disease state.
type Disease uint8

// The disease states.
const (
	Uninfected Disease = iota
	Latent
	Incubating
	Infectious
	Asymptomatic
	Recovered
	NumDiseaseStates
)

// String returns the state's name.
func (d Disease) String() string {
	return [...]string{"uninfected", "latent", "incubating", "infectious", "asymptomatic", "recovered"}[d]
}

// Kind is the kind of an epidemic event, in the low byte of Words[0].
type Kind uint64

// The event kinds.
const (
	DiseaseUpdateTrigger Kind = iota
	DiffusionTrigger
	Diffusion
	Sample
	Report
)

// Person is one person: WARPED2's Person (Person.hpp), with its fields in this order to
// keep it at 24 bytes.
type Person struct {
	// Susceptibility scales the transmissibility for this person (WARPED2 variant; 1 in
	// the stochastic one).
	Susceptibility float64
	// ID identifies the person (WARPED2's pid).
	ID uint32
	// Since is the time the person entered its disease state (WARPED2's
	// prev_state_change_timestamp_, which is 0 while uninfected or recovered and is not
	// set by an infection).
	Since uint32
	// Arrival is the time the person arrived at its location (0 for the people who
	// start there): WARPED2 raises the probability of escaping infection to the time since.
	Arrival uint32
	// State is the disease state.
	State Disease
	// Vaccinated is the vaccination status.
	Vaccinated bool
}

// Stats are a location's counts.
type Stats struct {
	// Infections counts the people infected here.
	Infections uint64
	// Arrivals counts the people who arrived here.
	Arrivals uint64
}

// model is what the LPs of one model share.
type model struct {
	Config
	// sites are the locations' travel times, intervals and first people.
	sites []Site
	// adj[off[i]:off[i+1]] are location i's neighbours.
	adj, off []uint32
	// observer is the observer's LP id.
	observer kernel.LPID
}

// snapshot is a saved Location or Observer state (exported fields, so that final states
// cross processes with msgpack). Both LPs save into the same type because a time-warp
// worker keeps one list of discarded copies for all its LPs and hands them to whichever LP
// saves next: with a type of its own for each, every copy that went from an LP of one kind
// to one of the other was dropped and a new one allocated (half the epidemic's allocated
// bytes, the observer's 14 KiB arrays). A Location uses People and Stats, the Observer
// Counts and Reports; each leaves the other's slices empty, keeping their capacity.
type snapshot struct {
	People  []Person
	Stats   Stats
	Counts  [][NumDiseaseStates]uint64
	Reports []uint32
}

// New returns the locations, then the observer, of a generated configuration: for the
// WARPED2 variant the sites Generate draws, for the stochastic one Population people a
// location whom each location draws from its own generator at Init.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Variant == WARPED2 {
		return Build(c, Generate(c))
	}
	sites := make([]Site, c.Locations)
	for i := range sites {
		sites[i] = Site{Name: fmt.Sprintf("Location_%d", i), TravelTimeToHub: uint32(c.TravelTime),
			DiffusionInterval: uint32(c.DiffusionInterval)}
	}
	return Build(c, sites)
}

// Build returns the locations (one a site, in order), then the observer, with c's
// parameters; c.Locations is set to len(sites). The sites are copied: the caller may keep
// them for other runs.
func Build(c Config, sites []Site) ([]kernel.LogicalProcess, error) {
	c.Locations = len(sites)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkSites(sites); err != nil {
		return nil, err
	}
	own := make([]Site, len(sites))
	for i, s := range sites {
		own[i] = s
		own[i].People = slices.Clone(s.People)
	}
	sortPeople(own)
	m := &model{Config: c, sites: own, observer: kernel.LPID(len(sites))}
	switch {
	case c.Variant == Stochastic:
		m.adj, m.off = wattsStrogatz(c.Locations, c.WattsStrogatzK, c.WattsStrogatzBeta, c.DiffusionSeed)
	case c.Network == BarabasiAlbert:
		m.adj, m.off = barabasiAlbert(c.Locations, c.BarabasiAlbertM, c.BarabasiAlbertA, c.DiffusionSeed)
	default:
		m.adj, m.off = wattsStrogatzWARPED2(c.Locations, c.WattsStrogatzK, c.WattsStrogatzBeta, c.DiffusionSeed)
	}
	locs := make([]Location, c.Locations)
	lps := make([]kernel.LogicalProcess, c.Locations+1)
	for i := range locs {
		locs[i] = Location{m: m, index: uint32(i)}
		lps[i] = &locs[i]
	}
	lps[c.Locations] = &Observer{m: m}
	return lps, nil
}
