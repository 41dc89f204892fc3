// Package statemgr keeps what a time-warp worker needs to undo the events its logical
// processes (LPs) processed: the history log ([History]) of the events processed and not
// yet committed, with the copies of the LPs' states that periodic state saving takes
// ([Saved]) and their pool. Its one job is the log's bookkeeping: absolute indexes,
// pushing, dropping from the front, compaction and renumbering. What the kernel does with
// the log (rollback, coast forward, fossil collection, cancellation of outputs, which need
// the LP records, the pending-event queue and the output log of package outputmgr) stays in
// the kernel.
//
// # How the kernel uses the log
//
//   - Process an event of LP x: Push an entry with the event, x's previous entry (Prev,
//     chaining x's entries from its newest one), the range of its sends in the output log
//     (OutFrom, OutTo: absolute indexes of an outputmgr.Log), and, every N-th event of x
//     with periodic state saving, a Saved copy of x's state after it (NewSaved). x's
//     newest entry is then Next()-1.
//   - Roll x back to key k: walk x's chain from its newest entry while the events sort at
//     or after k (an index below Base() ends the walk), mark them Dead (their Saved states
//     go back with Free), cancel their sends, then restore the newest Saved state still on
//     x's chain and coast forward over x's live entries after it.
//   - Fossil collection: DropFront the entries at the head that are dead or committed
//     (their event sorts below the commit horizon), and the output log's sends up to the
//     last dropped entry's OutTo. A dropped entry's Saved state becomes x's base state.
//   - Compaction (a log that the oldest uncommitted event keeps long): Compact drops the
//     dead and committed entries from anywhere and renumbers the rest.
//
// Entries are never removed from the back: a rolled-back entry stays, dead, until fossil
// collection or compaction drops it, so the indexes of the live ones never change but by
// Compact, and an index below Base() always means "no longer in the log".
//
// # Memory
//
// The log is a ring buffer that doubles when full, and NewSaved reuses the states given
// back by Free, passing their Model to the LP's Snapshot as dst, so that once the log has
// reached its working size logging an event allocates nothing (for a model whose Snapshot
// reuses dst, such as kernel.Plain).
package statemgr

import "github.com/warpedgo/warped/rng"

// Core is the kernel's per-LP state that is saved with the model's state: restoring both
// makes a re-executed event regenerate exactly the same draws and the same event keys (see
// package event).
type Core struct {
	// RNG is the LP's random-number generator (a plain value).
	RNG rng.XORWOW
	// Seq is the LP's send sequence number: the number of events it has sent.
	Seq uint64
}
