package dist

import (
	"fmt"
	"runtime"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gvt"
)

// tqFlatRanks is the most ranks that report to rank 0 directly under TQ-GVT; above it the
// masters form a tree (see the package documentation).
const tqFlatRanks = 16

// tqEagerness bounds how often a rank whose workers want GVT ends a TQ-GVT quantum: at
// most this many times per GVT period.
const tqEagerness = 8

// tqLead is the most boundaries of a rank that may wait to be combined: a rank ends no
// quantum while the master has not combined all but tqLead-1 of its boundaries. Without
// it, a rank whose workers want GVT ends quanta faster than a rank whose workers do not,
// its quantum numbers run away from the others', and since the master combines boundary q
// only once every rank reported it, the GVT it finds comes from that rank's reading of
// ever longer ago: its workers wait at the optimism bound for a GVT that advances less and
// less (the run's rate fell from 0.19 to 0.004 M events/s, docs/PERFORMANCE.md). With the
// bound, the rank that reads least often sets the pace, and a reading is at most tqLead
// quanta old. Above 1, so that a rank may end its next quantum while its last one is
// combined (no barrier at each boundary).
const tqLead = 2

// stepTQ advances TQ-GVT at this rank: it ends a quantum every GVT period (or sooner, when
// its workers want GVT), and reports a quantum's reading once its local round is over.
func (m *Driver) stepTQ(now time.Time) {
	if m.tqLocal == 0 {
		since := now.Sub(m.lastGVT)
		if since < m.cfg.GVTPeriod && (since < m.cfg.GVTPeriod/tqEagerness || !m.e.GVTWanted()) ||
			m.tq.Tag() >= m.tqDone+tqLead {
			return
		}
		m.lastGVT = now
		// The cut: what was aggregated goes out with the quantum's tag, then the quantum
		// ends and what the workers queued goes out with the next one. The local round
		// starts, and the manager reports in it, at the same instant as End.
		m.flush()
		m.tq.End()
		m.drain()
		m.flush()
		for !m.gvt.Start() {
			runtime.Gosched() // cannot happen: the manager waits for each round
		}
		m.tqLocal = m.gvt.Round()
		m.gvt.Report(m.tqLocal, m.e.TakeLocal(m.tqLocal))
		return
	}
	local, ok := m.gvt.Result(m.tqLocal)
	if !ok {
		return
	}
	m.tqLocal = 0
	m.tqReceived(m.rank, m.tq.Report(local))
}

// tqReceived handles the TQ-GVT report r that rank from (this one, a member of this
// rank's group, or at rank 0 the leader of a group) sent: a leader merges its group's, and
// the master combines.
func (m *Driver) tqReceived(from int, r *gvt.TQReport) {
	if m.tqFan > 0 && (from != m.rank || m.tqRelay != nil) && (m.rank != 0 || from < m.tqFan) {
		// A report of a member of this rank's group (maybe itself): merge it.
		merged, ok, err := m.tqRelay.Add(from-m.rank, r)
		if err != nil {
			m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
			return
		}
		if !ok {
			return
		}
		r, from = merged, m.rank
	}
	if m.tqMaster == nil {
		m.sendTQReport(m.tqLeader, r)
		return
	}
	process := from
	if m.tqFan > 0 {
		process = from / m.tqFan
	}
	g, _, err := m.tqMaster.Add(process, r)
	m.tqWaiting = max(m.tqWaiting, m.tqMaster.Waiting())
	if err != nil {
		m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
		return
	}
	if m.tqMaster.Boundaries() == m.tqDone {
		return // the boundary waits for other ranks' reports
	}
	// Every combined boundary is broadcast, also one that leaves GVT where it was: the
	// ranks count them (tqLead).
	m.tqDone = m.tqMaster.Boundaries()
	m.setGVT(g)
	m.tqForward(m.codec.AppendGVTValue(nil, &comm.GVTValue{Round: m.tqDone, GVT: g}))
}

// sendTQReport sends report r to rank to, a master (rank 0) or this rank's group leader.
func (m *Driver) sendTQReport(to int, r *gvt.TQReport) {
	if to == m.rank {
		to = 0 // a leader's merged report goes to the master
	}
	m.tqRecv = m.tqRecv[:0]
	for _, c := range r.Recv {
		m.tqRecv = append(m.tqRecv, [2]uint64{c.Tag, c.N})
	}
	msg := m.codec.AppendTQReport(nil, &comm.TQReport{Quantum: r.Quantum, Sent: r.Sent, SentMin: r.SentMin,
		Recv: m.tqRecv, Local: r.Local, NextMin: r.NextMin})
	if err := m.send(to, msg); err != nil {
		m.failComm(fmt.Errorf("send TQ-GVT report to rank %d: %w", to, err))
	}
}

// tqForward sends the GVT message msg on down the tree: from rank 0 to every other rank
// (no tree) or to its group and the other leaders; from a leader to its group.
func (m *Driver) tqForward(msg []byte) {
	send := func(to int) bool {
		if err := m.send(to, msg); err != nil {
			m.failComm(fmt.Errorf("send GVT to rank %d: %w", to, err))
			return false
		}
		return true
	}
	if m.tqFan == 0 {
		for to := 1; to < m.size; to++ {
			if !send(to) {
				return
			}
		}
		return
	}
	for to := m.rank + 1; to < min(m.rank+m.tqFan, m.size); to++ {
		if !send(to) {
			return
		}
	}
	if m.rank == 0 {
		for to := m.tqFan; to < m.size; to += m.tqFan {
			if !send(to) {
				return
			}
		}
	}
}
