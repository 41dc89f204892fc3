package eventset

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unsafe"

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
		c.PrefetchBucket(at) // hints: change nothing
		c.PrefetchPush(at)
		next, _ := c.nextRecord(at)
		c.Push(&e)
		if next != nil {
			require.Equal(t, e.Seq, next.seq, "nextRecord named another record than Push filled")
		}
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
		c.PrefetchUpcoming(1) // a hint: changes nothing
		next, known := c.Upcoming(0)
		p := c.Pop()
		require.NotNil(t, p, "step %d", step)
		if known {
			require.Equal(t, next, p.Receiver, "Upcoming(0) named another receiver than Pop's")
		}
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

// TestCalendarIntegerTimesMixedSends drives a Calendar with PCS's pattern: integer times,
// each handled event sending, as its receiver, one event a time unit later (a move-in) or
// one a few units later, so that a bucket holds many events of several send times and a
// run of hundreds sent one unit before, in the order of their causes, not of their
// senders (sortBucket's run-by-run sort). Pops must come out in ascending key order, and
// every pushed event must come out.
func TestCalendarIntegerTimesMixedSends(t *testing.T) {
	const lps, initial, steps = 1000, 2000, 30000
	r := rand.New(rand.NewPCG(31, 1))
	var c Calendar
	seq := uint64(0)
	push := func(at, now float64, sender uint32) {
		c.Push(&event.Event{RecvTime: at, SendTime: now, Sender: sender, Seq: seq,
			Receiver: uint32(r.IntN(lps))})
		seq++
	}
	for range initial {
		push(float64(r.IntN(5)), 0, uint32(r.IntN(lps)))
	}
	var last event.Key
	for step := range steps {
		p := c.Pop()
		require.NotNil(t, p, "step %d", step)
		k := event.KeyOf(p)
		require.True(t, step == 0 || event.KeyLess(&last, &k), "step %d: %v after %v", step, k, last)
		last = k
		delay := 1.0
		if r.IntN(2) == 0 {
			delay += float64(r.IntN(20))
		}
		push(p.RecvTime+delay, p.RecvTime, p.Receiver)
	}
	require.Equal(t, initial, c.Len(), "one push per pop")
	for c.Len() > 0 {
		p := c.Pop()
		k := event.KeyOf(p)
		require.True(t, event.KeyLess(&last, &k), "drain: %v after %v", k, last)
		last = k
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

// TestCalendarPushAfterOnlyInfinityLeft checks a tuning that finds only events at +Inf:
// it must not leave the calendar with its current bucket closed, or an event pushed at or
// before that bucket stays in it after being popped and comes out again at the next
// tuning.
func TestCalendarPushAfterOnlyInfinityLeft(t *testing.T) {
	var c Calendar
	for i := range 10 {
		c.Push(&event.Event{RecvTime: float64(i + 1), Seq: uint64(i)})
	}
	c.Push(&event.Event{RecvTime: math.Inf(1), Seq: 100})
	c.Push(&event.Event{RecvTime: math.Inf(1), Seq: 101})
	for i := range 10 {
		require.EqualValues(t, i+1, c.Pop().RecvTime)
	}
	require.EqualValues(t, 100, c.Pop().Seq) // +Inf
	c.Push(&event.Event{RecvTime: 0.5, Seq: 200})
	require.EqualValues(t, 200, c.Pop().Seq)
	c.Push(&event.Event{RecvTime: 5, Seq: 201})
	c.Push(&event.Event{RecvTime: 3, Seq: 202})
	tm, ok := c.Min()
	require.True(t, ok)
	require.EqualValues(t, 3, tm)
	require.EqualValues(t, 202, c.Pop().Seq)
	require.EqualValues(t, 201, c.Pop().Seq)
	tm, ok = c.Min()
	require.True(t, ok)
	require.True(t, math.IsInf(tm, 1))
	require.EqualValues(t, 101, c.Pop().Seq)
	_, ok = c.Min()
	require.False(t, ok)
	require.Nil(t, c.Pop())
	require.Equal(t, 0, c.Len())
}

// TestCalendarCancelRepushedKey checks that Cancel never matches a popped event, whose
// record stays in the current bucket until the bucket closes: after the popped event's
// key is pushed again, Cancel removes the new event, and only once.
func TestCalendarCancelRepushedKey(t *testing.T) {
	var c Calendar
	// More events at time 1 than pushLate moves up to insert one among them, so that the
	// re-pushed key goes to the late heap.
	n := insertMax + 8
	for i := range n {
		c.Push(&event.Event{RecvTime: 1, Seq: uint64(i), Receiver: 3, Payload: "p"})
	}
	for i := range 8 {
		c.Push(&event.Event{RecvTime: 2, Seq: uint64(10 + i), Receiver: 3})
	}
	first := *c.Pop()
	require.EqualValues(t, 0, first.Seq)
	k := event.KeyOf(&first)
	require.False(t, c.Cancel(3, k), "popped events are not held")
	again := first
	again.Words = event.Words{42}
	c.Push(&again)
	require.Equal(t, 3, calWhere(&c, 3, k), "in the late heap, beside the popped record")
	require.Equal(t, n+8, c.Len())
	require.False(t, c.Cancel(4, k), "another receiver")
	require.True(t, c.Cancel(3, k))
	require.Equal(t, n+7, c.Len())
	require.False(t, c.Cancel(3, k), "cancelled events are not held")
	for i := 1; i < n; i++ {
		require.EqualValues(t, i, c.Pop().Seq)
	}
	// An event not yet reached.
	require.True(t, c.Cancel(3, event.Key{RecvTime: 2, SeqSign: 13<<1 | 1}))
	for _, seq := range []uint64{10, 11, 12, 14, 15, 16, 17} {
		require.Equal(t, seq, c.Pop().Seq)
	}
	require.Nil(t, c.Pop())
	require.Equal(t, 0, c.Len())
	require.Equal(t, len(c.payloads), len(c.freeHandles), "payload handles released")
}

// TestCalendarWaveAfterOutlier: an event that sorts after most of the current wave of
// zero-delay events (depth 5 among depth 1) does not send the next wave to the late heap:
// each event of that wave goes into the sorted run before it, and everything still comes
// out in order.
func TestCalendarWaveAfterOutlier(t *testing.T) {
	var c Calendar
	var want []event.Event
	push := func(e event.Event) {
		c.Push(&e)
		want = append(want, e)
	}
	for i := range 100 {
		push(event.Event{RecvTime: 1, SendTime: 1, Depth: 1, Sender: uint32(i), Receiver: 1})
	}
	push(event.Event{RecvTime: 1, SendTime: 1, Depth: 5, Sender: 7, Receiver: 2})
	c.Pop()
	for i := range 100 { // the next wave
		push(event.Event{RecvTime: 1, SendTime: 1, Depth: 2, Sender: uint32(i), Seq: 1, Receiver: 3})
	}
	require.Empty(t, c.late)
	require.Empty(t, c.after)
	slices.SortFunc(want, func(a, b event.Event) int { return event.Compare(&a, &b) })
	for i := 1; i < len(want); i++ {
		require.Equal(t, want[i], *c.Pop())
	}
	require.Nil(t, c.Pop())
}

// TestCalendarOps compares a Calendar used as a time-warp worker's pending queue with a
// reference, over seeded random operations; it checks that the seeds reach every state.
func TestCalendarOps(t *testing.T) {
	var hits calHits
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 11))
		calendarOps(t, randChoices{r}, []int{0, 4000}[seed%2], 30000, func(op int) bool { return op%64 == 0 }, &hits)
	}
	t.Logf("%+v", hits)
	// The seeds go through every state the calendar has, and cancel from every place.
	require.Greater(t, hits.tunes, 200)
	require.Greater(t, hits.slides, 40)
	require.Greater(t, hits.infinite, 200)
	require.Greater(t, hits.past, 5000)
	require.Greater(t, hits.beforeCur, 1000)
	require.Greater(t, hits.maxRing, 1024)
	for _, n := range hits.cancel {
		require.Greater(t, n, 50)
	}
}

// FuzzCalendar is TestCalendarOps driven by fuzz input: the first warm decisions (at most
// 4095, some 1300 operations) come from a generator seeded with seed, so that short inputs
// start from deep states (tuned, slid, retuned), and the rest from b, a few bytes an
// operation, with the calendar's structure checked every 4 of those. Executions stay
// short, so that the fuzzer can minimize the interesting inputs quickly.
func FuzzCalendar(f *testing.F) {
	f.Add(uint64(0), uint16(0), []byte{})
	f.Add(uint64(1), uint16(0), []byte("\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0\xff"))
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 13))
		b := make([]byte, 16+16*seed)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(seed, uint16(800*seed), b)
	}
	f.Fuzz(func(t *testing.T, seed uint64, warm uint16, b []byte) {
		ch := &fuzzChoices{r: rand.New(rand.NewPCG(seed, 17)), warm: int(warm % 4096), b: b}
		calendarOps(t, ch, 0, math.MaxInt, func(op int) bool { return ch.warm == 0 && op%4 == 0 }, nil)
	})
}

// choices is the source of the random decisions of calendarOps.
type choices interface {
	// intn returns a number in [0, n), or false when the source is exhausted.
	intn(n int) (int, bool)
}

type randChoices struct{ r *rand.Rand }

func (c randChoices) intn(n int) (int, bool) { return c.r.IntN(n), true }

// fuzzChoices takes its first warm decisions from r, and the rest from b: a byte each,
// two for large ranges.
type fuzzChoices struct {
	r    *rand.Rand
	warm int
	b    []byte
}

func (c *fuzzChoices) intn(n int) (int, bool) {
	if c.warm > 0 {
		c.warm--
		return c.r.IntN(n), true
	}
	need := 1
	if n > 256 {
		need = 2
	}
	if len(c.b) < need {
		return 0, false
	}
	v := int(c.b[0])
	if need == 2 {
		v = v<<8 | int(c.b[1])
	}
	c.b = c.b[need:]
	return v % n, true
}

// calHits counts what calendarOps went through.
type calHits struct {
	tunes, slides, infinite int
	// past counts pushes before the last popped event; beforeCur those of them before the
	// start of the current bucket.
	past, beforeCur int
	maxRing, maxLen int    // the largest window, and Len
	cancel          [5]int // by where the event was: far, ring, order, late, after
}

// calendarOps drives a Calendar like a time-warp worker, from ch: pushes at random times
// (after the last popped one, at integer times so that many tie, into its past, far
// ahead, at +Inf, and again with the key of a popped or cancelled event), pops (Pop, and
// PopBefore with bounds about the least event), Min and Cancel (of held events, and of
// keys not held), and compares every result and Len with a reference that finds the least
// event by event.Less. It starts with initial pushes, then runs ops operations or until ch
// is exhausted, checking the calendar's structure and its whole content after the
// operations for which check is true (only one in 16 of those while it holds many events),
// and at the end pops everything left in order.
func calendarOps(t *testing.T, ch choices, initial, ops int, check func(op int) bool, hits *calHits) {
	var c Calendar
	var ref []event.Event
	var gone []event.Event // popped or cancelled, most recent last
	now, scale, target := 0.0, 1.0, 100
	seq := uint64(0)
	least := func() int {
		m := 0
		for i := range ref {
			if event.Less(&ref[i], &ref[m]) {
				m = i
			}
		}
		return m
	}
	find := func(recv event.LPID, k event.Key) int {
		for i := range ref {
			if ref[i].Receiver == recv && event.KeyOf(&ref[i]) == k {
				return i
			}
		}
		return -1
	}
	forget := func(i int) {
		gone = append(gone, ref[i])
		if len(gone) > 256 {
			gone = slices.Delete(gone, 0, 128)
		}
		ref[i] = ref[len(ref)-1]
		ref = ref[:len(ref)-1]
	}
	// delay returns a duration from y at the current scale.
	delay := func(y int) float64 { return scale * float64(y) / 4096 }
	// push pushes an event made from y (its fields) and z (the kind of its time).
	push := func(y, z int) {
		e := event.Event{SendTime: now, Seq: seq, Depth: uint32(y % 3), Sender: uint32(y / 3 % 4),
			Receiver: uint32(y / 12 % 8), Anti: y/96%8 == 0, Words: event.Words{seq}}
		if y/768%4 == 0 {
			e.Payload = strconv.FormatUint(seq, 10)
		}
		seq++
		switch {
		case z < 16:
			e.RecvTime = now + delay(y)
		case z < 21: // integer times: many events tie
			e.RecvTime = math.Floor(now) + float64(y%4)
		case z < 23: // into the past of the events popped, as after a rollback
			e.RecvTime = now - delay(y)/8
		case z == 23:
			e.RecvTime = math.Floor(now) - float64(y%3)
		case z == 24:
			e.RecvTime = math.Inf(1)
		case z == 25: // far ahead of the window
			e.RecvTime = now + 64*delay(y)
		case z == 26 && len(gone) > 0: // a popped or cancelled event's key, again
			g := gone[y%len(gone)]
			if find(g.Receiver, event.KeyOf(&g)) >= 0 {
				return // keys of held events are distinct
			}
			g.Words = event.Words{seq}
			e = g
		case z < 29:
			e.RecvTime = now
		default:
			e.RecvTime = now + delay(y)/16
		}
		e.SendTime = min(e.SendTime, e.RecvTime)
		if hits != nil && e.RecvTime < now {
			hits.past++
			if c.tuned && (e.RecvTime-c.origin)*c.inv < float64(c.cur) {
				hits.beforeCur++
			}
		}
		c.Push(&e)
		ref = append(ref, e)
	}
	for range initial {
		y, ok1 := ch.intn(1 << 16)
		z, ok2 := ch.intn(32)
		if !ok1 || !ok2 {
			break
		}
		push(y, z)
	}
	base, tunes := c.base, c.tunes
	checks := 0
	for op := 0; op < ops; op++ {
		x, ok1 := ch.intn(64)
		y, ok2 := ch.intn(1 << 16)
		if !ok1 || !ok2 {
			break
		}
		switch {
		case x == 0: // the event density changes
			if y%64 == 0 {
				scale = []float64{1e-3, 1e-1, 1, 10, 1e3}[y/64%5]
			}
		case x == 1: // the population drifts towards another size
			if y%16 == 0 {
				target = []int{0, 40, 400, 4000}[y/16%4]
			}
		case x < 4:
			tm, ok := c.Min()
			require.Equal(t, len(ref) > 0, ok, "op %d", op)
			if ok {
				require.Equal(t, ref[least()].RecvTime, tm, "op %d", op)
			}
			k, ok := c.MinKey()
			require.Equal(t, len(ref) > 0, ok, "op %d", op)
			if ok {
				if want := ref[least()]; math.IsInf(want.RecvTime, 1) {
					require.Equal(t, event.Key{RecvTime: want.RecvTime}, k, "op %d", op)
				} else {
					require.Equal(t, event.KeyOf(&want), k, "op %d", op)
				}
			}
		case x < 7 && len(ref) > 0: // cancel a held event
			e := ref[y%len(ref)]
			k := event.KeyOf(&e)
			if hits != nil {
				hits.cancel[calWhere(&c, e.Receiver, k)]++
			}
			require.True(t, c.Cancel(e.Receiver, k), "op %d", op)
			forget(find(e.Receiver, k))
		case x < 9: // cancel a key that is probably not held
			var recv event.LPID
			var k event.Key
			switch {
			case y%4 == 0 && len(gone) > 0: // popped or cancelled, perhaps pushed again
				e := gone[y/4%len(gone)]
				recv, k = e.Receiver, event.KeyOf(&e)
			case y%4 == 1 && len(ref) > 0: // a held key for another receiver
				e := ref[y/4%len(ref)]
				recv, k = e.Receiver+1, event.KeyOf(&e)
			case y%4 == 2 && len(ref) > 0: // a held event's twin of the other sign
				e := ref[y/4%len(ref)]
				e.Anti = !e.Anti
				recv, k = e.Receiver, event.KeyOf(&e)
			default:
				recv, k = 1, event.Key{RecvTime: now + delay(y), SeqSign: 1 << 60}
			}
			i := find(recv, k)
			require.Equal(t, i >= 0, c.Cancel(recv, k), "op %d", op)
			if i >= 0 {
				forget(i)
			}
		case x < 27 || x < 49 && len(ref) < target:
			z, ok := ch.intn(32)
			if !ok {
				break
			}
			push(y, z)
		default:
			var p *event.Event
			if y%4 == 0 {
				// PopBefore, with a bound at, just above, below or far above the least
				// event's time: it takes exactly what is below the bound.
				want := math.Inf(1)
				if len(ref) > 0 {
					want = ref[least()].RecvTime
				}
				bound := []float64{want, math.Nextafter(want, math.Inf(1)), want - 1, math.Inf(1)}[y/4%4]
				if p = c.PopBefore(bound); !(want < bound) {
					// It took nothing; Pop then takes the least event as ever.
					require.Nil(t, p, "op %d: PopBefore(%v) with the least at %v", op, bound, want)
					p = c.Pop()
				}
			} else {
				p = c.Pop()
			}
			if len(ref) == 0 {
				require.Nil(t, p, "op %d", op)
				break
			}
			require.NotNil(t, p, "op %d", op)
			i := least()
			if *p != ref[i] {
				require.Equal(t, ref[i], *p, "op %d", op)
			}
			if !math.IsInf(p.RecvTime, 1) {
				now = p.RecvTime
			} else if hits != nil {
				hits.infinite++
			}
			forget(i)
		}
		if c.Len() != len(ref) {
			t.Fatalf("op %d: Len %d, want %d", op, c.Len(), len(ref))
		}
		if hits != nil {
			if c.tunes != tunes {
				hits.tunes++
			} else if c.base != base {
				hits.slides++
			}
			base, tunes = c.base, c.tunes
			hits.maxRing = max(hits.maxRing, len(c.ring))
			hits.maxLen = max(hits.maxLen, c.Len())
		}
		if check(op) {
			if checks++; len(ref) < 1000 || checks%16 == 0 {
				checkCalendar(t, &c, ref)
			}
		}
	}
	checkCalendar(t, &c, ref)
	// Drain: the rest comes out in order.
	slices.SortFunc(ref, func(a, b event.Event) int { return event.Compare(&a, &b) })
	for i := range ref {
		require.Equal(t, ref[i], *c.Pop())
	}
	require.Nil(t, c.Pop())
	require.Equal(t, 0, c.Len())
	require.Equal(t, len(c.payloads), len(c.freeHandles), "payload handles released")
}

// calWhere reports where the held event of the given receiver and key waits: 0 in far, 1
// in a bucket of the window after the current one, 2 in the current bucket's sorted run,
// 3 in its late heap, 4 in its after list.
func calWhere(c *Calendar, recv event.LPID, k event.Key) int {
	for _, s := range c.order[c.head:] {
		if s.e.is(recv, &k) {
			return 2
		}
	}
	for _, s := range c.late {
		if s.e.is(recv, &k) {
			return 3
		}
	}
	for _, s := range c.after {
		if s.e.is(recv, &k) {
			return 4
		}
	}
	w := 0
	for i := range c.ring {
		c.each(&c.ring[i], func(r *record) {
			if r.is(recv, &k) && int64(i) != c.cur&c.mask {
				w = 1
			}
		})
	}
	return w
}

// checkCalendar checks c's structure and that it holds exactly the events of ref. It
// checks each record with a plain test, not require, which would cost far more than the
// check.
func checkCalendar(t *testing.T, c *Calendar, ref []event.Event) {
	t.Helper()
	held := []event.Event{}
	hold := func(r *record) {
		e := event.Event{RecvTime: r.recvTime, SendTime: r.sendTime, Seq: r.seq, Words: r.words,
			Depth: r.depth, Sender: r.sender, Receiver: r.receiver, Anti: r.anti}
		if r.payload != 0 {
			e.Payload = c.payloads[r.payload-1]
		}
		held = append(held, e)
	}
	count := func(bk *bucket) int {
		n := 0
		for id := bk.head; id != 0; id = c.chunk(id).next {
			n += c.chunk(id).n
			if c.chunk(id).next == 0 && id != bk.tail {
				t.Fatalf("bucket's tail %d, last chunk %d", bk.tail, id)
			}
		}
		if n != bk.n {
			t.Fatalf("bucket counts %d, holds %d", bk.n, n)
		}
		return n
	}
	count(&c.far)
	c.each(&c.far, func(r *record) {
		if _, ok := c.bucketOf(r.recvTime); c.tuned && ok {
			t.Fatalf("far event at %v is in the window", r.recvTime)
		}
		hold(r)
	})
	inRing := 0
	if !c.tuned {
		require.Zero(t, c.inRing)
		require.Empty(t, c.order[c.head:])
		require.Empty(t, c.late)
		for i := range c.ring {
			require.Zero(t, c.ring[i].n)
		}
	} else {
		require.True(t, c.isOpen, "a tuned calendar has its current bucket open")
		for i := range c.ring {
			bk := &c.ring[i]
			count(bk)
			if int64(i) == c.cur&c.mask {
				continue
			}
			b := c.base + (int64(i)-c.base)&c.mask
			c.each(bk, func(r *record) {
				if got, ok := c.bucketOf(r.recvTime); !ok || got != b || b <= c.cur {
					t.Fatalf("event at %v of bucket %d maps to %d, %v (current %d)", r.recvTime, b, got, ok, c.cur)
				}
				hold(r)
				inRing++
			})
		}
		cur := c.order[c.head:]
		for i := range cur {
			if cur[i].t != cur[i].e.recvTime || i > 0 && !sless(&cur[i-1], &cur[i]) {
				t.Fatalf("sorted run broken at %d", i)
			}
		}
		for i := range c.late {
			if c.late[i].t != c.late[i].e.recvTime || i > 0 && sless(&c.late[i], &c.late[(i-1)/2]) {
				t.Fatalf("late heap broken at %d", i)
			}
		}
		for i := range c.after { // unsorted, after the whole sorted run
			if s := &c.after[i]; s.t != s.e.recvTime || len(c.order) > 0 && !sless(&c.order[len(c.order)-1], s) {
				t.Fatalf("after broken at %d: %+v, %d in order", i, *s, len(c.order))
			}
		}
		for _, s := range slices.Concat(cur, c.late, c.after) {
			if got, ok := c.bucketOf(s.t); !ok || got != c.cur {
				t.Fatalf("current event at %v maps to %d, %v (current %d)", s.t, got, ok, c.cur)
			}
			hold(s.e)
			inRing++
		}
	}
	require.Equal(t, inRing, c.inRing)
	require.Equal(t, len(ref), c.n)
	want := append([]event.Event{}, ref...)
	for _, s := range [][]event.Event{held, want} {
		slices.SortFunc(s, func(a, b event.Event) int { return event.Compare(&a, &b) })
	}
	if !slices.Equal(want, held) {
		require.Equal(t, want, held) // for the report
	}
	payloads := 0
	for i := range ref {
		if ref[i].Payload != nil {
			payloads++
		}
	}
	require.Equal(t, payloads, len(c.payloads)-len(c.freeHandles))
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

// TestCalendarStamps: every push gets the next stamp, and Pop tells the stamp of the event
// it returns, whatever path the event took (sorted run, late heap, after, far, +Inf), also
// past 2^32 pushes; a record keeps 48 bits of stamp in 80 bytes.
func TestCalendarStamps(t *testing.T) {
	require.EqualValues(t, 80, unsafe.Sizeof(record{}))
	var c Calendar
	c.pushes = 1<<32 - 300 // the high bits come into play
	r := rand.New(rand.NewPCG(3, 4))
	stamps := map[uint64]uint64{} // by Seq
	push := func(e event.Event) {
		before := c.Stamp()
		c.Push(&e)
		stamps[e.Seq] = c.Stamp()
		require.Equal(t, before+1, c.Stamp())
	}
	for i := range 500 {
		push(event.Event{RecvTime: float64(r.IntN(50)), Seq: uint64(i)})
	}
	push(event.Event{RecvTime: math.Inf(1), Seq: 500})
	seq := uint64(501)
	for c.Len() > 0 {
		e := c.Pop()
		require.Equal(t, stamps[e.Seq], c.PoppedStamp(), "event %d", e.Seq)
		if now := e.RecvTime; seq < 700 && !math.IsInf(now, 1) {
			// zero-delay and later sends while taking: after, late heap, later buckets
			c.PushSend(now+float64(r.IntN(2)), now, seq, 1, 0, 0, event.Words{}, nil)
			stamps[seq] = c.Stamp()
			seq++
		}
	}
	require.Greater(t, c.Stamp(), uint64(1<<32))
}

// TestCalendarTakeBucket mixes pushes (into the future and into the past of events taken),
// pops and TakeBucket, against a reference: every event a TakeBucket takes sorts before
// every event left, its stamp is its push's, and every event comes out once.
func TestCalendarTakeBucket(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 11))
		var c Calendar
		type held struct {
			e     event.Event
			stamp uint64
		}
		var ref []held
		seq := uint64(0)
		now := 0.0
		push := func(at float64) {
			e := event.Event{RecvTime: at, SendTime: now, Seq: seq, Receiver: uint32(r.IntN(50)),
				Words: event.Words{seq}}
			if seq%5 == 0 {
				e.Payload = strconv.FormatUint(seq, 10)
			}
			seq++
			c.Push(&e)
			ref = append(ref, held{e, c.Stamp()})
		}
		for range 2000 {
			push(r.ExpFloat64() * 10)
		}
		var dst []event.Event
		var stamps []uint64
		took := 0
		for step := 0; len(ref) > 0; step++ {
			slices.SortFunc(ref, func(a, b held) int { return event.Compare(&a.e, &b.e) })
			switch {
			case r.IntN(3) == 0:
				p := c.Pop()
				require.NotNil(t, p)
				require.Equal(t, ref[0].e, *p, "seed %d step %d", seed, step)
				require.Equal(t, ref[0].stamp, c.PoppedStamp())
				now = p.RecvTime
				ref = ref[1:]
			default:
				until := math.Inf(1)
				if r.IntN(4) == 0 {
					until = now + r.Float64()*5
				}
				dst, stamps = c.TakeBucket(dst[:0], stamps[:0], 64+r.IntN(64), until)
				for i := range dst {
					require.Less(t, dst[i].RecvTime, until, "taken at or past until")
				}
				took += len(dst)
				require.Len(t, stamps, len(dst))
				byKey := func(a, b int) int { return event.Compare(&dst[a], &dst[b]) }
				idx := make([]int, len(dst))
				for i := range idx {
					idx[i] = i
				}
				slices.SortFunc(idx, byKey)
				for j, i := range idx {
					require.Equal(t, ref[j].e, dst[i], "seed %d step %d: not the least events held", seed, step)
					require.Equal(t, ref[j].stamp, stamps[i], "seed %d step %d: stamp", seed, step)
				}
				if len(dst) > 0 {
					now = dst[idx[len(idx)-1]].RecvTime
				}
				ref = ref[len(dst):]
			}
			require.Equal(t, len(ref), c.Len())
			for range r.IntN(4) { // the future, and now and then the past of what was taken
				at := now + r.ExpFloat64()*10
				if r.IntN(8) == 0 {
					at = now - r.Float64()
				}
				push(at)
				if len(ref) > 6000 {
					break
				}
			}
			if step > 20000 {
				break
			}
		}
		require.NotZero(t, took, "seed %d: TakeBucket took nothing", seed)
	}
}
