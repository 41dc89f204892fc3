package timewarp

import "math"

// Throttling in virtual time: besides the ahead bound (aheadFirst), a worker takes no event
// later than GVT plus its window. A worker that runs far ahead of the others is rolled back
// when their events arrive, and every rolled-back event, with the anti-messages it sends,
// is work lost; the worker that receives a straggler is the one that ran ahead, so its own
// rolled-back share measures what running ahead costs it.
//
// The window starts unbounded. When the worker sees a GVT round end, once it has processed
// adjustEvents events since its last adjustment, it looks at the share of them rolled back:
// above shrinkAbove (more work lost than kept) the window becomes half of how far ahead of
// GVT the worker is, or half of itself if less; below growBelow it doubles, and is unbounded
// again once it is four times the distance it first shrank from; a worker that the window
// held back before it processed adjustEvents events (the rounds are slow) widens it at the
// round's end if it lost less than growBelow of what it did process. It never shrinks below
// twice GVT's average advance per round: a narrower window would make every step wait for
// a round (a conservative run paced by the round's latency: a window shrunk below PCS's
// integer time step across processes slows it many times over; docs/DECISIONS.md). Events
// at GVT are always taken, so the worker holding the least event goes
// on, and GVT with it. Under memory pressure (Config.MemoryPressure) the window halves at
// each round's end instead, with the same floor, and widens no more until it ends.

// throttle is a worker's window (owned by the worker that runs the queue; under the queue's
// lock in a group).
type throttle struct {
	win       Time   // events later than GVT + win are not taken (+Inf: no bound)
	span      Time   // how far ahead the worker was at the first shrink
	lastG     Time   // GVT at the last round end seen
	adv       Time   // average advance of GVT per round (the window's floor is twice it)
	processed uint64 // the worker's counters at the last adjustment
	rolled    uint64
	held      bool // the worker waited beyond GVT since the last adjustment
}

// Window adjustment: every adjustEvents events processed at most, by the share of them
// rolled back.
const (
	adjustEvents = 4096
	judgeEvents  = 256 // the fewest events whose rolled-back share shrinks the window
	shrinkAbove  = 0.5
	growBelow    = 0.2
)

// newThrottle returns an unbounded window.
func newThrottle() throttle { return throttle{win: math.Inf(1)} }

// adjustWindow adjusts the worker's window (see the comment at the top of throttle.go),
// given GVT g and next, the time of its least pending event (+Inf: none), when it sees a
// GVT round end.
func (w *worker) adjustWindow(g, next Time) {
	th := &w.q.th
	if d := g - th.lastG; d >= 0 && !math.IsInf(d, 0) {
		th.adv += (d - th.adv) / 4
	}
	th.lastG = g
	if p := w.d.sim.Cfg.MemoryPressure; p != nil && p() {
		th.narrow(g, next)
		return
	}
	n := w.stats.processed - th.processed
	if n < adjustEvents && !th.held {
		return
	}
	lost := float64(w.stats.rolledBack-th.rolled) / float64(max(n, 1))
	held := th.held
	th.processed, th.rolled, th.held = w.stats.processed, w.stats.rolledBack, false
	switch {
	case lost > shrinkAbove && n >= judgeEvents && next > g && !math.IsInf(next, 1):
		// Only a worker ahead of GVT: one at GVT is the one the others wait for.
		th.shrink(next - g)
	case lost < growBelow && !math.IsInf(th.win, 1):
		// Also when the window held the worker back before it processed adjustEvents
		// events: one round's advance of GVT hardly opens it (the rounds are slow).
		th.widen()
	case held && n < judgeEvents && !math.IsInf(th.win, 1):
		th.widen() // too few events to judge: held back is what counts
	}
}

// narrow halves the window under memory pressure (Config.MemoryPressure): an unbounded one
// to half of how far ahead of GVT the worker is, never below twice GVT's average advance
// per round. The counters are left as they are: the next judgement once the pressure ends
// covers the events since the last one.
func (th *throttle) narrow(g, next Time) {
	far := next - g
	if !(far > 0) || math.IsInf(far, 1) { // nothing pending ahead of GVT
		if math.IsInf(th.win, 1) {
			return // and nothing to hold back yet
		}
		far = th.win
	}
	th.shrink(far)
}

// shrink halves the window, or far (how far ahead of GVT the worker is) if that is less,
// never below twice GVT's average advance per round; the first shrink remembers far (span).
func (th *throttle) shrink(far Time) {
	if th.span == 0 {
		th.span = far
	}
	th.win = max(min(th.win, far)/2, 2*th.adv)
}

// widen doubles the window, or unbounds it once it is four times the distance it first
// shrank from.
func (th *throttle) widen() {
	if th.win *= 2; th.win > 4*th.span {
		th.win = math.Inf(1)
	}
}
