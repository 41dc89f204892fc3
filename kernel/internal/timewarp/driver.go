package timewarp

import (
	"math"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/dist"
)

// driverEngine is the engine as the cross-process driver (package dist) sees it: the
// dispatcher, the manager's worker (d.mw, which delivers the events that arrive from other
// ranks) and the sampler. The driver calls it from the manager goroutine only.
type driverEngine struct {
	d  *timeWarpDispatcher
	sp *sampler
	co *cohost // host 0, which the manager's goroutine runs; nil when the workers run on their own goroutines (groups)
}

// Hosting reports whether the manager's goroutine runs a host (cohost.go).
func (e *driverEngine) Hosting() bool { return e.co != nil }

// Work runs a turn of the host the manager's goroutine runs; it reports whether its
// workers processed events.
func (e *driverEngine) Work(events int) bool { return e.co != nil && e.co.work(events) }

// SafeRose bumps the one worker's queue's changes (safe events across processes run with
// one worker): its stretch ends, and its housekeep reads the new bound (remotesafe.go).
func (e *driverEngine) SafeRose() { e.d.workers[0].q.changes.Add(1) }

// Ahead implements [dist.Engine].
func (e *driverEngine) Ahead() bool { return e.co != nil && e.co.ahead() }

// Deliver hands e, from another rank, to the worker of its LP, as the manager's worker.
func (e *driverEngine) Deliver(ev *event.Event) { e.d.deliver(e.d.mw, ev) }

// Recycle puts the record of a posted event into the manager's worker's pool.
func (e *driverEngine) Recycle(ev *event.Event) { e.d.mw.pool.Put(ev) }

// TakeLocal returns the manager's report to local GVT round r.
func (e *driverEngine) TakeLocal(r uint64) Time { return e.d.mw.tracker.Take(r, math.Inf(1)) }

// LocalWork reports whether a worker holds or was handed events (see localWork).
func (e *driverEngine) LocalWork() bool { return e.d.localWork() }

// ProcessedSoFar returns the events processed as of the workers' last GVT rounds.
func (e *driverEngine) ProcessedSoFar() uint64 { return e.d.processedSoFar() }

// GVTWanted reports and clears a worker's request for a GVT round (see gvtWanted).
func (e *driverEngine) GVTWanted() bool { return e.d.gvtWanted.Swap(false) }

// GVTWaiting reports a worker's request for a GVT round, leaving it for GVTWanted.
func (e *driverEngine) GVTWaiting() bool { return e.d.gvtWanted.Load() }

// Fail ends the run with err.
func (e *driverEngine) Fail(err error) { e.d.fail(err) }

// Stop ends the run.
func (e *driverEngine) Stop() { e.d.stop() }

// Stopped reports whether the run ended.
func (e *driverEngine) Stopped() bool { return e.d.done.Load() }

// Err returns the run's error.
func (e *driverEngine) Err() error { return e.d.err }

// Tick lets the sampler take its rows.
func (e *driverEngine) Tick(now time.Time) {
	if e.sp != nil {
		e.sp.tick(e.d, now)
	}
}

// Phases returns the manager's phase clock, or nil when sampling is off.
func (e *driverEngine) Phases() dist.Phases {
	if e.sp == nil {
		return nil
	}
	return (*managerPhases)(e.sp.manager())
}

// managerPhases is the manager's phaseClock as [dist.Phases].
type managerPhases phaseClock

// Comm starts communication.
func (c *managerPhases) Comm() { (*phaseClock)(c).enter(phaseComm) }

// GVT starts GVT work.
func (c *managerPhases) GVT() { (*phaseClock)(c).enter(phaseGVT) }

// Idle starts the manager's back-off.
func (c *managerPhases) Idle() { (*phaseClock)(c).enter(phaseIdle) }
