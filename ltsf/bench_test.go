package ltsf

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/spinlock"
)

// holdIncrements returns a table of exponential(1) time increments, shared by all
// benchmarks so that every queue sees the same sequence.
func holdIncrements() []float64 {
	r := rand.New(rand.NewPCG(42, 42))
	inc := make([]float64, 1<<16)
	for i := range inc {
		inc[i] = r.ExpFloat64()
	}
	return inc
}

// holdFill fills q with n entries, one per LP, at exponential times.
func holdFill(q Queue, n int, inc []float64) {
	for lp := range n {
		q.Push(event.KeyOf(&event.Event{RecvTime: inc[lp%len(inc)] * float64(1+lp%7), Seq: uint64(lp)}), event.LPID(lp))
	}
}

// BenchmarkQueues is the hold model: a queue of n entries, each operation pops the least
// and pushes the same LP again with the popped time plus an exponential increment.
func BenchmarkQueues(b *testing.B) {
	inc := holdIncrements()
	mask := len(inc) - 1
	for _, kind := range Kinds() {
		for _, n := range []int{1e3, 1e4, 1e5} {
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				q, err := New(kind, n)
				if err != nil {
					b.Fatal(err)
				}
				holdFill(q, n, inc)
				// Warm up to the steady state before measuring.
				j := 0
				for range 4 * n {
					k, lp, _ := q.Pop()
					k.RecvTime += inc[j&mask]
					j++
					q.Push(k, lp)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					k, lp, _ := q.Pop()
					k.RecvTime += inc[j&mask]
					k.SeqSign += 2 // the next sequence number
					j++
					q.Push(k, lp)
				}
			})
		}
	}
}

// BenchmarkLocks has g goroutines contend for one lock around a small critical section:
// a hold-model Pop and Push on a heap of 64 entries. ns/op is per critical section.
func BenchmarkLocks(b *testing.B) {
	inc := holdIncrements()
	mask := len(inc) - 1
	for _, kind := range spinlock.Kinds() {
		for _, g := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", kind, g), func(b *testing.B) {
				l, err := spinlock.New(kind)
				if err != nil {
					b.Fatal(err)
				}
				h := NewHeap(64)
				holdFill(h, 64, inc)
				j := 0 // guarded by l
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range g {
					ops := b.N / g
					if w < b.N%g {
						ops++
					}
					wg.Go(func() {
						for range ops {
							l.Lock()
							k, lp, _ := h.Pop()
							k.RecvTime += inc[j&mask]
							j++
							h.Push(k, lp)
							l.Unlock()
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// BenchmarkQueuesIntegerTimes is the hold model of an integer-time model: increments of
// 0 to 3, so each queue holds thousands of entries at each time (ties broken by the rest
// of the key). It exercises the ladder's handling of buckets that cannot be split.
func BenchmarkQueuesIntegerTimes(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	inc := make([]float64, 1<<16)
	for i := range inc {
		inc[i] = float64(r.IntN(4))
	}
	mask := len(inc) - 1
	for _, kind := range Kinds() {
		for _, n := range []int{1e3, 1e5} {
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				q, err := New(kind, n)
				if err != nil {
					b.Fatal(err)
				}
				for lp := range n {
					q.Push(event.KeyOf(&event.Event{RecvTime: inc[lp&mask], Sender: event.LPID(lp)}), event.LPID(lp))
				}
				j := 0
				hold := func() {
					k, lp, _ := q.Pop()
					k.SendTime = k.RecvTime
					k.RecvTime += inc[j&mask]
					k.Sender = lp
					k.SeqSign += 2 // the next sequence number
					j++
					q.Push(k, lp)
				}
				for range 4 * n {
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

// BenchmarkQueuesBatch is the hold model in batches, as a worker forming offload batches
// uses a queue: take the 16 least entries (PopN on a BatchQueue, 16 Pops otherwise), then
// push each LP again with its time plus an exponential increment. ns/op is per entry.
// parallel-heap-r8 and -r32 are the parallel heap with other node sizes.
func BenchmarkQueuesBatch(b *testing.B) {
	const batch = 16
	inc := holdIncrements()
	mask := len(inc) - 1
	kinds := append(Kinds(), "parallel-heap-r8", "parallel-heap-r32")
	for _, kind := range kinds {
		for _, n := range []int{1e3, 1e5} {
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				var q Queue
				switch kind {
				case "parallel-heap-r8":
					q = NewParallelHeap(n, 8)
				case "parallel-heap-r32":
					q = NewParallelHeap(n, 32)
				default:
					var err error
					if q, err = New(kind, n); err != nil {
						b.Fatal(err)
					}
				}
				holdFill(q, n, inc)
				bq, _ := q.(BatchQueue)
				got := make([]Entry, 0, batch)
				j := 0
				step := func() {
					got = got[:0]
					if bq != nil {
						got = bq.PopN(got, batch)
					} else {
						for range batch {
							k, lp, _ := q.Pop()
							got = append(got, Entry{k, lp})
						}
					}
					for _, e := range got {
						e.Key.RecvTime += inc[j&mask]
						e.Key.SeqSign += 2
						j++
						q.Push(e.Key, e.LP)
					}
				}
				for range 4 * n / batch {
					step()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N / batch {
					step()
				}
			})
		}
	}
}
