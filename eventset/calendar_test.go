package eventset

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

// calendarWorkload drives a Calendar like a sequential dispatcher: pop the least event,
// push a few successors no earlier than it, and compare every pop with a sorted reference.
func calendarWorkload(t *testing.T, seed uint64, initial, steps int, delay func(r *rand.Rand) float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	var c Calendar
	var ref []event.Event
	seq := uint64(0)
	push := func(at, now float64, depth uint32) {
		e := event.Event{RecvTime: at, SendTime: now, Sender: uint32(r.IntN(4)), Seq: seq,
			Receiver: uint32(r.IntN(100)), Words: event.Words{seq}}
		if at == now {
			e.Depth = depth + 1
		}
		if seq%3 == 0 { // payload values travel beside the stored records
			e.Payload = strconv.FormatUint(seq, 10)
		}
		seq++
		c.Push(&e)
		ref = append(ref, e)
	}
	for range initial {
		push(delay(r), 0, 0)
	}
	for step := range steps {
		slices.SortFunc(ref, func(a, b event.Event) int { return event.Compare(&a, &b) })
		if len(ref) == 0 {
			require.Nil(t, c.Pop())
			return
		}
		p := c.Pop()
		require.NotNil(t, p, "step %d", step)
		got := *p
		require.Equal(t, ref[0], got, "seed %d step %d", seed, step)
		ref = ref[1:]
		require.Equal(t, len(ref), c.Len())
		if math.IsInf(got.RecvTime, 1) {
			continue
		}
		for range r.IntN(3) { // 0, 1 or 2 successors: the population drifts
			push(got.RecvTime+delay(r), got.RecvTime, got.Depth)
		}
	}
}

func TestCalendarExponentialDelays(t *testing.T) {
	for seed := range uint64(4) {
		calendarWorkload(t, seed, 500, 4000, func(r *rand.Rand) float64 { return r.ExpFloat64() })
	}
}

func TestCalendarIntegerTimesWithZeroDelays(t *testing.T) {
	for seed := range uint64(4) {
		calendarWorkload(t, seed, 300, 4000, func(r *rand.Rand) float64 { return float64(r.IntN(4)) })
	}
}

func TestCalendarSparseFarFutureAndInfinity(t *testing.T) {
	calendarWorkload(t, 1, 50, 2000, func(r *rand.Rand) float64 {
		switch r.IntN(20) {
		case 0:
			return 1e6 * r.Float64() // far beyond the window
		case 1:
			return math.Inf(1)
		}
		return r.Float64() * 0.01
	})
}

func TestCalendarDensityDrift(t *testing.T) {
	// Delays shrink a thousandfold halfway through: the calendar must retune and stay exact.
	n := 0
	calendarWorkload(t, 3, 400, 6000, func(r *rand.Rand) float64 {
		n++
		if n > 3000 {
			return r.ExpFloat64() * 0.001
		}
		return r.ExpFloat64() * 10
	})
}

func TestCalendarEmptyAndPeak(t *testing.T) {
	var c Calendar
	require.Nil(t, c.Pop())
	for i := range 10 {
		c.Push(&event.Event{RecvTime: float64(10 - i), Seq: uint64(i)})
	}
	require.Equal(t, 10, c.Peak())
	for i := range 10 {
		e := c.Pop()
		require.EqualValues(t, i+1, e.RecvTime)
	}
	require.Nil(t, c.Pop())
	require.Equal(t, 0, c.Len())
}

// BenchmarkCalendarHold is the hold model: pop the least event, push one successor.
func BenchmarkCalendarHold(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			var c Calendar
			for i := range n {
				c.Push(&event.Event{RecvTime: r.ExpFloat64(), Seq: uint64(i)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				e := *c.Pop()
				e.SendTime = e.RecvTime
				e.RecvTime += r.ExpFloat64()
				c.Push(&e)
			}
		})
	}
}

func TestSortSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 2, 3, 15, 16, 17, 100, 1000, 5000} {
		for _, pattern := range []string{"random", "sorted", "reversed", "ties", "nearly"} {
			s := make([]slot, n)
			for i := range s {
				var e event.Event
				switch pattern {
				case "random":
					e.RecvTime = r.Float64()
				case "sorted":
					e.RecvTime = float64(i)
				case "reversed":
					e.RecvTime = float64(n - i)
				case "ties":
					e.RecvTime = float64(r.IntN(3))
					e.Sender = uint32(r.IntN(2))
				case "nearly": // sorted by send time, shuffled within each send time
					e.RecvTime = 100
					e.SendTime = float64(i / 8)
					e.Sender = uint32(r.IntN(50))
				}
				e.Seq = uint64(i)
				r := recordOf(&e)
				s[i] = slot{r.recvTime, &r}
			}
			sortSlots(s)
			require.True(t, slices.IsSortedFunc(s, func(a, b slot) int {
				if event.KeyLess(ptr(a.e.key()), ptr(b.e.key())) {
					return -1
				}
				return 1
			}), "%d %s", n, pattern)
		}
	}
	// The heapsort fallback on its own.
	s := make([]slot, 300)
	for i := range s {
		e := event.Event{RecvTime: r.Float64(), Seq: uint64(i)}
		r := recordOf(&e)
		s[i] = slot{r.recvTime, &r}
	}
	heapSlots(s)
	for i := 1; i < len(s); i++ {
		require.True(t, sless(&s[i-1], &s[i]))
	}
}

func recordOf(e *event.Event) record {
	return record{recvTime: e.RecvTime, sendTime: e.SendTime, seq: e.Seq, depth: e.Depth,
		sender: e.Sender, receiver: e.Receiver, anti: e.Anti}
}

func ptr[T any](v T) *T { return &v }
