package dist

import (
	"fmt"
	"math"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// stepSync runs the synchronous GVT method: every GVTPeriod every rank passes the next
// cut and takes its reading; once the local round is over, an all-gather combines the
// readings. A lap whose white counters add up to zero gives GVT; otherwise the ranks read
// again. Termination is decided in the same all-gather: every rank passive and clean since
// the previous lap, and as many events received as sent.
func (m *Driver) stepSync(now time.Time) {
	if m.syncLocal == 0 {
		if !m.syncLap {
			// A new round: wait for the period, then pass its cut.
			if now.Sub(m.lastGVT) < m.cfg.GVTPeriod {
				return
			}
			m.lastGVT = now
			m.syncRound = m.mattern.Epoch() + 1
			m.cutAt(m.syncRound)
			m.syncLap = true
		}
		m.syncLocal, m.syncWhite = m.read(m.syncRound)
		return
	}
	local, ok := m.gvt.Result(m.syncLocal)
	if !ok {
		return
	}
	m.syncLocal = 0
	r := comm.SyncReading{White: m.syncWhite, Min: local, RedMin: m.mattern.RedMin()}
	r.Sent, r.Recv = m.sticky.Counts()
	clean := m.passive() && !m.sticky.Dirty()
	r.Passive = clean
	m.sticky.Clear()
	b, err := comm.EncodeSyncReading(&r)
	if err != nil {
		m.fail(err)
		return
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		m.fail(fmt.Errorf("synchronous GVT: %w", err))
		return
	}
	var white int64
	var sent, recv uint64
	g := math.Inf(1)
	done := true
	for rank, rb := range all {
		var x comm.SyncReading
		if err := comm.DecodeSyncReading(rb, &x); err != nil {
			m.fail(fmt.Errorf("synchronous GVT: reading of rank %d: %w", rank, err))
			return
		}
		if x.Err != "" {
			m.peerFailed = true
			m.fail(&core.PeerError{Msg: x.Err})
			return
		}
		white += x.White
		g = min(g, x.Min, x.RedMin)
		sent += x.Sent
		recv += x.Recv
		done = done && x.Passive
	}
	if white == 0 {
		m.setGVT(g)
		m.syncLap = false
	}
	if done && sent == recv {
		m.e.Stop()
	}
}
