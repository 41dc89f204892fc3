// Package traffic is WARPED2's traffic model (ported there from ROSS's): cars drive across a
// torus of X by Y intersections, one LP per intersection, towards a destination a random
// number of blocks east or west and north or south of where they start.
//
// A car's trip is a chain of three event kinds, as in WARPED2: Arrival (the car reaches an
// intersection and queues in the lane it came in on; a car with no distance left to go has
// finished its trip), DirectionSelect (it leaves its lane and picks the road it leaves on,
// which reduces the distance still to go; a road holds at most MaxCarsOnRoad cars waiting
// to depart) and Departure (it drives to the next intersection). Every step takes
// 1 + floor(e) time units, e exponential with mean MeanInterval, so the model has integer
// times and a lookahead of 1. The parameters and defaults are WARPED2's: 100 x 100
// intersections, 25 cars per intersection, mean interval 400, at most 5 cars on a road
// (MAX_CARS_ON_ROAD); as in WARPED2 each intersection draws its cars' trips from its own
// generator, its cars all start with one heading drawn once for the intersection, and a
// destination lies uniformly in [-99, 100] blocks along each axis (with MaxDistance 100).
//
// Read against wilseypa/warped2-models, models/traffic: traffic.hpp at 059e660a seeds each
// intersection's std::default_random_engine with its index (line 128); traffic.cpp at
// 18a8a0e draws one initial lane per intersection for all its cars (lines 20-22) and the
// destinations from uniform_int_distribution(-99, 100) (lines 24-25). What remains
// different from WARPED2:
//
//   - The end time: WARPED2 handles the events at max-sim-time too
//     (wilseypa/warped2, src/SequentialEventDispatcher.cpp:38 and :55); run with
//     --max-sim-time-inclusive to match it.
//   - Random numbers: here each intersection's generator comes from --seed and its LP id
//     (package rng), not from the index alone, so the streams differ from WARPED2's; the
//     distributions are the same.
//   - The delays: 18a8a0e truncates a NegExp draw with no offset (traffic.cpp:30, so a step
//     can take 0); its later revision draws std::exponential_distribution in initializeLP,
//     whose rounding has not been checked here. 1 + floor(e) equals ceil(e) but for e an
//     integer (probability 0), and keeps every step at least 1.
//   - Lanes and the full-road rule: WARPED2 chooses among twelve lanes (direction by left,
//     straight, right) and, when every useful road is full, sends the car on in a
//     direction that depends on where it came from, without updating its distance to go
//     (and sometimes onto no lane at all; traffic.cpp's DIRECTION_SELECT). Here a car
//     prefers to go straight on when that brings it closer, else turns towards its
//     destination along x, then along y; a car whose useful roads are all full waits
//     1 + floor(e) more for each full road it tried (counted in Results.FullRoads) and then
//     queues on the first useful road anyway, so every car keeps getting closer and every
//     trip ends. The one initial heading is one of four (WARPED2's lane, one of twelve).
//   - The results add the average travel time (finish time minus the time of the first
//     arrival) and the counts of cars waiting in lanes at the end.
//
// Intersections implement kernel.Reverser: Reverse undoes each event kind exactly. A
// DirectionSelect's choice is not visible in the state after it (the road chosen holds one
// more car, and a fuller road might have been chosen with one car less), so Reverse reads
// it from the number of draws the event made: one for the delay plus one for each full road
// tried (kernel.Context.DrawsMade).
package traffic

import (
	"fmt"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/internal/grid"
	"github.com/warpedgo/warped/partition"
)

// Config holds the parameters, named as WARPED2's flags where WARPED2 has them.
type Config struct {
	// IntersectionsX and IntersectionsY are the torus's width and height.
	IntersectionsX int `json:"num-intersections-x"`
	IntersectionsY int `json:"num-intersections-y"`
	// Cars is the number of cars that start at each intersection.
	Cars int `json:"number-of-cars"`
	// MeanInterval is the mean of the exponential part of every step's delay.
	MeanInterval int `json:"mean-interval"`
	// MaxCarsOnRoad is the most cars a road holds waiting to depart before cars look for
	// another road (WARPED2's MAX_CARS_ON_ROAD).
	MaxCarsOnRoad int `json:"max-cars-on-road"`
	// MaxDistance is the farthest a destination lies east or north, in blocks; it lies at
	// most MaxDistance-1 blocks west or south (WARPED2's [-99, 100] with 100).
	MaxDistance int `json:"max-distance"`
}

// DefaultConfig returns WARPED2's defaults: 100x100 intersections, 25 cars each, mean
// interval 400, at most 5 cars on a road, destinations in [-99, 100] blocks on each axis.
func DefaultConfig() Config {
	return Config{IntersectionsX: 100, IntersectionsY: 100, Cars: 25, MeanInterval: 400,
		MaxCarsOnRoad: 5, MaxDistance: 100}
}

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	for _, p := range []struct {
		name   string
		v, min int
	}{
		{"num-intersections-x", c.IntersectionsX, 1}, {"num-intersections-y", c.IntersectionsY, 1},
		{"number-of-cars", c.Cars, 1}, {"mean-interval", c.MeanInterval, 0},
		{"max-cars-on-road", c.MaxCarsOnRoad, 1}, {"max-distance", c.MaxDistance, 0},
	} {
		if p.v < p.min {
			return fmt.Errorf("traffic: --%s must be at least %d, got %d", p.name, p.min, p.v)
		}
	}
	if c.MeanInterval > grid.MaxDelay {
		return fmt.Errorf("traffic: --mean-interval must be at most %d (2^53, a time's exact integers), got %d", grid.MaxDelay, c.MeanInterval)
	}
	if c.IntersectionsX > (1<<31)/c.IntersectionsY {
		return fmt.Errorf("traffic: %d x %d intersections is too many (at most 2^31)", c.IntersectionsX, c.IntersectionsY)
	}
	if c.MaxDistance > 1<<30 {
		return fmt.Errorf("traffic: --max-distance must be at most %d, got %d", 1<<30, c.MaxDistance)
	}
	return nil
}

// Kind is the kind of a traffic event, in the low byte of Words[0]; the car's heading (a
// grid.Direction) is in the next byte.
type Kind uint64

// The event kinds.
const (
	Arrival Kind = iota
	DirectionSelect
	Departure
	numKinds
)

// State is one intersection's state.
type State struct {
	// Arrived counts the cars that arrived on their way somewhere else.
	Arrived uint64
	// Finished counts the cars that reached their destination here.
	Finished uint64
	// TravelTime sums the finished cars' travel times.
	TravelTime uint64
	// FullRoads counts the full roads that cars found when choosing where to go.
	FullRoads uint64
	// In counts the cars waiting in each incoming lane, by the heading they came with.
	In [4]uint64
	// Out counts the cars waiting to depart on each road, by its direction.
	Out [4]uint64
}

// Intersection is one LP of the model.
type Intersection struct {
	kernel.Plain[State]
	cfg   *Config
	index uint32
}

var (
	_ kernel.Reverser  = (*Intersection)(nil)
	_ kernel.Lookahead = (*Intersection)(nil)
)

// New returns the intersections of a traffic model, row by row.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := c
	n := c.IntersectionsX * c.IntersectionsY
	recs := make([]Intersection, n)
	lps := make([]kernel.LogicalProcess, n)
	for i := range recs {
		recs[i] = Intersection{cfg: &cfg, index: uint32(i)}
		lps[i] = &recs[i]
	}
	return lps, nil
}

// Name returns "Intersection_<index>", as WARPED2 names them.
func (in *Intersection) Name() string { return fmt.Sprintf("Intersection_%d", in.index) }

// Lookahead returns 1: every step takes at least one time unit (kernel.Lookahead).
func (in *Intersection) Lookahead() kernel.Time { return 1 }

// Partitioner returns the model's partitioner: the torus cut into tiles of neighbouring
// intersections, so that most cars stay inside a part.
func (c Config) Partitioner() partition.Partitioner {
	return grid.Tiles{X: c.IntersectionsX, Y: c.IntersectionsY}
}

// delay draws one step's delay: 1 + floor(exponential(MeanInterval)), one draw.
func (c *Config) delay(g *kernel.RNG) uint64 {
	return 1 + uint64(g.Exponential(float64(c.MeanInterval)))
}

// car returns the words of a car's event.
func car(k Kind, heading grid.Direction, x, y int64, start uint64) kernel.Words {
	return kernel.Words{uint64(k) | uint64(heading)<<8, uint64(x), uint64(y), start}
}

// unpack splits a car's event words.
func unpack(w kernel.Words) (k Kind, heading grid.Direction, x, y int64, start uint64) {
	return Kind(w[0] & 0xff), grid.Direction(w[0] >> 8 & 3), int64(w[1]), int64(w[2]), w[3]
}

// Init starts the intersection's cars, as WARPED2's initializeLP does: one heading drawn
// for the intersection and shared by all its cars (WARPED2 draws one initial lane per
// intersection), and for each car a destination (destination) and the delay of its first
// arrival here.
func (in *Intersection) Init(ctx *kernel.Context) {
	g, d := ctx.RNG(), in.cfg.MaxDistance
	h := grid.Direction(g.Range(0, 3))
	for range in.cfg.Cars {
		x := destination(g, d)
		y := destination(g, d)
		t := in.cfg.delay(g)
		ctx.SendWords(ctx.Self(), kernel.Time(t), car(Arrival, h, x, y, t))
	}
}

// destination draws the blocks a car still has to go along one axis, uniformly in
// [-(d-1), d] as WARPED2's uniform_int_distribution(-99, 100) with d = 100 (0 when d is 0).
func destination(g *kernel.RNG, d int) int64 {
	if d == 0 {
		return 0
	}
	return int64(g.Range(0, 2*uint64(d)-1)) - int64(d-1)
}

// Handle processes one car event; the body is step.
func (in *Intersection) Handle(ctx *kernel.Context, ev *kernel.Event) {
	to, at, w, ok := in.cfg.step(&in.S, ctx.RNG(), uint64(ctx.Now()), in.index, ev.Words)
	if ok {
		ctx.SendWords(kernel.LPID(to), kernel.Time(at), w)
	}
}

// candidates returns the roads that bring a car heading h with (x, y) still to go closer,
// in order of preference: straight on, then along x, then along y.
func candidates(h grid.Direction, x, y int64) (c [2]grid.Direction, n int) {
	add := func(d grid.Direction) {
		if n < 2 && (n == 0 || c[0] != d) {
			c[n] = d
			n++
		}
	}
	helps := func(d grid.Direction) bool {
		switch d {
		case grid.East:
			return x > 0
		case grid.West:
			return x < 0
		case grid.North:
			return y > 0
		}
		return y < 0
	}
	if helps(h) {
		add(h)
	}
	if x > 0 {
		add(grid.East)
	} else if x < 0 {
		add(grid.West)
	}
	if y > 0 {
		add(grid.North)
	} else if y < 0 {
		add(grid.South)
	}
	return c, n
}

// closer returns (x, y) after one block in direction d.
func closer(d grid.Direction, x, y int64) (int64, int64) {
	switch d {
	case grid.East:
		return x - 1, y
	case grid.West:
		return x + 1, y
	case grid.North:
		return x, y - 1
	}
	return x, y + 1
}

// step is Handle on the intersection's state s and generator g: it handles the car event
// with words w at time now at the intersection with the given index (its LP id), and returns
// the event it sends, if any (ok): receiver, time and words.
func (c *Config) step(s *State, g *kernel.RNG, now uint64, index uint32, w kernel.Words) (to uint32, at uint64, out kernel.Words, ok bool) {
	k, h, x, y, start := unpack(w)
	switch k {
	case Arrival:
		if x == 0 && y == 0 {
			s.Finished++
			s.TravelTime += now - start
			return 0, 0, out, false
		}
		s.Arrived++
		s.In[h]++
		return index, now + c.delay(g), car(DirectionSelect, h, x, y, start), true
	case DirectionSelect:
		s.In[h]--
		cands, n := candidates(h, x, y)
		d, wait := cands[0], uint64(0)
		for i := range n {
			if s.Out[cands[i]] < uint64(c.MaxCarsOnRoad) {
				d = cands[i]
				break
			}
			s.FullRoads++
			wait += c.delay(g)
		}
		s.Out[d]++
		x, y = closer(d, x, y)
		return index, now + wait + c.delay(g), car(Departure, d, x, y, start), true
	case Departure:
		s.Out[h]--
		next := grid.Move(index, h, uint32(c.IntersectionsX), uint32(c.IntersectionsY))
		return next, now + c.delay(g), car(Arrival, h, x, y, start), true
	}
	panic(fmt.Sprintf("traffic: unknown event kind %d", k))
}

// Reverse undoes Handle for reverse computation (kernel.Reverser).
func (in *Intersection) Reverse(ctx *kernel.Context, ev *kernel.Event) {
	unstep(&in.S, uint64(ctx.Now()), ctx.DrawsMade(), ev.Words)
}

// unstep undoes step on state s for the car event with words w at time now, given the
// number of draws step made.
func unstep(s *State, now uint64, made uint32, w kernel.Words) {
	k, h, x, y, start := unpack(w)
	switch k {
	case Arrival:
		if x == 0 && y == 0 {
			s.Finished--
			s.TravelTime -= now - start
			return
		}
		s.Arrived--
		s.In[h]--
	case DirectionSelect:
		s.In[h]++
		cands, n := candidates(h, x, y)
		full := int(made) - 1 // one draw per full road tried, then the delay
		s.FullRoads -= uint64(full)
		i := full
		if i >= n {
			i = 0 // every useful road was full: the car queued on the first
		}
		s.Out[cands[i]]--
	case Departure:
		s.Out[h]++
	default:
		panic(fmt.Sprintf("traffic: unknown event kind %d", k))
	}
}

// Results are the model's totals over all intersections.
type Results struct {
	// CarsArrived counts arrivals at intersections on the way (WARPED2's total cars arrived).
	CarsArrived uint64 `json:"cars_arrived"`
	// CarsFinished counts the trips that ended (WARPED2's total cars finished).
	CarsFinished uint64 `json:"cars_finished"`
	// AverageTravelTime is the finished trips' mean travel time.
	AverageTravelTime float64 `json:"average_travel_time"`
	// FullRoads counts the full roads cars found when choosing where to go.
	FullRoads uint64 `json:"full_roads"`
	// CarsInLanes counts the cars waiting in incoming lanes at the end.
	CarsInLanes uint64 `json:"cars_in_lanes"`
	// CarsOnRoads counts the cars waiting to depart on roads at the end.
	CarsOnRoads uint64 `json:"cars_on_roads"`
}

// Summarize adds up the intersections' counts after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	var travel uint64
	for _, l := range lps {
		s := &l.(*Intersection).S
		r.CarsArrived += s.Arrived
		r.CarsFinished += s.Finished
		travel += s.TravelTime
		r.FullRoads += s.FullRoads
		for d := range 4 {
			r.CarsInLanes += s.In[d]
			r.CarsOnRoads += s.Out[d]
		}
	}
	if r.CarsFinished > 0 {
		r.AverageTravelTime = float64(travel) / float64(r.CarsFinished)
	}
	return r
}
