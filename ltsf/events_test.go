package ltsf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warpedgo/warped/event"
)

// refEvent is one event of the reference: the event and its push stamp.
type refEvent struct {
	ev    event.Event
	stamp uint64
}

// refEvents is the reference Events: a slice searched in full for the least event.
type refEvents struct {
	a      []refEvent
	pushes uint64
}

func (r *refEvents) push(e event.Event) {
	r.pushes++
	r.a = append(r.a, refEvent{e, r.pushes})
}

// least returns the index of the least event held (the first pushed of equal ones), or -1.
func (r *refEvents) least() int {
	m := -1
	for i := range r.a {
		if m < 0 || event.Less(&r.a[i].ev, &r.a[m].ev) {
			m = i
		}
	}
	return m
}

// take checks that got, popped with stamp, is one of the least events held (equal events
// may come in either order) with its contents, and removes it.
func (r *refEvents) take(t *testing.T, got *event.Event, stamp uint64, what string) {
	t.Helper()
	m := r.least()
	require.GreaterOrEqual(t, m, 0, what)
	require.NotNil(t, got, what)
	require.Zero(t, event.Compare(got, &r.a[m].ev), "%s: got %+v, want %+v", what, *got, r.a[m].ev)
	r.remove(t, got, stamp, what)
}

// remove checks that got, taken with stamp, is the event of that stamp, and removes it.
func (r *refEvents) remove(t *testing.T, got *event.Event, stamp uint64, what string) {
	t.Helper()
	for i := range r.a {
		if r.a[i].stamp == stamp {
			require.Equal(t, r.a[i].ev, *got, "%s: the event of stamp %d", what, stamp)
			r.a = append(r.a[:i], r.a[i+1:]...)
			return
		}
	}
	t.Fatalf("%s: popped stamp %d is not held", what, stamp)
}

// genEvent draws an event for one of numLPs LPs: integer times (many ties) or times after
// now (stragglers and zero delays among them), and keys that repeat (a re-send after an
// anti-message has its twin's key).
func genEvent(rnd *rand.Rand, numLPs int, now float64, ties bool, id uint64) event.Event {
	t := now + rnd.ExpFloat64()
	switch {
	case ties:
		t = float64(rnd.IntN(6))
	case rnd.IntN(8) == 0:
		t = now - rnd.Float64()
	case rnd.IntN(8) == 0:
		t = now
	}
	return event.Event{RecvTime: t, SendTime: float64(rnd.IntN(3)), Depth: uint32(rnd.IntN(2)),
		Sender: event.LPID(rnd.IntN(4)), Seq: uint64(rnd.IntN(6)), Anti: rnd.IntN(4) == 0,
		Receiver: event.LPID(rnd.IntN(numLPs)), Words: event.Words{id}, Payload: id}
}

// TestEventsProperty runs random pushes, pops, bounded pops and bulk takes on every queue
// type (NewEvents) beside the reference, and checks every answer: the least event (its
// contents and stamp), Min, MinKey, Len, Peak and Stamp.
func TestEventsProperty(t *testing.T) {
	for _, typ := range QueueTypes() {
		for _, ties := range []bool{false, true} {
			for _, numLPs := range []int{1, 7, 64} {
				t.Run(fmt.Sprintf("%s/ties%v/lps%d", typ, ties, numLPs), func(t *testing.T) {
					q, err := NewEvents(typ, numLPs)
					require.NoError(t, err)
					runEventsProperty(t, q, numLPs, ties, uint64(numLPs))
				})
			}
		}
	}
}

// runEventsProperty checks q, an empty queue for numLPs LPs, against the reference (see
// TestEventsProperty), with times that tie often or seldom, from seed.
func runEventsProperty(t *testing.T, q Events, numLPs int, ties bool, seed uint64) {
	var ref refEvents
	rnd := rand.New(rand.NewPCG(seed, 29))
	now, peak := 0.0, 0
	var bulk []event.Event
	var stamps []uint64
	steps := 4000
	if raceEnabled {
		steps = 800 // the queues are not concurrent: the race detector only slows this
	}
	for step := range steps {
		what := fmt.Sprintf("step %d", step)
		switch op := rnd.IntN(10); {
		case op < 5 || len(ref.a) == 0:
			e := genEvent(rnd, numLPs, now, ties, uint64(step))
			if rnd.IntN(2) == 0 {
				q.Push(&e)
			} else {
				e.Anti = false
				q.PushSend(e.RecvTime, e.SendTime, e.Seq, e.Depth, e.Sender, e.Receiver, e.Words, e.Payload)
			}
			ref.push(e)
			peak = max(peak, len(ref.a))
			require.Equal(t, ref.pushes, q.Stamp(), what)
		case op < 7:
			e := q.Pop()
			ref.take(t, e, q.PoppedStamp(), what+": Pop")
			now = e.RecvTime
		case op < 9:
			m := ref.least()
			bound := ref.a[m].ev.RecvTime
			if rnd.IntN(2) == 0 { // at the least time: nothing is below it
				require.Nil(t, q.PopBefore(bound), what)
				continue
			}
			bound += 0.5
			e := q.PopBefore(bound)
			ref.take(t, e, q.PoppedStamp(), what+": PopBefore")
			now = e.RecvTime
		default:
			most, until := 1+rnd.IntN(64), now+2*rnd.Float64()
			bulk, stamps = q.TakeBucket(bulk[:0], stamps[:0], most, until)
			require.Len(t, stamps, len(bulk), what)
			require.LessOrEqual(t, len(bulk), most, what)
			for i := range bulk {
				require.Less(t, bulk[i].RecvTime, until, what)
				ref.remove(t, &bulk[i], stamps[i], what+": TakeBucket")
			}
			if m := ref.least(); m >= 0 { // every event taken sorts before every one left
				for i := range bulk {
					require.True(t, event.Less(&bulk[i], &ref.a[m].ev), what)
				}
			}
		}
		require.Equal(t, len(ref.a), q.Len(), what)
		require.Equal(t, peak, q.Peak(), what)
		tm, ok := q.Min()
		mk, kok := q.MinKey()
		if m := ref.least(); m >= 0 {
			require.True(t, ok && kok, what)
			require.Equal(t, ref.a[m].ev.RecvTime, tm, what)
			require.Equal(t, event.KeyOf(&ref.a[m].ev), mk, what)
		} else {
			require.False(t, ok || kok, what)
		}
	}
	for len(ref.a) > 0 {
		e := q.Pop()
		ref.take(t, e, q.PoppedStamp(), "drain")
	}
	require.Nil(t, q.Pop())
	require.Nil(t, q.PopBefore(1e300))
}

// TestNewEventsRejectsUnknownTypes checks the one-line error that lists the valid types.
func TestNewEventsRejectsUnknownTypes(t *testing.T) {
	_, err := NewEvents("fifo", 4)
	require.EqualError(t, err, `unknown queue type "fifo" (want calendar, heap, splay, ladder or parallel-heap)`)
	require.Equal(t, []string{"calendar", "heap", "splay", "ladder", "parallel-heap"}, QueueTypes())
}

// BenchmarkEvents is the hold model of a worker's schedule queue, for every queue type:
// n LPs with m pending events each; each operation pops the least event and sends one to
// a random LP at the popped time plus an exponential increment (PHOLD's pattern). ns/op
// is per event.
func BenchmarkEvents(b *testing.B) {
	inc := holdIncrements()
	mask := len(inc) - 1
	for _, typ := range QueueTypes() {
		for _, n := range []int{1 << 10, 1 << 14} {
			b.Run(fmt.Sprintf("%s/lps=%d", typ, n), func(b *testing.B) {
				q, err := NewEvents(typ, n)
				if err != nil {
					b.Fatal(err)
				}
				rnd := rand.New(rand.NewPCG(1, 2))
				var seq uint64
				for lp := range n {
					for range 2 {
						seq++
						q.PushSend(inc[int(seq)&mask], 0, seq, 0, 0, uint32(lp), event.Words{}, nil)
					}
				}
				hold := func() {
					e := q.Pop()
					seq++
					q.PushSend(e.RecvTime+inc[int(seq)&mask], e.RecvTime, seq, 0, e.Receiver, uint32(rnd.IntN(n)), event.Words{}, nil)
				}
				for range 4 * n { // to the steady state
					hold()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					hold()
				}
			})
		}
	}
}
