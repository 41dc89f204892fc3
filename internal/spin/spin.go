// Package spin counts a goroutine's wait by spinning (Wait) so that a long one pauses now
// and then (Pause): spinning on runtime.Gosched alone can leave the goroutine waited for
// unrun for seconds.
package spin

import "time"

// Pause is how long a goroutine whose wait by spinning has lasted sleeps now and then
// (Wait). [runtime.Gosched] puts the goroutine on the global run queue, and a processor
// (Go's P) that always finds work there never steals from the other processors' local
// queues: a goroutine woken onto the local queue of a processor that something else holds
// stays there meanwhile. A dedicated GC mark worker holds its processor, unpreempted, to
// the end of the mark phase, which takes seconds where a node runs more ranks than it has
// cores. When the goroutine left waiting is the one the spinner waits for (a rank's
// manager, which takes the GVT round forward), the run stalls until the collector is done:
// 3.5 to 199 s in 12 of 100 runs of the airport model with 3 and 6 ranks of 2 workers on 2
// cores, none with the pauses (docs/PERFORMANCE.md, "Session 33"). While the spinner
// sleeps its processor is idle, and an idle processor steals.
//
// Where nothing else runs the sleep lasts about a millisecond (Go's timers then wait in
// the network poller, at millisecond resolution), so a spinner pauses only once every
// check turns, and only after its wait has lasted a while.
const Pause = 20 * time.Microsecond

// check is the number of turns between two looks at the clock.
const check = 64

// Wait counts the turns of a goroutine's wait by spinning, and says when the wait has
// lasted long enough to pause (Pause) or to park. The zero value is a wait not begun.
type Wait struct {
	Turns int       // turns in a row
	since time.Time // when they began (read every check turns)
}

// Turn counts a turn of the wait and reports whether it has lasted after, looking at the
// clock on the first turn and every check turns (false in between).
func (w *Wait) Turn(after time.Duration) bool {
	if w.Turns++; w.Turns == 1 {
		w.since = time.Now()
		return false
	}
	return w.Turns%check == 0 && time.Since(w.since) >= after
}
