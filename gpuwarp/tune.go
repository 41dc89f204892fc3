package gpuwarp

import (
	"math"
	"time"
)

// tuner adapts the optimism bound while a run proceeds (the paper's autotuning): a hill
// climb on the rate at which GVT advances per second of wall time, measured over windows
// of host reads, moving the bound by factors of two in the direction that last paid and
// turning back when a move did not. A fixed bound (Options.Bound > 0) is left alone.
type tuner struct {
	fixed   bool
	bound   float64
	factor  float64 // the current direction: 2 or 1/2
	reads   int     // host reads since the window began
	start   time.Time
	from    float64 // GVT at the window's start
	rate    float64 // the last window's rate
	min     float64
	measure int // reads per window
}

// newTuner starts at bound when it is set, else at the spread of the initial events'
// receive times (the time scale on which LPs' next events lie), or 1 without one.
func newTuner(bound float64, in *Input) *tuner {
	if bound > 0 {
		return &tuner{fixed: true, bound: bound}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range in.Events {
		lo, hi = min(lo, e.Recv), max(hi, e.Recv)
	}
	b := hi - lo
	if !(b > 0) || math.IsInf(b, 0) {
		b = 1
	}
	return &tuner{bound: b, factor: 2, min: b / (1 << 20), measure: 4, from: -1}
}

// next is called at each host read with GVT and returns the bound to use.
func (t *tuner) next(gvt float64) float64 {
	if t.fixed {
		return t.bound
	}
	if t.from < 0 {
		t.from, t.start = gvt, time.Now()
		return t.bound
	}
	if t.reads++; t.reads < t.measure {
		return t.bound
	}
	el := time.Since(t.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = (gvt - t.from) / el
	}
	if rate < t.rate {
		t.factor = 1 / t.factor // the last move did not pay: turn back
	}
	t.rate = rate
	t.bound = max(t.bound*t.factor, t.min)
	t.reads, t.from, t.start = 0, gvt, time.Now()
	return t.bound
}
