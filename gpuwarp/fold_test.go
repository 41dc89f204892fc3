//go:build linux

package gpuwarp_test

import (
	"container/heap"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/rng"
)

// The fold model checks the device loop against a sequential loop written here, with what
// PHOLD does not exercise: payload words, several sends per event (0, 1 or 2), zero
// delays (depths), ties of receive times, and a population that grows and shrinks. Each
// LP folds the receive time and payload of every event it handles into an order-sensitive
// hash, so handling any two events in another order changes the result. Its lossy variant,
// for state saving (Model.SaveState), also keeps the largest payload seen, which no reverse
// handler could undo, and has no wtw_reverse at all.

const foldMul = 0x9e3779b97f4a7c15 // odd, so the fold is invertible

// foldInv is foldMul's inverse modulo 2^64 (Newton's iteration).
func foldInv() uint64 {
	x := uint64(foldMul)
	for range 6 {
		x *= 2 - foldMul*x
	}
	return x
}

const foldHandle = `
__device__ warped_u32 wtw_handle(const warped_u64* params, warped_u64* s, WarpedXORWOW* g, warped_u32 lp,
                                 warped_u32 lps, double now, const warped_u64* words,
                                 warped_u32* out_to, double* out_at, warped_u64* out_words) {
    s[0] = (s[0] ^ warped_f64_bits(now) ^ words[0]) * params[0];
    s[1]++;
    if (params[3] && words[0] > s[2]) s[2] = words[0];
    warped_u32 k = (warped_u32)warped_range(g, 0, 3);
    warped_u32 n = k == 0 ? 0u : (k == 3 ? 2u : 1u);
    for (warped_u32 i = 0; i < n; i++) {
        out_to[i] = warped_uniform(g) <= 0.5 ? lp : (warped_u32)warped_range(g, 0, lps - 1u);
        out_at[i] = now + (params[2] ? 0.5 * (double)warped_range(g, 0, 3) : 0.25 + warped_uniform(g));
        out_words[4 * i] = words[0] + 1u;
        out_words[4 * i + 1] = 0;
        out_words[4 * i + 2] = 0;
        out_words[4 * i + 3] = 0;
    }
    return n;
}
`

const foldReverse = `
__device__ void wtw_reverse(const warped_u64* params, warped_u64* s, WarpedXORWOW g, warped_u32 lp,
                            warped_u32 lps, double now, const warped_u64* words) {
    s[0] = (s[0] * params[1]) ^ warped_f64_bits(now) ^ words[0];
    s[1]--;
}
`

// foldQueue is the host loop's pending events, in the kernel's event order (event.Less).
type foldQueue []gpuwarp.Event

func (q foldQueue) Len() int { return len(q) }
func (q foldQueue) Less(i, j int) bool {
	key := func(e *gpuwarp.Event) event.Event {
		return event.Event{RecvTime: e.Recv, SendTime: e.Send, Depth: e.Depth, Sender: event.LPID(e.Sender), Seq: e.Seq}
	}
	a, b := key(&q[i]), key(&q[j])
	return event.Less(&a, &b)
}
func (q foldQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *foldQueue) Push(x any)   { *q = append(*q, x.(gpuwarp.Event)) }
func (q *foldQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// foldInput is n LPs with start events each at times 0.5, 1, ... to themselves.
func foldInput(n, start int, end float64) gpuwarp.Input {
	in := gpuwarp.Input{State: make([]uint64, foldWords*n), RNG: make([]rng.XORWOW, n), Seq: make([]uint64, n), End: end}
	for i := range n {
		in.RNG[i] = rng.New(7, uint64(i))
		for k := range start {
			in.Events = append(in.Events, gpuwarp.Event{To: uint32(i), Recv: 0.5 * float64(k+1), Sender: uint32(i),
				Seq: uint64(k), Words: [4]uint64{uint64(k)}})
		}
		in.Seq[i] = uint64(start)
	}
	return in
}

// foldWords is the fold model's state words: the hash, the count of events, the largest
// payload seen (lossy only).
const foldWords = 3

// foldSequential is the fold model run in key order on the host.
func foldSequential(in gpuwarp.Input, ties, lossy bool) (state []uint64, gens []rng.XORWOW, committed uint64) {
	n := len(in.RNG)
	state, gens = append([]uint64(nil), in.State...), append([]rng.XORWOW(nil), in.RNG...)
	seq := append([]uint64(nil), in.Seq...)
	q := foldQueue(append([]gpuwarp.Event(nil), in.Events...))
	heap.Init(&q)
	for q.Len() > 0 {
		e := heap.Pop(&q).(gpuwarp.Event)
		if e.Recv >= in.End {
			break
		}
		committed++
		lp, g, s := e.To, &gens[e.To], state[foldWords*e.To:foldWords*(e.To+1)]
		s[0] = (s[0] ^ math.Float64bits(e.Recv) ^ e.Words[0]) * foldMul
		s[1]++
		if lossy {
			s[2] = max(s[2], e.Words[0])
		}
		k := g.Range(0, 3)
		sends := map[uint64]int{0: 0, 1: 1, 2: 1, 3: 2}[k]
		for range sends {
			to := lp
			if !(g.Uniform() <= 0.5) {
				to = uint32(g.Range(0, uint64(n-1)))
			}
			var at float64
			if ties {
				at = e.Recv + 0.5*float64(g.Range(0, 3))
			} else {
				at = e.Recv + (0.25 + g.Uniform())
			}
			var depth uint32
			if at == e.Recv {
				depth = e.Depth + 1
			}
			heap.Push(&q, gpuwarp.Event{To: to, Recv: at, Send: e.Recv, Depth: depth, Sender: lp, Seq: seq[lp],
				Words: [4]uint64{e.Words[0] + 1}})
			seq[lp]++
		}
	}
	return state, gens, committed
}

// foldModel is the fold model's device code; with ties its delays are 0, 0.5, 1 or 1.5,
// else 0.25 plus a uniform draw. The lossy one relies on state saving.
func foldModel(ties, lossy bool) *gpuwarp.Model {
	var t, l uint64
	if ties {
		t = 1
	}
	m := &gpuwarp.Model{Name: "fold", Source: foldHandle + foldReverse, StateWords: foldWords, OutSlots: 2, Words: true}
	if lossy {
		l = 1
		m.Name, m.Source, m.SaveState = "fold-lossy", foldHandle, true
	}
	m.Params = []uint64{foldMul, foldInv(), t, l}
	return m
}

// foldCase is a run of the fold model on the device loop.
type foldCase struct {
	name       string
	ties       bool
	lossy      bool
	lps, start int
	end        float64
	o          gpuwarp.Options
	overflow   bool // the lists must overflow and put events back in transit
}

// foldCases are TestFold's runs: with ties and without, on reverse handlers and on state
// saving, tuned and unbounded, with several executions and anti-message rounds, and with
// lists that overflow (4 slots, 6 start events per LP).
var foldCases = []foldCase{
	{"ties, tuned", true, false, 64, 3, 12, gpuwarp.Options{}, false},
	{"ties, unbounded, 3 executions", true, false, 50, 3, 12, gpuwarp.Options{Bound: math.Inf(1), Executions: 3}, false},
	{"ties, 3 anti rounds", true, false, 50, 3, 12, gpuwarp.Options{Bound: math.Inf(1), CancelRounds: 3, Executions: 2}, false},
	{"4 slots, 6 start events", false, false, 40, 6, 10, gpuwarp.Options{Slots: 4, Bound: math.Inf(1)}, true},
	{"8 slots, 1 anti round", false, false, 40, 8, 10, gpuwarp.Options{Slots: 8, Bound: math.Inf(1), CancelRounds: 1, Executions: 2}, true},
	{"state saving, ties, tuned", true, true, 64, 3, 12, gpuwarp.Options{}, false},
	{"state saving, ties, unbounded, 3 executions", true, true, 50, 3, 12, gpuwarp.Options{Bound: math.Inf(1), Executions: 3}, false},
	{"state saving, 4 slots, 6 start events", false, true, 40, 6, 10, gpuwarp.Options{Slots: 4, Bound: math.Inf(1)}, true},
	{"state saving, 8 slots, 2 anti rounds", false, true, 40, 8, 10, gpuwarp.Options{Slots: 8, Bound: math.Inf(1), CancelRounds: 2, Executions: 2}, true},
}

// checkFold runs tc on the device loop and checks it against foldSequential.
func checkFold(t *testing.T, tc foldCase) {
	in := foldInput(tc.lps, tc.start, tc.end)
	wantState, wantGens, committed := foldSequential(in, tc.ties, tc.lossy)
	out, err := gpuwarp.Run(context.Background(), foldModel(tc.ties, tc.lossy), in, tc.o)
	require.NoError(t, err)
	require.Equal(t, wantState, out.State)
	require.Equal(t, wantGens, out.RNG)
	require.Equal(t, committed, out.Committed())
	if math.IsInf(tc.o.Bound, 1) { // tuned runs may happen not to roll back on a GPU
		require.NotZero(t, out.RolledBack, "nothing rolled back: the case tests no undoing")
	}
	if tc.overflow {
		require.NotZero(t, out.Returned, "the lists never overflowed: the case tests nothing")
	}
	t.Logf("%d committed, %d processed, %d rolled back, %d returned, %d iterations", out.Committed(),
		out.Processed, out.RolledBack, out.Returned, out.Iterations)
}

// TestFold checks the device loop against foldSequential in every foldCases run.
func TestFold(t *testing.T) {
	need(t)
	for _, tc := range foldCases {
		t.Run(tc.name, func(t *testing.T) { checkFold(t, tc) })
	}
}

// TestFoldThreadOrder runs foldCases with the stand-in running each launch's threads
// reversed and shuffled: a GPU runs them at once, in no order, so a kernel of the loop
// that read what another thread of its launch writes (a race on a GPU) would give other
// results here than in order. On a GPU it skips: TestFold runs there in the GPU's order.
func TestFoldThreadOrder(t *testing.T) {
	need(t)
	for _, order := range []string{"reverse", "shuffle:1", "shuffle:2"} {
		t.Run(order, func(t *testing.T) {
			standin.ThreadOrder(t, order)
			for _, tc := range foldCases {
				t.Run(tc.name, func(t *testing.T) { checkFold(t, tc) })
			}
		})
	}
}

// TestStall checks that a list too small for the events one LP holds at one time ends the
// run with an error naming the option to raise, not a hang or a wrong result.
func TestStall(t *testing.T) {
	need(t)
	in := foldInput(40, 6, 10)
	_, err := gpuwarp.Run(context.Background(), foldModel(true, false), in,
		gpuwarp.Options{Slots: 4, Bound: math.Inf(1), StallIterations: 1024})
	require.ErrorIs(t, err, gpuwarp.ErrStalled)
	require.ErrorContains(t, err, "raise --gpu-slots")
}
