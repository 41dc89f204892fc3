package dist

import (
	"time"

	"github.com/warpedgo/warped/event"
)

// Time and LPID are package event's, named as in the rest of the kernel.
type (
	Time = event.Time
	LPID = event.LPID
)

// Engine is what the driver needs of the rank's time-warp engine besides its Fujimoto GVT
// and its count of passive workers (given to New): the manager's own part in the engine (it
// delivers arriving events as a worker without a schedule queue of its own), the engine's
// state of the run, and sampling. The driver calls it from the manager goroutine only, never
// per event of a worker.
type Engine interface {
	// Deliver hands e, an event or anti-message from another rank for one of this rank's
	// LPs, to the worker that runs the LP; the driver may reuse *e afterwards.
	Deliver(e *event.Event)
	// Recycle takes back the record of an event that a worker posted ([Driver.Post]), once
	// it is aggregated.
	Recycle(e *event.Event)
	// TakeLocal returns the least time of what the manager made visible (delivered) since
	// its last report, for its report in local GVT round r.
	TakeLocal(r uint64) Time
	// LocalWork reports whether a worker holds events below the end time or has events
	// handed over to it (every worker is passive when it is called).
	LocalWork() bool
	// ProcessedSoFar returns the number of events the workers have processed, as of their
	// last GVT rounds (for progress lines).
	ProcessedSoFar() uint64
	// GVTWanted reports, and clears, a worker's request for a GVT round sooner than the
	// GVT period.
	GVTWanted() bool
	// GVTWaiting reports a worker's request for a GVT round without clearing it.
	GVTWaiting() bool
	// Fail ends the run with err (the first error wins); Stop ends it (termination
	// detected); Stopped reports whether it ended, and Err with which error.
	Fail(err error)
	Stop()
	Stopped() bool
	Err() error
	// Hosting reports whether the manager's goroutine also runs workers: a turn of them
	// (Work) in each turn of its loop. It then has its own thread's core only, and backs
	// off on that thread rather than yielding to other goroutines.
	Hosting() bool
	// Work runs a turn of the workers the manager's goroutine runs (none when not
	// Hosting), at most events events of a worker that runs alone, and reports whether
	// they processed events.
	Work(events int) bool
	// SafeRose tells the rank's worker that the remote bound ([RemoteSafe.Bound]) rose:
	// it looks at the bound before its next event.
	SafeRose()
	// Ahead reports whether the workers the manager runs hold no event near GVT (within a
	// quarter of GVT's average advance per round): some other rank holds GVT back.
	Ahead() bool
	// Tick is called once a turn of the manager's loop, for engine sampling.
	Tick(now time.Time)
	// Phases returns the manager's time split for engine sampling, or nil when it is off.
	Phases() Phases
}

// Phases splits the manager goroutine's wall time (engine sampling): each method says
// that the manager starts on that kind of work.
type Phases interface {
	Comm()
	GVT()
	Idle()
}
