package ltsf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warpedgo/warped/event"
)

// refQueue is the reference schedule queue: a slice kept sorted with event.Compare.
type refQueue struct {
	a []*event.Event
}

func (r *refQueue) Push(e *event.Event) {
	i, _ := slices.BinarySearchFunc(r.a, e, event.Compare)
	r.a = slices.Insert(r.a, i, e)
}

func (r *refQueue) Pop() *event.Event {
	if len(r.a) == 0 {
		return nil
	}
	e := r.a[0]
	r.a = slices.Delete(r.a, 0, 1)
	return e
}

func (r *refQueue) Peek() *event.Event {
	if len(r.a) == 0 {
		return nil
	}
	return r.a[0]
}

func (r *refQueue) Remove(lp event.LPID) *event.Event {
	for i, e := range r.a {
		if e.Receiver == lp {
			r.a = slices.Delete(r.a, i, i+1)
			return e
		}
	}
	return nil
}

func (r *refQueue) Len() int { return len(r.a) }

// namedQueue is a queue under test.
type namedQueue struct {
	name string
	q    Queue
}

// testQueues returns every implementation, the ladder also with small parameters so
// that short sequences build, split and drop rungs.
func testQueues(numLPs int) []namedQueue {
	return []namedQueue{
		{"heap", NewHeap(numLPs)},
		{"splay", NewSplay(numLPs)},
		{"ladder", NewLadder(numLPs)},
		{"ladder-thres2-rungs3", newLadder(numLPs, 2, 3)},
		{"ladder-thres4-rungs8", newLadder(numLPs, 4, 8)},
	}
}

// checkInvariants checks the internal structure of the queues that have one to check.
func checkInvariants(t testing.TB, qs []namedQueue) {
	t.Helper()
	for _, nq := range qs {
		switch q := nq.q.(type) {
		case *Splay:
			checkSplay(t, q)
		case *Ladder:
			checkLadder(t, q)
		}
	}
}

func checkSplay(t testing.TB, s *Splay) {
	t.Helper()
	var order []int32
	var walk func(x, parent int32)
	walk = func(x, parent int32) {
		if x < 0 {
			return
		}
		n := &s.nodes[x]
		require.NotNil(t, n.ev, "node %d in tree without event", x)
		require.Equal(t, parent, n.parent, "parent of %d", x)
		require.Equal(t, n.t, n.ev.RecvTime)
		require.Equal(t, x, int32(n.ev.Receiver))
		walk(n.left, x)
		order = append(order, x)
		walk(n.right, x)
	}
	walk(s.root, nilNode)
	require.Len(t, order, s.n)
	for i := 1; i < len(order); i++ {
		require.True(t, sless(&s.nodes[order[i-1]], &s.nodes[order[i]]), "in-order at %d", i)
	}
	if s.n == 0 {
		require.Equal(t, int32(nilNode), s.root)
		require.Equal(t, int32(nilNode), s.min)
	} else {
		require.Equal(t, order[0], s.min)
	}
	in := 0
	for i := range s.nodes {
		if s.nodes[i].ev != nil {
			in++
		}
	}
	require.Equal(t, s.n, in)
}

func checkLadder(t testing.TB, l *Ladder) {
	t.Helper()
	total := 0
	seen := make(map[int32]bool)
	walkList := func(h int32, where, bucket int32, f func(*lnode)) int {
		n, prev := 0, int32(nilNode)
		for x := h; x >= 0; x = l.nodes[x].next {
			nx := &l.nodes[x]
			require.False(t, seen[x], "node %d listed twice", x)
			seen[x] = true
			require.Equal(t, prev, nx.prev)
			require.Equal(t, where, nx.where)
			if where >= 0 {
				require.Equal(t, bucket, nx.bucket)
			}
			require.Equal(t, nx.t, nx.ev.RecvTime)
			require.Equal(t, x, int32(nx.ev.Receiver))
			f(nx)
			prev = x
			n++
		}
		return n
	}
	// Bottom is sorted; its greatest event bounds everything below from above.
	bot := l.bot[l.bh:]
	for i := range bot {
		if i > 0 {
			require.True(t, bless(&bot[i-1], &bot[i]), "bottom order at %d", i)
		}
		x := int32(bot[i].ev.Receiver)
		require.Equal(t, inBottom, l.nodes[x].where)
		require.Same(t, bot[i].ev, l.nodes[x].ev)
		require.False(t, seen[x])
		seen[x] = true
	}
	total += len(bot)
	var below *bentry // the greatest event seen so far in the lower structures
	if len(bot) > 0 {
		below = &bot[len(bot)-1]
	}
	for i := l.nr - 1; i >= 0; i-- {
		r := &l.rungs[i]
		require.Len(t, r.head, r.nb)
		n := 0
		var hi *bentry
		for k := range r.head {
			bn := walkList(r.head[k], int32(i), int32(k), func(nx *lnode) {
				require.Equal(t, k, r.index(nx.t), "bucket of time %v", nx.t)
				require.False(t, math.IsInf(nx.t, 1), "+Inf in a rung")
				require.LessOrEqual(t, nx.t, l.topStart)
				e := &bentry{nx.t, nx.ev}
				if below != nil {
					require.True(t, bless(below, e), "rung %d holds an event below a lower one", i)
				}
				if hi == nil || bless(hi, e) {
					hi = e
				}
			})
			if bn > 0 {
				require.GreaterOrEqual(t, k, r.cur, "event in a consumed bucket")
			}
			n += bn
		}
		require.Equal(t, r.count, n, "rung %d count", i)
		total += n
		if hi != nil {
			below = hi
		}
	}
	tn := walkList(l.topHead, inTop, 0, func(nx *lnode) {
		require.Greater(t, nx.t, l.topStart)
		require.False(t, math.IsInf(nx.t, 1), "+Inf in Top")
	})
	require.Equal(t, l.topN, tn)
	total += tn
	in := walkList(l.infHead, inInf, 0, func(nx *lnode) {
		require.True(t, math.IsInf(nx.t, 1), "finite time %v in the +Inf list", nx.t)
	})
	require.Equal(t, l.infN, in)
	total += in
	if l.infPhase {
		require.Zero(t, l.infN)
		require.Zero(t, l.topN)
		require.Zero(t, l.nr)
		require.Equal(t, math.Inf(1), l.topStart)
	} else {
		for i := range bot {
			require.False(t, math.IsInf(bot[i].t, 1), "+Inf in Bottom out of the +Inf phase")
		}
		require.False(t, math.IsInf(l.topStart, 1))
	}
	if l.n == 0 {
		require.Zero(t, l.nr)
		require.Equal(t, math.Inf(-1), l.topStart)
	}
	require.Equal(t, l.n, total)
	for x := range l.nodes {
		if !seen[int32(x)] {
			require.Equal(t, inNone, l.nodes[x].where)
			require.Nil(t, l.nodes[x].ev)
		}
	}
}

// genMode selects the time distribution of a property test run.
type genMode int

const (
	modeIntegers  genMode = iota // few integer times: many ties
	modeHold                     // times after the last popped one, as in a simulation
	modeClustered                // widely spread magnitudes, to build deep rungs
	modeSpecial                  // integers mixed with infinities and extreme values
	numGenModes
)

var specialTimes = []float64{
	math.Inf(1), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e308, -1e308,
	math.MaxFloat64, 5e-324, 1, 1 + 1e-15,
}

// gen draws events whose keys tie often but never completely with a queued event.
type gen struct {
	rnd  *rand.Rand
	mode genMode
	now  float64
}

func (g *gen) recvTime() float64 {
	r := g.rnd
	switch g.mode {
	case modeIntegers:
		return float64(r.IntN(8))
	case modeHold:
		switch r.IntN(10) {
		case 0:
			return g.now - r.Float64() // a straggler: earlier than the last pop
		case 1:
			return g.now // zero delay
		case 2:
			return math.Floor(g.now) + float64(r.IntN(3))
		}
		return g.now + r.ExpFloat64()
	case modeClustered:
		if r.IntN(4) == 0 {
			return float64(r.IntN(4))
		}
		return math.Exp(r.NormFloat64() * 6)
	default:
		if r.IntN(5) == 0 {
			return specialTimes[r.IntN(len(specialTimes))]
		}
		return float64(r.IntN(6))
	}
}

func (g *gen) event(lp event.LPID, live *refQueue) *event.Event {
	r := g.rnd
	e := &event.Event{Receiver: lp}
	for {
		e.RecvTime = g.recvTime()
		e.SendTime = float64(r.IntN(3))
		e.Sender = event.LPID(r.IntN(4))
		e.Seq = uint64(r.IntN(4))
		e.Anti = r.IntN(2) == 0
		if !slices.ContainsFunc(live.a, func(o *event.Event) bool { return event.Compare(o, e) == 0 }) {
			return e
		}
	}
}

// lockstep drives the queues and the reference together and fails at the first
// difference.
type lockstep struct {
	t    testing.TB
	ref  *refQueue
	qs   []namedQueue
	step int
}

func (s *lockstep) same(op string, want *event.Event, got func(Queue) *event.Event) {
	s.t.Helper()
	for _, nq := range s.qs {
		g := got(nq.q)
		if g != want {
			s.t.Fatalf("step %d %s: %s returned %s, want %s", s.step, op, nq.name, fmtEv(g), fmtEv(want))
		}
	}
}

func (s *lockstep) push(e *event.Event) {
	s.ref.Push(e)
	for _, nq := range s.qs {
		nq.q.Push(e)
	}
}

func (s *lockstep) pop() *event.Event {
	s.t.Helper()
	want := s.ref.Pop()
	s.same("Pop", want, Queue.Pop)
	return want
}

func (s *lockstep) peek() {
	s.t.Helper()
	s.same("Peek", s.ref.Peek(), Queue.Peek)
}

func (s *lockstep) remove(lp event.LPID) {
	s.t.Helper()
	s.same(fmt.Sprintf("Remove(%d)", lp), s.ref.Remove(lp), func(q Queue) *event.Event { return q.Remove(lp) })
}

// replaceMin pops the least event and pushes e, as a dispatcher rescheduling the LP it ran.
func (s *lockstep) replaceMin(e *event.Event) {
	s.ref.Pop()
	s.ref.Push(e)
	for _, nq := range s.qs {
		nq.q.Pop()
		nq.q.Push(e)
	}
}

func (s *lockstep) checkLen() {
	s.t.Helper()
	for _, nq := range s.qs {
		if nq.q.Len() != s.ref.Len() {
			s.t.Fatalf("step %d: %s Len %d, want %d", s.step, nq.name, nq.q.Len(), s.ref.Len())
		}
	}
}

func fmtEv(e *event.Event) string {
	if e == nil {
		return "nil"
	}
	return fmt.Sprintf("{lp %d t %v send %v sender %d seq %d anti %v}",
		e.Receiver, e.RecvTime, e.SendTime, e.Sender, e.Seq, e.Anti)
}

func runProperty(t *testing.T, seed uint64, mode genMode, numLPs, steps int) {
	rnd := rand.New(rand.NewPCG(seed, uint64(mode)))
	g := &gen{rnd: rnd, mode: mode}
	ref := &refQueue{}
	s := &lockstep{t: t, ref: ref, qs: testQueues(numLPs)}
	in := make([]bool, numLPs)
	var out []event.LPID // LPs without an event
	for lp := range numLPs {
		out = append(out, event.LPID(lp))
	}
	pushBias := 50
	for s.step = 0; s.step < steps; s.step++ {
		if s.step%500 == 0 {
			pushBias = 20 + rnd.IntN(60) // alternate filling and draining phases
		}
		switch op := rnd.IntN(100); {
		case op < pushBias:
			if len(out) == 0 {
				continue
			}
			i := rnd.IntN(len(out))
			lp := out[i]
			out[i] = out[len(out)-1]
			out = out[:len(out)-1]
			in[lp] = true
			s.push(g.event(lp, ref))
		case op < pushBias+(100-pushBias)*6/10:
			if e := s.pop(); e != nil {
				in[e.Receiver] = false
				out = append(out, e.Receiver)
				if !math.IsInf(e.RecvTime, 0) {
					g.now = e.RecvTime
				}
			}
		case op < pushBias+(100-pushBias)*8/10:
			lp := event.LPID(rnd.IntN(numLPs))
			s.remove(lp)
			if in[lp] {
				in[lp] = false
				out = append(out, lp)
			}
		case op < pushBias+(100-pushBias)*9/10:
			s.peek()
		default:
			// Pop and push again, mostly for the LP of the least event (a dispatcher
			// rescheduling the LP it ran), sometimes for an LP without an event.
			least := ref.Peek()
			if least == nil {
				continue
			}
			lp := least.Receiver
			if len(out) > 0 && rnd.IntN(4) == 0 {
				i := rnd.IntN(len(out))
				lp = out[i]
				out[i] = least.Receiver
				in[least.Receiver], in[lp] = false, true
			}
			s.replaceMin(g.event(lp, ref))
		}
		s.checkLen()
		if s.step%251 == 0 {
			checkInvariants(t, s.qs)
		}
	}
	checkInvariants(t, s.qs)
	for ref.Len() > 0 {
		s.pop()
	}
	s.pop()
	s.peek()
	s.checkLen()
	checkInvariants(t, s.qs)
}

func TestQueuesProperty(t *testing.T) {
	steps := 12000
	if testing.Short() {
		steps = 4000
	}
	for mode := range numGenModes {
		for _, seed := range []uint64{1, 2, 3} {
			for _, numLPs := range []int{5, 300} {
				t.Run(fmt.Sprintf("mode=%d/seed=%d/lps=%d", mode, seed, numLPs), func(t *testing.T) {
					t.Parallel()
					runProperty(t, seed, mode, numLPs, steps)
				})
			}
		}
	}
}

// TestLadderEqualTimes pushes thousands of events at one time: a bucket that cannot be
// split must be sorted into Bottom rather than split forever.
func TestLadderEqualTimes(t *testing.T) {
	const n = 5000
	for _, tm := range []float64{3, math.Inf(1)} {
		l := NewLadder(n)
		ref := &refQueue{}
		rnd := rand.New(rand.NewPCG(7, 7))
		for lp := range n {
			e := &event.Event{RecvTime: tm, SendTime: float64(rnd.IntN(10)), Sender: event.LPID(rnd.IntN(n)), Seq: uint64(lp), Receiver: event.LPID(lp)}
			l.Push(e)
			ref.Push(e)
		}
		// A few more times far away, so that the first rung is built and its first
		// bucket holds the equal times.
		for lp := n - 10; lp < n; lp++ {
			e := l.Remove(event.LPID(lp))
			ref.Remove(event.LPID(lp))
			e.RecvTime = 1e6 + float64(lp)
			l.Push(e)
			ref.Push(e)
		}
		checkLadder(t, l)
		for ref.Len() > 0 {
			require.Same(t, ref.Pop(), l.Pop())
		}
		require.Nil(t, l.Pop())
		checkLadder(t, l)
	}
}

func TestNew(t *testing.T) {
	for _, kind := range Kinds() {
		q, err := New(kind, 4)
		require.NoError(t, err, kind)
		require.NotNil(t, q)
		require.Zero(t, q.Len())
		require.Nil(t, q.Pop())
		require.Nil(t, q.Peek())
		require.Nil(t, q.Remove(3))
		e := &event.Event{RecvTime: 1, Receiver: 2}
		q.Push(e)
		require.Same(t, e, q.Peek())
		require.Equal(t, 1, q.Len())
		require.Same(t, e, q.Pop())
	}
	q, err := New("calendar", 4)
	require.Nil(t, q)
	require.EqualError(t, err, `unknown queue type "calendar" (want heap, splay or ladder)`)
	_, err = New("heap", -1)
	require.Error(t, err)
	q, err = New("ladder", 0)
	require.NoError(t, err)
	require.Nil(t, q.Pop())
}

// fuzzTimes maps a byte to a receive time: mostly small integers (ties), some fractions,
// and the extremes.
func fuzzTime(b byte) float64 {
	switch {
	case b < 160:
		return float64(b % 12)
	case b < 232:
		return float64(b) / 7.25
	case b < 240:
		return math.Inf(1)
	default:
		return specialTimes[int(b-240)%len(specialTimes)]
	}
}

func FuzzQueues(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 5, 6, 7, 1, 1, 1})
	f.Add([]byte("\x00\x05\x10\x00\x06\x11\x00\x07\x12\x00\x08\xf0\x01\x03\x02\x04\x01\x01\x01\x01"))
	seed := make([]byte, 600)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range seed {
		seed[i] = byte(r.IntN(256))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		const numLPs = 64
		ref := &refQueue{}
		s := &lockstep{t: t, ref: ref, qs: testQueues(numLPs)}
		in := make([]bool, numLPs)
		var seq uint64
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		for len(data) > 0 {
			s.step++
			switch op := next(); op % 8 {
			case 0, 1, 2: // Push: lp, time, tail of the key
				lp := event.LPID(next() % numLPs)
				tb, kb := next(), next()
				if in[lp] {
					continue
				}
				e := &event.Event{
					Receiver: lp, RecvTime: fuzzTime(tb), SendTime: float64(kb % 3),
					Sender: event.LPID(kb >> 2 % 4), Seq: uint64(kb >> 4 % 4), Anti: kb&0x40 != 0,
				}
				if slices.ContainsFunc(ref.a, func(o *event.Event) bool { return event.Compare(o, e) == 0 }) {
					seq++
					e.Seq = 1000 + seq // make the key unique
				}
				in[lp] = true
				s.push(e)
			case 3, 4:
				if e := s.pop(); e != nil {
					in[e.Receiver] = false
				}
			case 5:
				lp := event.LPID(next() % numLPs)
				s.remove(lp)
				in[lp] = false
			case 6:
				if op&0x80 == 0 {
					s.peek()
					continue
				}
				// Pop and push again for the LP of the least event, with a new time.
				least := ref.Peek()
				if least == nil {
					continue
				}
				e := &event.Event{Receiver: least.Receiver, RecvTime: fuzzTime(next()), SendTime: least.RecvTime, Sender: least.Receiver, Seq: 1<<40 + seq}
				seq++
				s.replaceMin(e)
			case 7:
				checkInvariants(t, s.qs)
			}
			s.checkLen()
		}
		checkInvariants(t, s.qs)
		for ref.Len() > 0 {
			s.pop()
		}
		s.pop()
		s.checkLen()
	})
}
