// Package airport is the classic airport model (Fujimoto's, as ported to ROSS and WARPED2):
// airports on an X by Y torus, one LP each, with planes that wait on the ground, take off
// and fly to one of the four neighbouring airports. Both variants have WARPED2's
// parameters, defaults and flight pattern: 50 x 50 airports, 50 planes each, mean ground
// time 50, mean flight time 200, every delay the ceiling of an exponential draw.
//
// Config.Variant picks one of two variants:
//
//   - VariantRunways (the default) adds runway contention, as in Fujimoto's original: a
//     plane needs a free runway to land and to take off, and holds for HoldTime when none
//     is free, then tries again. The event kinds are Arrival (a plane reaches the
//     airport's airspace), HoldLand (it tries to land again after holding), Landing (it is
//     down: the runway frees after the landing time), Departure (it is ready to take off,
//     or tries again after holding) and Takeoff (it is up: the runway frees and the plane
//     flies off). It stays the default because contention is what the model is for and
//     what the earlier results measured.
//   - VariantWARPED2 is WARPED2's airport, event for event: no runways, no contention, and
//     two event kinds, Departure (a plane leaves the ground and flies to a random
//     neighbour, arriving after a flight time) and Arrival (it is on the ground and
//     departs after a ground time). The runway parameters are unused.
//
// Read against wilseypa/warped2-models, models/airport (the revision with initializeLP):
// airport.cpp's initializeLP schedules each plane's Departure at ceil(exponential(ground
// time)) (lines 19-22), receiveEvent's DEPARTURE (lines 41-49) and ARRIVAL (lines 51-59)
// count departures, arrivals and planes grounded as stepWARPED2 does, and main's defaults
// are the ones above; airport.hpp's Airport starts with num_planes grounded. What remains
// different from WARPED2 in VariantWARPED2:
//
//   - The end time: WARPED2 handles the events at max-sim-time too
//     (wilseypa/warped2, src/SequentialEventDispatcher.cpp:38 and :55); run with
//     --max-sim-time-inclusive to match it.
//   - Random numbers: WARPED2 seeds each airport's std::default_random_engine with its
//     index (airport.hpp, Airport's constructor); here each airport's generator comes from
//     --seed and its LP id. The distributions are the same, the streams are not.
//   - Delays are at least one time unit: WARPED2's ceiling of an exponential draw is 0
//     when the draw is 0 (with probability 0, or always with a mean of 0); here it is 1,
//     which gives the model a lookahead of 1.
//   - The results add landings, holds and delays (all 0 without runways).
//
// Airports implement kernel.Reverser. In VariantRunways a plane that found no free runway
// and one that took the last leave the same state (no free runway), so Handle draws nothing
// for a hold and one delay for a runway taken, and Reverse tells them apart by
// kernel.Context.DrawsMade; in VariantWARPED2 every event changes the counts one way.
package airport

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/internal/grid"
	"github.com/warpedgo/warped/partition"
)

// Config holds the parameters, named as WARPED2's flags where WARPED2 has them.
type Config struct {
	// Variant is VariantRunways (the default: runway contention) or VariantWARPED2
	// (WARPED2's airport: no runways, two event kinds; the runway parameters are unused).
	Variant string `json:"variant"`
	// AirportsX and AirportsY are the torus's width and height.
	AirportsX int `json:"num-airports-x"`
	AirportsY int `json:"num-airports-y"`
	// Planes is the number of planes that start on the ground at each airport.
	Planes int `json:"num-planes"`
	// GroundTime is the mean time a plane stays at the gate.
	GroundTime int `json:"ground-time"`
	// FlightTime is the mean flight time.
	FlightTime int `json:"flight-time"`
	// Runways is the number of runways of each airport.
	Runways int `json:"runways"`
	// LandTime and TakeoffTime are the mean times a landing and a takeoff hold a runway.
	LandTime    int `json:"land-time"`
	TakeoffTime int `json:"takeoff-time"`
	// HoldTime is how long a plane that found no free runway waits before trying again.
	HoldTime int `json:"hold-time"`
}

// DefaultConfig returns VariantRunways with WARPED2's defaults (50x50 airports, 50 planes
// each, ground time 50, flight time 200) and two runways per airport with mean landing and
// takeoff times 2 and a holding time of 5.
func DefaultConfig() Config {
	return Config{Variant: VariantRunways, AirportsX: 50, AirportsY: 50, Planes: 50, GroundTime: 50, FlightTime: 200,
		Runways: 2, LandTime: 2, TakeoffTime: 2, HoldTime: 5}
}

// The variants accepted in Config.Variant.
const (
	// VariantRunways is the airport with runway contention (Fujimoto's): Arrival, HoldLand,
	// Landing, Departure and Takeoff.
	VariantRunways = "runways"
	// VariantWARPED2 is WARPED2's airport: no runways, Departure and Arrival only (see
	// warped2.go).
	VariantWARPED2 = "warped2"
)

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	if c.Variant != VariantRunways && c.Variant != VariantWARPED2 {
		return fmt.Errorf("airport: --variant must be %s or %s, got %q", VariantRunways, VariantWARPED2, c.Variant)
	}
	type bounded = struct {
		name   string
		v, min int
	}
	checks := []bounded{
		{"num-airports-x", c.AirportsX, 1}, {"num-airports-y", c.AirportsY, 1}, {"num-planes", c.Planes, 1},
		{"ground-time", c.GroundTime, 0}, {"flight-time", c.FlightTime, 0},
	}
	if c.Variant == VariantRunways { // VariantWARPED2 has no runways: it reads none of theirs
		checks = append(checks, bounded{"runways", c.Runways, 1},
			bounded{"land-time", c.LandTime, 0}, bounded{"takeoff-time", c.TakeoffTime, 0}, bounded{"hold-time", c.HoldTime, 1})
	}
	for _, p := range checks {
		if p.v < p.min {
			return fmt.Errorf("airport: --%s must be at least %d, got %d", p.name, p.min, p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"ground-time", c.GroundTime}, {"flight-time", c.FlightTime}, {"land-time", c.LandTime},
		{"takeoff-time", c.TakeoffTime}, {"hold-time", c.HoldTime}} {
		if p.v > grid.MaxDelay {
			return fmt.Errorf("airport: --%s must be at most %d (2^53, a time's exact integers), got %d", p.name, grid.MaxDelay, p.v)
		}
	}
	if c.AirportsX > (1<<31)/c.AirportsY {
		return fmt.Errorf("airport: %d x %d airports is too many (at most 2^31)", c.AirportsX, c.AirportsY)
	}
	return nil
}

// Kind is the kind of an airport event, in Words[0].
type Kind uint64

// The event kinds.
const (
	Arrival Kind = iota
	HoldLand
	Landing
	Departure
	Takeoff
	numKinds
)

// State is one airport's state.
type State struct {
	// FreeRunways is the number of runways not in use.
	FreeRunways uint64
	// Grounded counts the planes on the ground (WARPED2's planes_grounded).
	Grounded uint64
	// Arrivals counts the planes that reached the airspace; Landings those that landed;
	// Departures those that took off.
	Arrivals, Landings, Departures uint64
	// Holds counts the times a plane found no free runway, and HoldTime the time planes
	// spent holding.
	Holds, HoldTime uint64
}

// Airport is one LP of the model.
type Airport struct {
	kernel.Plain[State]
	cfg   *Config
	index uint32
}

var (
	_ kernel.Reverser  = (*Airport)(nil)
	_ kernel.Lookahead = (*Airport)(nil)
)

// New returns the airports, row by row.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := c
	n := c.AirportsX * c.AirportsY
	recs := make([]Airport, n)
	lps := make([]kernel.LogicalProcess, n)
	for i := range recs {
		recs[i] = Airport{cfg: &cfg, index: uint32(i)}
		if c.Variant == VariantRunways {
			recs[i].S.FreeRunways = uint64(c.Runways) // VariantWARPED2's state holds none
		}
		recs[i].S.Grounded = uint64(c.Planes)
		lps[i] = &recs[i]
	}
	return lps, nil
}

// Partitioner returns the model's partitioner: the torus cut into tiles of neighbouring
// airports, so that most flights stay inside a part.
func (c Config) Partitioner() partition.Partitioner {
	return grid.Tiles{X: c.AirportsX, Y: c.AirportsY}
}

// Name returns "Airport_<index>", as WARPED2 names them.
func (a *Airport) Name() string { return fmt.Sprintf("Airport_%d", a.index) }

// Lookahead returns 1: every flight takes at least one time unit.
func (a *Airport) Lookahead() kernel.Time { return 1 }

// delay draws a delay with the given mean: max(1, ceil(exponential)), one draw.
func delay(g *kernel.RNG, mean int) uint64 {
	return max(1, uint64(math.Ceil(g.Exponential(float64(mean)))))
}

// Init schedules the departure of each plane on the ground.
func (a *Airport) Init(ctx *kernel.Context) {
	for range a.cfg.Planes {
		ctx.SendWords(ctx.Self(), kernel.Time(delay(ctx.RNG(), a.cfg.GroundTime)), kernel.Words{uint64(Departure)})
	}
}

// Handle processes one event; the body is step.
func (a *Airport) Handle(ctx *kernel.Context, ev *kernel.Event) {
	to, at, k := a.cfg.step(&a.S, ctx.RNG(), uint64(ctx.Now()), a.index, Kind(ev.Words[0]))
	ctx.SendWords(kernel.LPID(to), kernel.Time(at), kernel.Words{uint64(k)})
}

// step is Handle on the airport's state s and generator g: it handles an event of kind k at
// time now at the airport with the given index (its LP id) and returns the one event it
// sends: receiver, time and kind.
func (c *Config) step(s *State, g *kernel.RNG, now uint64, index uint32, k Kind) (uint32, uint64, Kind) {
	if c.Variant == VariantWARPED2 {
		return c.stepWARPED2(s, g, now, index, k)
	}
	switch k {
	case Arrival, HoldLand:
		if k == Arrival {
			s.Arrivals++
		}
		if s.FreeRunways == 0 {
			s.Holds++
			s.HoldTime += uint64(c.HoldTime)
			return index, now + uint64(c.HoldTime), HoldLand
		}
		s.FreeRunways--
		return index, now + delay(g, c.LandTime), Landing
	case Landing:
		s.FreeRunways++
		s.Landings++
		s.Grounded++
		return index, now + delay(g, c.GroundTime), Departure
	case Departure:
		if s.FreeRunways == 0 {
			s.Holds++
			s.HoldTime += uint64(c.HoldTime)
			return index, now + uint64(c.HoldTime), Departure
		}
		s.FreeRunways--
		s.Grounded--
		s.Departures++
		return index, now + delay(g, c.TakeoffTime), Takeoff
	case Takeoff:
		s.FreeRunways++
		to := grid.Move(index, grid.Direction(g.Range(0, 3)), uint32(c.AirportsX), uint32(c.AirportsY))
		return to, now + delay(g, c.FlightTime), Arrival
	}
	panic(fmt.Sprintf("airport: unknown event kind %d", k))
}

// Reverse undoes Handle for reverse computation (kernel.Reverser).
func (a *Airport) Reverse(ctx *kernel.Context, ev *kernel.Event) {
	a.cfg.unstep(&a.S, ctx.DrawsMade(), Kind(ev.Words[0]))
}

// unstep undoes step on state s for an event of kind k, given the number of draws step
// made: none for a hold, one for a runway taken.
func (c *Config) unstep(s *State, made uint32, k Kind) {
	if c.Variant == VariantWARPED2 {
		unstepWARPED2(s, k)
		return
	}
	hold := func() {
		s.Holds--
		s.HoldTime -= uint64(c.HoldTime)
	}
	switch k {
	case Arrival, HoldLand:
		if k == Arrival {
			s.Arrivals--
		}
		if made == 0 {
			hold()
			return
		}
		s.FreeRunways++
	case Landing:
		s.FreeRunways--
		s.Landings--
		s.Grounded--
	case Departure:
		if made == 0 {
			hold()
			return
		}
		s.FreeRunways++
		s.Grounded++
		s.Departures--
	case Takeoff:
		s.FreeRunways--
	default:
		panic(fmt.Sprintf("airport: unknown event kind %d", k))
	}
}

// Results are the model's totals over all airports.
type Results struct {
	// Arrivals, Landings and Departures are WARPED2's counts (plus landings).
	Arrivals   uint64 `json:"arrivals"`
	Landings   uint64 `json:"landings"`
	Departures uint64 `json:"departures"`
	// Grounded counts the planes on the ground at the end.
	Grounded uint64 `json:"planes_grounded"`
	// Holds counts the times a plane found no free runway; HoldTime is the total time
	// planes held, and AverageDelay that time per landing and takeoff.
	Holds        uint64  `json:"holds"`
	HoldTime     uint64  `json:"hold_time"`
	AverageDelay float64 `json:"average_delay"`
}

// Summarize adds up the airports' counts after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	for _, l := range lps {
		s := &l.(*Airport).S
		r.Arrivals += s.Arrivals
		r.Landings += s.Landings
		r.Departures += s.Departures
		r.Grounded += s.Grounded
		r.Holds += s.Holds
		r.HoldTime += s.HoldTime
	}
	if n := r.Landings + r.Departures; n > 0 {
		r.AverageDelay = float64(r.HoldTime) / float64(n)
	}
	return r
}
