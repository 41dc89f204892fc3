// Package gvt computes global virtual time (GVT): a lower bound on the time of every event
// that is unprocessed, being processed or in flight, so that nothing below it can ever be
// rolled back. Memory and other resources below GVT can be reclaimed (fossil collection),
// and the run is over once GVT reaches the end time.
//
// Fujimoto is Fujimoto and Hybinette's shared-memory algorithm ("Computing global virtual
// time in shared-memory multiprocessors", 1997) among the worker goroutines of one process.
// A round is started by raising a flag (a round number). Each worker, before it takes its
// next event, sees the flag and reports once: the least time among the events it can see
// in its own schedule queue and the events it made visible since its previous report (sent,
// re-inserted by a rollback, rescheduled). The worker keeps that second minimum itself;
// see Tracker. When the last worker has reported, the round's GVT is the least report.
//
// Why that is a lower bound: every event present in a queue when that queue was reported
// is at least the reported head. An event made visible later was made by a worker that
// had not reported yet (and counts it in its report) or that had (and then made it while
// processing an event taken after its report, itself at least the bound, by induction on
// the order in which events are made, and events are never sent into the past). A worker
// that is processing an event when the flag rises reports after finishing it, so no event
// is in process when the round ends.
package gvt

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/warpedgo/warped/event"
)

// Fujimoto coordinates GVT rounds among a fixed number of workers. Start, Round, Report
// and GVT are safe for concurrent use.
//
// Every worker reads round, gvt and rounds before each event, while reports write missing
// and min: the two groups sit on separate cache lines, so that a report does not evict the
// line every worker reads.
type Fujimoto struct {
	_ [cacheLine]byte // keeps the read-mostly line apart from whatever precedes it
	// round is the current round's number, or 0 when none is running. Rounds count up.
	round  atomic.Uint64
	gvt    atomic.Uint64
	rounds atomic.Uint64 // completed rounds
	_      [cacheLine - 24]byte
	// last is the number of the last round started.
	last atomic.Uint64
	// missing counts the workers that have not reported in the current round.
	missing atomic.Int64
	// min is the least report of the current round, as float64 bits (reports are >= 0, so
	// their bits order as the values do).
	min     atomic.Uint64
	workers int
	// local marks a coordinator inside one process of a run across processes: a round's
	// result is the process's local minimum (see Result), and GVT is set by SetGVT.
	local bool
	// result and resultRound are the last local round's minimum and number (local only).
	result, resultRound atomic.Uint64
	// notify, when set (OnChange), is called after a round starts, after one ends and
	// after SetGVT: the moments a waiting worker may have something to do.
	notify func()
}

// OnChange sets fn to be called, from whichever goroutine made the change, after a round
// starts, after a round ends (GVT or the local result is out) and after SetGVT. A worker
// that parks while it waits for GVT to move, or for a round to report in, is woken there
// instead of polling Round and GVT. It must be set before the coordinator is shared.
func (f *Fujimoto) OnChange(fn func()) { f.notify = fn }

// changed calls the notify function, if any.
func (f *Fujimoto) changed() {
	if f.notify != nil {
		f.notify()
	}
}

// cacheLine is the size of a cache line on the machines the kernel targets (x86-64, and
// most ARM64 cores), for padding.
const cacheLine = 64

// NewFujimoto returns a coordinator for the given number of workers, with GVT 0.
func NewFujimoto(workers int) *Fujimoto {
	f := &Fujimoto{workers: workers}
	f.gvt.Store(math.Float64bits(0))
	return f
}

// NewFujimotoLocal returns a coordinator for one process of a run across processes: its
// rounds compute the process's local minimum (Result), which the manager goroutine feeds
// into Mattern's algorithm between processes, and GVT changes only through SetGVT. The
// participants are the workers and the manager itself (which reports the events it
// delivered from other processes).
func NewFujimotoLocal(participants int) *Fujimoto {
	f := NewFujimoto(participants)
	f.local = true
	return f
}

// starting marks a round being set up by Start.
const starting = ^uint64(0)

// Start begins a round unless one is running (or starting) and reports whether it did.
func (f *Fujimoto) Start() bool {
	// Claim the round first, so that a concurrent Start cannot reset the counters of a
	// round that workers are already reporting in.
	if !f.round.CompareAndSwap(0, starting) {
		return false
	}
	n := f.last.Add(1)
	f.missing.Store(int64(f.workers))
	f.min.Store(math.Float64bits(math.Inf(1)))
	// Publishing the round number last makes the fields above visible to every worker
	// that sees it.
	f.round.Store(n)
	f.changed()
	return true
}

// Round returns the number of the running round, or 0. Workers read it before each event.
func (f *Fujimoto) Round() uint64 {
	if r := f.round.Load(); r != starting {
		return r
	}
	return 0
}

// Report records worker's local minimum for round (which it read from Round). Each worker
// reports once per round. The worker whose report completes the round gets the new GVT
// and ok = true; the round is then over.
func (f *Fujimoto) Report(round uint64, localMin event.Time) (gvt event.Time, ok bool) {
	if localMin < 0 || localMin != localMin {
		panic("gvt: a local minimum must be a time >= 0")
	}
	bits := math.Float64bits(localMin)
	for {
		old := f.min.Load()
		if bits >= old || f.min.CompareAndSwap(old, bits) {
			break
		}
	}
	if f.missing.Add(-1) != 0 {
		return 0, false
	}
	g := math.Float64frombits(f.min.Load())
	if f.local {
		f.result.Store(math.Float64bits(g))
		f.resultRound.Store(round)
		f.round.Store(0)
		f.changed()
		return g, true
	}
	if prev := math.Float64frombits(f.gvt.Load()); g < prev {
		// A lower bound never needs to go down; a smaller result means the caller
		// reported wrongly, which the kernel's tests check for.
		panic("gvt: GVT would decrease; a worker reported more than its true minimum")
	}
	f.gvt.Store(math.Float64bits(g))
	f.rounds.Add(1)
	f.round.Store(0)
	f.changed()
	return g, true
}

// Result returns the local minimum computed by round (local coordinators only); ok is false
// until that round has ended.
func (f *Fujimoto) Result(round uint64) (min event.Time, ok bool) {
	if f.resultRound.Load() != round {
		return 0, false
	}
	return math.Float64frombits(f.result.Load()), true
}

// SetGVT sets the GVT that the processes agreed on (local coordinators only). A GVT never
// decreases: a smaller value than the current one is an error (a protocol bug), and GVT
// stays as it was.
func (f *Fujimoto) SetGVT(g event.Time) error {
	if prev := f.GVT(); g < prev || g != g {
		return fmt.Errorf("gvt: GVT would decrease from %v to %v", prev, g)
	}
	f.gvt.Store(math.Float64bits(g))
	f.rounds.Add(1)
	f.changed()
	return nil
}

// GVT returns the last computed GVT (0 before the first round ends).
func (f *Fujimoto) GVT() event.Time { return math.Float64frombits(f.gvt.Load()) }

// Rounds returns the number of completed rounds.
func (f *Fujimoto) Rounds() uint64 { return f.rounds.Load() }

// Tracker is a worker's own part of the algorithm: the least time of the events it made
// visible since its last report, and the last round it reported in. Each worker owns one;
// it is not shared.
type Tracker struct {
	sentMin  event.Time
	reported uint64
}

// NewTracker returns a tracker with nothing made visible yet.
func NewTracker() Tracker { return Tracker{sentMin: math.Inf(1)} }

// Made records that the worker made an event at time t visible (sent it, put it back into
// an input queue, or rescheduled it).
func (t *Tracker) Made(at event.Time) {
	if at < t.sentMin {
		t.sentMin = at
	}
}

// Due reports whether the worker must report in round (a value from Fujimoto.Round).
func (t *Tracker) Due(round uint64) bool { return round != 0 && round != t.reported }

// Take returns the worker's local minimum for round, given the least time it sees in its
// own schedule queue, and starts tracking afresh.
func (t *Tracker) Take(round uint64, queueMin event.Time) event.Time {
	m := min(queueMin, t.sentMin)
	t.sentMin = math.Inf(1)
	t.reported = round
	return m
}
