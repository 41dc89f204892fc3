package main

import (
	"container/heap"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/warpedgo/warped/gvt"
)

// Params are the model's costs and workload. Times are in microseconds of modelled wall
// time; virtual time advances at one unit per microsecond on every rank, so a GVT lag in
// wall microseconds is also one in virtual units.
type Params struct {
	Ranks int
	// Latency is a message's network latency; Handle the receiver's manager time to take
	// one message in; Send the sender's time to put one out. A rank's manager handles one
	// message at a time (a master's reports queue up).
	Latency, Handle, Send float64
	// Period is the GVT period (a TQ-GVT quantum); Local the mean duration of a local
	// (Fujimoto) round, from the reading to its result (each lasts 0.5 to 1.5 times that).
	Period, Local float64
	// Flush is the interval at which every rank sends an aggregated batch of events to a
	// random other rank; Lookahead is how far ahead of its sender's time an event is.
	Flush, Lookahead float64
	// Horizon is the modelled wall time of a run.
	Horizon float64
	// Drift bounds the random delay a rank adds to each quantum (its manager's loop
	// notices the end of a quantum late); Skew bounds the ranks' start-time offsets.
	Drift, Skew float64
	Seed        uint64
}

// DefaultParams are costs of a cluster with a fast interconnect: 5 µs latency, 1 µs to
// take a message in, 0.5 µs to put one out, the kernel's default 2 ms period, 20 µs local
// rounds, and the kernel's 200 µs flush interval.
func DefaultParams() Params {
	return Params{Latency: 5, Handle: 1, Send: 0.5, Period: 2000, Local: 20, Flush: 200, Lookahead: 100,
		Horizon: 500_000, Drift: 5, Skew: 50, Seed: 1}
}

// Result is what one modelled run measured.
type Result struct {
	Method string
	Ranks  int
	// Rounds is the number of GVT values agreed on; RoundsPerSec the same per modelled
	// second.
	Rounds       int
	RoundsPerSec float64
	// LagMean and LagMax are the wall time (µs) between the true minimum passing a GVT
	// value and every rank having that value.
	LagMean, LagMax float64
	// MsgsPerRound counts the GVT control messages (tokens, reports, broadcasts,
	// all-gather messages) per GVT value; event batches are not counted.
	MsgsPerRound float64
	// MasterBusy is the fraction of rank 0's manager time spent on GVT messages (under the
	// synchronous method: blocked in its all-gathers).
	MasterBusy float64
}

// The methods modelled, as kernel.TimeWarpConfig.GVTMethod names them; tq-flat is TQ-GVT
// without the tree of masters that the kernel builds above tqFlatRanks ranks.
const (
	methodAsync  = "asynchronous"
	methodSync   = "synchronous"
	methodTQ     = "tq"
	methodTQFlat = "tq-flat"
)

// methods are the methods modelled, in the order shown.
var methods = []string{methodAsync, methodSync, methodTQ, methodTQFlat}

// tqFlatRanks is the kernel's: above it, groups of about sqrt(N) ranks report to their
// first rank, which merges their reports for rank 0 and passes GVT on to them.
const tqFlatRanks = 16

// model is one modelled run: a discrete-event simulation of the ranks' managers and the
// network, driving the kernel's own GVT cores (gvt.Mattern, gvt.TQ, gvt.TQMaster).
type model struct {
	p      Params
	method string
	rng    *rand.Rand
	now    float64
	q      evq
	seq    uint64
	cpu    []float64 // when each rank's manager is next free
	busy0  float64   // rank 0's manager time on GVT messages
	ctrl   int       // control messages sent

	mattern []*gvt.Mattern
	tq      []*gvt.TQ
	master  *gvt.TQMaster
	fan     int            // TQ-GVT tree: group size, 0 for none
	relays  []*gvt.TQRelay // per group

	gvt       float64
	rounds    int
	lagSum    float64
	lagMax    float64
	bcastLeft map[float64]int // GVT value -> ranks still to receive it

	// Asynchronous: the token's reading at its current rank, the round's start time.
	lastStart float64
	// Synchronous: the readings of the lap under way.
	syncWhite []int64
	syncMin   []float64
	syncRound uint64
}

type evt struct {
	at  float64
	seq uint64
	fn  func()
}

type evq []evt

func (q evq) Len() int { return len(q) }
func (q evq) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q evq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *evq) Push(x any)   { *q = append(*q, x.(evt)) }
func (q *evq) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (m *model) at(t float64, fn func()) {
	m.seq++
	heap.Push(&m.q, evt{at: t, seq: m.seq, fn: fn})
}

// send models a message from rank from to rank to, sent now: the sender's manager puts it
// out, the network carries it, and the receiver's manager takes it in and runs fn. ctrl
// marks a GVT control message.
func (m *model) send(from, to int, ctrl bool, fn func()) {
	start := max(m.now, m.cpu[from])
	m.cpu[from] = start + m.p.Send
	if ctrl {
		m.ctrl++
		if from == 0 {
			m.busy0 += m.p.Send
		}
	}
	m.at(m.cpu[from]+m.p.Latency, func() {
		h := max(m.now, m.cpu[to]) + m.p.Handle
		m.cpu[to] = h
		if ctrl && to == 0 {
			m.busy0 += m.p.Handle
		}
		m.at(h, fn)
	})
}

// local returns the duration of a local round.
func (m *model) local() float64 { return m.p.Local * (0.5 + m.rng.Float64()) }

// lvt is every rank's virtual time now: the true minimum.
func (m *model) lvt() float64 { return m.now }

// Run runs the model of method with parameters p.
func Run(method string, p Params) (Result, error) {
	if p.Ranks < 2 {
		return Result{}, fmt.Errorf("%d ranks: the model needs at least 2", p.Ranks)
	}
	m := &model{p: p, method: method, rng: rand.New(rand.NewPCG(p.Seed, uint64(p.Ranks))),
		cpu: make([]float64, p.Ranks), bcastLeft: map[float64]int{}}
	n := p.Ranks
	switch method {
	case methodAsync, methodSync:
		for range n {
			m.mattern = append(m.mattern, gvt.NewMattern())
		}
	case methodTQ, methodTQFlat:
		for range n {
			m.tq = append(m.tq, gvt.NewTQ())
		}
		processes := n
		if method == methodTQ && n > tqFlatRanks {
			m.fan = int(math.Ceil(math.Sqrt(float64(n))))
			processes = (n + m.fan - 1) / m.fan
			for g := range processes {
				m.relays = append(m.relays, gvt.NewTQRelay(min(m.fan, n-g*m.fan)))
			}
		}
		m.master = gvt.NewTQMaster(processes)
	default:
		return Result{}, fmt.Errorf("unknown GVT method %q (want asynchronous, synchronous, tq or tq-flat)", method)
	}
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	// Event traffic: every rank sends a batch of 8 events every Flush to a random rank.
	for r := range n {
		var flush func()
		flush = func() {
			to := m.rng.IntN(n - 1)
			if to >= r {
				to++
			}
			at := m.lvt() + p.Lookahead
			const batch = 8
			var colour uint64
			for range batch {
				if m.tq != nil {
					colour = m.tq[r].Tag()
					m.tq[r].Sent(at)
				} else {
					colour = uint64(m.mattern[r].Colour())
					m.mattern[r].Sent(at)
				}
			}
			m.send(r, to, false, func() {
				if m.tq != nil {
					m.tq[to].Received(colour, batch)
				} else {
					m.mattern[to].Received(uint8(colour), batch)
				}
			})
			m.at(m.now+p.Flush, flush)
		}
		m.at(m.rng.Float64()*p.Flush, flush)
	}
	switch method {
	case methodAsync:
		m.at(p.Period, m.asyncStart)
	case methodSync:
		m.syncWhite, m.syncMin = make([]int64, n), make([]float64, n)
		m.at(p.Period, m.syncRoundStart)
	case methodTQ, methodTQFlat:
		for r := range n {
			m.at(p.Period+m.rng.Float64()*p.Skew, func() { m.tqBoundary(r, fail) })
		}
	}
	for m.q.Len() > 0 && err == nil {
		e := heap.Pop(&m.q).(evt)
		if e.at > p.Horizon {
			break
		}
		m.now = e.at
		e.fn()
	}
	if err != nil {
		return Result{}, err
	}
	res := Result{Method: method, Ranks: n, Rounds: m.rounds, RoundsPerSec: float64(m.rounds) / (p.Horizon / 1e6),
		LagMax: m.lagMax, MasterBusy: m.busy0 / p.Horizon}
	if m.rounds > 0 {
		res.LagMean = m.lagSum / float64(m.rounds)
		res.MsgsPerRound = float64(m.ctrl) / float64(m.rounds)
	}
	return res, nil
}

// agreed records that GVT value g is known at rank 0 now, and broadcasts it.
func (m *model) agreed(g float64) {
	if g <= m.gvt {
		return
	}
	if g > m.lvt() {
		panic(fmt.Sprintf("gvtscale: GVT %v above the true minimum %v (%s)", g, m.lvt(), m.method))
	}
	m.gvt = g
	m.bcastLeft[g] = m.p.Ranks - 1
	m.forward(0, g)
}

// forward sends GVT value g from rank from down the broadcast: to every rank, or in a
// tree of masters to its group (and from rank 0 to the other leaders, which forward it).
func (m *model) forward(from int, g float64) {
	got := func(to int) func() {
		return func() {
			if m.fan > 0 && to%m.fan == 0 {
				m.forward(to, g)
			}
			m.bcastLeft[g]--
			if m.bcastLeft[g] == 0 {
				delete(m.bcastLeft, g)
				m.installed(g)
			}
		}
	}
	n := m.p.Ranks
	if m.fan == 0 {
		for to := 1; to < n; to++ {
			m.send(0, to, true, got(to))
		}
		return
	}
	for to := from + 1; to < min(from+m.fan, n); to++ {
		m.send(from, to, true, got(to))
	}
	if from == 0 {
		for to := m.fan; to < n; to += m.fan {
			m.send(0, to, true, got(to))
		}
	}
}

// installed records that every rank has GVT value g now.
func (m *model) installed(g float64) {
	lag := m.now - g
	m.rounds++
	m.lagSum += lag
	m.lagMax = max(m.lagMax, lag)
}

// asyncStart starts a round of Mattern's token at rank 0.
func (m *model) asyncStart() {
	m.lastStart = m.now
	tok := m.mattern[0].Start()
	m.asyncVisit(0, &tok)
}

// asyncVisit takes rank r's reading for the token and passes it on after the local round.
func (m *model) asyncVisit(r int, tok *gvt.Token) {
	mt := m.mattern[r]
	mt.Cut(tok.Round)
	white := mt.WhiteCount(tok.Round)
	local := m.lvt()
	m.at(max(m.now, m.cpu[r])+m.local(), func() {
		mt.Add(tok, white, local)
		next := (r + 1) % m.p.Ranks
		m.send(r, next, true, func() {
			if next != 0 {
				m.asyncVisit(next, tok)
				return
			}
			if g, done := m.mattern[0].Returned(tok); done {
				m.agreed(g)
				m.at(max(m.now, m.lastStart+m.p.Period), m.asyncStart)
				return
			}
			m.asyncVisit(0, tok)
		})
	})
}

// syncRoundStart starts a synchronous round: every rank passes the cut.
func (m *model) syncRoundStart() {
	m.lastStart = m.now
	m.syncRound = m.mattern[0].Epoch() + 1
	for _, mt := range m.mattern {
		mt.Cut(m.syncRound)
	}
	m.syncLap()
}

// syncLap takes every rank's reading now and all-gathers them after the local rounds: a
// recursive-doubling all-gather, ceil(log2 N) steps of one message per rank, during which
// the ranks' managers take in nothing else.
func (m *model) syncLap() {
	n := m.p.Ranks
	for r, mt := range m.mattern {
		m.syncWhite[r] = mt.WhiteCount(m.syncRound)
		m.syncMin[r] = m.lvt()
	}
	enter := m.now
	for r := range n {
		enter = max(enter, max(m.now, m.cpu[r])+m.local())
	}
	steps := bits.Len(uint(n - 1))
	done := enter + float64(steps)*(m.p.Send+m.p.Latency+m.p.Handle)
	m.ctrl += n * steps
	m.busy0 += done - max(m.now, m.cpu[0])
	redMin := math.Inf(1)
	for r := range n {
		m.cpu[r] = done
	}
	m.at(enter, func() {
		for _, mt := range m.mattern {
			redMin = min(redMin, mt.RedMin())
		}
	})
	m.at(done, func() {
		var white int64
		g := redMin
		for r := range n {
			white += m.syncWhite[r]
			g = min(g, m.syncMin[r])
		}
		if white != 0 {
			m.syncLap()
			return
		}
		if g > m.gvt {
			if g > m.lvt() {
				panic("gvtscale: synchronous GVT above the true minimum")
			}
			m.gvt = g
			m.installed(g) // every rank has it at once
		}
		m.at(max(m.now, m.lastStart+m.p.Period), m.syncRoundStart)
	})
}

// tqBoundary ends rank r's quantum now (or as soon as its previous report is out), and
// reports it after the local round.
func (m *model) tqBoundary(r int, fail func(error)) {
	t := m.tq[r]
	if t.Reading() {
		m.at(m.now+1, func() { m.tqBoundary(r, fail) })
		return
	}
	t.End()
	local := m.lvt()
	m.at(m.now+m.p.Period+m.rng.Float64()*m.p.Drift, func() { m.tqBoundary(r, fail) })
	m.at(max(m.now, m.cpu[r])+m.local(), func() {
		rep := *t.Report(local)
		rep.Recv = append([]gvt.TQCount(nil), rep.Recv...)
		m.report(r, r, &rep, false, fail)
	})
}

// report delivers TQ-GVT report rep, sent by rank by, to its master. Without a tree (or
// for a group's merged report, merged) that is rank 0, which combines it as process
// (a rank, or a group); in a tree a rank's own report goes to its group's leader, whose
// relay merges the group's reports and reports each merged one to rank 0.
func (m *model) report(by, process int, rep *gvt.TQReport, merged bool, fail func(error)) {
	to := 0
	var handle func()
	if m.fan > 0 && !merged {
		to = by / m.fan * m.fan
		group := by / m.fan
		handle = func() {
			out, ok, err := m.relays[group].Add(by-to, rep)
			if err != nil {
				fail(err)
				return
			}
			if ok {
				c := *out
				c.Recv = append([]gvt.TQCount(nil), c.Recv...)
				m.report(to, group, &c, true, fail)
			}
		}
	} else {
		handle = func() {
			g, rose, err := m.master.Add(process, rep)
			if err != nil {
				fail(err)
			} else if rose {
				m.agreed(g)
			}
		}
	}
	if by != to {
		m.send(by, to, true, handle)
		return
	}
	// A master's own report: no message, but its manager's time.
	m.cpu[to] = max(m.now, m.cpu[to]) + m.p.Handle
	if to == 0 {
		m.busy0 += m.p.Handle
	}
	m.at(m.cpu[to], handle)
}
