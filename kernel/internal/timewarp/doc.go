// Package timewarp is the time-warp dispatcher (WARPED2's design inside one process, and
// across processes): one engine, whose files each hold one part of it. Run is its entry;
// package kernel calls it for Config.Type time-warp.
//
//   - timewarp.go: the dispatcher and its workers, the run (Init, the worker and
//     manager goroutines, the totals), GVT rounds (Fujimoto's algorithm, package gvt:
//     every worker reports before it takes its next events, and counts in its tracker the
//     events it made visible since), idleness and the end, and CheckRollbacks' digests.
//   - engine.go: the engine's records and their owners, its bounds, and its set-up. LPs are
//     partitioned among schedule queues; each is a queue: a calendar queue of its LPs'
//     pending events, by value, and beside it the history and output logs of what was
//     processed, its anti-message list and its inbound. Each mechanism is written once,
//     in a file of its own:
//   - loop.go: a worker's turn over its own queue (run, stretch) and housekeep, the
//     checks it makes before it takes events;
//   - host.go: the host goroutines that run the workers, each a share of them;
//     adapt.go: how many hosts run workers, following the machine's load;
//     park.go: an idle worker's wait;
//   - process.go: processing an event (safe or logged), state saving, the engine's sink;
//   - handover.go: events between workers (outboxes, inbounds);
//   - cancel.go: anti-messages and the cancellation of pending events;
//   - rollback.go: rollback and coast forward; lazy.go: lazy cancellation;
//   - fossil.go: fossil collection, commit and compaction of the history log;
//   - horizon.go: a worker's GVT report, the commit horizon and the safe bounds.
//   - group.go: fewer schedule queues than workers. The workers of a queue share it
//     under its lock, taking batches of its least events and handling them outside
//     the lock; everything else is the engine's code above.
//   - offload.go: batched event handling on an offload backend (processBatch in a
//     worker's own loop; a group runs its staged batches on the backend outside its lock,
//     group.go's stageBatches).
//   - driver.go: runs across processes, which package dist drives ([dist.Driver]): the
//     engine as [dist.Engine] sees it, the manager's worker (mw) that delivers the events
//     arriving from other ranks without a part of its own. remotesafe.go: the worker's
//     part of safe events across processes.
//   - sample.go: engine sampling (Config.Sample). inspect.go: hooks for package kernel's
//     tests.
//
// CheckRollbacks keeps, for every logged event, a digest of the LP's state (model state,
// generator and sequence number) after it and one of the sends it made. After a rollback
// the restored state must match the digest recorded for it, and each coast-forward event
// must reproduce its recorded digests; otherwise the run fails naming the LP and the event.
package timewarp
