package ltsf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

// checkParallelHeap checks the parallel heap's structure: every node sorted, every node
// but the root and the last full, the heap property between nodes, the position table,
// and that it holds the reference's key for every LP.
func checkParallelHeap(t testing.TB, h *ParallelHeap, keys map[event.LPID]event.Key) {
	t.Helper()
	require.Len(t, keys, h.n)
	total := 0
	seen := make(map[event.LPID]bool)
	for i := range h.nn {
		c := int(h.cnt[i])
		require.GreaterOrEqual(t, c, 1, "node %d of %d is empty", i, h.nn)
		require.LessOrEqual(t, c, h.r)
		if i > 0 && i < h.nn-1 {
			require.Equal(t, h.r, c, "inner node %d not full", i)
		}
		if i == 0 {
			require.LessOrEqual(t, h.rh+c, h.r, "root overflows its slots")
		}
		total += c
		for s := h.lo(i); s < h.hi(i); s++ {
			e := &h.a[s]
			require.Equal(t, int32(s), h.pos[e.lp], "position of LP %d", e.lp)
			require.False(t, seen[e.lp], "LP %d held twice", e.lp)
			seen[e.lp] = true
			checkKey(t, keys, e.lp, e.k)
			if s > h.lo(i) {
				require.True(t, eless(&h.a[s-1], e), "node %d unsorted at slot %d", i, s)
			}
		}
		if i > 0 {
			p := (i - 1) / 2
			require.True(t, eless(&h.a[h.hi(p)-1], &h.a[h.lo(i)]), "node %d's least sorts before its parent's greatest", i)
		}
	}
	require.Equal(t, h.n, total)
	in := 0
	for _, p := range h.pos {
		if p >= 0 {
			in++
		} else {
			require.Equal(t, int32(-1), p)
		}
	}
	require.Equal(t, h.n, in)
}

// TestParallelHeapPopN checks PopN against the reference's pops, mixed with pushes and
// removes, for several node sizes and batch sizes.
func TestParallelHeapPopN(t *testing.T) {
	for _, r := range []int{1, 2, 3, 8, DefaultNodeSize, 64} {
		for _, numLPs := range []int{7, 500} {
			t.Run(fmt.Sprintf("r=%d/lps=%d", r, numLPs), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(uint64(r), uint64(numLPs)))
				h := NewParallelHeap(numLPs, r)
				require.Equal(t, r, h.NodeSize())
				ref := &refQueue{}
				g := &gen{rnd: rnd, mode: modeHold}
				var out []event.LPID
				for lp := range numLPs {
					out = append(out, event.LPID(lp))
				}
				var got []Entry
				for step := range 3000 {
					switch op := rnd.IntN(10); {
					case op < 5 && len(out) > 0:
						i := rnd.IntN(len(out))
						lp := out[i]
						out[i] = out[len(out)-1]
						out = out[:len(out)-1]
						k := g.key(ref)
						ref.Push(k, lp)
						h.Push(k, lp)
					case op < 8:
						n := rnd.IntN(2*r + 2)
						got = h.PopN(got[:0], n)
						require.Len(t, got, min(n, ref.Len()), "step %d", step)
						for _, e := range got {
							wk, wlp, _ := ref.Pop()
							require.Equal(t, wlp, e.LP, "step %d", step)
							require.True(t, sameKey(wk, e.Key), "step %d", step)
							out = append(out, e.LP)
							if !math.IsInf(e.Key.RecvTime, 0) {
								g.now = e.Key.RecvTime
							}
						}
					default:
						lp := event.LPID(rnd.IntN(numLPs))
						want := ref.Remove(lp)
						require.Equal(t, want, h.Remove(lp), "step %d Remove(%d)", step, lp)
						if want {
							out = append(out, lp)
						}
					}
					require.Equal(t, ref.Len(), h.Len())
					if step%97 == 0 {
						checkParallelHeap(t, h, ref.keys())
					}
				}
				checkParallelHeap(t, h, ref.keys())
				got = h.PopN(got[:0], numLPs+1)
				require.Len(t, got, len(ref.a))
				for _, e := range got {
					wk, wlp, _ := ref.Pop()
					require.Equal(t, wlp, e.LP)
					require.True(t, sameKey(wk, e.Key))
				}
				require.Zero(t, h.Len())
				require.Empty(t, h.PopN(nil, 5))
				require.Empty(t, h.PopN(nil, 0))
				checkParallelHeap(t, h, ref.keys())
			})
		}
	}
}

// TestParallelHeapBatchOfRoot checks that the root holds the r least entries: PopN(r)
// after filling returns them, and a batch queue is what New gives.
func TestParallelHeapBatchOfRoot(t *testing.T) {
	q, err := New("parallel-heap", 100)
	require.NoError(t, err)
	h, ok := q.(BatchQueue)
	require.True(t, ok, "parallel-heap is a BatchQueue")
	for _, lp := range rand.New(rand.NewPCG(1, 1)).Perm(100) {
		h.Push(event.Key{RecvTime: float64(lp)}, event.LPID(lp))
	}
	got := h.PopN(nil, DefaultNodeSize)
	require.Len(t, got, DefaultNodeSize)
	for i, e := range got {
		require.Equal(t, event.LPID(i), e.LP)
	}
	require.Equal(t, 100-DefaultNodeSize, h.Len())
	require.Equal(t, 1, NewParallelHeap(3, 0).NodeSize(), "r below 1 is 1")
}

func FuzzParallelHeapPopN(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 2, 3, 0, 5, 6, 7, 1, 1, 1, 4, 9})
	f.Add(uint8(1), []byte("\x00\x05\x10\x00\x06\x11\x00\x07\x12\x04\x03\x05\x02\x04"))
	f.Fuzz(func(t *testing.T, rb uint8, data []byte) {
		const numLPs = 48
		r := 1 + int(rb%9)
		h := NewParallelHeap(numLPs, r)
		ref := &refQueue{}
		in := make([]bool, numLPs)
		var got []Entry
		var seq uint64
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		for step := 0; len(data) > 0; step++ {
			switch op := next(); op % 4 {
			case 0, 1:
				lp := event.LPID(next() % numLPs)
				if in[lp] {
					continue
				}
				seq++
				k := event.Key{RecvTime: fuzzTime(next()), SeqSign: seq << 1}
				in[lp] = true
				ref.Push(k, lp)
				h.Push(k, lp)
			case 2:
				n := int(op>>2) % (2*r + 2)
				got = h.PopN(got[:0], n)
				if len(got) != min(n, ref.Len()) {
					t.Fatalf("step %d: PopN(%d) gave %d entries, with %d held", step, n, len(got), ref.Len())
				}
				for _, e := range got {
					wk, wlp, _ := ref.Pop()
					if wlp != e.LP || !sameKey(wk, e.Key) {
						t.Fatalf("step %d: PopN gave %s, want %s", step, fmtEntry(e.Key, e.LP, true), fmtEntry(wk, wlp, true))
					}
					in[e.LP] = false
				}
			case 3:
				lp := event.LPID(next() % numLPs)
				if ref.Remove(lp) != h.Remove(lp) {
					t.Fatalf("step %d: Remove(%d) disagrees", step, lp)
				}
				in[lp] = false
			}
			if h.Len() != ref.Len() {
				t.Fatalf("step %d: Len %d, want %d", step, h.Len(), ref.Len())
			}
		}
		checkParallelHeap(t, h, ref.keys())
	})
}
