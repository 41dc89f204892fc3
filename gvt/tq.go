package gvt

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/event"
)

// TQ is one process's part of the Time Quantum GVT algorithm (TQ-GVT; after Chen and
// Szymanski, "DSIM: scaling time warp to 1,033 processors", 2005) between processes; the
// master's part is TQMaster. Like Mattern it is owned by the process's manager goroutine,
// and the local minimum comes from a Fujimoto round inside the process.
//
// Each process divides its wall time into quanta 0, 1, 2, ... of its own (the processes'
// quanta are not synchronised), and tags every event it sends with the quantum it sends
// it in. It counts, per quantum, the events it sent and the least receive time among
// them, and, per tag, the events it received. At the end of quantum q (its boundary q, an
// instant: End) it takes a reading: the events it received so far, by tag, and a local
// Fujimoto round started at that instant; once the round is over (Report) it reports to
// the master the count and least time of the events it sent in quantum q, the events it
// received since its previous reading by tag, the local minimum, and the least receive
// time of the events sent in quantum q+1 so far. There are no acknowledgements and no
// token: one report a quantum per process, one GVT broadcast a quantum from the master.
//
// The master (TQMaster) combines boundary q once every process has reported it: quanta up
// to k are complete when every event sent with a tag <= k was received before its
// receiver's reading q; GVT is then the least of the local minima, the least times of the
// quanta k+1..q, and the least times of quantum q+1 read with the reports. See
// docs/DECISIONS.md for why that is never above the true minimum.
//
// Counters are per quantum rather than cumulative per colour, so a process never waits
// for a token to change colour, and the master needs no lap: an incomplete quantum only
// keeps its events' least time in the later boundaries' GVTs until its last event is
// received.
type TQ struct {
	quantum uint64     // the quantum now: the tag of the events sent now
	sent    uint64     // events sent in the current quantum
	sentMin event.Time // least receive time of those
	recv    []TQCount  // events received since the last reading, by tag
	// The reading of the last boundary, until Report.
	rep     TQReport
	reading bool
}

// TQCount is a number of events received with one tag.
type TQCount struct {
	Tag uint64
	N   uint64
}

// TQReport is what a process reports to the master for one boundary (comm.TQReport on the
// wire).
type TQReport struct {
	// Quantum is the boundary: the quantum that ended.
	Quantum uint64
	// Sent is the number of events sent in that quantum, SentMin their least receive time.
	Sent    uint64
	SentMin event.Time
	// Recv are the events received since the previous reading (up to this one), by tag.
	Recv []TQCount
	// Local is the local minimum: the result of the local round started at the reading.
	Local event.Time
	// NextMin is the least receive time of the events sent in quantum Quantum+1 up to the
	// report (after the local round).
	NextMin event.Time
}

// NewTQ returns a process's state at the start of quantum 0.
func NewTQ() *TQ { return &TQ{sentMin: math.Inf(1)} }

// Tag returns the quantum now: the tag of the events sent now.
func (t *TQ) Tag() uint64 { return t.quantum }

// Reading reports whether a boundary's reading waits for its Report.
func (t *TQ) Reading() bool { return t.reading }

// Sent records an event sent now (with tag Tag()) at receive time at.
func (t *TQ) Sent(at event.Time) {
	t.sent++
	if at < t.sentMin {
		t.sentMin = at
	}
}

// Received records n events received with the given tag (the sender's quantum).
func (t *TQ) Received(tag uint64, n int) {
	for i := range t.recv {
		if t.recv[i].Tag == tag {
			t.recv[i].N += uint64(n)
			return
		}
	}
	t.recv = append(t.recv, TQCount{Tag: tag, N: uint64(n)})
}

// End ends the current quantum at this instant, the process's reading: the events
// received so far are counted in it, and events sent from now on carry the next tag.
// Events aggregated with the current tag must have been sent first, and the local round
// must start at this same instant. It returns the quantum that ended. It panics if the
// previous boundary has not been reported.
func (t *TQ) End() uint64 {
	if t.reading {
		panic("gvt: TQ.End before the previous boundary's Report")
	}
	t.reading = true
	t.rep = TQReport{Quantum: t.quantum, Sent: t.sent, SentMin: t.sentMin,
		Recv: append(t.rep.Recv[:0], t.recv...)}
	t.recv = t.recv[:0]
	t.quantum++
	t.sent, t.sentMin = 0, math.Inf(1)
	return t.rep.Quantum
}

// Report completes the last boundary's reading with the local minimum of the local round
// started at End, and returns the report. The report's Recv aliases t's memory until the
// next End.
func (t *TQ) Report(local event.Time) *TQReport {
	if !t.reading {
		panic("gvt: TQ.Report without End")
	}
	t.reading = false
	t.rep.Local = local
	t.rep.NextMin = t.sentMin
	return &t.rep
}

// TQRelay merges the reports of a group of processes, boundary by boundary, into one
// report for the group: the counts added up, the minimums taken. It is an inner node of a
// tree of TQ-GVT masters (the group's leader sends the merged report on to the master,
// which counts the group as one process) and the first stage of TQMaster. Combining
// merged reports gives the same GVT as combining the members' reports one by one, since
// the master only adds counts and takes minimums per boundary. It is owned by one
// goroutine and does no I/O.
type TQRelay struct {
	members int
	next    []uint64 // per member: the boundary its next report must be
	first   uint64   // the oldest boundary not yet complete
	bounds  []relayBoundary
	free    []relayBoundary
	out     TQReport
}

// relayBoundary is what a relay has of one boundary's reports so far.
type relayBoundary struct {
	reports int
	rep     TQReport
}

// NewTQRelay returns a relay for members processes.
func NewTQRelay(members int) *TQRelay {
	return &TQRelay{members: members, next: make([]uint64, members)}
}

// Waiting returns the number of boundaries some member reported and the group has not
// completed yet.
func (g *TQRelay) Waiting() int { return len(g.bounds) }

// Add takes the report r of member i. When r completes a boundary (every member has
// reported it) it returns the group's merged report for it, valid until the next Add.
// Reports of one member must come in order, one a boundary; anything else is an error (a
// protocol bug), and r is then ignored.
func (g *TQRelay) Add(i int, r *TQReport) (*TQReport, bool, error) {
	if i < 0 || i >= g.members {
		return nil, false, fmt.Errorf("gvt: TQ report from member %d, out of range [0, %d)", i, g.members)
	}
	if r.Quantum != g.next[i] {
		return nil, false, fmt.Errorf("gvt: TQ report of member %d for boundary %d, expected %d", i, r.Quantum, g.next[i])
	}
	g.next[i]++
	for uint64(len(g.bounds)) <= r.Quantum-g.first {
		var b relayBoundary
		if n := len(g.free); n > 0 {
			b = g.free[n-1]
			g.free = g.free[:n-1]
		}
		inf := math.Inf(1)
		b = relayBoundary{rep: TQReport{Quantum: g.first + uint64(len(g.bounds)), SentMin: inf, Local: inf, NextMin: inf,
			Recv: b.rep.Recv[:0]}}
		g.bounds = append(g.bounds, b)
	}
	b := &g.bounds[r.Quantum-g.first]
	b.reports++
	b.rep.Sent += r.Sent
	b.rep.SentMin = min(b.rep.SentMin, r.SentMin)
	b.rep.Local = min(b.rep.Local, r.Local)
	b.rep.NextMin = min(b.rep.NextMin, r.NextMin)
	for _, c := range r.Recv {
		b.rep.Recv = addCount(b.rep.Recv, c)
	}
	if r.Quantum != g.first || b.reports < g.members {
		return nil, false, nil
	}
	// Boundaries complete in order, one per Add: only a report of the oldest boundary can
	// complete one, and a later boundary cannot be complete before it.
	g.out, g.bounds[0] = g.bounds[0].rep, relayBoundary{}
	g.free = append(g.free, relayBoundary{rep: TQReport{Recv: g.out.Recv}})
	g.bounds = g.bounds[1:]
	g.first++
	return &g.out, true, nil
}

// addCount adds c to the counts, merging it with a count of the same tag.
func addCount(counts []TQCount, c TQCount) []TQCount {
	for i := range counts {
		if counts[i].Tag == c.Tag {
			counts[i].N += c.N
			return counts
		}
	}
	return append(counts, c)
}

// TQMaster is the GVT master's part of TQ-GVT: it combines the processes' reports,
// boundary by boundary, into GVT. It is owned by one goroutine (the master's manager) and
// does no I/O; it keeps the quanta from the oldest incomplete one to the newest tag seen.
// Its processes may be groups whose reports a TQRelay merged.
type TQMaster struct {
	relay *TQRelay
	gvt   event.Time
	done  uint64 // boundaries combined
	// Quanta base..: events sent minus received, and the least time sent.
	base uint64
	bal  []int64
	mins []event.Time
	// Statistics.
	lastWindow int
}

// NewTQMaster returns a master for ranks processes, with GVT 0.
func NewTQMaster(ranks int) *TQMaster {
	return &TQMaster{relay: NewTQRelay(ranks)}
}

// GVT returns the last GVT combined (0 before the first).
func (m *TQMaster) GVT() event.Time { return m.gvt }

// Boundaries returns the number of boundaries combined.
func (m *TQMaster) Boundaries() uint64 { return m.done }

// Window returns, for the last boundary combined, the number of quanta from the oldest
// incomplete one to that boundary (0 when all were complete): how far GVT's cut lags.
func (m *TQMaster) Window() int { return m.lastWindow }

// Waiting returns the number of boundaries some process reported that are not combined
// yet, because another process has not reported them.
func (m *TQMaster) Waiting() int { return m.relay.Waiting() }

// Add takes the report r of process rank. It returns the GVT and true when r completed a
// boundary and GVT rose. Reports of one process must come in order, one a boundary;
// anything else is an error (a protocol bug), and r is then ignored.
func (m *TQMaster) Add(rank int, r *TQReport) (event.Time, bool, error) {
	b, ok, err := m.relay.Add(rank, r)
	if err != nil || !ok {
		return m.gvt, false, err
	}
	rose, err := m.combine(b)
	return m.gvt, rose, err
}

// combine combines boundary b.Quantum, the merged reports of every process; it reports
// whether GVT rose.
func (m *TQMaster) combine(b *TQReport) (bool, error) {
	q := b.Quantum
	m.grow(q)
	m.bal[q-m.base] += int64(b.Sent)
	m.mins[q-m.base] = b.SentMin
	for _, c := range b.Recv {
		if c.Tag < m.base {
			return false, fmt.Errorf("gvt: TQ boundary %d: %d events received with tag %d, a quantum already complete", q, c.N, c.Tag)
		}
		m.grow(c.Tag)
		m.bal[c.Tag-m.base] -= int64(c.N)
	}
	// Drop the complete quanta: every event sent in them was received before its
	// receiver's reading of this boundary.
	drop := 0
	for drop < len(m.bal) && m.base+uint64(drop) <= q && m.bal[drop] == 0 {
		drop++
	}
	m.bal = m.bal[:copy(m.bal, m.bal[drop:])]
	m.mins = m.mins[:copy(m.mins, m.mins[drop:])]
	m.base += uint64(drop)
	g := min(b.Local, b.NextMin)
	for i := uint64(0); m.base+i <= q; i++ {
		g = min(g, m.mins[i])
	}
	m.lastWindow = int(q + 1 - m.base)
	m.done++
	if g > m.gvt {
		m.gvt = g
		return true, nil
	}
	return false, nil
}

// grow extends the quanta kept up to quantum q.
func (m *TQMaster) grow(q uint64) {
	for m.base+uint64(len(m.bal)) <= q {
		m.bal = append(m.bal, 0)
		m.mins = append(m.mins, math.Inf(1))
	}
}
