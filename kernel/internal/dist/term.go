package dist

import (
	"fmt"

	"github.com/warpedgo/warped/comm"
)

// passive reports whether this rank has nothing to do and nothing to send: every worker
// passive, no schedule queue holding an event below the end time, nothing posted or
// aggregated, and no worker woke up while it looked.
func (m *Driver) passive() bool {
	wakes := m.workers.Wakes()
	if !m.workers.AllPassive() {
		return false
	}
	m.outMu.Lock()
	posted := len(m.out)
	m.outMu.Unlock()
	if posted > 0 {
		return false
	}
	for to := range m.size {
		if m.agg.Pending(to) > 0 {
			return false
		}
	}
	if m.e.LocalWork() {
		return false
	}
	return m.workers.Wakes() == wakes
}

// stepTermination passes the termination token on once this rank is passive, or ends the
// run when a wave succeeded here.
func (m *Driver) stepTermination() {
	if m.term == nil {
		return
	}
	if !m.passive() {
		m.sticky.Active()
		return
	}
	next, done := m.sticky.Visit(*m.term)
	m.term = nil
	if done {
		msg := m.codec.AppendTerminate(nil, &comm.Terminate{})
		for r := range m.size {
			if r != m.rank {
				if err := m.send(r, msg); err != nil {
					m.failComm(fmt.Errorf("send terminate to rank %d: %w", r, err))
					return
				}
			}
		}
		m.e.Stop()
		return
	}
	msg := m.codec.AppendTermToken(nil, &comm.TermToken{Round: next.Round, Sent: next.Sent,
		Received: next.Received, Sticky: true, Initiator: next.Initiator})
	if err := m.send(m.sticky.Next(), msg); err != nil {
		m.failComm(fmt.Errorf("send termination token: %w", err))
	}
}
