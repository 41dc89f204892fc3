// Package statemgr saves and restores the state of one logical process (LP) for the
// time-warp dispatcher: periodic copy state saving, rollback with coast forward, and
// fossil collection below GVT.
//
// # What is saved
//
// A saved state is the LP's model state (whatever its Snapshot returns) together with the
// kernel's per-LP [Core]: the LP's random-number generator and its send sequence number.
// Restoring both makes a re-executed event regenerate exactly the same draws and the same
// event keys (see package event).
//
// Each saved state carries a key: the key of the last event the LP had processed when the
// state was taken, so the state is "the LP after processing every event up to and including
// that key". The state that [Queue.Init] saves, before any event, has no key and sorts
// before everything. Saved states are kept oldest first, in increasing key order, in a ring
// buffer.
//
// # Period
//
// With period p, [Queue.AfterEvent] saves after every p-th event processed since the last
// saved state. The count restarts at every saved state, including the state that a rollback
// restores: after a rollback the counter starts from the restored state, so the next save
// happens after the p-th event processed from it. Period 1 is copy state saving: every
// processed event has a state, and a rollback never needs coast forward.
//
// Coast-forward events go through AfterEvent like any other: it may save during coast
// forward, which is correct (the LP is in exactly the state it had the first time) and
// keeps the rule "a state every p events" simple. Consequently, whatever happened before,
// the processed events between the state a rollback restores and the rollback key number
// at most p-1.
//
// # Worker protocol
//
// For one LP, owned by one worker at a time (a Queue has no locks):
//
//  1. At the start, after the LP's Init: q.Init(lp, core).
//  2. Process an event with key k (first time, re-execution, or coast forward alike): run the
//     handler, then q.AfterEvent(k, lp, core).
//  3. Straggler with key s (s < key of the last processed event), or an anti-message whose
//     positive twin, with key s, was processed: r, ok := q.Rollback(s, lp, &core). The LP
//     and core now hold the state after event r (after nothing when !ok). Every processed
//     event with key >= s is undone: return them to the pending queue (dropping the
//     cancelled twin). Then coast forward: re-execute, without sending, each processed
//     event with key in (r, s) in increasing order, calling AfterEvent after each (step 2).
//     The LP is then exactly as it was after the last processed event below s. For an
//     anti-message, s may be its own key or its twin's: no event lies between the two.
//  4. New GVT g: q.FossilCollect(g). Afterwards q.Oldest() tells which processed events are
//     still needed for coast forward: every processed event whose key is greater than the
//     oldest saved state's key must be kept; those at or below it can be dropped.
//
// Rollback needs a saved state below the rollback key. FossilCollect keeps the latest state
// whose key's receive time is below GVT, so a rollback to any key whose receive time is at
// least GVT always finds one; a rollback below GVT is a kernel bug and panics.
//
// # Memory
//
// Snapshot values of discarded states (by rollback or fossil collection) go to a free list
// and are passed as dst to later Snapshot calls, and the ring buffer only grows, so once the
// queue has reached its working size saving allocates nothing (for a model whose Snapshot
// reuses dst, such as kernel.Plain).
package statemgr

import (
	"fmt"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/ring"
	"github.com/warpedgo/warped/rng"
)

// Core is the kernel's per-LP state that is saved with the model's state.
type Core struct {
	// RNG is the LP's random-number generator (a plain value).
	RNG rng.XORWOW
	// Seq is the LP's send sequence number: the number of events it has sent.
	Seq uint64
}

// Snapshotter is what is saved: kernel.LogicalProcess satisfies it.
//
// The queue keeps the values Snapshot returns, restores from them (the restored state stays
// saved) and later passes them back to Snapshot as dst, so neither method may let the LP's
// live state share memory with such a value: Snapshot and Restore copy.
type Snapshotter interface {
	// Snapshot copies the state into dst (nil or a value an earlier Snapshot returned)
	// and returns it.
	Snapshot(dst any) any
	// Restore sets the state from a value Snapshot returned, copying it.
	Restore(src any)
}

// entry is one saved state.
type entry struct {
	key     event.Key
	core    Core
	snap    any
	initial bool // the state before any event; key is unused
}

// before reports whether the state was taken before the event with key k.
func (e *entry) before(k *event.Key) bool { return e.initial || event.KeyLess(&e.key, k) }

// Queue is one LP's saved states, oldest first. Not safe for concurrent use.
type Queue struct {
	period int
	// since counts the events processed since the latest saved state.
	since int
	// states are the saved states, oldest first.
	states ring.Ring[entry]
	// free holds snapshot values of discarded states for reuse as Snapshot's dst.
	free []any
}

// NewQueue returns an empty queue that saves a state after every period-th processed event.
// Period 1 is copy state saving. It returns an error when period < 1.
func NewQueue(period int) (*Queue, error) {
	if period < 1 {
		return nil, fmt.Errorf("state-saving period must be at least 1, got %d", period)
	}
	return &Queue{period: period}, nil
}

// Period returns the state-saving period.
func (q *Queue) Period() int { return q.period }

// Len returns the number of saved states, the initial one included while it is kept.
func (q *Queue) Len() int { return q.states.Len() }

// at returns the i-th saved state, oldest first.
func (q *Queue) at(i int) *entry { return q.states.At(i) }

// discard recycles e's snapshot and clears it.
func (q *Queue) discard(e *entry) {
	if e.snap != nil {
		q.free = append(q.free, e.snap)
	}
	*e = entry{}
}

// push saves a new state of lp at the end of the queue.
func (q *Queue) push(lp Snapshotter, core Core) *entry {
	var dst any
	if n := len(q.free); n > 0 {
		dst = q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
	}
	e := q.states.Push(8)
	*e = entry{core: core, snap: lp.Snapshot(dst)}
	q.since = 0
	return e
}

// Init discards every saved state and saves lp and core as the state before any event,
// whose key sorts before every event. Call it once after the LP's Init, before any
// AfterEvent.
func (q *Queue) Init(lp Snapshotter, core Core) {
	for i := range q.states.Len() {
		q.discard(q.at(i))
	}
	q.states.Reset()
	q.push(lp, core).initial = true
}

// AfterEvent is called after the LP processed the event with key k (for the first time, or
// again after a rollback, coast forward included). It saves lp and core when k is the
// period-th event processed since the latest saved state, and reports whether it saved.
// It panics if Init was not called or if a save's key is not above the latest saved key
// (the events were not processed in increasing key order).
func (q *Queue) AfterEvent(k event.Key, lp Snapshotter, core Core) bool {
	n := q.states.Len()
	if n == 0 {
		panic("statemgr: AfterEvent before Init")
	}
	q.since++
	if q.since < q.period {
		return false
	}
	if last := q.at(n - 1); !last.before(&k) {
		panic(fmt.Sprintf("statemgr: saving after event %+v, which is not after the latest saved state's event %+v", k, last.key))
	}
	q.push(lp, core).key = k
	return true
}

// Save saves lp and core now, as the state after the event with key k, whatever the period
// count (which restarts from it): for a dispatcher that needs a state at a point of its
// choosing, such as the LP's latest event once it is below GVT, so that fossil collection
// can drop everything before it. k must be above the latest saved state's key; Save reports
// false, saving nothing, when k is that key (the state is saved already).
func (q *Queue) Save(k event.Key, lp Snapshotter, core Core) bool {
	n := q.states.Len()
	if n == 0 {
		panic("statemgr: Save before Init")
	}
	if last := q.at(n - 1); !last.before(&k) {
		if !last.initial && last.key == k {
			return false
		}
		panic(fmt.Sprintf("statemgr: saving after event %+v, which is not after the latest saved state's event %+v", k, last.key))
	}
	q.push(lp, core).key = k
	return true
}

// Rollback restores lp and *core to the latest saved state taken before the event with key
// k, that is whose key is less than k (the initial state counts as before everything),
// discards every saved state after it, and returns that state's key, with ok false when it
// is the initial state. The restored state stays saved, and the period count restarts from
// it. The caller then coasts forward: it re-executes, without sending, the processed events
// with keys between the returned key (exclusive) and k (exclusive), calling AfterEvent after
// each.
//
// Rollback panics when no saved state is before k: a rollback to a key whose receive time is
// below the GVT given to FossilCollect, or a rollback before Init.
func (q *Queue) Rollback(k event.Key, lp Snapshotter, core *Core) (restored event.Key, ok bool) {
	n := q.states.Len()
	i := n - 1
	for i >= 0 && !q.at(i).before(&k) {
		i--
	}
	if i < 0 {
		panic(fmt.Sprintf("statemgr: no saved state before rollback key %+v (rollback below GVT, or before Init)", k))
	}
	for j := i + 1; j < n; j++ {
		q.discard(q.at(j))
	}
	q.states.Truncate(i + 1)
	e := q.at(i)
	lp.Restore(e.snap)
	*core = e.core
	q.since = 0
	return e.key, !e.initial
}

// FossilCollect drops the saved states that can never be needed again once no rollback
// will go below gvt: it keeps the latest state whose key's receive time is less than gvt
// (or the initial state if there is none) and every state after it.
func (q *Queue) FossilCollect(gvt event.Time) {
	i := 0 // the state kept as the oldest: the last one below gvt
	for i+1 < q.states.Len() {
		if next := q.at(i + 1); next.key.RecvTime >= gvt {
			break
		}
		i++
	}
	for j := range i {
		q.discard(q.at(j))
	}
	q.states.DropFront(i)
	q.shrink()
}

// shrink gives back the memory that a burst of saved states left behind (a ring and a free
// list far larger than what the queue holds now), so that a long run's memory follows its
// pending work, not its largest burst.
func (q *Queue) shrink() {
	if keep := q.states.Len() + 8; len(q.free) > 2*keep {
		clear(q.free[keep:])
		q.free = q.free[:keep]
	}
	q.states.Shrink(8)
}

// Oldest returns the key of the oldest saved state, with ok false when it is the initial
// state (or the queue is empty). Coast forward from any state the queue still holds only
// re-executes processed events whose keys are greater than this key, so processed events
// at or below it are committed and can be dropped.
func (q *Queue) Oldest() (k event.Key, ok bool) {
	if q.states.Len() == 0 {
		return event.Key{}, false
	}
	e := q.at(0)
	return e.key, !e.initial
}
