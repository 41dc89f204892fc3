package eventset

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

// TestPendingAgainstSortedSlice runs random pushes, pops and removals with many ties and
// checks every result against a sorted reference.
func TestPendingAgainstSortedSlice(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		var p Pending
		var ref []*event.Event
		seq := uint64(0)
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 5:
				e := &event.Event{RecvTime: float64(r.IntN(8)), SendTime: float64(r.IntN(3)),
					Depth: uint32(r.IntN(2)), Sender: uint32(r.IntN(3)), Seq: seq, Anti: r.IntN(4) == 0}
				seq++
				p.Push(e)
				ref = append(ref, e)
			case op < 8:
				got := p.PopMin()
				if len(ref) == 0 {
					require.Nil(t, got)
					continue
				}
				slices.SortFunc(ref, event.Compare)
				require.Same(t, ref[0], got, "seed %d step %d", seed, step)
				ref = ref[1:]
			default:
				if len(ref) == 0 {
					require.Nil(t, p.Take(event.KeyOf(&event.Event{RecvTime: 99})))
					continue
				}
				i := r.IntN(len(ref))
				require.Same(t, ref[i], p.Take(event.KeyOf(ref[i])))
				ref = slices.Delete(ref, i, i+1)
			}
			require.Equal(t, len(ref), p.Len())
			if len(ref) > 0 {
				slices.SortFunc(ref, event.Compare)
				require.Same(t, ref[0], p.Min())
			}
		}
	}
}

func TestTakeByKey(t *testing.T) {
	var p Pending
	a := &event.Event{RecvTime: 1, Seq: 1}
	b := &event.Event{RecvTime: 2, Seq: 2}
	p.Push(a)
	p.Push(b)
	anti := *b
	anti.Anti = true
	require.Nil(t, p.Take(event.KeyOf(&anti)), "the anti-message's key differs in its sign")
	require.Same(t, b, p.Take(event.KeyOf(b)))
	require.Nil(t, p.Take(event.KeyOf(b)))
	require.Equal(t, 1, p.Len())
	require.Same(t, a, p.Min())
}

func TestCarve(t *testing.T) {
	ps := make([]Pending, 3)
	Carve(ps, 2)
	for i := range ps {
		require.Equal(t, 2, cap(ps[i].a))
	}
	// Growing one queue past its share must not disturb its neighbour.
	for k := range 5 {
		ps[0].Push(&event.Event{RecvTime: float64(5 - k)})
	}
	ps[1].Push(&event.Event{RecvTime: 9})
	require.EqualValues(t, 1, ps[0].Min().RecvTime)
	require.EqualValues(t, 9, ps[1].Min().RecvTime)
	require.Equal(t, 0, ps[2].Len())
}
