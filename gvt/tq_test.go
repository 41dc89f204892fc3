package gvt

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

func TestTQQuantumBookkeeping(t *testing.T) {
	p := NewTQ()
	require.Zero(t, p.Tag())
	p.Sent(5)
	p.Sent(3)
	p.Received(0, 2)
	p.Received(4, 1)
	p.Received(0, 1)
	require.Zero(t, p.End())
	require.True(t, p.Reading())
	require.EqualValues(t, 1, p.Tag())
	p.Sent(9) // after the reading: quantum 1
	p.Received(1, 1)
	r := p.Report(4)
	require.False(t, p.Reading())
	require.Equal(t, TQReport{Quantum: 0, Sent: 2, SentMin: 3, Recv: []TQCount{{0, 3}, {4, 1}}, Local: 4, NextMin: 9}, *r)
	require.EqualValues(t, 1, p.End())
	r = p.Report(math.Inf(1))
	require.Equal(t, TQReport{Quantum: 1, Sent: 1, SentMin: 9, Recv: []TQCount{{1, 1}}, Local: math.Inf(1),
		NextMin: math.Inf(1)}, *r)
	require.Panics(t, func() { p.Report(1) })
	p.End()
	require.Panics(t, func() { p.End() })
}

func TestTQMasterCombinesCompleteQuanta(t *testing.T) {
	m := NewTQMaster(2)
	inf := math.Inf(1)
	// Boundary 0: rank 0 sent 2 events (least 7) in quantum 0; rank 1 received one of them.
	_, rose, err := m.Add(0, &TQReport{Quantum: 0, Sent: 2, SentMin: 7, Local: 10, NextMin: inf})
	require.NoError(t, err)
	require.False(t, rose, "boundary 0 is not complete before rank 1 reports")
	g, rose, err := m.Add(1, &TQReport{Quantum: 0, Recv: []TQCount{{0, 1}}, Local: 12, NextMin: 20, SentMin: inf})
	require.NoError(t, err)
	require.True(t, rose)
	require.EqualValues(t, 7, g, "one event of quantum 0 is in flight: its least time bounds GVT")
	require.Equal(t, 1, m.Window())
	// Boundary 1: the other event of quantum 0 arrives; quantum 1's event (20) is in flight.
	_, _, err = m.Add(1, &TQReport{Quantum: 1, Recv: []TQCount{{0, 1}}, Local: 15, NextMin: inf, Sent: 1, SentMin: 20})
	require.NoError(t, err)
	g, rose, err = m.Add(0, &TQReport{Quantum: 1, Local: 30, NextMin: inf, SentMin: inf})
	require.NoError(t, err)
	require.True(t, rose)
	require.EqualValues(t, 15, g)
	// Boundary 2: nothing arrives; GVT is bounded by the event of quantum 1 still in flight.
	_, _, err = m.Add(0, &TQReport{Quantum: 2, Local: 30, NextMin: inf, SentMin: inf})
	require.NoError(t, err)
	g, rose, err = m.Add(1, &TQReport{Quantum: 2, Local: 25, NextMin: inf, SentMin: inf})
	require.NoError(t, err)
	require.True(t, rose)
	require.EqualValues(t, 20, g)
	require.Equal(t, 2, m.Window(), "quantum 1 is still incomplete")
	// A lower value never lowers GVT.
	_, _, err = m.Add(0, &TQReport{Quantum: 3, Recv: []TQCount{{1, 1}}, Local: 1, NextMin: inf, SentMin: inf})
	require.NoError(t, err)
	g, rose, err = m.Add(1, &TQReport{Quantum: 3, Local: 25, NextMin: inf, SentMin: inf})
	require.NoError(t, err)
	require.False(t, rose)
	require.EqualValues(t, 20, g)
	require.Zero(t, m.Window())
	require.EqualValues(t, 4, m.Boundaries())

	_, _, err = m.Add(0, &TQReport{Quantum: 7})
	require.ErrorContains(t, err, "expected 4")
	_, _, err = m.Add(2, &TQReport{})
	require.ErrorContains(t, err, "out of range")
}

// TestTQNeverAboveTheTrueMinimum runs TQ-GVT over a modelled network of processes with an
// omniscient observer: events travel with random delays (reordered between pairs),
// processes take their readings at random instants and report after a random delay
// (processing events in between, as a local round takes time, and reading the local
// minimum only then), reports reach the master
// with delays, and every GVT the master combines must be at most the least time of every
// event unprocessed or in flight at that moment; it must never decrease, and it must
// advance to the end once traffic stops.
func TestTQNeverAboveTheTrueMinimum(t *testing.T) {
	for seed := range uint64(40) {
		simulateTQ(t, seed, 2+int(seed%7), 3000, 0)
	}
}

// TestTQTreeOfMastersNeverAboveTheTrueMinimum repeats the simulation with the reports
// merged by relays (groups of 1 to 3 processes) before the master.
func TestTQTreeOfMastersNeverAboveTheTrueMinimum(t *testing.T) {
	for seed := range uint64(30) {
		simulateTQ(t, seed, 3+int(seed%6), 3000, 1+int(seed%3))
	}
}

func TestTQRelayMerges(t *testing.T) {
	g := NewTQRelay(2)
	inf := math.Inf(1)
	_, ok, err := g.Add(1, &TQReport{Quantum: 0, Sent: 2, SentMin: 5, Recv: []TQCount{{0, 1}}, Local: 7, NextMin: inf})
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = g.Add(1, &TQReport{Quantum: 1, Sent: 1, SentMin: 9, Local: 9, NextMin: inf})
	require.NoError(t, err)
	require.False(t, ok)
	r, ok, err := g.Add(0, &TQReport{Quantum: 0, Sent: 1, SentMin: 6, Recv: []TQCount{{0, 2}, {1, 1}}, Local: 8, NextMin: 3})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, TQReport{Quantum: 0, Sent: 3, SentMin: 5, Recv: []TQCount{{0, 3}, {1, 1}}, Local: 7, NextMin: 3}, *r)
	r, ok, err = g.Add(0, &TQReport{Quantum: 1, SentMin: inf, Local: 10, NextMin: inf})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, TQReport{Quantum: 1, Sent: 1, SentMin: 9, Local: 9, NextMin: inf}, *r)
	_, _, err = g.Add(0, &TQReport{Quantum: 5})
	require.ErrorContains(t, err, "expected 2")
	_, _, err = g.Add(-1, &TQReport{})
	require.ErrorContains(t, err, "out of range")
}

type tqMsg struct {
	at    int // delivery step
	to    int
	tag   uint64
	recv  event.Time
	rep   *TQReport
	from  int
	order int
}

// simulateTQ runs the model with ranks processes; with group > 0, relays merge the reports
// of groups of that many processes (the last may be smaller) before the master.
func simulateTQ(t *testing.T, seed uint64, ranks, steps, group int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	procs := make([]*TQ, ranks)
	queues := make([][]event.Time, ranks) // unprocessed events per process
	reportAt := make([]int, ranks)        // step at which the pending reading reports, -1 when none
	for r := range procs {
		procs[r] = NewTQ()
		for range 3 {
			queues[r] = append(queues[r], event.Time(rng.IntN(10)))
		}
		reportAt[r] = -1
	}
	master := NewTQMaster(ranks)
	var relays []*TQRelay
	if group > 0 {
		groups := (ranks + group - 1) / group
		master = NewTQMaster(groups)
		for g := range groups {
			relays = append(relays, NewTQRelay(min(group, ranks-g*group)))
		}
	}
	add := func(from int, r *TQReport) (event.Time, bool, error) {
		if relays == nil {
			return master.Add(from, r)
		}
		merged, ok, err := relays[from/group].Add(from%group, r)
		if err != nil || !ok {
			return master.GVT(), false, err
		}
		return master.Add(from/group, merged)
	}
	var net []tqMsg
	order := 0
	last := event.Time(0)
	trueMin := func() event.Time {
		g := math.Inf(1)
		for _, q := range queues {
			for _, e := range q {
				g = min(g, e)
			}
		}
		for _, m := range net {
			if m.rep == nil {
				g = min(g, m.recv)
			}
		}
		return g
	}
	for step := 0; ; step++ {
		traffic := step < steps
		if !traffic && len(net) == 0 && master.GVT() == math.Inf(1) {
			break
		}
		require.Less(t, step, steps*20, "seed %d: GVT did not reach the end after traffic stopped", seed)
		r := rng.IntN(ranks)
		p := procs[r]
		switch a := rng.IntN(10); {
		case a < 4 && len(queues[r]) > 0:
			// Process the least event; it sends one to a random process while traffic lasts.
			i := slices.Index(queues[r], slices.Min(queues[r]))
			e := queues[r][i]
			queues[r] = slices.Delete(queues[r], i, i+1)
			if !traffic {
				continue
			}
			to := rng.IntN(ranks)
			at := e + event.Time(rng.IntN(5))
			if to == r {
				queues[r] = append(queues[r], at)
				continue
			}
			p.Sent(at)
			order++
			net = append(net, tqMsg{at: step + rng.IntN(60), to: to, tag: p.Tag(), recv: at, from: r, order: order})
		case a < 7:
			// Deliver a due message to r (any order, even within a pair: TQ does not rely on it).
			for i, m := range net {
				if m.to != r || m.at > step {
					continue
				}
				net = slices.Delete(net, i, i+1)
				if m.rep != nil {
					before := trueMin()
					g, rose, err := add(m.from, m.rep)
					require.NoError(t, err, "seed %d", seed)
					require.GreaterOrEqual(t, g, last, "seed %d: GVT decreased", seed)
					if rose {
						require.LessOrEqual(t, g, before, "seed %d step %d: GVT %v above the true minimum %v", seed, step, g, before)
					}
					last = g
				} else {
					procs[r].Received(m.tag, 1)
					queues[r] = append(queues[r], m.recv)
				}
				break
			}
		case a < 8 && !p.Reading():
			p.End()
			reportAt[r] = step + rng.IntN(20)
		case a < 10 && p.Reading() && step >= reportAt[r]:
			// The local minimum is read at the report, not at the reading: events processed
			// in between have sent theirs with the next tag (NextMin covers them).
			lm := math.Inf(1)
			for _, e := range queues[r] {
				lm = min(lm, e)
			}
			rep := *p.Report(lm)
			rep.Recv = slices.Clone(rep.Recv)
			// Reports of one process reach the master in order.
			at := step + rng.IntN(30)
			for _, m := range net {
				if m.rep != nil && m.from == r {
					at = max(at, m.at)
				}
			}
			order++
			net = append(net, tqMsg{at: at, to: 0, rep: &rep, from: r, order: order})
		}
	}
	require.Equal(t, math.Inf(1), master.GVT())
}
