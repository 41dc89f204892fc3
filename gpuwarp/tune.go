package gpuwarp

import (
	"math"
	"time"
)

// tuner adapts the loop while a run proceeds (the paper's autotuning): the optimism bound,
// the most execution passes per iteration, and the inactivity threshold (the share of
// LPs a pass must keep busy for the next pass to run). It is a coordinate hill climb on
// the rate at which GVT advances per second of wall time, measured over windows of host
// reads: it moves one knob a step at a time in the direction that last paid, and when a
// step does not pay it undoes it, reverses that knob's direction and turns to the next
// knob. Knobs the options fix are left alone.
type tuner struct {
	knobs  [3]knob // bound, passes, threshold
	cur    int     // the knob being moved
	moved  bool    // a step of knobs[cur] is on trial
	before float64 // knobs[cur]'s value before the step on trial
	best   float64 // the rate of the accepted settings
	reads  int     // host reads in the window so far
	start  time.Time
	from   float64 // GVT at the window's start; < 0 before the first read
	window int     // host reads per window
}

// knob is one tuned setting: multiplied or divided by factor (or stepped by it, when add)
// between lo and hi, in direction dir (+1 or -1).
type knob struct {
	v, lo, hi, factor float64
	add, fixed        bool
	dir               float64
}

func (k *knob) step() bool {
	old := k.v
	switch {
	case k.add:
		k.v += k.dir * k.factor
	case k.dir > 0:
		k.v *= k.factor
	default:
		k.v /= k.factor
	}
	k.v = min(max(k.v, k.lo), k.hi)
	return k.v != old
}

// Knob indexes.
const (
	knobBound = iota
	knobPasses
	knobThreshold
)

// newTuner starts from o's settings where set, else from estimates: the bound at the mean
// time between one LP's initial events (the initial events' mean offset from the first,
// times LPs per event), two passes, and a threshold of 1/64 of the LPs.
func newTuner(o *Options, in *Input) *tuner {
	b := o.Bound
	if b == 0 {
		lo, sum := math.Inf(1), 0.0
		for _, e := range in.Events {
			lo = min(lo, e.Recv)
		}
		for _, e := range in.Events {
			sum += e.Recv - lo
		}
		b = sum / float64(len(in.Events)) * float64(len(in.RNG)) / float64(len(in.Events))
		if !(b > 0) || math.IsInf(b, 0) {
			b = 1
		}
	}
	passes := float64(o.Executions)
	if passes == 0 {
		passes = 2
	}
	th := o.Inactivity
	if th == 0 {
		th = 1.0 / 64
	}
	t := &tuner{from: -1, window: 2}
	t.knobs[knobBound] = knob{v: b, lo: b / 4096, hi: b * 4096, factor: 2, fixed: o.Bound != 0, dir: -1}
	t.knobs[knobPasses] = knob{v: passes, lo: 1, hi: 8, factor: 1, add: true, fixed: o.Executions != 0, dir: 1}
	t.knobs[knobThreshold] = knob{v: th, lo: 1.0 / 4096, hi: 0.5, factor: 2, fixed: o.Inactivity != 0, dir: -1}
	return t
}

// settings are the bound, the passes and the threshold (a share of the LPs) to use now.
func (t *tuner) settings() (bound float64, passes int, threshold float64) {
	return t.knobs[knobBound].v, int(t.knobs[knobPasses].v), t.knobs[knobThreshold].v
}

// next is called at each host read with GVT; it reports whether the settings changed.
func (t *tuner) next(gvt float64) bool {
	if t.from < 0 {
		t.from, t.start = gvt, time.Now()
		return false
	}
	if t.reads++; t.reads < t.window {
		return false
	}
	rate := 0.0
	if el := time.Since(t.start).Seconds(); el > 0 {
		rate = (gvt - t.from) / el
	}
	t.reads, t.from, t.start = 0, gvt, time.Now()
	changed := false
	if t.moved {
		if rate >= t.best {
			t.best = rate // the step paid: take another one the same way
		} else {
			k := &t.knobs[t.cur] // it did not: undo it, reverse, and try the next knob
			k.v, k.dir = t.before, -k.dir
			changed = true
			t.cur = (t.cur + 1) % len(t.knobs)
		}
	} else {
		t.best = rate
	}
	t.moved = false
	for range len(t.knobs) {
		k := &t.knobs[t.cur]
		if !k.fixed {
			t.before = k.v
			if k.step() {
				t.moved = true
				return true
			}
			k.dir = -k.dir // at a limit: turn back next time
		}
		t.cur = (t.cur + 1) % len(t.knobs)
	}
	return changed
}

// resume starts a new window at the next read: the reads between a change of the settings
// and the first chunk that ran with them measured the old ones.
func (t *tuner) resume() { t.from = -1 }
