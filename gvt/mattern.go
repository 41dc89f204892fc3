package gvt

import (
	"math"

	"github.com/warpedgo/warped/event"
)

// Mattern is one process's part of Mattern's GVT algorithm between processes ("Efficient
// algorithms for distributed snapshots and global virtual time approximation", 1993),
// with scalar counters, two colours and a token on the ring of processes; inside each
// process the local minimum comes from a Fujimoto round (NewFujimotoLocal). It is owned by
// the process's manager goroutine, which alone sends and receives events between processes.
//
// Round r (1, 2, ...) cuts the run in two: a process passes the cut (Cut) when round r's
// token first visits it, and from then on the events it sends have colour r mod 2 (red);
// events sent before have colour (r-1) mod 2 (white). The counters are cumulative per
// colour, sent minus received; since every event of an earlier round of the same colour
// has been received when a round ends, their sum over the processes counts exactly the
// white events of round r in flight. The traps of the algorithm are handled so:
//
//   - a received event decrements the counter of its own colour (carried by the batch),
//     not of the receiver's current colour (Received);
//   - the least receive time of red events is taken at the sender (Sent), since a red
//     event may be received after the round ends;
//   - the token carries the round, so a token of round r+1 that overtakes the broadcast of
//     round r's GVT still names its colours (the white colour is (r-1) mod 2);
//   - the token keeps circulating, each lap adding fresh readings, until the sum of the
//     white counters read in one lap is zero: no white event was in flight at any reading.
//
// Every reading of a process (its white counter, from WhiteCount, and its local minimum)
// must be taken at one instant: the kernel reads the counter when its manager reports to
// the local Fujimoto round that yields the minimum.
type Mattern struct {
	epoch      uint64
	sent, recv [2]uint64
	redMin     event.Time
	// round is the last round this process started (as initiator).
	round uint64
	// laps is the most laps a round needed.
	laps uint32
}

// Token is what Mattern's token carries around the ring (comm.GVTToken on the wire).
type Token struct {
	Round uint64
	Lap   uint32
	// Count is the sum of the white counters read in this lap.
	Count int64
	// Min is the least local minimum read in this lap; RedMin the least receive time of
	// red events sent by the processes read in this lap.
	Min, RedMin event.Time
}

// NewMattern returns a process's state before the first round.
func NewMattern() *Mattern { return &Mattern{redMin: math.Inf(1)} }

// Colour returns the colour of the events this process sends now.
func (m *Mattern) Colour() uint8 { return uint8(m.epoch & 1) }

// Epoch returns the last round whose cut this process has passed.
func (m *Mattern) Epoch() uint64 { return m.epoch }

// Sent records an event sent now (with Colour()) at receive time at.
func (m *Mattern) Sent(at event.Time) {
	m.sent[m.epoch&1]++
	if at < m.redMin {
		m.redMin = at
	}
}

// Received records n events received with the given colour (the batch's, not ours).
func (m *Mattern) Received(colour uint8, n int) { m.recv[colour&1] += uint64(n) }

// Cut passes round's cut if this process has not yet (the first visit of round's token):
// the process turns red and the least red receive time starts afresh. It reports whether
// it did. Events that were aggregated with the white colour must have been sent first.
func (m *Mattern) Cut(round uint64) bool {
	if m.epoch >= round {
		return false
	}
	m.epoch = round
	m.redMin = math.Inf(1)
	return true
}

// WhiteCount reads this process's white counter for round: white events sent minus white
// events received, cumulative (earlier rounds of the same colour add up to zero over all
// processes once they are over).
func (m *Mattern) WhiteCount(round uint64) int64 {
	c := (round - 1) & 1
	return int64(m.sent[c] - m.recv[c])
}

// RedMin returns the least receive time of the events sent since the last cut.
func (m *Mattern) RedMin() event.Time { return m.redMin }

// Start begins the next round at the initiator and returns its token, empty. The
// initiator then passes the round's cut (Cut, after sending what it aggregated white) and
// adds its own reading with Add, as every other process does when the token arrives.
func (m *Mattern) Start() Token {
	m.round = max(m.round, m.epoch) + 1
	return Token{Round: m.round, Min: math.Inf(1), RedMin: math.Inf(1)}
}

// Add adds this process's reading to the token: its white counter and local minimum, read
// together, and its least red receive time now.
func (m *Mattern) Add(t *Token, white int64, localMin event.Time) {
	t.Count += white
	t.Min = min(t.Min, localMin)
	t.RedMin = min(t.RedMin, m.redMin)
}

// Returned is called by the initiator when the token comes back to it. When the lap's
// white count is zero the round is over and its GVT is returned; otherwise the token is
// emptied for the next lap (the initiator adds a fresh reading and sends it round again).
func (m *Mattern) Returned(t *Token) (gvt event.Time, done bool) {
	if t.Count == 0 {
		m.laps = max(m.laps, t.Lap+1)
		return min(t.Min, t.RedMin), true
	}
	t.Lap++
	t.Count, t.Min, t.RedMin = 0, math.Inf(1), math.Inf(1)
	return 0, false
}

// MaxLaps returns the most laps any round that this process initiated needed.
func (m *Mattern) MaxLaps() uint32 { return m.laps }
