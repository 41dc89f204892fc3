package gpuoffload

import "time"

// Tuning: each worker chooses its batch size by a hill climb over powers of two, measuring
// its net event rate over short windows, and with OffloadAuto also whether to batch at all.
const (
	tuneMinLog   = 0  // batch size 1
	tuneMaxLog   = 12 // batch size 4096
	tuneStartLog = 8  // batch size 256
	// tuneMargin is how much better a choice must measure to replace the current one.
	tuneMargin = 0.03
	// A choice that won is kept for a number of windows that doubles, from tuneMinHold
	// to tuneMaxHold, each time it wins again, so that the measurements of the other
	// choices cost little once the right one is known.
	tuneMinHold = 8
	tuneMaxHold = 64
)

// DefaultTuneWindow is how long each of a Tuner's measurements lasts unless NewTuner is
// given another.
const DefaultTuneWindow = 10 * time.Millisecond

// tunePhase is what the tuner is measuring.
type tunePhase uint8

const (
	tuneBest     tunePhase = iota // the best batch size, at the start of a climb
	tuneNeighbor                  // a neighbour of the best batch size (twice or half)
	tuneOff                       // batching off, after a climb (auto)
	tuneHold                      // the best batch size, for hold windows
	tuneHoldOff                   // batching off, for hold windows (auto)
	tuneProbe                     // the best batch size once, after holding off (auto)
)

// Tuner is the batch-size search of one worker of a time-warp run. Observe drives it with
// the worker's event counts; it then measures each window's rate at Size() and calls decide.
//
// The climb measures the best size, then its neighbours (twice and half) in one direction
// while they measure better, then the other way, until both neighbours lose; it then holds
// the best size, and climbs again from it after the hold (conditions change during a run).
// With auto, a climb ends with a window with batching off: if that is not beaten by the
// margin, batching stays off for a hold, then one window probes the best size again;
// holds grow while the same choice keeps winning, so that when batching does not pay, the
// probes cost one window in tuneMaxHold+1 at most. An auto tuner starts with batching
// off for one window, then probes, so that a batch path that does not pay costs one
// window at the start. A fixed size (BatchSize) is never climbed, only switched on and off
// (auto).
type Tuner struct {
	auto  bool
	fixed int
	// e is the log2 of the best batch size found; cur that of the size being measured,
	// -1 for off.
	e, cur int
	dir    int // +1 or -1: the direction of the climb
	fails  int // neighbours that lost in a row
	phase  tunePhase
	// bestRate and offRate are the last rates measured at the best size and with batching
	// off.
	bestRate, offRate float64
	// hold counts the windows left in a hold; onHold and offHold are the next holds' lengths.
	hold, onHold, offHold int
	// The current window: its start, and the worker's net and processed counts then.
	start          time.Time
	startNet       int64
	startProcessed uint64
	// window is how long each measurement lasts.
	window time.Duration
}

// NewTuner returns the tuner for a fixed batch size (0: tuned) that, with auto, may also turn
// batching off while it does not pay, measuring over windows of the given length (0:
// DefaultTuneWindow).
func NewTuner(fixed int, auto bool, window time.Duration) Tuner {
	if window <= 0 {
		window = DefaultTuneWindow
	}
	t := Tuner{auto: auto, fixed: fixed, e: tuneStartLog, dir: 1, onHold: tuneMinHold, offHold: tuneMinHold,
		window: window}
	if fixed > 0 {
		t.e = 0
	}
	t.phase, t.cur = tuneBest, t.e
	if auto {
		t.phase, t.cur, t.hold = tuneHoldOff, -1, 1
	}
	return t
}

// Size returns the batch size being measured, 0 for off.
func (t *Tuner) Size() int {
	switch {
	case t.cur < 0:
		return 0
	case t.fixed > 0:
		return t.fixed
	}
	return 1 << t.cur
}

// decide takes the rate measured over the last window at Size() and picks what to measure
// next.
func (t *Tuner) decide(rate float64) {
	switch t.phase {
	case tuneBest:
		t.bestRate = rate
		t.climb()
	case tuneNeighbor:
		if rate > t.bestRate*(1+tuneMargin) {
			t.e, t.bestRate, t.fails = t.cur, rate, 0
		} else {
			t.fails++
			t.dir = -t.dir
		}
		t.climb()
	case tuneOff:
		t.offRate = rate
		if t.bestRate > t.offRate*(1+tuneMargin) {
			t.holdOn()
		} else {
			t.holdOff()
		}
	case tuneHold:
		t.bestRate = rate
		if t.hold--; t.hold <= 0 {
			t.fails = 0
			t.climb()
		}
	case tuneHoldOff:
		t.offRate = rate
		if t.hold--; t.hold <= 0 {
			t.phase, t.cur = tuneProbe, t.e
		}
	case tuneProbe:
		t.bestRate = rate
		if rate > t.offRate*(1+tuneMargin) {
			t.offHold, t.fails = tuneMinHold, 0
			t.climb()
		} else {
			t.holdOff()
		}
	}
}

// climb measures the next neighbour of the best size, or ends the climb.
func (t *Tuner) climb() {
	for t.fixed == 0 && t.fails < 2 {
		if n := t.e + t.dir; n >= tuneMinLog && n <= tuneMaxLog {
			t.phase, t.cur = tuneNeighbor, n
			return
		}
		t.fails++
		t.dir = -t.dir
	}
	if t.auto {
		t.phase, t.cur = tuneOff, -1
		return
	}
	t.holdOn()
}

// holdOn keeps the best size for a while.
func (t *Tuner) holdOn() {
	t.phase, t.cur, t.hold = tuneHold, t.e, t.onHold
	t.onHold = min(2*t.onHold, tuneMaxHold)
}

// holdOff keeps batching off for a while.
func (t *Tuner) holdOff() {
	t.phase, t.cur, t.hold = tuneHoldOff, -1, t.offHold
	t.offHold = min(2*t.offHold, tuneMaxHold)
	t.onHold = tuneMinHold
}

// Observe ends the current measurement window when it has lasted the tuner's window, at
// time now with the worker's counts of events processed and of net events (processed less
// rolled back), feeding decide the window's net event rate. A window in which the worker
// processed nothing tells nothing and is skipped.
func (t *Tuner) Observe(now time.Time, processed uint64, net int64) {
	if !t.start.IsZero() {
		el := now.Sub(t.start)
		if el < t.window {
			return
		}
		if processed > t.startProcessed {
			t.decide(float64(net-t.startNet) / el.Seconds())
		}
	}
	t.start, t.startNet, t.startProcessed = now, net, processed
}

// Restart drops the current measurement window (for example after a kernel compiled, whose
// time is no batch size's fault): the next Observe starts a new one.
func (t *Tuner) Restart() { t.start = time.Time{} }
