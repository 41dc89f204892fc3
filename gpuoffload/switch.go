package gpuoffload

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultSwitchWindow is how long each of a Switch's measurements lasts unless NewSwitch
// is given another: longer than a Tuner's, since it decides for every worker at once.
const DefaultSwitchWindow = 4 * DefaultTuneWindow

// switchPhase is what a Switch is measuring.
type switchPhase uint8

const (
	switchOff   switchPhase = iota // batching off, for hold windows
	switchProbe                    // batching on for one window, after holding off
	switchOn                       // batching on, for hold windows
	switchCheck                    // batching off for one window, after holding on
)

// Switch is the decision of --gpu auto, whether batching pays, taken once for all the
// workers of a process: they batch together or not at all. Deciding per worker (a Tuner
// with auto) measures each worker's own rate over short windows; with many workers sharing
// one GPU that rate depends on what the others do, and the windows measure noise as often
// as batching. A Switch measures the process's net event rate instead: each worker's Tuner
// (NewSharedTuner) publishes its net events when it looks at the clock, and whichever
// worker finds the window over decides for all.
//
// The decision follows the Tuner's: batching off for one window first, then one window
// on (a probe); the better by tuneMargin is held for a number of windows that doubles,
// from tuneMinHold to tuneMaxHold, while it keeps winning, then the other is measured
// again for one window. Batch sizes stay each worker's own (its Tuner climbs while the
// Switch is on).
//
// Concurrency: on, gen and net are atomics that any worker reads or adds to; the decision
// state below mu is taken with TryLock, so a worker never waits for another's decision.
type Switch struct {
	on  atomic.Bool
	gen atomic.Uint32 // counts the flips, so that tuners restart their own windows
	net atomic.Int64  // net events published by the workers

	mu                    sync.Mutex
	phase                 switchPhase
	hold, onHold, offHold int
	offRate, onRate       float64
	start                 time.Time
	startNet              int64
	window                time.Duration
}

// NewSwitch returns a process's auto decision, batching off at first, measuring over
// windows of the given length (0: DefaultSwitchWindow).
func NewSwitch(window time.Duration) *Switch {
	if window <= 0 {
		window = DefaultSwitchWindow
	}
	return &Switch{phase: switchOff, hold: 1, onHold: tuneMinHold, offHold: tuneMinHold, window: window}
}

// On reports whether the workers batch now.
func (s *Switch) On() bool { return s.on.Load() }

// publish adds a worker's net events (processed less rolled back) since it last published.
func (s *Switch) publish(delta int64) { s.net.Add(delta) }

// Restart drops the current measurement window (a kernel compiled, whose time is no
// decision's fault): the next observe starts a new one.
func (s *Switch) Restart() {
	s.mu.Lock()
	s.start = time.Time{}
	s.mu.Unlock()
}

// observe ends the current window when it has lasted the switch's window, and decides.
// It returns at once when another worker is deciding.
func (s *Switch) observe(now time.Time) {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	net := s.net.Load()
	if !s.start.IsZero() {
		el := now.Sub(s.start)
		if el < s.window {
			return
		}
		s.decide(float64(net-s.startNet) / el.Seconds())
	}
	s.start, s.startNet = now, net
}

// decide takes the process's rate over the last window and picks what to measure next
// (mu held).
func (s *Switch) decide(rate float64) {
	switch s.phase {
	case switchOff:
		s.offRate = rate
		if s.hold--; s.hold <= 0 {
			s.set(switchProbe, true, 1)
		}
	case switchOn:
		s.onRate = rate
		if s.hold--; s.hold <= 0 {
			s.set(switchCheck, false, 1)
		}
	case switchProbe, switchCheck:
		if s.phase == switchProbe {
			s.onRate = rate
		} else {
			s.offRate = rate
		}
		if s.onRate > s.offRate*(1+tuneMargin) {
			s.set(switchOn, true, s.onHold)
			s.onHold, s.offHold = min(2*s.onHold, tuneMaxHold), tuneMinHold
		} else {
			s.set(switchOff, false, s.offHold)
			s.offHold, s.onHold = min(2*s.offHold, tuneMaxHold), tuneMinHold
		}
	}
}

// set enters phase ph with batching on or off for hold windows.
func (s *Switch) set(ph switchPhase, on bool, hold int) {
	s.phase, s.hold = ph, hold
	if s.on.Load() != on {
		s.on.Store(on)
		s.gen.Add(1)
	}
}
