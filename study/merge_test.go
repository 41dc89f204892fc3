package study

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/rng"
)

// toyKernel adds the event's first word and the LP to state word 0, draws from the
// generator, and sends that draw to the next LP.
var toyKernel = &gpuoffload.Kernel{Name: "toy", StateWords: 2, OutSlots: 2, Params: []uint64{3},
	Go: func(b *gpuoffload.Batch, i int) {
		st := b.StateOf(i)
		g := b.Gen(i)
		st[0] += b.Ev(i)[0] + uint64(b.LP[i])
		st[1] = uint64(g.Next())
		b.SetGen(i, g)
		b.SetOut(i, 0, b.LP[i]+1, b.Time[i]+1, [gpuoffload.EventWords]uint64{st[1], 1, 2, 3})
		b.OutCount[i] = 1
	}}

// toyBatch returns a batch of n random elements.
func toyBatch(r *rand.Rand, n int) *gpuoffload.Batch {
	b := &gpuoffload.Batch{}
	b.Reset(n, toyKernel)
	for i := range n {
		b.Set(i, uint32(r.IntN(100)), r.Float64(), rng.New(r.Uint64(), 0), [gpuoffload.EventWords]uint64{r.Uint64()})
		b.StateOf(i)[0] = r.Uint64()
	}
	return b
}

func cloneBatch(b *gpuoffload.Batch) *gpuoffload.Batch {
	c := &gpuoffload.Batch{}
	c.Reset(b.N, toyKernel)
	c.LP, c.Time, c.EvWords, c.RNG, c.State = append(c.LP[:0], b.LP...), append(c.Time[:0], b.Time...),
		append(c.EvWords[:0], b.EvWords...), append(c.RNG[:0], b.RNG...), append(c.State[:0], b.State...)
	return c
}

// TestMergerMatchesAlone merges groups of batches into one call and checks each batch's
// results against running it alone, then runs batches from several goroutines at once.
func TestMergerMatchesAlone(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cpu := gpuoffload.NewCPU(2)
	m := NewMerger(cpu)
	defer m.Close()
	v := m.View().(*view)
	var group []*request
	var want []*gpuoffload.Batch
	for _, n := range []int{3, 1, 17, 300} {
		b := toyBatch(r, n)
		w := cloneBatch(b)
		if err := cpu.Run(toyKernel, w); err != nil {
			t.Fatal(err)
		}
		want = append(want, w)
		group = append(group, &request{k: toyKernel, b: b, done: make(chan struct{}, 1), v: v})
	}
	m.run(group)
	for i, rq := range group {
		<-rq.done
		if rq.err != nil || !reflect.DeepEqual(rq.b, want[i]) {
			t.Fatalf("batch %d merged differs from alone (err %v)", i, rq.err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			view := m.View()
			defer view.Close()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 50 {
				b := toyBatch(r, 1+r.IntN(40))
				w := cloneBatch(b)
				cpu.Run(toyKernel, w)
				p, err := view.Submit(toyKernel, b)
				if err != nil {
					t.Error(err)
					return
				}
				if err := p.Wait(); err != nil || !reflect.DeepEqual(b, w) {
					t.Errorf("goroutine %d: batch differs from alone (err %v)", g, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	calls, batches, _ := m.Stats()
	if batches != 200 || calls > batches+1 { // +1: the direct merge above
		t.Fatalf("%d calls for %d batches", calls, batches)
	}
}
