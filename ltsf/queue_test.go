package ltsf

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warpedgo/warped/event"
)

// qentry is one entry of the reference queue.
type qentry struct {
	k  event.Key
	lp event.LPID
}

// refCompare is the queue order, written independently of the implementations: by
// event.KeyLess, then by LP id.
func refCompare(a, b qentry) int {
	switch {
	case event.KeyLess(&a.k, &b.k):
		return -1
	case event.KeyLess(&b.k, &a.k):
		return 1
	}
	return cmp.Compare(a.lp, b.lp)
}

// refQueue is the reference schedule queue: a slice kept sorted with refCompare.
type refQueue struct {
	a []qentry
}

func (r *refQueue) Push(k event.Key, lp event.LPID) {
	if slices.ContainsFunc(r.a, func(o qentry) bool { return o.lp == lp }) {
		panic(fmt.Sprintf("reference: LP %d pushed twice", lp))
	}
	y := qentry{k, lp}
	i, _ := slices.BinarySearchFunc(r.a, y, refCompare)
	r.a = slices.Insert(r.a, i, y)
}

func (r *refQueue) Min() (event.Key, event.LPID, bool) {
	if len(r.a) == 0 {
		return event.Key{}, 0, false
	}
	return r.a[0].k, r.a[0].lp, true
}

func (r *refQueue) Pop() (event.Key, event.LPID, bool) {
	k, lp, ok := r.Min()
	if ok {
		r.a = slices.Delete(r.a, 0, 1)
	}
	return k, lp, ok
}

func (r *refQueue) Remove(lp event.LPID) bool {
	for i, y := range r.a {
		if y.lp == lp {
			r.a = slices.Delete(r.a, i, i+1)
			return true
		}
	}
	return false
}

func (r *refQueue) Len() int { return len(r.a) }

// keys returns the key held for each LP.
func (r *refQueue) keys() map[event.LPID]event.Key {
	m := make(map[event.LPID]event.Key, len(r.a))
	for _, y := range r.a {
		m[y.lp] = y.k
	}
	return m
}

// sameKey reports whether a and b are the same key bit for bit (so that -0 and +0 differ).
func sameKey(a, b event.Key) bool {
	return math.Float64bits(a.RecvTime) == math.Float64bits(b.RecvTime) &&
		math.Float64bits(a.SendTime) == math.Float64bits(b.SendTime) &&
		a.Depth == b.Depth && a.Sender == b.Sender && a.SeqSign == b.SeqSign
}

func fmtEntry(k event.Key, lp event.LPID, ok bool) string {
	if !ok {
		return fmt.Sprintf("none (key %+v lp %d)", k, lp)
	}
	return fmt.Sprintf("{lp %d t %v send %v depth %d sender %d seqsign %d}",
		lp, k.RecvTime, k.SendTime, k.Depth, k.Sender, k.SeqSign)
}

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
		{"parallel-heap", NewParallelHeap(numLPs, DefaultNodeSize)},
		{"parallel-heap-r3", NewParallelHeap(numLPs, 3)},
	}
}

// checkInvariants checks the internal structure of the queues and that each holds the
// reference's key for every LP.
func checkInvariants(t testing.TB, qs []namedQueue, ref *refQueue) {
	t.Helper()
	keys := ref.keys()
	for _, nq := range qs {
		switch q := nq.q.(type) {
		case *Heap:
			checkHeap(t, q, keys)
		case *Splay:
			checkSplay(t, q, keys)
		case *Ladder:
			checkLadder(t, q, keys)
		case *ParallelHeap:
			checkParallelHeap(t, q, keys)
		default:
			t.Fatalf("no invariant check for %T", q)
		}
	}
}

// checkKey checks that lp is held with key k in the reference keys.
func checkKey(t testing.TB, keys map[event.LPID]event.Key, lp event.LPID, k event.Key) {
	t.Helper()
	want, ok := keys[lp]
	require.True(t, ok, "LP %d held but not in the reference", lp)
	require.True(t, sameKey(want, k), "LP %d holds key %+v, want %+v", lp, k, want)
}

func checkHeap(t testing.TB, h *Heap, keys map[event.LPID]event.Key) {
	t.Helper()
	require.Len(t, h.a, len(keys))
	for i := range h.a {
		if i > 0 {
			require.False(t, eless(&h.a[i], &h.a[(i-1)/arity]), "heap order at %d", i)
		}
		require.Equal(t, int32(i), h.pos[h.a[i].lp], "position of LP %d", h.a[i].lp)
		checkKey(t, keys, h.a[i].lp, h.a[i].k)
	}
	in := 0
	for _, p := range h.pos {
		if p >= 0 {
			in++
		} else {
			require.Equal(t, int32(-1), p)
		}
	}
	require.Equal(t, len(h.a), in)
}

func checkSplay(t testing.TB, s *Splay, keys map[event.LPID]event.Key) {
	t.Helper()
	var order []int32
	var walk func(x, parent int32)
	walk = func(x, parent int32) {
		if x < 0 {
			return
		}
		n := &s.nodes[x]
		require.True(t, n.in, "node %d in tree but not marked", x)
		require.Equal(t, parent, n.parent, "parent of %d", x)
		checkKey(t, keys, event.LPID(x), n.k)
		walk(n.left, x)
		order = append(order, x)
		walk(n.right, x)
	}
	walk(s.root, nilNode)
	require.Len(t, order, s.n)
	require.Len(t, keys, s.n)
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		require.True(t, sless(&s.nodes[a], a, &s.nodes[b], b), "in-order at %d", i)
	}
	if s.n == 0 {
		require.Equal(t, int32(nilNode), s.root)
		require.Equal(t, int32(nilNode), s.min)
	} else {
		require.Equal(t, order[0], s.min)
	}
	in := 0
	for i := range s.nodes {
		if s.nodes[i].in {
			in++
		}
	}
	require.Equal(t, s.n, in)
}

func checkLadder(t testing.TB, l *Ladder, keys map[event.LPID]event.Key) {
	t.Helper()
	total := 0
	seen := make(map[int32]bool)
	walkList := func(h int32, where, bucket int32, f func(x int32, nx *lnode)) int {
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
			checkKey(t, keys, event.LPID(x), nx.k)
			f(x, nx)
			prev = x
			n++
		}
		return n
	}
	// Bottom is sorted; its greatest entry bounds everything below from above.
	bot := l.bot[l.bh:]
	for i := range bot {
		if i > 0 {
			require.True(t, bless(&bot[i-1], &bot[i]), "bottom order at %d", i)
		}
		x := int32(bot[i].lp)
		require.Equal(t, inBottom, l.nodes[x].where)
		require.True(t, sameKey(bot[i].k, l.nodes[x].k), "Bottom and node keys of LP %d", x)
		checkKey(t, keys, bot[i].lp, bot[i].k)
		require.False(t, seen[x])
		seen[x] = true
	}
	total += len(bot)
	var below *bentry // the greatest entry seen so far in the lower structures
	if len(bot) > 0 {
		below = &bot[len(bot)-1]
	}
	for i := l.nr - 1; i >= 0; i-- {
		r := &l.rungs[i]
		require.Len(t, r.head, r.nb)
		n := 0
		var hi *bentry
		for k := range r.head {
			bn := walkList(r.head[k], int32(i), int32(k), func(x int32, nx *lnode) {
				tm := nx.k.RecvTime
				require.Equal(t, k, r.index(tm), "bucket of time %v", tm)
				require.False(t, math.IsInf(tm, 1), "+Inf in a rung")
				require.LessOrEqual(t, tm, l.topStart)
				e := &bentry{nx.k, event.LPID(x)}
				if below != nil {
					require.True(t, bless(below, e), "rung %d holds an entry below a lower one", i)
				}
				if hi == nil || bless(hi, e) {
					hi = e
				}
			})
			if bn > 0 {
				require.GreaterOrEqual(t, k, r.cur, "entry in a consumed bucket")
			}
			n += bn
		}
		require.Equal(t, r.count, n, "rung %d count", i)
		total += n
		if hi != nil {
			below = hi
		}
	}
	tn := walkList(l.topHead, inTop, 0, func(_ int32, nx *lnode) {
		require.Greater(t, nx.k.RecvTime, l.topStart)
		require.False(t, math.IsInf(nx.k.RecvTime, 1), "+Inf in Top")
	})
	require.Equal(t, l.topN, tn)
	total += tn
	in := walkList(l.infHead, inInf, 0, func(_ int32, nx *lnode) {
		require.True(t, math.IsInf(nx.k.RecvTime, 1), "finite time %v in the +Inf list", nx.k.RecvTime)
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
			require.False(t, math.IsInf(bot[i].k.RecvTime, 1), "+Inf in Bottom out of the +Inf phase")
		}
		require.False(t, math.IsInf(l.topStart, 1))
	}
	if l.n == 0 {
		require.Zero(t, l.nr)
		require.Equal(t, math.Inf(-1), l.topStart)
	}
	require.Equal(t, l.n, total)
	require.Len(t, keys, total)
	for x := range l.nodes {
		if !seen[int32(x)] {
			require.Equal(t, inNone, l.nodes[x].where)
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

// gen draws keys that tie often, in part or in whole, with a queued key.
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

// key draws a key. A key equal to a queued one (which only the LP id then orders) is
// kept a quarter of the time and drawn again otherwise.
func (g *gen) key(live *refQueue) event.Key {
	r := g.rnd
	for {
		k := event.KeyOf(&event.Event{
			RecvTime: g.recvTime(),
			SendTime: float64(r.IntN(3)),
			Depth:    uint32(r.IntN(2)),
			Sender:   event.LPID(r.IntN(4)),
			Seq:      uint64(r.IntN(4)),
			Anti:     r.IntN(2) == 0,
		})
		if r.IntN(4) == 0 || !slices.ContainsFunc(live.a, func(o qentry) bool { return o.k == k }) {
			return k
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

// same checks that every queue returns the reference's entry.
func (s *lockstep) same(op string, want func() (event.Key, event.LPID, bool), got func(Queue) (event.Key, event.LPID, bool)) (event.Key, event.LPID, bool) {
	s.t.Helper()
	wk, wlp, wok := want()
	for _, nq := range s.qs {
		k, lp, ok := got(nq.q)
		if ok != wok || lp != wlp || !sameKey(k, wk) {
			s.t.Fatalf("step %d %s: %s returned %s, want %s", s.step, op, nq.name, fmtEntry(k, lp, ok), fmtEntry(wk, wlp, wok))
		}
	}
	return wk, wlp, wok
}

func (s *lockstep) push(k event.Key, lp event.LPID) {
	s.ref.Push(k, lp)
	for _, nq := range s.qs {
		nq.q.Push(k, lp)
	}
}

func (s *lockstep) pop() (event.Key, event.LPID, bool) {
	s.t.Helper()
	return s.same("Pop", s.ref.Pop, Queue.Pop)
}

func (s *lockstep) min() {
	s.t.Helper()
	s.same("Min", s.ref.Min, Queue.Min)
}

func (s *lockstep) remove(lp event.LPID) bool {
	s.t.Helper()
	want := s.ref.Remove(lp)
	for _, nq := range s.qs {
		if got := nq.q.Remove(lp); got != want {
			s.t.Fatalf("step %d Remove(%d): %s returned %v, want %v", s.step, lp, nq.name, got, want)
		}
	}
	return want
}

// replaceMin pops the least entry and pushes lp with key k, as a dispatcher rescheduling
// the LP it ran.
func (s *lockstep) replaceMin(k event.Key, lp event.LPID) {
	s.t.Helper()
	s.pop()
	s.push(k, lp)
}

func (s *lockstep) checkLen() {
	s.t.Helper()
	for _, nq := range s.qs {
		if nq.q.Len() != s.ref.Len() {
			s.t.Fatalf("step %d: %s Len %d, want %d", s.step, nq.name, nq.q.Len(), s.ref.Len())
		}
	}
}

// drain pops everything, checking the order, and checks that the queues are then empty.
func (s *lockstep) drain() {
	s.t.Helper()
	for s.ref.Len() > 0 {
		s.pop()
	}
	s.pop()
	s.min()
	s.checkLen()
	checkInvariants(s.t, s.qs, s.ref)
}

func runProperty(t *testing.T, seed uint64, mode genMode, numLPs, steps int) {
	rnd := rand.New(rand.NewPCG(seed, uint64(mode)))
	g := &gen{rnd: rnd, mode: mode}
	ref := &refQueue{}
	s := &lockstep{t: t, ref: ref, qs: testQueues(numLPs)}
	in := make([]bool, numLPs)
	var out []event.LPID // LPs without an entry
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
			s.push(g.key(ref), lp)
		case op < pushBias+(100-pushBias)*6/10:
			if k, lp, ok := s.pop(); ok {
				in[lp] = false
				out = append(out, lp)
				if !math.IsInf(k.RecvTime, 0) {
					g.now = k.RecvTime
				}
			}
		case op < pushBias+(100-pushBias)*8/10:
			lp := event.LPID(rnd.IntN(numLPs))
			if s.remove(lp) != in[lp] {
				t.Fatalf("step %d: Remove(%d) disagrees with the test's bookkeeping", s.step, lp)
			}
			if in[lp] {
				in[lp] = false
				out = append(out, lp)
			}
		case op < pushBias+(100-pushBias)*9/10:
			s.min()
		default:
			// Pop and push again, mostly for the LP of the least entry (a dispatcher
			// rescheduling the LP it ran), sometimes for an LP without an entry.
			_, least, ok := ref.Min()
			if !ok {
				continue
			}
			lp := least
			if len(out) > 0 && rnd.IntN(4) == 0 {
				i := rnd.IntN(len(out))
				lp = out[i]
				out[i] = least
				in[least], in[lp] = false, true
			}
			k := g.key(ref)
			s.replaceMin(k, lp)
		}
		s.checkLen()
		if s.step%251 == 0 {
			checkInvariants(t, s.qs, ref)
		}
	}
	checkInvariants(t, s.qs, ref)
	s.drain()
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

// TestQueuesEqualKeys pushes equal keys (finite and infinite) for many LPs in random
// order: every queue must pop them by LP id.
func TestQueuesEqualKeys(t *testing.T) {
	const numLPs = 200
	times := []float64{math.Inf(-1), 0, 2.5, math.Inf(1)}
	rnd := rand.New(rand.NewPCG(5, 5))
	ref := &refQueue{}
	s := &lockstep{t: t, ref: ref, qs: testQueues(numLPs)}
	for _, lp := range rnd.Perm(numLPs) {
		k := event.Key{RecvTime: times[lp%len(times)], SendTime: 1, Sender: 3, SeqSign: 9}
		s.push(k, event.LPID(lp))
	}
	checkInvariants(t, s.qs, ref)
	// Take a few out of the middle of each run of equal keys.
	for lp := 40; lp < 60; lp++ {
		require.True(t, s.remove(event.LPID(lp)))
	}
	s.checkLen()
	for i := 0; ref.Len() > 0; i++ {
		s.min()
		k, lp, _ := s.pop()
		if i > 0 && i%50 == 0 {
			checkInvariants(t, s.qs, ref)
		}
		if _, next, ok := ref.Min(); ok && ref.a[0].k == k {
			require.Less(t, lp, next, "equal keys out of LP order")
		}
	}
	s.drain()
}

// TestLadderEqualTimes pushes thousands of entries at one time, with distinct and with
// identical keys: a bucket that cannot be split must be sorted into Bottom rather than
// split forever.
func TestLadderEqualTimes(t *testing.T) {
	const n = 5000
	for _, tm := range []float64{3, math.Inf(1)} {
		for _, identical := range []bool{false, true} {
			t.Run(fmt.Sprintf("t=%v/identical=%v", tm, identical), func(t *testing.T) {
				l := NewLadder(n)
				ref := &refQueue{}
				qs := []namedQueue{{"ladder", l}}
				rnd := rand.New(rand.NewPCG(7, 7))
				keys := make([]event.Key, n)
				for _, lp := range rnd.Perm(n) {
					e := &event.Event{RecvTime: tm, SendTime: float64(rnd.IntN(10)), Sender: event.LPID(rnd.IntN(n)), Seq: uint64(lp)}
					if identical {
						e.SendTime, e.Sender, e.Seq = 1, 7, 7
					}
					keys[lp] = event.KeyOf(e)
					l.Push(keys[lp], event.LPID(lp))
					ref.Push(keys[lp], event.LPID(lp))
				}
				// A few more times far away, so that the first rung is built and its
				// first bucket holds the equal times.
				for lp := n - 10; lp < n; lp++ {
					require.True(t, l.Remove(event.LPID(lp)))
					require.True(t, ref.Remove(event.LPID(lp)))
					require.False(t, l.Remove(event.LPID(lp)))
					keys[lp].RecvTime = 1e6 + float64(lp)
					l.Push(keys[lp], event.LPID(lp))
					ref.Push(keys[lp], event.LPID(lp))
				}
				checkInvariants(t, qs, ref)
				for ref.Len() > 0 {
					wk, wlp, _ := ref.Min()
					k, lp, ok := l.Min()
					require.True(t, ok)
					require.Equal(t, wlp, lp)
					require.True(t, sameKey(wk, k))
					wk, wlp, _ = ref.Pop()
					k, lp, ok = l.Pop()
					require.True(t, ok)
					require.Equal(t, wlp, lp)
					require.True(t, sameKey(wk, k))
					require.Equal(t, ref.Len(), l.Len())
				}
				_, _, ok := l.Pop()
				require.False(t, ok)
				checkInvariants(t, qs, ref)
			})
		}
	}
}

func TestNew(t *testing.T) {
	for _, kind := range Kinds() {
		q, err := New(kind, 4)
		require.NoError(t, err, kind)
		require.NotNil(t, q)
		require.Zero(t, q.Len())
		for _, op := range []func() (event.Key, event.LPID, bool){q.Pop, q.Min} {
			k, lp, ok := op()
			require.False(t, ok)
			require.Zero(t, k)
			require.Zero(t, lp)
		}
		require.False(t, q.Remove(3))
		k := event.Key{RecvTime: 1, SendTime: 0.5, Depth: 2, Sender: 3, SeqSign: 11}
		q.Push(k, 2)
		require.Equal(t, 1, q.Len())
		require.False(t, q.Remove(3))
		gk, lp, ok := q.Min()
		require.True(t, ok)
		require.Equal(t, k, gk)
		require.Equal(t, event.LPID(2), lp)
		require.Equal(t, 1, q.Len())
		gk, lp, ok = q.Pop()
		require.True(t, ok)
		require.Equal(t, k, gk)
		require.Equal(t, event.LPID(2), lp)
		require.Zero(t, q.Len())
		q.Push(k, 3)
		require.True(t, q.Remove(3))
		require.False(t, q.Remove(3))
		require.Zero(t, q.Len())
		_, _, ok = q.Min()
		require.False(t, ok)
	}
	q, err := New("calendar", 4)
	require.Nil(t, q)
	require.EqualError(t, err, `unknown queue type "calendar" (want heap, splay, ladder or parallel-heap)`)
	_, err = New("heap", -1)
	require.Error(t, err)
	q, err = New("ladder", 0)
	require.NoError(t, err)
	_, _, ok := q.Pop()
	require.False(t, ok)
	require.Equal(t, []string{"heap", "splay", "ladder", "parallel-heap"}, Kinds())
}

// TestQueuesNoAllocs checks that the hold model allocates nothing once the queues have
// reached their working size.
func TestQueuesNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n = 2000
	inc := holdIncrements()
	for _, nq := range testQueues(n) {
		q := nq.q
		holdFill(q, n, inc)
		j := 0
		hold := func() {
			k, lp, _ := q.Pop()
			k.RecvTime += inc[j&(len(inc)-1)]
			k.SeqSign += 2
			j++
			q.Push(k, lp)
			if j%16 == 0 {
				q.Remove(lp)
				q.Push(k, lp)
			}
		}
		for range 4 * n {
			hold()
		}
		require.Zero(t, testing.AllocsPerRun(5*n, hold), nq.name)
	}
}

// fuzzTime maps a byte to a receive time: mostly small integers (ties), some fractions,
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
	f.Add([]byte("\x00\x01\x03\x80\x00\x02\x03\x80\x00\x03\x03\x80\x00\x04\xf2\x80\x00\x05\xf2\x80\x06\x03\x03\x05\x02\x03\x03"))
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
				k := event.KeyOf(&event.Event{
					RecvTime: fuzzTime(tb), SendTime: float64(kb % 3),
					Sender: event.LPID(kb >> 2 % 4), Seq: uint64(kb >> 4 % 4), Anti: kb&0x40 != 0,
				})
				// An equal key is kept when the high bit of kb is set (the LP id orders
				// the two) and made unique otherwise.
				if kb&0x80 == 0 && slices.ContainsFunc(ref.a, func(o qentry) bool { return o.k == k }) {
					seq++
					k.SeqSign = (1000 + seq) << 1 // make the key unique
				}
				in[lp] = true
				s.push(k, lp)
			case 3, 4:
				if _, lp, ok := s.pop(); ok {
					in[lp] = false
				}
			case 5:
				lp := event.LPID(next() % numLPs)
				if s.remove(lp) != in[lp] {
					t.Fatalf("step %d: Remove(%d) disagrees with the test's bookkeeping", s.step, lp)
				}
				in[lp] = false
			case 6:
				if op&0x80 == 0 {
					s.min()
					continue
				}
				// Pop and push again for the LP of the least entry, with a new time.
				k, least, ok := ref.Min()
				if !ok {
					continue
				}
				nk := event.KeyOf(&event.Event{RecvTime: fuzzTime(next()), SendTime: k.RecvTime, Sender: least, Seq: 1<<40 + seq})
				seq++
				s.replaceMin(nk, least)
			case 7:
				checkInvariants(t, s.qs, ref)
			}
			s.checkLen()
		}
		checkInvariants(t, s.qs, ref)
		s.drain()
	})
}

// TestSortBottom checks the ladder's Bottom sort against slices.SortFunc on random,
// sorted, reversed and equal-time inputs, also with the pdqsort fallback forced.
func TestSortBottom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 2, 3, 12, 13, 17, 50, 100, 1000, 5000} {
		for shape := range 4 {
			for _, depth := range []int{-1, 0, 1, 3} {
				a := make([]bentry, n)
				for i := range a {
					a[i] = bentry{k: event.Key{RecvTime: rnd.Float64(), SendTime: float64(rnd.IntN(3)), SeqSign: uint64(rnd.IntN(4))}, lp: event.LPID(i)}
					switch shape {
					case 1:
						a[i].k.RecvTime = float64(i)
					case 2:
						a[i].k.RecvTime = float64(n - i)
					case 3:
						a[i].k.RecvTime = 7 // ties on the whole key too: the LP id decides
					}
				}
				rnd.Shuffle(n, func(i, j int) {
					if shape == 0 || shape == 3 {
						a[i], a[j] = a[j], a[i]
					}
				})
				want := slices.Clone(a)
				slices.SortFunc(want, func(x, y bentry) int { return refCompare(qentry(x), qentry(y)) })
				if depth < 0 {
					sortBottom(a)
				} else {
					sortBottomDepth(a, depth)
				}
				require.Equal(t, want, a, "n=%d shape=%d depth=%d", n, shape, depth)
			}
		}
	}
}

// TestLessMatchesKeyLess checks the queues' comparison against event.KeyLess, with the
// LP id deciding only between equal keys, on keys that tie field by field.
func TestLessMatchesKeyLess(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 11))
	times := []float64{math.Inf(-1), -1, math.Copysign(0, -1), 0, 1, math.Inf(1)}
	key := func() event.Key {
		return event.Key{
			RecvTime: times[rnd.IntN(len(times))], SendTime: times[rnd.IntN(len(times))],
			Depth: uint32(rnd.IntN(2)), Sender: event.LPID(rnd.IntN(2)), SeqSign: uint64(rnd.IntN(2)),
		}
	}
	for range 200000 {
		a, b := key(), key()
		alp, blp := event.LPID(rnd.IntN(2)), event.LPID(rnd.IntN(2))
		want := event.KeyLess(&a, &b) || (!event.KeyLess(&b, &a) && alp < blp)
		require.Equal(t, want, less(&a, alp, &b, blp), "%+v/%d < %+v/%d", a, alp, b, blp)
	}
}
