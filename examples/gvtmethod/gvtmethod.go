// Package gvtmethod is a toy GVT method between processes, written the way
// docs/ARCHITECTURE.md, "Where to add", "A GVT method between processes", says: the
// algorithm as a pure state machine, with no goroutines, no transport and no clock, so
// that a test can drive it through every interleaving and check it against an omniscient
// view.
//
// The method is a stop-the-world reading: while the ranks all-gather their readings none
// of them processes or sends, so the readings form a consistent cut. Each rank counts the
// events it sent to and received from other ranks; when the totals agree no event is in
// flight, and GVT is the least of the ranks' local minima. When they do not, the ranks let
// the network deliver and read again. (package gvt's Mattern and TQ do without stopping
// the world: see their documentation.)
package gvtmethod

import (
	"math"

	"github.com/warpedgo/warped/event"
)

// Rank is one rank's part of the method: its counts of events sent to and received from
// other ranks since the start of the run. The zero value is a rank before its first event.
type Rank struct {
	sent, recv uint64
}

// Sent counts an event this rank sent to another rank.
func (r *Rank) Sent() { r.sent++ }

// Received counts an event this rank received from another rank.
func (r *Rank) Received() { r.recv++ }

// Reading is what a rank contributes to the all-gather of a round.
type Reading struct {
	// Sent and Recv are the rank's counts at the reading.
	Sent, Recv uint64
	// Min is the rank's local minimum: the least receive time of its pending events.
	Min event.Time
}

// Read returns the rank's reading, given its local minimum.
func (r *Rank) Read(localMin event.Time) Reading {
	return Reading{Sent: r.sent, Recv: r.recv, Min: localMin}
}

// Combine returns GVT from every rank's reading of one round, and ok false when an event
// was still in flight (the totals of sent and received events differ): then the round
// says nothing, and the ranks read again after the network has delivered. Every rank
// combines the same readings, so every rank gets the same answer.
func Combine(rs []Reading) (gvt event.Time, ok bool) {
	var sent, recv uint64
	gvt = math.Inf(1)
	for _, r := range rs {
		sent += r.Sent
		recv += r.Recv
		gvt = min(gvt, r.Min)
	}
	if sent != recv {
		return 0, false
	}
	return gvt, true
}
