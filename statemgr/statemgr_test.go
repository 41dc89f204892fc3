package statemgr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/rng"
)

// toyState is the state of the toy LP: how many events it processed and a running hash of
// their keys, so that any difference in the processed sequence shows.
type toyState struct {
	Count uint64
	Hash  uint64
}

// toy is a Plain-like LP: Snapshot reuses dst when given one.
type toy struct {
	S      toyState
	allocs int // Snapshot calls that allocated
}

func (t *toy) Snapshot(dst any) any {
	d, _ := dst.(*toyState)
	if d == nil {
		d = new(toyState)
		t.allocs++
	}
	*d = t.S
	return d
}

func (t *toy) Restore(src any) { t.S = *src.(*toyState) }

func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

func keyHash(k event.Key) uint64 {
	h := mix(math.Float64bits(k.RecvTime))
	h = mix(h ^ math.Float64bits(k.SendTime))
	h = mix(h ^ uint64(k.Depth)<<32 ^ uint64(k.Sender))
	return mix(h ^ k.SeqSign)
}

// step is the toy handler: it updates the model state and the kernel core.
func step(s *toyState, c *Core, k event.Key) {
	s.Count++
	s.Hash = mix(s.Hash*31 ^ keyHash(k))
	c.RNG.Next()
	c.Seq += 1 + uint64(k.Sender%3)
}

func initialCore() Core { return Core{RNG: rng.New(42, 7), Seq: 0} }

// replay recomputes from scratch the state after processing keys in order.
func replay(keys ...[]event.Key) (toyState, Core) {
	var s toyState
	c := initialCore()
	for _, ks := range keys {
		for _, k := range ks {
			step(&s, &c, k)
		}
	}
	return s, c
}

func keyCmp(a, b event.Key) int {
	switch {
	case event.KeyLess(&a, &b):
		return -1
	case event.KeyLess(&b, &a):
		return 1
	}
	return 0
}

// refState is the reference model of one saved state.
type refState struct {
	key     event.Key
	initial bool
}

func (s refState) before(k event.Key) bool { return s.initial || event.KeyLess(&s.key, &k) }

// harness drives one Queue like a time-warp worker drives an LP, and checks it against a
// reference that replays the processed keys from scratch.
type harness struct {
	t         *testing.T
	r         *rand.Rand
	period    int
	q         *Queue
	lp        toy
	core      Core
	committed []event.Key // processed and dropped by fossil collection
	processed []event.Key // processed, still needed for coast forward; increasing
	pending   []event.Key // increasing
	saved     []refState  // reference model of the queue
	since     int
	gvt       float64
	seq       uint64
	rollbacks int
	coasted   int
}

func newHarness(t *testing.T, period int, seed uint64) *harness {
	q, err := NewQueue(period)
	require.NoError(t, err)
	h := &harness{t: t, r: rand.New(rand.NewPCG(seed, uint64(period))), period: period, q: q, core: initialCore()}
	q.Init(&h.lp, h.core)
	h.saved = []refState{{initial: true}}
	return h
}

func (h *harness) lastProcessed() (event.Key, bool) {
	switch {
	case len(h.processed) > 0:
		return h.processed[len(h.processed)-1], true
	case len(h.committed) > 0:
		return h.committed[len(h.committed)-1], true
	}
	return event.Key{}, false
}

// newKey returns a fresh key with integer times from a little before the last processed
// event (sometimes up to 12 before, never below GVT) to a little past it, so that ties on
// receive and send time are common.
func (h *harness) newKey() event.Key {
	lo := math.Ceil(h.gvt)
	hi := lo
	if last, ok := h.lastProcessed(); ok && last.RecvTime > hi {
		hi = last.RecvTime
	}
	if h.r.IntN(8) != 0 { // mostly near the last processed event, sometimes further back
		lo = max(lo, hi-2)
	} else {
		lo = max(lo, hi-12)
	}
	rt := lo + float64(h.r.IntN(int(hi-lo)+4))
	h.seq++
	return event.Key{RecvTime: rt, SendTime: rt - float64(h.r.IntN(2)), Depth: uint32(h.r.IntN(2)),
		Sender: uint32(h.r.IntN(3)), SeqSign: h.seq<<1 | 1}
}

// exec processes k (first time, re-execution or coast forward) and checks the saving policy.
func (h *harness) exec(k event.Key) {
	step(&h.lp.S, &h.core, k)
	h.since++
	saved := h.q.AfterEvent(k, &h.lp, h.core)
	if saved != (h.since == h.period) { // plain comparisons on the hot paths: require is slow
		h.t.Fatalf("period %d: AfterEvent saved=%v after %d events since the last save", h.period, saved, h.since)
	}
	if saved {
		h.since = 0
		h.saved = append(h.saved, refState{key: k})
	}
	h.processed = append(h.processed, k)
}

func (h *harness) process() {
	if len(h.pending) == 0 {
		return
	}
	k := h.pending[0]
	h.pending = h.pending[1:]
	h.exec(k)
	h.checkQueue()
}

// rollback undoes every processed event with key >= k, coasts forward, and checks that the
// LP ends in exactly the state after the last processed event below k.
func (h *harness) rollback(k event.Key) []event.Key {
	h.rollbacks++
	// Reference: the latest saved state before k.
	want := len(h.saved) - 1
	for !h.saved[want].before(k) {
		want--
	}
	r, ok := h.q.Rollback(k, &h.lp, &h.core)
	require.Equal(h.t, !h.saved[want].initial, ok)
	if ok {
		require.Equal(h.t, h.saved[want].key, r)
	}
	h.saved = h.saved[:want+1]
	h.since = 0
	// The restored state is exactly the state after r.
	cut := 0 // processed[:cut] are at or below r
	if ok {
		i, found := slices.BinarySearchFunc(h.processed, r, keyCmp)
		if found {
			cut = i + 1
		} else { // the oldest state: its event is the last committed one
			require.NotEmpty(h.t, h.committed)
			require.Equal(h.t, h.committed[len(h.committed)-1], r, "restored key is not a processed event")
		}
	} else {
		require.Empty(h.t, h.committed, "rolled back to the initial state after committing events")
	}
	if s, c := replay(h.committed, h.processed[:cut]); s != h.lp.S || c != h.core {
		h.t.Fatalf("Rollback(%+v) restored %+v %+v, want %+v %+v", k, h.lp.S, h.core, s, c)
	}
	// Coast forward over the processed events in (r, k).
	end, _ := slices.BinarySearchFunc(h.processed, k, keyCmp)
	undone := slices.Clone(h.processed[end:])
	coast := slices.Clone(h.processed[cut:end])
	if len(coast) >= h.period {
		h.t.Fatalf("coast forward over %d events with period %d", len(coast), h.period)
	}
	h.processed = h.processed[:cut]
	for _, e := range coast {
		h.exec(e)
		h.coasted++
	}
	if s, c := replay(h.committed, h.processed); s != h.lp.S || c != h.core {
		h.t.Fatalf("after coast forward to %+v: %+v %+v, want %+v %+v", k, h.lp.S, h.core, s, c)
	}
	h.checkQueue()
	return undone
}

// requeue inserts keys into the pending events.
func (h *harness) requeue(keys []event.Key) {
	for _, k := range keys {
		i, _ := slices.BinarySearchFunc(h.pending, k, keyCmp)
		h.pending = slices.Insert(h.pending, i, k)
	}
}

// arrive delivers a new event, a straggler when it is below the last processed one.
func (h *harness) arrive() {
	k := h.newKey()
	if last, ok := h.lastProcessed(); ok && event.KeyLess(&k, &last) {
		h.requeue(h.rollback(k))
	}
	h.requeue([]event.Key{k})
}

// anti: cancel a processed event at or above GVT.
func (h *harness) anti() {
	var cands []int
	for i, k := range h.processed {
		if k.RecvTime >= h.gvt {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return
	}
	k := h.processed[cands[h.r.IntN(len(cands))]]
	undone := h.rollback(k)
	require.Equal(h.t, k, undone[0])
	h.requeue(undone[1:])
}

// advanceGVT moves GVT forward (never past the earliest pending event) and fossil collects.
func (h *harness) advanceGVT() {
	upper := h.gvt + 3
	if last, ok := h.lastProcessed(); ok {
		upper = max(upper, last.RecvTime+1)
	}
	if len(h.pending) > 0 {
		upper = min(upper, h.pending[0].RecvTime)
	}
	if upper <= h.gvt {
		return
	}
	gvt := h.gvt + h.r.Float64()*(upper-h.gvt)
	if h.r.IntN(2) == 0 {
		gvt = math.Floor(gvt) // integer GVTs tie with event times
		if gvt < h.gvt {
			gvt = h.gvt
		}
	}
	// The states a rollback to any key at or above gvt needs, before collection.
	var probes []event.Key
	for range 8 {
		probes = append(probes, h.newKeyAbove(gvt))
	}
	for _, k := range h.processed {
		if k.RecvTime >= gvt {
			probes = append(probes, k)
		}
	}
	needed := make([]refState, len(probes))
	for i, k := range probes {
		j := len(h.saved) - 1
		for !h.saved[j].before(k) {
			j--
		}
		needed[i] = h.saved[j]
	}
	h.gvt = gvt
	h.q.FossilCollect(gvt)
	// Reference: keep the latest state below gvt and everything after it.
	keep := 0
	for keep+1 < len(h.saved) && h.saved[keep+1].key.RecvTime < gvt {
		keep++
	}
	h.saved = h.saved[keep:]
	h.checkQueue()
	for i, n := range needed {
		require.True(h.t, slices.Contains(h.saved, n), "state %v needed for a rollback to %v was collected", n, probes[i])
	}
	// The length is bounded: one state below gvt, and at most one per period events above.
	above := 0
	for _, k := range h.processed {
		if k.RecvTime >= gvt {
			above++
		}
	}
	require.LessOrEqual(h.t, h.q.Len(), 1+(above+h.period-1)/h.period)
	// Processed events at or below the oldest state are committed.
	if old, ok := h.q.Oldest(); ok {
		if n, found := slices.BinarySearchFunc(h.processed, old, keyCmp); found {
			h.committed = append(h.committed, h.processed[:n+1]...)
			h.processed = slices.Clone(h.processed[n+1:])
		} else { // committed at an earlier GVT
			require.Equal(h.t, h.committed[len(h.committed)-1], old)
		}
	}
}

func (h *harness) newKeyAbove(gvt float64) event.Key {
	k := h.newKey()
	k.RecvTime = max(k.RecvTime, math.Ceil(gvt))
	k.SendTime = min(k.SendTime, k.RecvTime)
	return k
}

// checkQueue compares the queue's states with the reference, key for key.
func (h *harness) checkQueue() {
	if len(h.saved) != h.q.Len() {
		h.t.Fatalf("queue holds %d states, want %d", h.q.Len(), len(h.saved))
	}
	for i, s := range h.saved {
		if e := h.q.at(i); s.initial != e.initial || !s.initial && s.key != e.key {
			h.t.Fatalf("state %d: initial %v key %+v, want initial %v key %+v", i, e.initial, e.key, s.initial, s.key)
		}
	}
}

func TestRandomRollbacksAgainstReplay(t *testing.T) {
	for _, period := range []int{1, 2, 3, 7, 32} {
		t.Run(fmt.Sprintf("period%d", period), func(t *testing.T) {
			for seed := range uint64(4) {
				h := newHarness(t, period, seed)
				for range 2500 {
					switch x := h.r.IntN(20); {
					case x < 10:
						h.process()
					case x < 15:
						h.arrive()
					case x < 16:
						h.anti()
					default:
						h.advanceGVT()
					}
				}
				for len(h.pending) > 0 {
					h.process()
				}
				s, c := replay(h.committed, h.processed)
				require.Equal(t, s, h.lp.S)
				require.Equal(t, c, h.core)
				require.Greater(t, h.rollbacks, 100)
				if period > 1 {
					require.Greater(t, h.coasted, 0)
				}
			}
		})
	}
}

func TestNewQueueRejectsBadPeriod(t *testing.T) {
	for _, p := range []int{0, -3} {
		_, err := NewQueue(p)
		require.EqualError(t, err, fmt.Sprintf("state-saving period must be at least 1, got %d", p))
	}
	q, err := NewQueue(4)
	require.NoError(t, err)
	require.Equal(t, 4, q.Period())
}

func key(t float64, seq uint64) event.Key {
	return event.Key{RecvTime: t, SendTime: t, SeqSign: seq<<1 | 1}
}

func TestRollbackToInitialAndPanics(t *testing.T) {
	q, _ := NewQueue(1)
	var lp toy
	require.Panics(t, func() { q.AfterEvent(key(1, 1), &lp, Core{}) })
	q.Init(&lp, Core{Seq: 5})
	_, ok := q.Oldest()
	require.False(t, ok)
	lp.S.Count = 1
	require.True(t, q.AfterEvent(key(1, 1), &lp, Core{Seq: 6}))
	lp.S.Count = 2
	require.True(t, q.AfterEvent(key(2, 2), &lp, Core{Seq: 7}))
	require.Panics(t, func() { q.AfterEvent(key(2, 2), &lp, Core{}) }, "keys must increase")
	// An anti-message for the event at time 2 rolls back to the state after time 1.
	var c Core
	r, ok := q.Rollback(key(2, 2), &lp, &c)
	require.True(t, ok)
	require.Equal(t, key(1, 1), r)
	require.Equal(t, uint64(1), lp.S.Count)
	require.Equal(t, uint64(6), c.Seq)
	// A straggler before everything restores the initial state.
	_, ok = q.Rollback(key(0.5, 9), &lp, &c)
	require.False(t, ok)
	require.Equal(t, uint64(0), lp.S.Count)
	require.Equal(t, uint64(5), c.Seq)
	require.Equal(t, 1, q.Len())
	// After fossil collection past a state, rolling back below it is a kernel bug.
	lp.S.Count = 1
	q.AfterEvent(key(1, 3), &lp, Core{})
	lp.S.Count = 2
	q.AfterEvent(key(3, 4), &lp, Core{})
	q.FossilCollect(2)
	require.Equal(t, 2, q.Len())
	old, ok := q.Oldest()
	require.True(t, ok)
	require.Equal(t, key(1, 3), old)
	require.Panics(t, func() { q.Rollback(key(1, 3), &lp, &c) })
	r, _ = q.Rollback(key(2, 9), &lp, &c)
	require.Equal(t, key(1, 3), r)
}

// TestAntiKeyRollsBackLikeItsTwin: the anti-message's key sorts just before its twin's, so a
// rollback to either restores the same state.
func TestAntiKeyRollsBackLikeItsTwin(t *testing.T) {
	pos := event.Event{RecvTime: 3, SendTime: 1, Seq: 4, Sender: 2}
	neg := pos
	neg.Anti = true
	for _, k := range []event.Key{event.KeyOf(&pos), event.KeyOf(&neg)} {
		q, _ := NewQueue(1)
		var lp toy
		q.Init(&lp, Core{})
		lp.S.Count = 1
		q.AfterEvent(key(2, 1), &lp, Core{})
		lp.S.Count = 2
		q.AfterEvent(event.KeyOf(&pos), &lp, Core{})
		var c Core
		r, ok := q.Rollback(k, &lp, &c)
		require.True(t, ok)
		require.Equal(t, key(2, 1), r)
		require.Equal(t, uint64(1), lp.S.Count)
	}
}

// steady runs n events of a Plain-like LP with period-1 saving, a rollback of a few events
// every 16 and fossil collection trailing 64 time units behind.
func steady(q *Queue, lp *toy, core *Core, t0 *float64, n int) {
	for range n {
		*t0++
		k := key(*t0, uint64(*t0))
		step(&lp.S, core, k)
		q.AfterEvent(k, lp, *core)
		if int(*t0)%16 == 0 {
			q.Rollback(key(*t0-3.5, 0), lp, core)
			*t0 -= 4
		}
		q.FossilCollect(*t0 - 64)
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	q, _ := NewQueue(1)
	var lp toy
	core := initialCore()
	q.Init(&lp, core)
	t0 := 0.0
	steady(q, &lp, &core, &t0, 1000)
	before := lp.allocs
	allocs := testing.AllocsPerRun(50, func() { steady(q, &lp, &core, &t0, 100) })
	require.Zero(t, allocs)
	require.Equal(t, before, lp.allocs, "snapshot values are recycled")
	require.LessOrEqual(t, q.Len(), 66)
}

func BenchmarkSavePeriod1(b *testing.B) {
	q, _ := NewQueue(1)
	var lp toy
	var core Core
	q.Init(&lp, core)
	t0 := 0.0
	b.ReportAllocs()
	for b.Loop() {
		t0++
		k := key(t0, uint64(t0))
		lp.S.Count++
		q.AfterEvent(k, &lp, core)
		q.FossilCollect(t0 - 64)
	}
}

func BenchmarkSavePeriod1Rollback(b *testing.B) {
	q, _ := NewQueue(1)
	var lp toy
	core := initialCore()
	q.Init(&lp, core)
	t0 := 0.0
	b.ReportAllocs()
	for b.Loop() {
		steady(q, &lp, &core, &t0, 1)
	}
}

// TestSave: Save saves at once whatever the period, restarts the count, refuses a key
// already saved, panics on a key below the latest saved one, and lets fossil collection
// drop everything before it.
func TestSave(t *testing.T) {
	q, _ := NewQueue(4)
	var lp toy
	require.Panics(t, func() { q.Save(key(1, 1), &lp, Core{}) }, "Save before Init")
	q.Init(&lp, Core{})
	lp.S.Count = 1
	require.False(t, q.AfterEvent(key(1, 1), &lp, Core{Seq: 1}))
	require.True(t, q.Save(key(1, 1), &lp, Core{Seq: 1}))
	require.False(t, q.Save(key(1, 1), &lp, Core{Seq: 1}), "already saved")
	require.Panics(t, func() { q.Save(key(0.5, 1), &lp, Core{}) }, "below the latest saved key")
	require.Equal(t, 2, q.Len())
	// The count restarted at the save: the next save is four events later.
	for i := 2; i <= 4; i++ {
		require.False(t, q.AfterEvent(key(float64(i), uint64(i)), &lp, Core{}))
	}
	require.True(t, q.AfterEvent(key(5, 5), &lp, Core{}))
	q.FossilCollect(3)
	old, ok := q.Oldest()
	require.True(t, ok)
	require.Equal(t, key(1, 1), old)
	// Rolling back to just after the saved event restores it.
	lp.S.Count = 9
	var c Core
	r, ok := q.Rollback(key(2, 2), &lp, &c)
	require.True(t, ok)
	require.Equal(t, key(1, 1), r)
	require.Equal(t, uint64(1), lp.S.Count)
	require.Equal(t, uint64(1), c.Seq)
}
