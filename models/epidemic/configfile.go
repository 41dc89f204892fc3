package epidemic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/warpedgo/warped/internal/infile"
)

// MaxConfigBytes is the largest WARPED2 configuration file ReadConfigFile reads: a line per
// location and its people, far below it (a device such as /dev/zero would be read forever).
const MaxConfigBytes = 256 << 20

// ReadConfigFile reads a WARPED2 epidemic configuration file (see ParseConfig).
func ReadConfigFile(path string, base Config) (Config, []Site, error) {
	data, err := infile.ReadAtMost(path, MaxConfigBytes)
	if errors.Is(err, infile.ErrTooLarge) {
		return base, nil, fmt.Errorf("epidemic: --warped2-config %s is over %d MiB: not a WARPED2 configuration", path, MaxConfigBytes>>20)
	}
	if err != nil {
		return base, nil, fmt.Errorf("epidemic: --warped2-config: %w", err)
	}
	return ParseConfig(path, bytes.NewReader(data), base)
}

// ParseConfig reads WARPED2's epidemic configuration, the comma-separated text its
// config/createConfig.cpp writes and its epidemic.cpp:100-245 reads, from r (name names it
// in errors). Line by line:
//
//	Watts-Strogatz,K,BETA          (or Barabasi-Albert,M,A)
//	TRANSMISSIBILITY
//	LATENT_DWELL_TIME,LATENT_INFECTIVITY
//	INCUBATING_DWELL_TIME,INCUBATING_INFECTIVITY
//	INFECTIOUS_DWELL_TIME,INFECTIOUS_INFECTIVITY
//	ASYMPT_DWELL_TIME,ASYMPT_INFECTIVITY
//	PROB_ULU,PROB_ULV,PROB_URV,PROB_UIV,PROB_UIU
//	LOCATION_STATE_REFRESH_INTERVAL
//	NUMBER_OF_REGIONS
//	then per region:   REGION_NAME,NUMBER_OF_LOCATIONS
//	then per location: LOCATION_NAME,TRAVEL_TIME_TO_HUB,DIFFUSION_INTERVAL,NUMBER_OF_PERSONS
//	then per person:   PID,SUSCEPTIBILITY,VACCINATED (0 or 1),DISEASE STATE (0 to 5)
//
// It returns base with the file's parameters (variant WARPED2, Locations the number of
// locations) and the sites in file order, a location named as WARPED2 names it (region name
// then location name). Fields may carry spaces around them and lines a carriage return;
// anything WARPED2 would misread or our model cannot run (a field missing or left over, a
// number that is not one, a probability or susceptibility outside [0, 1], a zero time, a
// person id used twice, lines after the last person) is an error naming the file and line.
func ParseConfig(name string, r io.Reader, base Config) (Config, []Site, error) {
	p := &parser{name: name, sc: bufio.NewScanner(r)}
	p.sc.Buffer(nil, 1<<20)
	c, sites := base, []Site(nil)
	c.Variant = WARPED2
	err := p.read(&c, &sites)
	if err == nil {
		err = p.sc.Err()
	}
	if err != nil {
		return base, nil, err
	}
	c.Locations, c.Population = len(sites), 0 // each site has its own people
	if c.Locations < 2 {
		return base, nil, fmt.Errorf("epidemic: %s: holds %d location(s); the model needs at least 2", name, c.Locations)
	}
	if err := c.Validate(); err != nil {
		return base, nil, fmt.Errorf("%s (%s:1)", err, name)
	}
	return c, sites, nil
}

// parser reads a configuration line by line.
type parser struct {
	name string
	sc   *bufio.Scanner
	line int
	// fields are the current line's fields.
	fields []string
}

// errf returns an error naming the file and the current line.
func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("epidemic: %s:%d: %s", p.name, p.line, fmt.Sprintf(format, a...))
}

// next reads the next line, which must hold n fields (what names them for errors).
func (p *parser) next(n int, what string) error {
	if !p.sc.Scan() {
		if err := p.sc.Err(); err != nil {
			return fmt.Errorf("epidemic: %s:%d: %w", p.name, p.line+1, err)
		}
		p.line++
		return p.errf("the file ends here; expected %s", what)
	}
	p.line++
	p.fields = strings.Split(strings.TrimSuffix(p.sc.Text(), "\r"), ",")
	for i := range p.fields {
		p.fields[i] = strings.TrimSpace(p.fields[i])
	}
	if len(p.fields) != n {
		return p.errf("expected %s (%d comma-separated fields), got %d fields", what, n, len(p.fields))
	}
	return nil
}

// uint reads field i as an integer in [lo, hi].
func (p *parser) uint(i int, what string, lo, hi uint64) (uint64, error) {
	v, err := strconv.ParseUint(p.fields[i], 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, p.errf("%s must be an integer from %d to %d, got %q", what, lo, hi, p.fields[i])
	}
	return v, nil
}

// prob reads field i as a number in [0, 1].
func (p *parser) prob(i int, what string) (float64, error) {
	v, err := strconv.ParseFloat(p.fields[i], 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0, p.errf("%s must be a number in [0, 1], got %q", what, p.fields[i])
	}
	return v, nil
}

func (p *parser) read(c *Config, sites *[]Site) error {
	if err := p.next(3, "the network: Watts-Strogatz,K,BETA or Barabasi-Albert,M,A"); err != nil {
		return err
	}
	var err error
	switch p.fields[0] {
	case "Watts-Strogatz":
		c.Network = WattsStrogatz
		k, err1 := p.uint(1, "Watts-Strogatz K", 0, 1<<30)
		c.WattsStrogatzK = int(k)
		c.WattsStrogatzBeta, err = p.prob(2, "Watts-Strogatz beta")
		err = firstErr(err1, err)
	case "Barabasi-Albert":
		c.Network = BarabasiAlbert
		m, err1 := p.uint(1, "Barabasi-Albert M", 0, 1<<30)
		c.BarabasiAlbertM = int(m)
		c.BarabasiAlbertA, err = strconv.ParseFloat(p.fields[2], 64)
		if err != nil || math.IsNaN(c.BarabasiAlbertA) || math.IsInf(c.BarabasiAlbertA, 0) {
			err = p.errf("Barabasi-Albert A must be a number, got %q", p.fields[2])
		}
		err = firstErr(err1, err)
	default:
		err = p.errf("the network must be Watts-Strogatz or Barabasi-Albert, got %q", p.fields[0])
	}
	if err != nil {
		return err
	}
	if err := p.next(1, "the transmissibility"); err != nil {
		return err
	}
	if c.Transmissibility, err = p.prob(0, "the transmissibility"); err != nil {
		return err
	}
	for _, s := range []struct {
		name  string
		dwell *int
		inf   *float64
	}{
		{"latent", &c.LatentDwell, &c.LatentInfectivity}, {"incubating", &c.IncubatingDwell, &c.IncubatingInfectivity},
		{"infectious", &c.InfectiousDwell, &c.InfectiousInfectivity}, {"asympt", &c.AsymptDwell, &c.AsymptInfectivity},
	} {
		if err := p.next(2, s.name+" dwell time,infectivity"); err != nil {
			return err
		}
		d, err1 := p.uint(0, s.name+" dwell time", 0, maxTime)
		*s.dwell = int(d)
		*s.inf, err = p.prob(1, s.name+" infectivity")
		if err := firstErr(err1, err); err != nil {
			return err
		}
	}
	if err := p.next(5, "PROB_ULU,PROB_ULV,PROB_URV,PROB_UIV,PROB_UIU"); err != nil {
		return err
	}
	for i, f := range []*float64{&c.ProbULU, &c.ProbULV, &c.ProbURV, &c.ProbUIV, &c.ProbUIU} {
		if *f, err = p.prob(i, [...]string{"PROB_ULU", "PROB_ULV", "PROB_URV", "PROB_UIV", "PROB_UIU"}[i]); err != nil {
			return err
		}
	}
	if err := p.next(1, "the location state refresh interval"); err != nil {
		return err
	}
	refresh, err := p.uint(0, "the location state refresh interval", 1, maxTime)
	if err != nil {
		return err
	}
	c.RefreshInterval = int(refresh)
	if err := p.next(1, "the number of regions"); err != nil {
		return err
	}
	regions, err := p.uint(0, "the number of regions", 0, 1<<30)
	if err != nil {
		return err
	}
	seen := make(map[uint64]int) // person id -> line
	for range regions {
		if err := p.next(2, "a region: NAME,NUMBER_OF_LOCATIONS"); err != nil {
			return err
		}
		region := p.fields[0]
		locs, err := p.uint(1, "the number of locations", 0, 1<<30)
		if err != nil {
			return err
		}
		for range locs {
			if len(*sites) >= 1<<30 {
				return p.errf("more than %d locations", 1<<30)
			}
			if err := p.next(4, "a location: NAME,TRAVEL_TIME_TO_HUB,DIFFUSION_INTERVAL,NUMBER_OF_PERSONS"); err != nil {
				return err
			}
			s := Site{Name: region + p.fields[0]}
			hub, err1 := p.uint(1, "the travel time to the hub", 1, maxTime)
			interval, err2 := p.uint(2, "the diffusion interval", 1, maxTime)
			persons, err3 := p.uint(3, "the number of persons", 0, 1<<32-2)
			if err := firstErr(err1, err2, err3); err != nil {
				return err
			}
			s.TravelTimeToHub, s.DiffusionInterval = uint32(hub), uint32(interval)
			s.People = make([]Person, 0, min(persons, 1<<16))
			for range persons {
				if err := p.next(4, "a person: PID,SUSCEPTIBILITY,VACCINATED,STATE"); err != nil {
					return err
				}
				pid, err1 := p.uint(0, "the person id", 0, 1<<32-1)
				susc, err2 := p.prob(1, "the susceptibility")
				vacc, err3 := p.uint(2, "the vaccination status", 0, 1)
				state, err4 := p.uint(3, "the disease state", 0, uint64(NumDiseaseStates)-1)
				if err := firstErr(err1, err2, err3, err4); err != nil {
					return err
				}
				if l, dup := seen[pid]; dup {
					return p.errf("person id %d is used again (first on line %d)", pid, l)
				}
				seen[pid] = p.line
				s.People = append(s.People, Person{ID: uint32(pid), Susceptibility: susc, Vaccinated: vacc == 1,
					State: Disease(state)})
			}
			*sites = append(*sites, s)
		}
	}
	for p.sc.Scan() {
		p.line++
		if strings.TrimSpace(p.sc.Text()) != "" {
			return p.errf("a line after the last person of the last location (the counts above say the file ends there)")
		}
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
