package event

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func randomEvent(r *rand.Rand) *Event {
	// Few distinct values, so that ties on every component are common.
	return &Event{
		RecvTime: float64(r.IntN(4)),
		SendTime: float64(r.IntN(3)),
		Depth:    uint32(r.IntN(2)),
		Sender:   uint32(r.IntN(3)),
		Seq:      uint64(r.IntN(3)),
		Anti:     r.IntN(2) == 0,
	}
}

func TestCompareIsATotalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	evs := make([]*Event, 300)
	for i := range evs {
		evs[i] = randomEvent(r)
	}
	for _, a := range evs {
		require.Equal(t, 0, Compare(a, a))
		for _, b := range evs {
			ab, ba := Compare(a, b), Compare(b, a)
			require.Equal(t, -ab, ba, "antisymmetry")
			require.Equal(t, ab < 0, Less(a, b), "Less agrees with Compare")
			if ab == 0 {
				require.Equal(t, KeyOf(a), KeyOf(b))
				require.Equal(t, a.Anti, b.Anti)
			}
		}
	}
	slices.SortFunc(evs, Compare)
	for i := 1; i < len(evs); i++ {
		for j := 0; j < i; j++ {
			require.LessOrEqual(t, Compare(evs[j], evs[i]), 0, "transitivity")
		}
	}
}

func TestAntiMessageSortsBeforeItsTwin(t *testing.T) {
	pos := &Event{RecvTime: 5, SendTime: 1, Sender: 2, Seq: 9}
	anti := *pos
	anti.Anti = true
	require.Equal(t, -1, Compare(&anti, pos))
	twin := KeyOf(&anti)
	twin.SeqSign |= 1
	require.Equal(t, KeyOf(pos), twin, "the keys differ only in the sign")
	later := &Event{RecvTime: 5, SendTime: 1, Sender: 2, Seq: 10, Anti: true}
	require.True(t, Less(pos, later), "an anti-message of a later event sorts after")
	twin = KeyOf(later)
	twin.SeqSign |= 1
	require.NotEqual(t, KeyOf(pos), twin)
}

func TestComparePrecedence(t *testing.T) {
	base := Event{RecvTime: 1, SendTime: 1, Sender: 1, Seq: 1}
	for _, mod := range []func(*Event){
		func(e *Event) { e.RecvTime = 2; e.SendTime = 0; e.Sender = 0; e.Seq = 0 },
		func(e *Event) { e.SendTime = 2; e.Depth = 0; e.Sender = 0; e.Seq = 0 },
		func(e *Event) { e.Depth = 1; e.Sender = 0; e.Seq = 0 },
		func(e *Event) { e.Sender = 2; e.Seq = 0 },
		func(e *Event) { e.Seq = 2 },
	} {
		b := base
		mod(&b)
		require.Equal(t, -1, Compare(&base, &b))
	}
	inf := base
	inf.RecvTime = Infinity
	require.True(t, Less(&base, &inf))
}

func TestPoolRecyclesRecords(t *testing.T) {
	var p Pool
	a := p.Get()
	a.RecvTime, a.Payload, a.Seq = 3, "x", 7
	p.Put(a)
	b := p.Get()
	require.Same(t, a, b, "the returned record is reused")
	require.Equal(t, slabSize, p.Allocated())
	for range 2000 {
		p.Get()
	}
	require.Equal(t, 4*slabSize, p.Allocated(), "2001 records in use take four slabs")
}

func BenchmarkPoolGetPut(b *testing.B) {
	var p Pool
	b.ReportAllocs()
	for b.Loop() {
		p.Put(p.Get())
	}
}

func TestKeyOrderEqualsCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		a, b := randomEvent(r), randomEvent(r)
		ka, kb := KeyOf(a), KeyOf(b)
		require.Equal(t, Less(a, b), KeyLess(&ka, &kb), "%+v %+v", a, b)
		require.Equal(t, Compare(a, b) == 0, ka == kb)
		require.Equal(t, KeyLess(&ka, &kb), Before(a, &kb), "Before %+v %+v", a, b)
		var k Key
		k.Set(a)
		require.Equal(t, ka, k, "Set %+v", a)
	}
	anti := Event{RecvTime: 1, Seq: 1 << 40, Anti: true}
	pos := anti
	pos.Anti = false
	ka, kp := KeyOf(&anti), KeyOf(&pos)
	require.True(t, KeyLess(&ka, &kp))
}

func TestDepotBalancesPools(t *testing.T) {
	var d Depot
	a, b := Pool{Depot: &d}, Pool{Depot: &d}
	// a allocates, b frees: without the depot b's free list would grow without bound
	// and a would allocate forever.
	for range 20 {
		var evs []*Event
		for range 1000 {
			evs = append(evs, a.Get())
		}
		for _, e := range evs {
			b.Put(e)
		}
	}
	require.LessOrEqual(t, a.Allocated(), 2048+slabSize, "a reuses what b freed")
	require.Less(t, len(b.free), 2*depotBatch)
	require.Zero(t, b.Allocated())
	require.Equal(t, a.Allocated(), a.Free()+b.Free()+d.Len(), "every record is back in a pool or the depot")
}

// TestDepotAllocatesNothing checks that records passed from one pool to another through
// the depot, once both have warmed up, allocate nothing: neither records nor the batch
// slices that carry them (those go back to the depot: Depot.back).
func TestDepotAllocatesNothing(t *testing.T) {
	var d Depot
	a, b := Pool{Depot: &d}, Pool{Depot: &d}
	evs := make([]*Event, 0, 1000)
	cycle := func() {
		evs = evs[:0]
		for range 1000 {
			evs = append(evs, a.Get())
		}
		for _, e := range evs {
			b.Put(e)
		}
	}
	for range 5 {
		cycle()
	}
	require.Zero(t, testing.AllocsPerRun(20, cycle))
}
