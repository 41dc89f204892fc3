// Package epidemic is WARPED2's epidemic model: people live in locations (one LP each),
// move between them along a Watts-Strogatz small-world network, and catch a disease by a
// probabilistic transmission model within each location.
//
// Each person has a disease state: uninfected, latent, incubating, infectious,
// asymptomatic or recovered (WARPED2's six; latent people become infectious and incubating
// people asymptomatic after fixed dwell times, and both then recover after theirs), and a
// vaccination status. The event kinds are WARPED2's: DiseaseUpdateTrigger (every
// RefreshInterval a location advances its people's dwell times and then infects each
// uninfected person with probability 1 - prod over states s of (1 - T*I_s)^n_s, T the
// transmissibility, I_s the infectivity and n_s the count of people in state s there; an
// unvaccinated person becomes latent with probability ProbULU, else incubating; a vaccinated
// one latent with ProbULV, recovered with ProbURV, else incubating), DiffusionTrigger (every
// DiffusionInterval a location sends a random person of its own to a random neighbour,
// arriving TravelTime later) and Diffusion (the person arrives). A seventh LP, the observer,
// collects each location's counts every SampleInterval (a Sample event at each location,
// reported to the observer one time unit later): Results.Series is the time series of the
// counts summed over locations. At each sample every location also records its counts as
// the model's series through the kernel (kernel.Context.Record, one series per disease
// state, named by Disease.String): with kernel.Config.RecordSeries set, Result.Series holds
// them (committed values only), and summed over locations at each time they are
// Results.Series (warped epidemic --series-file, warped plot).
//
// Where this model differs from WARPED2's: WARPED2 reads people, locations and parameters
// from an XML file; here locations, people and the network are generated from the
// configuration (the network from DiffusionSeed, so every process of a run builds the same
// one), people have no individual susceptibility (all 1), the exposure of each update is
// one refresh interval (WARPED2 raises the probability to the time since the person
// arrived), and a person's draws come from the location's generator. WARPED2 truncates the
// infection probability to an integer before scaling it, so that nobody is ever infected;
// here the probability is used as such. The default parameters are this package's own
// choice (WARPED2 ships no defaults, only generated configurations), picked so that the
// default run shows an epidemic wave.
//
// Locations do not implement Reverse: an update changes the disease states of many people
// by draws whose outcome the state after does not record, so the model runs with periodic
// state saving. A location's state is its people (a slice, saved by copying).
package epidemic

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

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

// Config holds the parameters, named as WARPED2's configuration fields where it has them.
type Config struct {
	// Locations is the number of locations.
	Locations int `json:"num-locations"`
	// Population is the number of people who start in each location.
	Population int `json:"population"`
	// InitialInfected is the probability that a person starts latent.
	InitialInfected float64 `json:"initial-infected"`
	// Vaccinated is the probability that a person is vaccinated.
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
	// (else incubating); ProbULV and ProbURV that a vaccinated one becomes latent and
	// recovered (else incubating).
	ProbULU float64 `json:"prob-ul-u"`
	ProbULV float64 `json:"prob-ul-v"`
	ProbURV float64 `json:"prob-ur-v"`
	// RefreshInterval is the time between disease updates of a location.
	RefreshInterval int `json:"location-state-refresh-interval"`
	// DiffusionInterval is the time between departures from a location.
	DiffusionInterval int `json:"diffusion-trigger-interval"`
	// TravelTime is the time a person takes to reach a neighbouring location.
	TravelTime int `json:"travel-time"`
	// WattsStrogatzK is the network's mean degree (even) and WattsStrogatzBeta its
	// rewiring probability.
	WattsStrogatzK    int     `json:"watts-strogatz-k"`
	WattsStrogatzBeta float64 `json:"watts-strogatz-beta"`
	// DiffusionSeed seeds the network.
	DiffusionSeed uint64 `json:"diffusion-seed"`
	// SampleInterval is the time between samples of the time series.
	SampleInterval int `json:"sample-interval"`
}

// MaxSamples is the most samples the time series holds; later samples are dropped.
const MaxSamples = 256

// DefaultConfig returns this package's defaults (see the package doc): 1000 locations of
// 100 people, 1% initially latent, 10% vaccinated, and a disease that spreads.
func DefaultConfig() Config {
	return Config{Locations: 1000, Population: 100, InitialInfected: 0.01, Vaccinated: 0.1,
		Transmissibility: 0.004, LatentDwell: 200, IncubatingDwell: 200, InfectiousDwell: 400,
		AsymptDwell: 300, LatentInfectivity: 0, IncubatingInfectivity: 0.3, InfectiousInfectivity: 1,
		AsymptInfectivity: 0.5, ProbULU: 0.8, ProbULV: 0.2, ProbURV: 0.6, RefreshInterval: 50,
		DiffusionInterval: 10, TravelTime: 20, WattsStrogatzK: 4, WattsStrogatzBeta: 0.1,
		DiffusionSeed: 1, SampleInterval: 100}
}

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	for _, p := range []struct {
		name   string
		v, min int
	}{
		{"num-locations", c.Locations, 2}, {"population", c.Population, 0},
		{"latent-dwell-time", c.LatentDwell, 0}, {"incubating-dwell-time", c.IncubatingDwell, 0},
		{"infectious-dwell-time", c.InfectiousDwell, 0}, {"asympt-dwell-time", c.AsymptDwell, 0},
		{"location-state-refresh-interval", c.RefreshInterval, 1},
		{"diffusion-trigger-interval", c.DiffusionInterval, 1}, {"travel-time", c.TravelTime, 1},
		{"watts-strogatz-k", c.WattsStrogatzK, 2}, {"sample-interval", c.SampleInterval, 1},
	} {
		if p.v < p.min {
			return fmt.Errorf("epidemic: --%s must be at least %d, got %d", p.name, p.min, p.v)
		}
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
	switch {
	case c.Locations > 1<<30:
		return fmt.Errorf("epidemic: --num-locations must be at most %d, got %d", 1<<30, c.Locations)
	case uint64(c.Locations)*uint64(c.Population) > 1<<32-1:
		return fmt.Errorf("epidemic: %d locations of %d people is too many people (at most 2^32-1)", c.Locations, c.Population)
	case c.WattsStrogatzK%2 != 0 || c.WattsStrogatzK >= c.Locations:
		return fmt.Errorf("epidemic: --watts-strogatz-k must be even and less than --num-locations (%d), got %d",
			c.Locations, c.WattsStrogatzK)
	case c.ProbULV+c.ProbURV > 1:
		return fmt.Errorf("epidemic: --prob-ul-v + --prob-ur-v must be at most 1, got %v", c.ProbULV+c.ProbURV)
	}
	return nil
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

// Person is one person.
type Person struct {
	// ID identifies the person.
	ID uint32
	// Since is the time the person entered its disease state.
	Since uint32
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
	// adj[off[i]:off[i+1]] are location i's neighbours.
	adj, off []uint32
	// observer is the observer's LP id.
	observer kernel.LPID
}

// Location is one location LP.
type Location struct {
	m      *model
	index  uint32
	people []Person
	stats  Stats
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

// New returns the locations, then the observer.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &model{Config: c, observer: kernel.LPID(c.Locations)}
	m.adj, m.off = wattsStrogatz(c.Locations, c.WattsStrogatzK, c.WattsStrogatzBeta, c.DiffusionSeed)
	locs := make([]Location, c.Locations)
	lps := make([]kernel.LogicalProcess, c.Locations+1)
	for i := range locs {
		locs[i] = Location{m: m, index: uint32(i)}
		lps[i] = &locs[i]
	}
	lps[c.Locations] = &Observer{m: m}
	return lps, nil
}

// wattsStrogatz returns a Watts-Strogatz graph on n nodes (each joined to its k/2 nearest
// on each side of a ring, then each such edge rewired to a random node with probability
// beta) as adjacency lists: node i's neighbours are adj[off[i]:off[i+1]], sorted.
func wattsStrogatz(n, k int, beta float64, seed uint64) (adj, off []uint32) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	edges := make(map[[2]uint32]bool, n*k/2)
	key := func(a, b uint32) [2]uint32 { return [2]uint32{min(a, b), max(a, b)} }
	for i := range n {
		for j := 1; j <= k/2; j++ {
			edges[key(uint32(i), uint32((i+j)%n))] = true
		}
	}
	for i := range n {
		for j := 1; j <= k/2; j++ {
			e := key(uint32(i), uint32((i+j)%n))
			if r.Float64() >= beta || !edges[e] {
				continue
			}
			to := uint32(r.IntN(n))
			if to == uint32(i) || edges[key(uint32(i), to)] {
				continue
			}
			delete(edges, e)
			edges[key(uint32(i), to)] = true
		}
	}
	deg := make([]uint32, n+1)
	for e := range edges {
		deg[e[0]+1]++
		deg[e[1]+1]++
	}
	off = make([]uint32, n+1)
	for i := 1; i <= n; i++ {
		off[i] = off[i-1] + deg[i]
	}
	adj = make([]uint32, off[n])
	fill := append([]uint32(nil), off[:n]...)
	for e := range edges {
		adj[fill[e[0]]] = e[1]
		fill[e[0]]++
		adj[fill[e[1]]] = e[0]
		fill[e[1]]++
	}
	for i := range n { // map order is random: sort each list
		l := adj[off[i]:off[i+1]]
		for a := 1; a < len(l); a++ {
			for b := a; b > 0 && l[b] < l[b-1]; b-- {
				l[b], l[b-1] = l[b-1], l[b]
			}
		}
	}
	return adj, off
}

// Name returns "Location_<index>".
func (l *Location) Name() string { return fmt.Sprintf("Location_%d", l.index) }

// Lookahead returns 1: people travel at least a time unit, and reports go one unit later.
func (l *Location) Lookahead() kernel.Time { return 1 }

// Snapshot implements kernel.LogicalProcess: it copies the people into dst's slice.
func (l *Location) Snapshot(dst any) any {
	d, _ := dst.(*snapshot)
	if d == nil {
		d = &snapshot{}
	}
	d.People = append(d.People[:0], l.people...)
	d.Stats = l.stats
	d.Counts, d.Reports = d.Counts[:0], d.Reports[:0]
	return d
}

// Restore implements kernel.LogicalProcess.
func (l *Location) Restore(src any) {
	s := src.(*snapshot)
	l.people = append(l.people[:0], s.People...)
	l.stats = s.Stats
}

// AppendState implements kernel.StateAppender: the stats, then every person.
func (l *Location) AppendState(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, l.stats.Infections)
	b = binary.LittleEndian.AppendUint64(b, l.stats.Arrivals)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(l.people)))
	for _, p := range l.people {
		v := uint8(0)
		if p.Vaccinated {
			v = 1
		}
		b = binary.LittleEndian.AppendUint32(b, p.ID)
		b = binary.LittleEndian.AppendUint32(b, p.Since)
		b = append(b, uint8(p.State), v)
	}
	return b
}

// Init creates the location's people and schedules its first update, departure and
// sample.
func (l *Location) Init(ctx *kernel.Context) {
	c, g := &l.m.Config, ctx.RNG()
	l.people = make([]Person, c.Population, c.Population+c.Population/4)
	for i := range l.people {
		p := Person{ID: l.index*uint32(c.Population) + uint32(i)}
		if g.Uniform() <= c.InitialInfected && c.InitialInfected > 0 {
			p.State = Latent
		}
		p.Vaccinated = g.Uniform() <= c.Vaccinated && c.Vaccinated > 0
		l.people[i] = p
	}
	self := ctx.Self()
	ctx.SendWords(self, kernel.Time(c.RefreshInterval), kernel.Words{uint64(DiseaseUpdateTrigger)})
	ctx.SendWords(self, kernel.Time(c.DiffusionInterval), kernel.Words{uint64(DiffusionTrigger)})
	ctx.SendWords(self, kernel.Time(c.SampleInterval), kernel.Words{uint64(Sample)})
}

// Handle processes one event.
func (l *Location) Handle(ctx *kernel.Context, ev *kernel.Event) {
	c, g, now, self := &l.m.Config, ctx.RNG(), ctx.Now(), ctx.Self()
	switch Kind(ev.Words[0] & 0xff) {
	case DiseaseUpdateTrigger:
		l.update(g, uint32(now))
		ctx.SendWords(self, now+kernel.Time(c.RefreshInterval), ev.Words)
	case DiffusionTrigger:
		if n := len(l.people); n > 0 {
			nb := l.m.adj[l.m.off[l.index]:l.m.off[l.index+1]]
			to := nb[g.Range(0, uint64(len(nb)-1))]
			i := g.Range(0, uint64(n-1))
			p := l.people[i]
			l.people[i] = l.people[n-1]
			l.people = l.people[:n-1]
			v := uint64(0)
			if p.Vaccinated {
				v = 1
			}
			ctx.SendWords(kernel.LPID(to), now+kernel.Time(c.TravelTime),
				kernel.Words{uint64(Diffusion) | uint64(p.State)<<8 | v<<16, uint64(p.ID), uint64(p.Since)})
		}
		ctx.SendWords(self, now+kernel.Time(c.DiffusionInterval), ev.Words)
	case Diffusion:
		w := ev.Words
		l.people = append(l.people, Person{ID: uint32(w[1]), Since: uint32(w[2]),
			State: Disease(w[0] >> 8 & 0xff), Vaccinated: w[0]>>16&1 == 1})
		l.stats.Arrivals++
	case Sample:
		j := uint64(now) / uint64(c.SampleInterval)
		if j >= MaxSamples {
			return
		}
		var n [NumDiseaseStates]uint64
		for _, p := range l.people {
			n[p.State]++
		}
		for s, k := range n {
			ctx.Record(Disease(s).String(), float64(k)) // kept when kernel.Config.RecordSeries is set
		}
		ctx.SendWords(l.m.observer, now+1, kernel.Words{uint64(Report) | j<<8, n[0] | n[1]<<32,
			n[2] | n[3]<<32, n[4] | n[5]<<32})
		ctx.SendWords(self, now+kernel.Time(c.SampleInterval), ev.Words)
	default:
		panic(fmt.Sprintf("epidemic: unknown event kind %d", ev.Words[0]&0xff))
	}
}

// update is WARPED2's reaction: advance every person's dwell time (ptts), count the people
// by state, then infect each uninfected person with the location's infection probability.
func (l *Location) update(g *kernel.RNG, now uint32) {
	c := &l.m.Config
	var n [NumDiseaseStates]int
	for i := range l.people {
		p := &l.people[i]
		advance := func(from, to Disease, dwell int) {
			if p.State == from && now-p.Since >= uint32(dwell) {
				p.State = to
				p.Since += uint32(dwell)
			}
		}
		advance(Latent, Infectious, c.LatentDwell)
		advance(Incubating, Asymptomatic, c.IncubatingDwell)
		advance(Infectious, Recovered, c.InfectiousDwell)
		advance(Asymptomatic, Recovered, c.AsymptDwell)
		n[p.State]++
	}
	if n[Uninfected] == 0 {
		return
	}
	q := math.Pow(1-c.Transmissibility*c.LatentInfectivity, float64(n[Latent])) *
		math.Pow(1-c.Transmissibility*c.IncubatingInfectivity, float64(n[Incubating])) *
		math.Pow(1-c.Transmissibility*c.InfectiousInfectivity, float64(n[Infectious])) *
		math.Pow(1-c.Transmissibility*c.AsymptInfectivity, float64(n[Asymptomatic]))
	if q >= 1 {
		return // nobody infectious here
	}
	for i := range l.people {
		p := &l.people[i]
		if p.State != Uninfected || g.Uniform() <= q {
			continue
		}
		u := g.Uniform()
		switch {
		case !p.Vaccinated && u <= c.ProbULU, p.Vaccinated && u <= c.ProbULV:
			p.State = Latent
		case p.Vaccinated && u <= c.ProbULV+c.ProbURV:
			p.State = Recovered
		default:
			p.State = Incubating
		}
		p.Since = now
		l.stats.Infections++
	}
}

// Observer is the LP that collects the locations' counts into the time series.
//
// Its state is the Series, 14 KiB, of which a run fills the rows of the samples reached so
// far (50 by the default end time). Rows at and above used are zero, so Snapshot copies
// only the rows below it and Restore clears the rows between the saved and the current
// bound: the observer takes a report from every location at every sample, and under
// periodic state saving a full copy of the arrays every few reports was most of the bytes
// the epidemic's saves copied.
type Observer struct {
	// S is the observer's state.
	S Series
	m *model
	// used bounds the rows of S in use: every row at or above it is zero. Handle raises it;
	// Reverse leaves it (a bound, not the least one).
	used int
}

// Series is the time series: at sample j (time j*SampleInterval), Counts[j] are the people
// in each disease state summed over the Reports[j] locations that reported (people
// travelling at that time are not counted).
type Series struct {
	Counts  [MaxSamples][NumDiseaseStates]uint64
	Reports [MaxSamples]uint32
}

// Name returns "Observer".
func (o *Observer) Name() string { return "Observer" }

// Init does nothing: the locations send.
func (o *Observer) Init(*kernel.Context) {}

// Lookahead returns 1 (the observer sends nothing).
func (o *Observer) Lookahead() kernel.Time { return 1 }

// Handle adds a location's report.
func (o *Observer) Handle(_ *kernel.Context, ev *kernel.Event) {
	w := ev.Words
	j := w[0] >> 8
	c := &o.S.Counts[j]
	for s := range NumDiseaseStates {
		c[s] += w[1+s/2] >> (32 * (s % 2)) & 0xffffffff
	}
	o.S.Reports[j]++
	o.used = max(o.used, int(j)+1)
}

// Snapshot implements kernel.LogicalProcess: it copies the rows of the series in use into
// dst's slices (see Observer).
func (o *Observer) Snapshot(dst any) any {
	d, _ := dst.(*snapshot)
	if d == nil {
		d = &snapshot{}
	}
	d.Counts = append(d.Counts[:0], o.S.Counts[:o.used]...)
	d.Reports = append(d.Reports[:0], o.S.Reports[:o.used]...)
	d.People, d.Stats = d.People[:0], Stats{}
	return d
}

// Restore implements kernel.LogicalProcess.
func (o *Observer) Restore(src any) {
	s := src.(*snapshot)
	n := len(s.Counts)
	copy(o.S.Counts[:n], s.Counts)
	copy(o.S.Reports[:n], s.Reports)
	if o.used > n {
		clear(o.S.Counts[n:o.used])
		clear(o.S.Reports[n:o.used])
	}
	o.used = n
}

// AppendState implements kernel.StateAppender: the series' arrays in encoding/binary's
// little-endian form, as kernel.Plain writes a plain struct.
func (o *Observer) AppendState(b []byte) []byte {
	out, err := binary.Append(b, binary.LittleEndian, &o.S)
	if err != nil {
		panic(fmt.Sprintf("epidemic: encoding the observer's series: %v", err)) // fixed-size arrays: cannot fail
	}
	return out
}

// Reverse undoes Handle (the observer is reversible; the locations are not).
func (o *Observer) Reverse(_ *kernel.Context, ev *kernel.Event) {
	w := ev.Words
	j := w[0] >> 8
	c := &o.S.Counts[j]
	for s := range NumDiseaseStates {
		c[s] -= w[1+s/2] >> (32 * (s % 2)) & 0xffffffff
	}
	o.S.Reports[j]--
}

// Point is one sample of the time series.
type Point struct {
	Time   uint64
	Counts [NumDiseaseStates]uint64
}

// Results are the model's totals.
type Results struct {
	// Final counts the people in each disease state at the end, over all locations
	// (people travelling at the end are not counted).
	Final [NumDiseaseStates]uint64
	// Infections counts the infections during the run.
	Infections uint64
	// Moves counts the people who arrived at another location.
	Moves uint64
	// PeakInfected is the most people infected but not recovered in one sample, and
	// PeakTime that sample's time.
	PeakInfected, PeakTime uint64
	// Series is the time series of the samples every location reported.
	Series []Point
}

// Summarize collects the results after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	var obs *Observer
	for _, lp := range lps {
		switch l := lp.(type) {
		case *Location:
			for _, p := range l.people {
				r.Final[p.State]++
			}
			r.Infections += l.stats.Infections
			r.Moves += l.stats.Arrivals
		case *Observer:
			obs = l
		}
	}
	if obs == nil {
		return r
	}
	for j := range MaxSamples {
		if j == 0 || obs.S.Reports[j] != uint32(obs.m.Locations) {
			continue
		}
		p := Point{Time: uint64(j) * uint64(obs.m.SampleInterval), Counts: obs.S.Counts[j]}
		r.Series = append(r.Series, p)
		if inf := p.Counts[Latent] + p.Counts[Incubating] + p.Counts[Infectious] + p.Counts[Asymptomatic]; inf > r.PeakInfected {
			r.PeakInfected, r.PeakTime = inf, p.Time
		}
	}
	return r
}

// CSV returns the time series as CSV with a header line.
func (r Results) CSV() []byte {
	b := []byte("time")
	for s := range NumDiseaseStates {
		b = append(b, ',')
		b = append(b, s.String()...)
	}
	b = append(b, '\n')
	for _, p := range r.Series {
		b = fmt.Appendf(b, "%d", p.Time)
		for _, c := range p.Counts {
			b = fmt.Appendf(b, ",%d", c)
		}
		b = append(b, '\n')
	}
	return b
}
