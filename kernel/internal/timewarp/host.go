package timewarp

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/internal/spin"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Hosts: the workers (each with a schedule queue of its own) run on host goroutines, at
// most GOMAXPROCS of them, and the number of hosts that run workers follows the machine's
// load (adapt.go).
//
// Go runs at most GOMAXPROCS goroutines at once and switches among the others only when one
// yields or after a 10 ms time slice. A GVT round needs a report from every worker, so with
// a goroutine per worker, rounds wait for workers that are not running; the running ones
// run far ahead in virtual time and are rolled back when the others catch up
// (docs/DECISIONS.md, "Never waits, first part"). The same happens one level down when
// other processes take the machine's cores: a worker whose thread is off its core holds up
// every round.
//
// So the workers are hosted: each active host runs a share of them (worker i on host i
// modulo the number of active hosts), taking turns in the order of their least pending
// events, as a sequential simulation of their LPs would: each pass, the hosted worker whose
// least event is earliest runs up to hostEvents events (run), and every other one
// housekeeps (it drains its inbound, reports to a running GVT round, collects fossils). A
// host with one worker runs it as a worker goroutine of its own would. The workers and
// their queues are unchanged, each still a worker of the engine in every respect (GVT, the
// horizon, the safe bounds), so the result is the same; only what runs when differs.
//
// A worker is run by one host at a time: a host claims it (worker.host, from free to the
// host's number) before running it and frees it when the number of active hosts changes,
// between two of its turns; the atomic claim orders the hosts' accesses to the worker.

// hostEvents is the most events a hosted worker takes before its host looks again at
// which of its workers goes next; soloEvents the most a host with one worker takes before
// it looks at the plan and its thread's load again.
const (
	hostEvents = 64
	soloEvents = 4096
)

// free is worker.host's value while no host runs the worker.
const free = -1

// hostSet is the run's hosts and how many of them run workers now.
type hostSet struct {
	hosts []*host
	// active is the number of hosts that run workers (hosts [0, active)); written by host 0
	// (adapt.go), read by every host at each pass.
	active atomic.Int32
	// adapt is host 0's record of its decisions on active (adapt.go).
	adapt adaptState
	// threadTime is the time the active hosts ran, summed over them, up to threadsSince,
	// the last change of active (or the start): host 0's (adapt.go's countThreads), read
	// once the hosts have ended.
	threadTime   time.Duration
	threadsSince time.Time
}

// host is a host goroutine's own state.
type host struct {
	d  *timeWarpDispatcher
	id int
	// plan is the number of active hosts that its claims follow; ws are the workers it
	// runs (claimed), want those of its share under plan that it has not claimed yet
	// (their previous host has not freed them).
	plan int32
	ws   []*worker
	want []*worker
	// mine[i] says whether the host runs worker i (ws), for its workers' direct
	// hand-overs (worker.beside); only the host's goroutine reads and writes it.
	mine []bool
	// cur is the worker running, for the recovery of a model panic.
	cur *worker
	// claim counts the turns it has waited to claim its share (idle).
	claim spin.Wait
	// wake wakes the host while it has no workers (adapt.go).
	wake chan struct{}
	// turnEvents is the most events its only worker takes in a turn (soloEvents, or the
	// manager's choice on its goroutine, cohost.work); rest is its idle turn when its workers
	// may take nothing (the worker's idleTurn, or the co-host's); cohost is set on the
	// manager's goroutine (cohost.go). All three are set before the run, turnEvents also
	// by the manager before each co-host turn.
	turnEvents int
	rest       func(w *worker, spin bool)
	cohost     *cohost
}

// newHosts makes the run's hosts: GOMAXPROCS of them, or one per worker where there are
// fewer workers, all active from start, the run's.
func (d *timeWarpDispatcher) newHosts(start time.Time) *hostSet {
	n := min(len(d.workers), runtime.GOMAXPROCS(0))
	hs := &hostSet{threadsSince: start}
	hs.active.Store(int32(n))
	for i := range n {
		hs.hosts = append(hs.hosts, &host{d: d, id: i, plan: -1, wake: make(chan struct{}, 1),
			turnEvents: soloEvents, rest: (*worker).idleTurn, mine: make([]bool, len(d.workers))})
	}
	for _, w := range d.workers {
		w.host.Store(free)
	}
	hs.startAdapt(d)
	return hs
}

// loop is a host goroutine.
func (h *host) loop() {
	defer h.recoverModel()
	defer h.release()
	for !h.d.done.Load() && h.turn() {
	}
}

// recoverModel ends the run with the model's panic, when the host's worker panicked.
func (h *host) recoverModel() {
	if r := recover(); r != nil && h.cur != nil {
		d := h.d
		d.fail(core.RecoverModel(r, d.sim, h.cur.frame().Self, h.cur.frame().Now, false))
	}
}

// turn is one turn of the host: it follows the plan, runs its workers (or waits for its
// share), and adapts the plan. It returns false when the run failed.
func (h *host) turn() bool {
	h.follow()
	var ok bool
	switch len(h.ws) {
	case 0:
		h.idle()
		ok = true
	case 1:
		ok = h.solo()
	default:
		ok = h.pass()
	}
	if ok {
		h.adapt() // adapt.go
	}
	return ok
}

// follow makes the host's claims follow the number of active hosts: when it changed, the
// host frees its workers and takes its new share; it claims each worker of its share once
// the worker's previous host has freed it.
func (h *host) follow() {
	d := h.d
	if k := d.hs.active.Load(); k != h.plan {
		h.release()
		h.plan = k
		h.claim = spin.Wait{}
		if int32(h.id) < k {
			for i := h.id; i < len(d.workers); i += int(k) {
				h.want = append(h.want, d.workers[i])
			}
		}
	}
	for i := 0; i < len(h.want); {
		if w := h.want[i]; w.host.CompareAndSwap(free, int32(h.id)) {
			w.hostPlan, w.leastKnown = h.plan, false // another host may have run it
			w.mates, h.mine[w.id] = h.mine, true
			h.ws = append(h.ws, w)
			h.want[i] = h.want[len(h.want)-1]
			h.want = h.want[:len(h.want)-1]
		} else {
			i++
		}
	}
}

// release frees the host's workers and forgets its share.
func (h *host) release() {
	for _, w := range h.ws {
		h.mine[w.id] = false
		w.host.Store(free)
	}
	h.ws, h.want = h.ws[:0], h.want[:0]
}

// idle is a turn of a host without workers: it waits for its share's previous hosts to
// free them (spinning: they do so at their next turn, and a long wait pauses as a
// worker's does, spin.Pause), or, inactive, parks until the number of active hosts changes
// or the run ends (adapt.go wakes it).
func (h *host) idle() {
	if h.cohost != nil {
		return // the manager backs off instead (cohost.go)
	}
	if len(h.want) > 0 {
		if h.claim.Turn(h.d.parkAfter) {
			time.Sleep(spin.Pause)
		} else {
			runtime.Gosched()
		}
		return
	}
	if h.d.hs.active.Load() != h.plan || h.d.done.Load() {
		return
	}
	<-h.wake
}

// solo is a turn of a host with one worker: it runs as a worker goroutine of its own would,
// and parks when the worker has nothing to do (park.go) and no other worker is to come. It
// returns false when the run failed.
func (h *host) solo() bool {
	w := h.ws[0]
	h.cur = w
	took, st := w.run(h.turnEvents)
	switch st {
	case turnFailed:
		return false
	case turnIdle, turnAhead:
		if took > 0 {
			w.busy()
		}
		// Not parked while a worker of its share waits to be claimed: its previous host
		// frees it without waking anyone.
		h.rest(w, st == turnAhead || len(h.want) > 0)
		w.mark(phaseProcess)
	}
	return true
}

// pass is a pass of a host over its workers (see the comment at the top of host.go). It
// returns false when the run failed.
//
// A pass costs the host a look at every worker, and with many workers a host (16 on one
// thread) those looks cost more than the events: a third more instructions an event than
// one worker (docs/PERFORMANCE.md). So a worker whose queue saw no change since its last
// housekeep (quiet) is not housekept again, and its least event is the one the host read
// after it last ran: only its own runs and housekeeps move its pending events (hand-overs
// go to its inbound, which bumps its changes).
func (h *host) pass() bool {
	ws := h.ws
	next := hostNext(ws)
	progress := false
	if next != nil {
		h.cur = next
		took, st := next.runOrHousekeep(hostEvents)
		next.leastKnown = false
		if st == turnFailed {
			return false
		}
		progress = took > 0
	}
	for _, w := range ws {
		if w == next || progress && w.quiet() {
			continue
		}
		// The others housekeep, or, when the first could take nothing (its least event
		// is past its ahead bound or window, theirs need not be), run as well.
		h.cur = w
		n := 0
		if !progress {
			n = hostEvents
		}
		took, st := w.runOrHousekeep(n)
		w.leastKnown = false
		if st == turnFailed {
			return false
		}
		progress = progress || took > 0
	}
	if !progress {
		// Not parked: the parker watches one worker's inbound only.
		h.rest(ws[0], true)
	} else {
		ws[0].busy()
	}
	for _, w := range ws {
		w.mark(phaseProcess)
	}
	return true
}

// quiet reports whether a hosted worker has nothing to housekeep: its queue saw no change
// since its last housekeep, and it is not one that housekeeps before every event.
func (w *worker) quiet() bool {
	return w.leastKnown && !w.perEvent && !w.grp && w.q.changes.Load() == w.seenChanges
}

// hostNext returns the hosted worker whose least pending event is earliest, or nil when
// none holds any.
func hostNext(ws []*worker) *worker {
	var next *worker
	least := math.Inf(1)
	for _, w := range ws {
		if !w.leastKnown {
			w.least = math.Inf(1)
			if t, ok := w.q.pend.Min(); ok {
				w.least = t
			}
			w.leastKnown = true
		}
		if w.least < least {
			next, least = w, w.least
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
	t, ok := q.pend.Min()
	if lim := d.limit(); !ok || w.pastLimit(t, lim, g) {
		return 0, w.stopTurn(t, ok, lim)
	}
	return 0, turnDone
}
