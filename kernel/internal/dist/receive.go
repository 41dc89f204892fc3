package dist

import (
	"fmt"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gvt"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/termination"
)

// receive handles the messages waiting in the transport; it reports whether there were any.
func (m *Driver) receive() bool {
	got := false
	for range 256 {
		from, msg, ok, err := m.tr.Poll()
		if err != nil {
			m.failComm(fmt.Errorf("receive from other processes: %w", err))
			return got
		}
		if !ok {
			return got
		}
		got = true
		m.recv[from]++
		if err := m.handle(from, msg); err != nil {
			m.fail(err)
			return got
		}
		if m.e.Stopped() {
			return got
		}
	}
	return got
}

// handle acts on one message from rank from.
func (m *Driver) handle(from int, msg []byte) error {
	k, v, err := m.codec.Decode(msg)
	if err != nil {
		return fmt.Errorf("message from rank %d: %w", from, err)
	}
	switch k {
	case comm.KindEvents:
		b := v.(*comm.Batch)
		if m.tq != nil {
			m.tq.Received(b.Colour, len(b.Events))
		} else {
			m.mattern.Received(uint8(b.Colour), len(b.Events))
		}
		m.sticky.Received(len(b.Events))
		for i := range b.Events {
			ev := &b.Events[i]
			if !m.IsLocal(ev.Receiver) {
				return fmt.Errorf("rank %d sent an event for LP %d, which rank %d runs", from, ev.Receiver, m.owner[ev.Receiver])
			}
			if m.rs != nil { // safe.go (not inlined: called only where it is on)
				if err := m.checkPromise(from, ev); err != nil {
					return err
				}
			}
			m.e.Deliver(ev)
			*ev = event.Event{}
		}
		if m.rs != nil {
			m.rs.arrived(from, len(b.Events)) // after they were handed over
		}
	case comm.KindGVTToken:
		t := v.(*comm.GVTToken)
		tok := gvt.Token{Round: t.Round, Lap: t.Lap, Count: t.Count, Min: t.Min, RedMin: t.RedMin}
		if m.rank == 0 {
			g, done := m.mattern.Returned(&tok)
			if done {
				m.laps = max(m.laps, tok.Lap+1)
				m.gvtRunning = false
				m.setGVT(g)
				msg := m.codec.AppendGVTValue(nil, &comm.GVTValue{Round: tok.Round, GVT: g})
				for r := 1; r < m.size; r++ {
					if err := m.send(r, msg); err != nil {
						m.failComm(fmt.Errorf("send GVT to rank %d: %w", r, err))
						return nil
					}
				}
				return nil
			}
		}
		m.beginReading(&tok)
	case comm.KindGVTValue:
		g := v.(*comm.GVTValue)
		if m.tqRelay != nil {
			m.tqForward(msg) // a leader passes the master's GVT on to its group
		}
		m.tqDone = max(m.tqDone, g.Round)
		m.setGVT(g.GVT)
	case comm.KindTQReport:
		if m.tqMaster == nil && m.tqRelay == nil {
			return fmt.Errorf("rank %d sent a TQ-GVT report to rank %d, which is not a master", from, m.rank)
		}
		r := v.(*comm.TQReport)
		rep := gvt.TQReport{Quantum: r.Quantum, Sent: r.Sent, SentMin: r.SentMin, Local: r.Local, NextMin: r.NextMin,
			Recv: make([]gvt.TQCount, len(r.Recv))}
		for i, c := range r.Recv {
			rep.Recv[i] = gvt.TQCount{Tag: c[0], N: c[1]}
		}
		m.tqReceived(from, &rep)
	case comm.KindPromise:
		return m.promised(from, v.(*comm.Promise))
	case comm.KindTermToken:
		t := v.(*comm.TermToken)
		m.term = &termination.Token{Round: t.Round, Sent: t.Sent, Received: t.Received, Initiator: t.Initiator}
	case comm.KindTerminate:
		if e := v.(*comm.Terminate).Err; e != "" {
			m.peerFailed = true
			m.e.Fail(&core.PeerError{Msg: e})
			return nil
		}
		m.e.Stop()
	default:
		return fmt.Errorf("rank %d sent an unexpected %s message", from, k)
	}
	return nil
}

// setGVT installs a GVT agreed on by the processes.
func (m *Driver) setGVT(g Time) {
	if err := m.gvt.SetGVT(g); err != nil {
		m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
	}
	if m.rs != nil && m.rs.gvtRose(g) { // nothing arrives below GVT
		m.e.SafeRose()
	}
}

// drain moves the events the workers posted into the aggregator; it reports whether
// there were any.
func (m *Driver) drain() bool {
	m.outMu.Lock()
	out := m.out
	m.out = m.spare[:0]
	m.outMu.Unlock()
	if len(out) == 0 {
		m.spare = out
		return false
	}
	var colour uint64
	if m.tq != nil {
		colour = m.tq.Tag()
	} else {
		colour = uint64(m.mattern.Colour())
	}
	for i, e := range out {
		to := int(m.owner[e.Receiver])
		if err := m.agg.Add(to, colour, e, m.emit); err != nil {
			m.fail(err)
		}
		if m.rs != nil {
			m.rs.sentTo(to, e.RecvTime)
		}
		if m.tq != nil {
			m.tq.Sent(e.RecvTime)
		} else {
			m.mattern.Sent(e.RecvTime)
		}
		m.sticky.Sent(1)
		m.e.Recycle(e)
		out[i] = nil
	}
	m.spare = out[:0]
	return true
}

// send sends msg to rank to, counted for settle.
func (m *Driver) send(to int, msg []byte) error {
	m.sent[to]++
	return m.tr.Send(to, msg)
}

// sendReused sends msg, built in a buffer that its caller reuses: copied first unless the
// transport is done with it when Send returns (comm.Reuser).
func (m *Driver) sendReused(to int, msg []byte) error {
	if !m.reuse {
		msg = append([]byte(nil), msg...)
	}
	return m.send(to, msg)
}

// emit sends one message of the aggregator's to rank to (its buffer, valid until emit
// returns).
func (m *Driver) emit(to int, msg []byte) {
	if err := m.sendReused(to, msg); err != nil {
		m.failComm(fmt.Errorf("send to rank %d: %w", to, err))
	}
}

// flush sends every aggregated batch.
func (m *Driver) flush() { m.agg.FlushAll(m.emit) }
