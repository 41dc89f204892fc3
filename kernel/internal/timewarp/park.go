package timewarp

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/internal/spin"
	"github.com/warpedgo/warped/kernel/internal/osthread"
)

// Parking: a worker that has nothing to take (no event below the end, or the optimism
// window's limit) spins for parkAfter, giving its processor to other goroutines at each
// turn, and then parks: it sleeps until one of the things it waits for changes, so that a
// run across processes whose workers wait for remote events, or a run near its end, does
// not keep cores busy that other threads and processes need. A worker that holds events
// but waits at the ahead bound for a GVT round does not park: the round usually ends
// within microseconds, or, on a busy machine, within the operating system's time slice,
// and a woken thread waits for a core behind whatever runs there (see parkAfter). Past
// parkAfter it pauses now and then instead (spin.Pause: spinning through the Go scheduler
// alone can leave the goroutine it waits for unrun).
//
// What a parked worker waits for, and who wakes it:
//   - a GVT round starts (it must report in it) or ends (GVT, the commit horizon and the
//     ahead bound move): the [gvt.Fujimoto.OnChange] hook (onGVTChange), called by whoever
//     started or ended the round, wakes every parked worker (wakeAll);
//   - events handed over to its queue's inbound: the worker that handed them over wakes
//     the queue's workers (handOver, flushOutboxes);
//   - a group member's commit put events into the shared calendar or released an LP: the
//     committer wakes the group's members (group.go);
//   - the run ends (stop, fail).
//
// No wake-up is lost: the worker sets parked, then checks each condition again (mayGo);
// a waker makes its change, then reads parked. Both are sequentially consistent atomics,
// so either the worker's check sees the change or the waker sees parked set and sends on
// wake (buffered: a wake-up sent before the worker sleeps is kept). A spurious wake-up
// costs one turn of the loop.

// parkAfter is how long a worker spins ([runtime.Gosched] each turn) before it parks.
// Most waits are for a peer's report, which comes within microseconds on an idle machine
// and within the operating system's time slice (a few milliseconds) on a busy one. A
// parked thread that is woken waits for a core behind whatever runs there, up to that
// time slice again, so on a loaded machine a worker that parks after a short wait is
// slower than one that spins (docs/PERFORMANCE.md). So a worker parks only when the wait
// is long (nothing to do until a remote event or the end), where spinning would only burn
// a core.
const parkAfter = 5 * time.Millisecond

// yieldAfter is the number of idle turns in a row after which a worker also gives its
// thread's core away (sched_yield) at each turn, besides [runtime.Gosched]. A worker waits
// mostly at the ahead bound (aheadFirst), for a GVT round that needs another worker's
// report; on a loaded machine that worker's thread is often off its core, and spinning on
// Gosched keeps the core from it (most of a loaded 2-worker run's CPU samples fall in
// that spin). Yielding on every idle turn costs a model with short waits (the epidemic);
// after 64 turns it raises the rate under load on every model measured
// (docs/PERFORMANCE.md).
const yieldAfter = 64

// parker is what a worker needs to park: its wake-up channel and its parked flag. The
// flag is written by its worker and read by wakers; the rest is the worker's own.
type parker struct {
	parked atomic.Bool
	wake   chan struct{}
	spin   spin.Wait // its idle turns in a row
	parks  int       // times parked, for tests
}

// spinOrPark is a worker's idle turn: a Gosched while it has been idle for less than
// parkAfter, then it parks until something changes (see the comment at the top of park.go),
// or, where it may not park, pauses now and then (spin.Pause).
func (w *worker) spinOrPark(mayPark bool) {
	pk := &w.pk
	if !pk.spin.Turn(w.d.parkAfter) {
		if pk.spin.Turns > yieldAfter {
			osthread.Yield()
		}
		runtime.Gosched()
		return
	}
	if !mayPark {
		time.Sleep(spin.Pause)
		return
	}
	pk.parked.Store(true)
	if !w.mayGo() {
		pk.parks++
		<-pk.wake
	}
	pk.parked.Store(false)
	select { // a wake-up sent after mayGo's check
	case <-pk.wake:
	default:
	}
}

// idleTurn is a turn of a worker that may not take an event: with spin set it does not park
// (it holds events below the limit and waits at the ahead bound for a GVT round to end, or
// its host waits for another worker). When every worker is idle it starts a GVT round
// (idleRound).
func (w *worker) idleTurn(spin bool) {
	w.d.idleRound()
	w.spinOrPark(!spin)
}

// busy resets the idle turns (the worker took an event).
func (w *worker) busy() { w.pk.spin = spin.Wait{} }

// mayGo reports whether the worker, which has nothing it may take, has something to do
// after all: the run ended, events were handed over, a round runs that it has not
// reported in, its least event came below the limit (GVT moved an optimism window),
// (in a group) a member committed since its take, or the number of active hosts changed
// (its host must follow: adapt.go).
func (w *worker) mayGo() bool {
	d, q := w.d, w.q
	if d.done.Load() || q.inN.Load() > 0 || w.tracker.Due(d.gvt.Round()) ||
		w.grp && q.commits.Load() != w.seenCommits ||
		d.hs != nil && d.hs.active.Load() != w.hostPlan {
		return true
	}
	if w.grp {
		return false // the calendar is under the group's lock; a round start wakes it
	}
	t, ok := q.pend.Min()
	return ok && t < d.limit()
}

// wakeUp wakes the worker if it is parked.
func (w *worker) wakeUp() {
	if w.pk.parked.Load() {
		select {
		case w.pk.wake <- struct{}{}:
		default:
		}
	}
}

// wakeAll wakes every parked worker (at a GVT change, onGVTChange, and at the run's end).
func (d *timeWarpDispatcher) wakeAll() {
	for _, w := range d.workers {
		w.wakeUp()
	}
	if d.done.Load() && d.hs != nil {
		d.hs.wakeHosts() // hosts without workers (host.idle)
	}
}

// wakeQueue wakes the parked workers of queue q (events were handed over to it, or put
// into its calendar).
func (q *queue) wakeQueue() {
	for _, w := range q.workers {
		w.wakeUp()
	}
}
