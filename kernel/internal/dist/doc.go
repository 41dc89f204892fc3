// Package dist is the driver of a time-warp run across processes (kernel.Config.Transport
// with more than one rank): the manager goroutine of each rank, which moves events between
// the ranks, computes GVT between them and detects the end. It drives the rank's time-warp
// engine (package timewarp) through the [Engine] interface and the engine's GVT object.
//
// Every rank builds the whole model, runs the LPs that the partition gives it, and has one
// manager goroutine (the goroutine that called Run, locked to its OS thread, the only one
// that calls the transport). Workers hand events for LPs of other ranks to the manager
// ([Driver.Post]); the manager aggregates them per destination ([comm.Aggregator], at most
// MaxAggregate events a message, flushed when the workers go idle and at least every
// flushEvery), polls the transport, and delivers the events that arrive through the
// engine's worker of its own ([Engine.Deliver]), so rollbacks and cancellation are those
// of a run in one process. safe.go: safe events across processes (promises).
//
// The engine calls the driver: [New] in its constructor, [Driver.Agree] after Init,
// [Driver.Manage] in place of its own manager loop, [Driver.Gather] at the end; its workers
// call [Driver.Post], [Driver.IsLocal] and the [RemoteSafe]'s methods, all concrete. The
// driver calls the engine through Engine (from the manager goroutine only) and through
// the engine's [gvt.Fujimoto] and [termination.Workers], which New gets.
//
// GVT: Mattern's algorithm between processes ([gvt.Mattern]; rank 0 starts a round every
// GVTPeriod), and inside each process a Fujimoto round whose participants are the workers
// and the manager. A process's reading for the token is taken when the token is there:
// the manager sends what it aggregated with the white colour, passes the cut, sends what
// the workers had queued (now red), starts a local round and reports in it at once,
// reading its white counter at that same instant; the local round's result is the local
// minimum. The GVT a round finds is broadcast by rank 0; it drives fossil collection and
// the progress line. With GVTMethod synchronous, every rank takes the same reading every
// GVTPeriod and an all-gather combines them, repeated until no white event is in flight.
// With GVTMethod tq (TQ-GVT, [gvt.TQ]), every rank ends a quantum of its own every
// GVTPeriod (sooner when its workers want GVT, but at most tqEagerness times a period): it
// passes a cut as for a token (what it aggregated goes out with the old quantum's tag, what
// the workers queued with the new one), starts a local round, and when that is over sends
// its report to rank 0, the master ([gvt.TQMaster]), which broadcasts GVT each time it
// combines a boundary that every rank reported. A rank ends no quantum while tqLead of its
// boundaries wait to be combined, so the ranks' quanta stay in step. Above tqFlatRanks
// ranks the masters form a tree: groups of about the square root of the rank count report
// to their first rank, which merges their reports ([gvt.TQRelay]) and sends rank 0 one
// report a boundary, and passes the GVT broadcast on to its group.
//
// The manager's goroutine also runs host 0 of the rank's workers (Engine.Work), a turn of
// them between two turns of its own loop, so that a rank has no busy thread more than it
// has hosts.
//
// Termination: Mattern's sticky flags ([termination.Sticky]). A rank is passive when its
// workers are all passive, no schedule queue holds an event below the end time and nothing
// waits to be sent; the token waits at a rank until it is. When a wave succeeds, its
// initiator tells every rank to stop; every rank then sends every other rank the final
// state of its LPs and its statistics (one all-gather), so all ranks end with the same
// Result. A rank that fails tells every other rank, which stop with its error.
//
// Files: dist.go (the Driver, New, Post), agree.go (the ranks' configuration check),
// manage.go (the manager's loop, its back-off, failures), turn.go (its turn length and
// yield), receive.go (messages in and out, aggregation), token.go (Mattern's GVT), sync.go
// (the synchronous method), tq.go (TQ-GVT), term.go (termination), safe.go (safe events
// across processes), final.go (the final states and statistics).
package dist
