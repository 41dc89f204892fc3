package epidemic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Site is one location as WARPED2's configuration describes it (epidemic.cpp:176-220).
type Site struct {
	// Name is WARPED2's location name: the region's name followed by the location's.
	Name string
	// TravelTimeToHub is the time from this location to the hub: a person travels from
	// location a to location b in a's time plus b's (DiffusionNetwork.hpp:34).
	TravelTimeToHub uint32
	// DiffusionInterval is the time between departures from this location.
	DiffusionInterval uint32
	// People are the people who start here.
	People []Person
}

// Generate returns WARPED2 sites as its configuration generator writes them
// (config/createConfig.cpp:92-126), drawn from c.DiffusionSeed: c.Locations locations of
// c.Population people (named as createConfig names them, ten locations a region); a travel time to the hub in [MinTravelTimeToHub, MaxTravelTimeToHub)
// and a diffusion interval in [MinDiffusionInterval, MaxDiffusionInterval) (the minimum
// when the maximum is not above it); people numbered from 1 in location order, each
// vaccinated with probability 1/2, in a disease state drawn uniformly from the six, with
// susceptibility "0." followed by a number in [0, 100) read as a decimal (so 0.5 for 5, and
// 0.05 never: createConfig.cpp:124).
func Generate(c Config) []Site {
	r := rand.New(rand.NewPCG(c.DiffusionSeed, 0x5173))
	between := func(lo, hi int) uint32 {
		if hi <= lo {
			return uint32(lo)
		}
		return uint32(lo + r.IntN(hi-lo))
	}
	sites := make([]Site, c.Locations)
	pid := uint32(1)
	for i := range sites {
		s := &sites[i]
		s.Name = "r" + strconv.Itoa(i/10) + "l" + strconv.Itoa(i%10) // createConfig's 10 a region
		s.TravelTimeToHub = between(c.MinTravelTimeToHub, c.MaxTravelTimeToHub)
		s.DiffusionInterval = between(c.MinDiffusionInterval, c.MaxDiffusionInterval)
		s.People = make([]Person, c.Population)
		for j := range s.People {
			susc, _ := strconv.ParseFloat("0."+strconv.Itoa(r.IntN(100)), 64) // cannot fail
			s.People[j] = Person{ID: pid, Susceptibility: susc, Vaccinated: r.IntN(2) == 1,
				State: Disease(r.IntN(int(NumDiseaseStates)))}
			pid++
		}
	}
	return sites
}

// checkSites reports the first site or person the model cannot run: a zero travel time to
// the hub or diffusion interval (an event loop at one instant), a susceptibility outside
// [0, 1], or a person id used twice.
func checkSites(sites []Site) error {
	seen := make(map[uint32]int)
	for i, s := range sites {
		if s.TravelTimeToHub < 1 {
			return fmt.Errorf("epidemic: location %q: travel time to hub must be at least 1, got 0", s.Name)
		}
		if s.DiffusionInterval < 1 {
			return fmt.Errorf("epidemic: location %q: diffusion interval must be at least 1, got 0", s.Name)
		}
		for _, p := range s.People {
			if !(p.Susceptibility >= 0 && p.Susceptibility <= 1) {
				return fmt.Errorf("epidemic: person %d: susceptibility must be in [0, 1], got %v", p.ID, p.Susceptibility)
			}
			if p.State >= NumDiseaseStates {
				return fmt.Errorf("epidemic: person %d: disease state must be 0 to 5, got %d", p.ID, p.State)
			}
			if j, dup := seen[p.ID]; dup {
				return fmt.Errorf("epidemic: person %d is in location %q and in %q: ids must be unique", p.ID, sites[j].Name, s.Name)
			}
			seen[p.ID] = i
		}
	}
	return nil
}

// sortPeople orders each site's people by id, as WARPED2's population map does
// (epidemic.hpp:37): its random pick of a person who leaves is the n-th in id order.
func sortPeople(sites []Site) {
	for i := range sites {
		slices.SortFunc(sites[i].People, func(a, b Person) int { return int(int64(a.ID) - int64(b.ID)) })
	}
}
