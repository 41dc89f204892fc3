package airport

import (
	"fmt"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/internal/grid"
)

// stepWARPED2 is step for VariantWARPED2, WARPED2's receiveEvent: a Departure takes the
// plane off the ground and sends it to a random neighbour, where it arrives after a flight
// time; an Arrival puts it on the ground, to depart after a ground time. The draws come in
// WARPED2's order: the flight time, then the direction.
func (c *Config) stepWARPED2(s *State, g *kernel.RNG, now uint64, index uint32, k Kind) (uint32, uint64, Kind) {
	switch k {
	case Departure:
		s.Grounded--
		s.Departures++
		at := now + delay(g, c.FlightTime)
		to := grid.Move(index, grid.Direction(g.Range(0, 3)), uint32(c.AirportsX), uint32(c.AirportsY))
		return to, at, Arrival
	case Arrival:
		s.Arrivals++
		s.Grounded++
		return index, now + delay(g, c.GroundTime), Departure
	}
	panic(fmt.Sprintf("airport: event kind %d is not one of WARPED2's", k))
}

// unstepWARPED2 undoes stepWARPED2 on state s for an event of kind k: the counts alone
// change, the same way whatever was drawn.
func unstepWARPED2(s *State, k Kind) {
	switch k {
	case Departure:
		s.Grounded++
		s.Departures--
	case Arrival:
		s.Arrivals--
		s.Grounded--
	default:
		panic(fmt.Sprintf("airport: event kind %d is not one of WARPED2's", k))
	}
}
