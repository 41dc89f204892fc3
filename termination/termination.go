// Package termination tells a process when its workers have run out of work.
//
// Inside one process, Workers counts the workers that are passive: a worker that finds
// nothing it may process (its schedule queue is empty, or holds only events at or beyond
// the end time or the optimism window) becomes passive, and active again when it finds
// work. When the last worker becomes passive nothing more can happen by itself (only
// active workers make events), so the kernel starts a GVT round at once: GVT then reaches
// the end time (or infinity, when nothing is pending) and the run ends without waiting for
// the next GVT period. Deciding the end itself is GVT's job (package gvt), which also sees
// events that a worker made visible just before it became passive.
package termination

import "sync/atomic"

// Workers counts the passive workers of one process. Safe for concurrent use; each worker
// reports only its own transitions.
type Workers struct {
	passive atomic.Int64
	// wakes counts Active calls, so that an observer can tell that no worker became
	// active between two of its reads (Wakes).
	wakes atomic.Uint64
	total int64
}

// NewWorkers returns a counter for total workers, all active.
func NewWorkers(total int) *Workers { return &Workers{total: int64(total)} }

// Passive records that a worker became passive and reports whether every worker is now
// passive.
func (w *Workers) Passive() (all bool) { return w.passive.Add(1) == w.total }

// Active records that a passive worker became active again.
func (w *Workers) Active() {
	w.wakes.Add(1)
	w.passive.Add(-1)
}

// Wakes returns the number of times a worker became active. A manager that reads Wakes,
// sees every worker passive and every schedule queue without work, and reads the same
// Wakes again knows that no worker took work in between: a worker calls Active before it
// removes an entry from its schedule queue.
func (w *Workers) Wakes() uint64 { return w.wakes.Load() }

// AllPassive reports whether every worker is passive right now.
func (w *Workers) AllPassive() bool { return w.passive.Load() == w.total }
