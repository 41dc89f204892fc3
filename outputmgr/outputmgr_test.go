package outputmgr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

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

// key returns the key of a positive event at time t from LP sender with sequence number seq.
func key(t float64, sender uint32, seq uint64) event.Key {
	return event.Key{RecvTime: t, SendTime: t - 1, Sender: sender, SeqSign: seq<<1 | 1}
}

// fixed is a handler whose sends depend on the cause alone: the events listed in out[c]
// send to receiver 1 at c's time + 1 with Words[0] = the cause's time. A re-execution
// regenerates them exactly as long as the sequence numbers did not shift.
func fixed(out map[float64]int, dependsOnState map[float64]bool) handler {
	return func(s *senderState, c event.Key, emit func(event.Event)) {
		s.N++
		for i := range out[c.RecvTime] {
			e := event.Event{RecvTime: c.RecvTime + 1, Receiver: 1, Words: event.Words{uint64(c.RecvTime), uint64(i)}}
			if dependsOnState[c.RecvTime] {
				e.Words[2] = s.N
			}
			emit(e)
		}
	}
}

// scenario runs: process events at times 1..4 (one send each), then a straggler at 2.5.
func scenario(t *testing.T, lazy bool, stragglerSends int, dependsOnState map[float64]bool) *world {
	out := map[float64]int{1: 1, 2: 1, 3: 1, 4: 1, 2.5: stragglerSends}
	w := newWorld(t, lazy, fixed(out, dependsOnState))
	for i, tm := range []float64{1, 2, 3, 4} {
		w.arrive(key(tm, 1, uint64(i)))
	}
	for range 4 {
		w.process()
	}
	require.Equal(t, 4, w.sent)
	w.arrive(key(2.5, 2, 0))
	return w
}

func TestLazyRegeneratesAll(t *testing.T) {
	w := scenario(t, true, 0, nil)
	require.Equal(t, 2, w.l.Len(), "the outputs of the events at 3 and 4 are held")
	require.Len(t, w.recs, 2, "the sends of the events before the straggler are left")
	require.Equal(t, 4.0, w.l.MinRecvTime())
	w.runAll()
	w.check()
	require.Equal(t, 4, w.sent, "nothing sent again")
	require.Equal(t, 0, w.cancelled)
	require.Equal(t, 2, w.suppressed)
	require.Len(t, w.recs, 4, "the suppressed sends are recorded again")

	a := scenario(t, false, 0, nil)
	a.runAll()
	a.check()
	require.Equal(t, 2, a.cancelled, "aggressive cancellation cancels and resends")
	require.Equal(t, 6, a.sent)
}

func TestLazyRegeneratesNone(t *testing.T) {
	w := scenario(t, true, 1, nil) // the straggler's send shifts every later sequence number
	w.runAll()
	w.check()
	require.Equal(t, 2, w.cancelled)
	require.Equal(t, 4+1+2, w.sent)
	require.Equal(t, 0, w.suppressed)
}

func TestLazyRegeneratesSome(t *testing.T) {
	w := scenario(t, true, 0, map[float64]bool{3: true}) // the event at 3 sees the straggler
	w.runAll()
	w.check()
	require.Equal(t, 1, w.cancelled)
	require.Equal(t, 4+1, w.sent)
	require.Equal(t, 1, w.suppressed)
}

func TestLazySecondRollbackWhileHeld(t *testing.T) {
	for _, sends := range []int{0, 1} {
		out := map[float64]int{1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 3.5: 0, 1.5: sends}
		w := newWorld(t, true, fixed(out, nil))
		for i, tm := range []float64{1, 2, 3, 4, 5} {
			w.arrive(key(tm, 1, uint64(i)))
		}
		for range 5 {
			w.process()
		}
		w.arrive(key(3.5, 2, 0)) // holds the outputs of 4 and 5
		require.Equal(t, 3, w.l.Len())
		w.process() // 3.5 sends nothing
		w.process() // 4 regenerates its two
		require.Equal(t, 1, w.l.Len())
		require.Equal(t, 2, w.suppressed)
		w.arrive(key(1.5, 2, 1)) // second rollback: 5's output is still held
		require.Equal(t, 1+1+1+2, w.l.Len(), "outputs of 2, 3, 4 (recorded again) and 5 (still held)")
		w.runAll()
		w.check()
		if sends == 0 {
			require.Equal(t, 0, w.cancelled)
			require.Equal(t, 6, w.sent)
		} else {
			require.Equal(t, 5, w.cancelled, "each held output cancelled once")
			require.Equal(t, 6+1+5, w.sent)
		}
	}
}

func TestLazyAntiMessageForProcessedEvent(t *testing.T) {
	out := map[float64]int{1: 1, 2: 2, 3: 1}
	w := newWorld(t, true, fixed(out, nil))
	for i, tm := range []float64{1, 2, 3} {
		w.arrive(key(tm, 1, uint64(i)))
	}
	for range 3 {
		w.process()
	}
	w.antiProcessed(key(2, 1, 1)) // the outputs of 2 and 3 are held
	require.Equal(t, 2, w.cancelled, "2 will not be processed again: its outputs are cancelled at once")
	require.Equal(t, 1, w.l.Len())
	w.runAll() // 3 is processed again: its send's sequence number shifted, so it is resent
	w.check()
	require.Equal(t, 3, w.cancelled)
	require.Equal(t, 4+1, w.sent)
}

func TestLazyDrainsAnIdleLP(t *testing.T) {
	out := map[float64]int{1: 1, 2: 1}
	w := newWorld(t, true, fixed(out, nil))
	w.arrive(key(1, 1, 0))
	w.arrive(key(2, 1, 1))
	w.process()
	w.process()
	w.antiProcessed(key(1, 1, 0))
	w.antiPending(0) // 2's re-execution is cancelled too: nothing left to process
	require.Zero(t, w.l.Len())
	require.Equal(t, 2, w.cancelled)
	require.Empty(t, w.live)
}

func TestRegeneratedFirstTimeAndClashes(t *testing.T) {
	l := NewLazy()
	e := event.Event{RecvTime: 5, SendTime: 1, Seq: 7, Receiver: 2, Words: event.Words{1}}
	cancel, sup := l.Regenerated(key(1, 1, 0), &e, nil)
	require.False(t, sup, "nothing held: a first-time send goes out")
	require.Empty(t, cancel)

	c := key(1, 1, 0)
	other := e
	other.Seq = 8
	holdAll(l, c, e, other)
	require.Equal(t, 2, l.Len())

	// A different event: no match, sent, nothing cancelled.
	f := e
	f.Seq = 9
	cancel, sup = l.Regenerated(c, &f, nil)
	require.False(t, sup)
	require.Empty(t, cancel)
	// Same key and receiver, different Words: the held one must be cancelled first.
	g := e
	g.Words[0] = 2
	cancel, sup = l.Regenerated(c, &g, nil)
	require.False(t, sup)
	require.Equal(t, []event.Event{e}, cancel)
	require.Equal(t, 1, l.Len())
	// Identical content but another cause: cancelled and resent, per the definition.
	cancel, sup = l.Regenerated(key(1, 1, 5), &other, nil)
	require.False(t, sup)
	require.Equal(t, []event.Event{other}, cancel)
	require.Equal(t, 0, l.Len())
	require.Empty(t, l.Drain(nil), "nothing is cancelled twice")
	require.Equal(t, math.Inf(1), l.MinRecvTime())
}

func TestPayloadEquality(t *testing.T) {
	type pt struct{ X, Y int }
	same := [][2]any{{nil, nil}, {"a", "a"}, {3, 3}, {int64(3), int64(3)}, {uint64(3), uint64(3)},
		{2.5, 2.5}, {true, true}, {[]int{1, 2}, []int{1, 2}}, {&pt{1, 2}, &pt{1, 2}},
		{pt{1, 2}, pt{1, 2}}, {map[string]int{"a": 1}, map[string]int{"a": 1}}}
	differ := [][2]any{{nil, "a"}, {"a", nil}, {"a", "b"}, {3, int64(3)}, {3, 4}, {2.5, 3.5},
		{[]int{1}, []int{2}}, {&pt{1, 2}, &pt{2, 2}}, {pt{1, 2}, pt{1, 3}}, {uint64(1), uint64(2)},
		{true, false}, {int64(1), int64(2)}}
	for _, p := range same {
		require.True(t, payloadEqual(p[0], p[1]), "%#v %#v", p[0], p[1])
	}
	for _, p := range differ {
		require.False(t, payloadEqual(p[0], p[1]), "%#v %#v", p[0], p[1])
	}
	// Suppression compares payloads by value.
	l := NewLazy()
	c := key(1, 1, 0)
	e := event.Event{RecvTime: 2, SendTime: 1, Receiver: 3, Payload: []string{"x"}}
	holdAll(l, c, e)
	e2 := e
	e2.Payload = []string{"x"}
	_, sup := l.Regenerated(c, &e2, nil)
	require.True(t, sup)
}

// holdAll holds the outputs es, all of cause c.
func holdAll(l *Lazy, c event.Key, es ...event.Event) {
	l.Hold(len(es), func(j int) (event.Key, *event.Event) { return c, &es[j] })
}

func TestHoldPanicsOnDuplicateLiveOutputs(t *testing.T) {
	l := NewLazy()
	e := event.Event{RecvTime: 2, SendTime: 1, Receiver: 3}
	require.Panics(t, func() { holdAll(l, key(1, 1, 0), e, e) })
}

// mixed is the property tests' handler: each event sends 0, 1 or 2 events whose times,
// receivers and payloads depend on the cause, and some of whose Words and payloads depend
// on the state, with zero-delay sends among them.
func mixed(s *senderState, c event.Key, emit func(event.Event)) {
	s.N++
	s.H = mix(s.H ^ keyHash(c))
	hc := keyHash(c)
	for i := range hc % 3 {
		x := mix(hc + uint64(i))
		e := event.Event{RecvTime: c.RecvTime + float64(x%3), Receiver: uint32(1 + x>>8%3), Words: event.Words{x}}
		if x>>16%4 == 0 {
			e.Words[1] = s.N % 2
		}
		switch x >> 20 % 4 {
		case 1:
			e.Payload = fmt.Sprint(x % 5)
		case 2:
			e.Payload = []int{int(x % 3), int(s.H % 2)}
		}
		emit(e)
	}
}

// randomRun drives a world with random arrivals, stragglers, anti-messages (for processed
// and pending events), re-arrivals of cancelled events and GVT advances, then checks that
// the messages left live are exactly those a run without rollbacks sends.
func randomRun(t *testing.T, lazy bool, seed uint64, steps int) *world {
	r := rand.New(rand.NewPCG(seed, 99))
	w := newWorld(t, lazy, mixed)
	seq := uint64(0)
	var gone []event.Key // cancelled events that may arrive again
	newKey := func() event.Key {
		lo := math.Ceil(w.gvt)
		hi := lo
		if last, ok := w.last(); ok {
			hi = max(hi, last.RecvTime)
		}
		if r.IntN(6) != 0 {
			lo = max(lo, hi-2)
		}
		rt := lo + float64(r.IntN(int(hi-lo)+4))
		seq++
		return event.Key{RecvTime: rt, SendTime: rt - float64(r.IntN(2)), Depth: uint32(r.IntN(2)),
			Sender: uint32(1 + r.IntN(3)), SeqSign: seq<<1 | 1}
	}
	for range steps {
		switch x := r.IntN(20); {
		case x < 9:
			if len(w.pending) > 0 {
				w.process()
			}
		case x < 14:
			w.arrive(newKey())
		case x < 15: // anti-message for a processed event
			var cands []event.Key
			for _, k := range w.proc {
				if k.RecvTime >= w.gvt {
					cands = append(cands, k)
				}
			}
			if len(cands) > 0 {
				k := cands[r.IntN(len(cands))]
				w.antiProcessed(k)
				gone = append(gone, k)
			}
		case x < 16: // anti-message for a pending event
			if len(w.pending) > 0 {
				i := r.IntN(len(w.pending))
				gone = append(gone, w.pending[i])
				w.antiPending(i)
			}
		case x < 18: // a cancelled event is sent again, identical
			if len(gone) > 0 {
				i := r.IntN(len(gone))
				if k := gone[i]; k.RecvTime >= w.gvt {
					gone = slices.Delete(gone, i, i+1)
					w.arrive(k)
				}
			}
		default:
			upper := w.gvt + 3
			if last, ok := w.last(); ok {
				upper = max(upper, last.RecvTime+1)
			}
			upper = min(upper, w.maxGVT())
			if upper > w.gvt {
				w.fossil(w.gvt + r.Float64()*(upper-w.gvt))
			}
		}
	}
	w.runAll()
	w.check()
	return w
}

func TestRandomCancellation(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		name := "aggressive"
		if lazy {
			name = "lazy"
		}
		t.Run(name, func(t *testing.T) {
			sent, cancelled, suppressed := 0, 0, 0
			for seed := range uint64(12) {
				w := randomRun(t, lazy, seed, 3000)
				sent += w.sent
				cancelled += w.cancelled
				suppressed += w.suppressed
			}
			t.Logf("%s: sent %d, cancelled %d, suppressed %d", name, sent, cancelled, suppressed)
			require.Greater(t, cancelled, 500)
			if lazy {
				require.Greater(t, suppressed, 500)
			}
		})
	}
}

// BenchmarkLazyReexecution: hold the outputs of 16 events (2 sends each), re-execute them
// regenerating every send.
func BenchmarkLazyReexecution(b *testing.B) {
	l := NewLazy()
	var evs [16][2]event.Event
	for i := range evs {
		for j := range evs[i] {
			evs[i][j] = event.Event{RecvTime: float64(i + 1), SendTime: float64(i), Seq: uint64(2*i + j), Receiver: 1}
		}
	}
	var cancel []event.Event
	b.ReportAllocs()
	for b.Loop() {
		l.Hold(2*len(evs), func(j int) (event.Key, *event.Event) {
			return key(float64(j/2), 1, uint64(j/2)), &evs[j/2][j%2]
		})
		for i := range evs {
			c := key(float64(i), 1, uint64(i))
			for j := range evs[i] {
				cancel, _ = l.Regenerated(c, &evs[i][j], cancel[:0])
			}
			cancel = l.Expire(key(float64(i+1), 1, uint64(i+1)), cancel[:0])
		}
	}
}
