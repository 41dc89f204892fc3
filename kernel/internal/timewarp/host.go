package timewarp

import (
	"math"
	"runtime"

	"github.com/warpedgo/warped/kernel/internal/core"
)

// Hosting: where the workers outnumber GOMAXPROCS (each with a schedule queue of its own),
// at most GOMAXPROCS of their goroutines can run at once, and the Go scheduler switches
// among them only when one yields or after a 10 ms time slice. A GVT round needs a report
// from every worker, so rounds waited for workers that were not running; the running ones
// ran far ahead in virtual time and were rolled back when the others caught up (PHOLD on
// 2 processors: 4 workers committed 0.2 – 0.6 of 2 workers' rate, 16 workers at times
// under 0.1 with more events rolled back than committed).
//
// So the workers are hosted instead: GOMAXPROCS goroutines each run a share of them
// (worker i on goroutine i modulo GOMAXPROCS), taking turns in the order of their least
// pending events, as a sequential simulation of their LPs would: each pass, the hosted
// worker whose least event is earliest runs up to hostEvents events (run), and every other
// one housekeeps (it drains its inbound, reports to a running GVT round, collects fossils).
// The workers and their queues are unchanged, each still a worker of the engine in every
// respect (GVT, the horizon, the safe bounds), so the result is the same; only what runs
// when differs.

// hostEvents is the most events a hosted worker takes before its host looks again at
// which of its workers goes next.
const hostEvents = 32

// hosted reports whether the workers are hosted (see the comment at the top of host.go):
// more of them than GOMAXPROCS, each with a queue of its own.
func (d *timeWarpDispatcher) hosted() bool {
	return !d.grouped() && len(d.workers) > runtime.GOMAXPROCS(0)
}

// hosts returns the workers of each host goroutine.
func (d *timeWarpDispatcher) hosts() [][]*worker {
	n := runtime.GOMAXPROCS(0)
	hs := make([][]*worker, n)
	for i, w := range d.workers {
		hs[i%n] = append(hs[i%n], w)
	}
	return hs
}

// hostLoop runs the workers ws on one goroutine (see the comment at the top of host.go).
func hostLoop(ws []*worker) {
	d := ws[0].d
	var cur *worker // the worker running, for the recovery of a model panic
	defer func() {
		if r := recover(); r != nil && cur != nil {
			d.fail(core.RecoverModel(r, d.sim, cur.frame().Self, cur.frame().Now, false))
		}
	}()
	for !d.done.Load() {
		next := hostNext(ws)
		progress := false
		if next != nil {
			cur = next
			took, st := next.runOrHousekeep(hostEvents)
			if st == turnFailed {
				return
			}
			progress = took > 0
		}
		for _, w := range ws {
			if w == next {
				continue
			}
			// The others housekeep, or, when the first could take nothing (its least
			// event is past its ahead bound or window, theirs need not be), run as well.
			cur = w
			n := 0
			if !progress {
				n = hostEvents
			}
			took, st := w.runOrHousekeep(n)
			if st == turnFailed {
				return
			}
			progress = progress || took > 0
		}
		if !progress {
			// Not parked: the parker watches one worker's inbound only.
			d.idleRound()
			ws[0].spinOrPark(false)
		} else {
			ws[0].busy()
		}
		for _, w := range ws {
			w.mark(phaseProcess)
		}
	}
}

// hostNext returns the hosted worker whose least pending event is earliest, or nil when
// none holds any.
func hostNext(ws []*worker) *worker {
	var next *worker
	least := math.Inf(1)
	for _, w := range ws {
		if t, ok := w.q.cal.Min(); ok && t < least {
			next, least = w, t
		}
	}
	return next
}

// runOrHousekeep is a hosted worker's part of a pass of its host: run for up to n events,
// or, with n 0, housekeep alone (and go idle when it may take nothing).
func (w *worker) runOrHousekeep(n int) (int, turnState) {
	if n > 0 {
		return w.run(n)
	}
	d, q := w.d, w.q
	g := w.housekeep()
	t, ok := q.cal.Min()
	if lim := d.limit(); !ok || w.pastLimit(t, lim, g) {
		return 0, w.stopTurn(t, ok, lim)
	}
	return 0, turnDone
}
