package gvt

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundComputesTheLeastReport(t *testing.T) {
	f := NewFujimoto(3)
	require.Zero(t, f.GVT())
	require.True(t, f.Start())
	require.False(t, f.Start(), "one round at a time")
	r := f.Round()
	require.NotZero(t, r)
	_, ok := f.Report(r, 7)
	require.False(t, ok)
	_, ok = f.Report(r, 5)
	require.False(t, ok)
	g, ok := f.Report(r, 9)
	require.True(t, ok)
	require.EqualValues(t, 5, g)
	require.EqualValues(t, 5, f.GVT())
	require.Zero(t, f.Round(), "the round is over")
	require.EqualValues(t, 1, f.Rounds())

	require.True(t, f.Start())
	r2 := f.Round()
	require.Greater(t, r2, r)
	for range 3 {
		g, ok = f.Report(r2, math.Inf(1))
	}
	require.True(t, ok)
	require.True(t, math.IsInf(g, 1), "nothing pending: GVT is infinity")
}

func TestGVTNeverDecreases(t *testing.T) {
	f := NewFujimoto(1)
	f.Start()
	f.Report(f.Round(), 10)
	f.Start()
	require.Panics(t, func() { f.Report(f.Round(), 3) })
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	require.False(t, tr.Due(0))
	require.True(t, tr.Due(4))
	tr.Made(8)
	tr.Made(3)
	require.EqualValues(t, 3, tr.Take(4, 6))
	require.False(t, tr.Due(4), "reported in round 4")
	require.EqualValues(t, 6, tr.Take(5, 6), "the sends were reported already")
}

// TestConcurrentRounds runs many rounds with many workers under -race, every worker also
// trying to start rounds: every round ends, exactly one worker finishes each, and GVT
// follows the reports.
func TestConcurrentRounds(t *testing.T) {
	const workers, rounds = 8, 100
	f := NewFujimoto(workers)
	var wg sync.WaitGroup
	finished := make(chan float64, rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := NewTracker()
			for done := 0; done < rounds; {
				r := f.Round()
				if !tr.Due(r) {
					if f.Rounds() >= rounds {
						return
					}
					f.Start()
					runtime.Gosched()
					continue
				}
				// Worker w's minimum grows with the round number.
				if g, ok := f.Report(r, tr.Take(r, float64(int(r)*10+w))); ok {
					finished <- g
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(finished)
	var gs []float64
	for g := range finished {
		gs = append(gs, g)
	}
	require.Len(t, gs, rounds)
	for i := 1; i < len(gs); i++ {
		require.Greater(t, gs[i], gs[i-1])
	}
}

// TestOnChange checks that the hook is called once when a round starts, once when it ends
// (not at the other reports), and at SetGVT, and not when Start finds a round running.
func TestOnChange(t *testing.T) {
	f := NewFujimoto(2)
	calls := 0
	f.OnChange(func() { calls++ })
	if !f.Start() || calls != 1 {
		t.Fatalf("after Start: %d calls, want 1", calls)
	}
	if f.Start() || calls != 1 {
		t.Fatalf("after a second Start in a running round: %d calls, want 1", calls)
	}
	r := f.Round()
	if _, ok := f.Report(r, 3); ok || calls != 1 {
		t.Fatalf("after the first report: %d calls, want 1", calls)
	}
	if g, ok := f.Report(r, 5); !ok || g != 3 || calls != 2 {
		t.Fatalf("after the last report: GVT %v (ok %v), %d calls, want 3, true and 2", g, ok, calls)
	}
	l := NewFujimotoLocal(1)
	lc := 0
	l.OnChange(func() { lc++ })
	l.Start()
	if _, ok := l.Report(l.Round(), 1); !ok || lc != 2 {
		t.Fatalf("local round: %d calls, want 2", lc)
	}
	if err := l.SetGVT(1); err != nil || lc != 3 {
		t.Fatalf("after SetGVT: %d calls (err %v), want 3", lc, err)
	}
}
