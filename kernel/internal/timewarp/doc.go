// Package timewarp is the time-warp dispatcher (WARPED2's design inside one process, and
// across processes): one engine, whose files each hold one part of it. Run is its entry;
// package kernel calls it for Config.Type time-warp.
//
//   - timewarp.go: the dispatcher and its workers, the run (Init, the worker and
//     manager goroutines, the totals), GVT rounds (Fujimoto's algorithm, package gvt:
//     every worker reports before it takes its next events, and counts in its tracker the
//     events it made visible since), idleness and the end, and CheckRollbacks' digests.
//   - partitioned.go: the engine. LPs are partitioned among schedule queues; each queue
//     is a part (partWorker): a calendar queue of its LPs' pending events, by value, and
//     beside it the history and output logs of what was processed, its anti-message list
//     and its inbound. Rollback, coast forward, state saving (periodic or reverse
//     computation), cancellation (aggressive or lazy), fossil collection, the commit
//     horizon and safe events are written there, once.
//   - group.go: fewer schedule queues than workers. The workers of a queue share its
//     part under its lock, taking batches of its least events and handling them outside
//     the lock; everything else is partitioned.go's code.
//   - offload.go: batched event handling on an offload backend (batchPart in the
//     partitioned loop; a group runs its staged batches on the backend outside its lock,
//     group.go's stageBatches).
//   - driver.go: runs across processes, which package dist drives (dist.Driver): the
//     engine as dist.Engine sees it, the manager's worker (mw) that delivers the events
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
