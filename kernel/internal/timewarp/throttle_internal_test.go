package timewarp

import (
	"math"
	"testing"

	"github.com/warpedgo/warped/kernel/internal/core"
)

// TestAdjustWindow checks the window's rules (throttle.go) case by case: it shrinks on a
// rollback storm, never below twice GVT's advance per round, widens back when little is
// lost or when it held the worker back, and is unbounded again past four times the
// distance it first shrank from.
func TestAdjustWindow(t *testing.T) {
	w := &worker{d: &timeWarpDispatcher{sim: &core.Sim{}}, q: &queue{th: newThrottle()}}
	th := &w.q.th
	// step processes n events, rb of them rolled back, and ends a round at GVT g with the
	// worker's least event at next.
	step := func(n, rb uint64, g, next Time) {
		w.stats.processed += n
		w.stats.rolledBack += rb
		w.adjustWindow(g, next)
	}
	step(100, 90, 0, 10) // fewer than adjustEvents, not held: no judgement
	if !math.IsInf(th.win, 1) {
		t.Fatalf("window %v after too few events, want unbounded", th.win)
	}
	step(5000, 4000, 1, 41) // a storm, 40 ahead of GVT (GVT advanced 1 a round so far)
	if th.win != 20 {
		t.Fatalf("storm: window %v, want half of 40", th.win)
	}
	step(5000, 4000, 2, 12) // another: half of min(20, 10)
	if th.win != 5 {
		t.Fatalf("second storm: window %v, want 5", th.win)
	}
	step(5000, 10, 2, 3) // little lost: it doubles
	if th.win != 10 {
		t.Fatalf("calm: window %v, want 10", th.win)
	}
	th.held = true
	step(10, 0, 2, 3) // held back before it could be judged: it doubles
	if th.win != 20 {
		t.Fatalf("held: window %v, want 20", th.win)
	}
	for range 8 { // GVT advancing 100 a round: the floor is twice the average advance
		step(5000, 4000, th.lastG+100, th.lastG+100.5)
	}
	if th.win < 2*th.adv*0.999 || th.adv < 50 {
		t.Fatalf("window %v below twice the advance %v", th.win, th.adv)
	}
	step(5000, 0, th.lastG, th.lastG+1) // calm, past four times the first distance (40)
	if !math.IsInf(th.win, 1) {
		t.Fatalf("window %v after a calm round, want unbounded again past 4 x %v", th.win, th.span)
	}
}

// TestNarrowUnderPressure checks the window under memory pressure (Config.MemoryPressure):
// unbounded, it halves how far ahead of GVT the worker is; bounded, it halves; it never
// goes below twice GVT's average advance per round, and stays unbounded while nothing is
// ahead of GVT.
func TestNarrowUnderPressure(t *testing.T) {
	th := newThrottle()
	th.narrow(10, math.Inf(1)) // nothing pending
	if !math.IsInf(th.win, 1) {
		t.Fatalf("window %v with nothing ahead of GVT, want unbounded", th.win)
	}
	th.narrow(10, 50)
	if th.win != 20 {
		t.Fatalf("window %v, want half of 40", th.win)
	}
	th.narrow(12, 13)
	if th.win != 0.5 {
		t.Fatalf("window %v, want half of the 1 the worker is ahead", th.win)
	}
	th.adv = 1
	th.narrow(14, 30)
	if th.win != 2 {
		t.Fatalf("window %v, want the floor of twice the advance 1", th.win)
	}
}
