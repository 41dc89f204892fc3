package dist

import (
	"fmt"
	"runtime"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gvt"
)

// cutAt passes the cut of round: what was aggregated white goes out first, then the
// events the workers queued go out red.
func (m *Driver) cutAt(round uint64) {
	if m.mattern.Epoch() >= round {
		return
	}
	m.flush()
	m.mattern.Cut(round)
	m.drain()
	m.flush()
}

// read starts this rank's reading for a GVT round: a local Fujimoto round in which the
// manager reports at once, with the white counter read at the same instant. It returns
// the local round to wait for.
func (m *Driver) read(round uint64) (local uint64, white int64) {
	for !m.gvt.Start() {
		// A round of ours is still running (cannot happen: the manager waits for each).
		runtime.Gosched()
	}
	local = m.gvt.Round()
	white = m.mattern.WhiteCount(round)
	m.gvt.Report(local, m.e.TakeLocal(local))
	return local, white
}

// beginReading takes this rank's reading for the token tok (keeping the token until the
// local round ends; see stepGVT).
func (m *Driver) beginReading(tok *gvt.Token) {
	m.cutAt(tok.Round)
	m.tok = tok
	m.tokRound, m.tokWhite = m.read(tok.Round)
}

// stepGVT advances the asynchronous GVT protocol: rank 0 starts rounds, and a rank whose
// reading is complete adds it to the token and passes it on.
func (m *Driver) stepGVT(now time.Time) {
	// A round starts every GVT period, or sooner when a worker of rank 0 asked for one: a
	// worker takes at most its ahead bound of events per GVT round (package timewarp), so
	// waiting for the period would cap it at that many per period, and the round rate would
	// be the event rate (docs/PERFORMANCE.md, "Time warp across processes").
	if m.rank == 0 && !m.gvtRunning && m.tok == nil &&
		(now.Sub(m.lastGVT) >= m.cfg.GVTPeriod || m.e.GVTWanted()) {
		m.gvtRunning = true
		m.lastGVT = now
		tok := m.mattern.Start()
		m.beginReading(&tok) // passes the round's cut like every other rank
	}
	if m.tok == nil {
		return
	}
	local, ok := m.gvt.Result(m.tokRound)
	if !ok {
		return
	}
	tok := m.tok
	m.tok = nil
	m.mattern.Add(tok, m.tokWhite, local)
	next := (m.rank + 1) % m.size
	msg := m.codec.AppendGVTToken(nil, &comm.GVTToken{Round: tok.Round, Lap: tok.Lap,
		Colour: uint8((tok.Round - 1) & 1), Count: tok.Count, Min: tok.Min, RedMin: tok.RedMin})
	if err := m.send(next, msg); err != nil {
		m.failComm(fmt.Errorf("send GVT token to rank %d: %w", next, err))
	}
}

// urgent reports whether GVT waits on this manager, so that its idle back-off must not
// sleep: it holds the token (its local reading is due), a round it started is in flight
// (rank 0 forwards the token when it returns), its TQ-GVT reading is under way, a worker
// asked for a round where this rank starts them (rank 0, or every rank under TQ-GVT), or
// its workers are all passive holding events (they wait at the optimism bound for the next
// GVT, which needs this rank's reading when the token comes). A back-off sleep at each hop
// would add up over the ring, so that the token's round trip, not the workers, set the
// pace of a run across processes. Elsewhere the workers' request is not cleared (only
// the ranks that start rounds take it), so it does not count there.
func (m *Driver) urgent() bool {
	return m.tok != nil || m.gvtRunning || m.tqLocal != 0 ||
		(m.tq != nil || m.rank == 0 && !m.sync) && m.e.GVTWaiting() ||
		m.workers.AllPassive() && m.e.LocalWork()
}
