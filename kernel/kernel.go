// Package kernel is the model-facing API of warped: what a model implements and calls,
// and the configuration of a run. Package kernel/dispatch builds a simulation from a
// model's LPs and a Config and runs it.
//
// A model is a slice of logical processes (LPs). Each LP implements LogicalProcess: Init
// sends its first events, Handle processes one event, and Snapshot/Restore expose its state
// so that a time-warp dispatcher can save and restore it (embed Plain to get them for a
// plain struct). The kernel owns each LP's random-number generator (Context.RNG), its send
// sequence number and its event records, so all of them are saved, restored and pooled with
// the LP, and a run is a deterministic function of the model, the seed and the end time.
//
// Config.Type picks the dispatcher; the dispatchers are packages of their own under
// kernel/internal (see docs/DECISIONS.md, "The package split"). The sequential dispatcher
// processes every event in the total order of package event, keeping pending events by
// value in a calendar queue. The time-warp dispatcher runs them optimistically on several
// worker goroutines: rollback with periodic state saving and coast forward or with reverse
// computation (Reverser; the default when every LP implements it), aggressive or lazy
// cancellation, Fujimoto GVT, fossil collection, optionally handling the events of LPs
// that implement Batcher in batches on an offload backend (TimeWarpConfig.Offload). Its
// default arrangement gives each worker its own LPs and one calendar queue of their
// events; with fewer schedule queues than workers, the workers of a queue share it, with
// the same engine. The committed result is summarised by a digest over every LP's final
// state in LP order: any two dispatchers, configured in any way, must give the same
// digest.
//
// Everything a model uses is defined here (the dispatchers import this package, not the
// other way round), so go doc shows every method and field (go doc ./kernel Context.Send);
// the few types of other public packages a model needs (Time, LPID, Event, Words, RNG,
// Registry) are re-exported, so a model imports kernel and nothing else of the machinery.
package kernel

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/rng"
)

// Time is virtual (simulated) time. See package event.
type Time = event.Time

// LPID is the dense id of an LP: its index in the slice given to New.
type LPID = event.LPID

// Event is an event envelope as a handler sees it. See package event; the handler must
// not keep the pointer after it returns.
type Event = event.Event

// Words is the inline payload of an event (see Context.SendWords).
type Words = event.Words

// RNG is the generator type each LP owns: curand-compatible XORWOW.
type RNG = rng.XORWOW

// Poisson is a sampler of Poisson-distributed counts with a fixed mean, drawing from an
// LP's generator (ctx.RNG()). See package rng.
type Poisson = rng.Poisson

// NewPoisson returns a Poisson sampler for the given mean; build it once, draw often.
func NewPoisson(mean float64) Poisson { return rng.NewPoisson(mean) }

// Infinity is the time that is never reached (+Inf; read only: a var because Go has no
// constant for it).
var Infinity = event.Infinity

// LogicalProcess is what a model implements for each of its LPs.
//
// Handle must be a deterministic function of the LP's state, the event and the draws from
// ctx.RNG(): it must read nothing else that changes during the run (other LPs, globals,
// clocks), because a time-warp dispatcher re-executes events after rollbacks.
type LogicalProcess interface {
	// Name identifies the LP to people (output, errors). Names must be unique.
	Name() string
	// Init runs once before the simulation at time 0 and sends the LP's initial events.
	Init(ctx *Context)
	// Handle processes one event: it updates the LP's state and may send events.
	Handle(ctx *Context, ev *Event)
	// Snapshot copies the LP's state into dst and returns it. dst is nil or a value that an
	// earlier Snapshot returned; with nil, Snapshot allocates. Embed Plain to get this.
	Snapshot(dst any) any
	// Restore sets the LP's state from a value that Snapshot returned.
	Restore(src any)
}

// StateAppender is implemented by LPs that write their state's bytes for the result digest
// themselves. Plain implements it. Other LPs are digested through their Snapshot value,
// encoded with encoding/binary when it has a fixed size and canonically (every field, maps
// sorted by key) otherwise.
type StateAppender interface {
	// AppendState appends a deterministic encoding of the LP's state to b.
	AppendState(b []byte) []byte
}

// Reverser is implemented by LPs that support reverse computation
// (TimeWarpConfig.StateSaving "reverse"): instead of restoring a saved copy of the LP's
// state, a rollback calls Reverse for each rolled-back event, newest first.
//
// Reverse must undo exactly what Handle did to the LP's own state (the state that Snapshot
// exposes) for the same event. The kernel restores the rest itself: it counts the draws
// each event makes from ctx.RNG() and the events it sends, and rewinds the generator and
// the send sequence number. Reverse sees the context as Handle saw it: Now() and Self()
// are those of the event, and ctx.RNG() is the generator as Handle found it (already
// rewound), so Reverse may draw from it to replay Handle's draws and recompute what Handle
// decided; the kernel resets the generator after Reverse returns, whatever Reverse drew.
// ctx.DrawsMade() is the number of draws Handle made, which tells apart branches that the
// state after the event does not (see models/pcs). Handle must therefore only draw from
// ctx.RNG(), never replace it. Reverse must not send (a send from Reverse is a model
// panic).
type Reverser interface {
	// Reverse undoes what Handle did to the LP's state for ev (see above).
	Reverse(ctx *Context, ev *Event)
}

// Committer is implemented by LPs with output that must not roll back (ROSS's commit
// function): a trace line, a file write, a message to the outside. Commit is called once
// for each committed event of the LP, after its Handle, in the LP's timestamp order, and
// never for an event that rolls back. ctx's Now and Self are the event's. Commit must
// depend on the event, Now and Self alone: under time warp the LP's state will have moved
// on when its events commit (as in ROSS). It may read the words Handle left in
// ctx.Scratch(). It must not change the state, draw from ctx.RNG() or send (a send from
// Commit is a model panic).
//
// The sequential dispatcher calls it as it processes each event (all commit at once); the
// time-warp dispatcher as a worker's fossil collection drops the event below the commit
// horizon (GVT), or at the end of the run, so an LP's Commit runs on its worker's goroutine,
// and different LPs' Commit may run at once; across processes each rank calls it for its
// own LPs. With a Commit hook the time-warp engine processes no event safe (unlogged):
// docs/DECISIONS.md, "A commit hook".
type Committer interface {
	// Commit does the LP's irreversible work for ev, which has committed.
	Commit(ctx *Context, ev *Event)
}

// Reversible is implemented by a Reverser whose Reverse works only in some configurations
// (PCS's cannot tell a blocked call from one that took the last channel when calls take no
// draws): an LP whose Reversible returns false counts as not implementing Reverser, so the
// default state saving is periodic and asking for reverse computation is an error.
type Reversible interface {
	// Reversible reports whether Reverse works in this LP's configuration.
	Reversible() bool
}

// Lookahead is implemented by an LP that promises a least delay for what it sends to
// other LPs: every event it sends to another LP, from Init or Handle, is at or after
// Now() + Lookahead() (sends to itself may be at Now()). The simulation's lookahead is
// the least over its LPs (0 when any LP does not implement Lookahead), and a send that
// breaks it is an error (SendError). Time warp uses it to commit events as it processes
// them, without logging them for rollback, when no event can come below them any more
// (see docs/DECISIONS.md); a lookahead of 0 is always correct, only less of that.
type Lookahead interface {
	// Lookahead returns the least delay of the LP's sends to other LPs.
	Lookahead() Time
}

// Batcher is implemented by LPs whose events can be handled in batches on an offload
// backend (TimeWarpConfig.Offload, package gpuoffload): a time-warp worker collects ready
// events of distinct LPs, runs the batch kernel over them, and commits each result through
// the normal time-warp path (state saving or reverse-computation records, sends with their
// sequence numbers, cancellation), exactly as if Handle had run.
//
// The kernel must be Handle's twin: for an event ev and an LP whose state PackState writes
// and whose generator is the LP's own, it must leave the state words (as UnpackState reads
// them) and the generator exactly as Handle leaves the LP's state and ctx.RNG(), and write
// exactly the events Handle sends, in the same order (SendWords sends: receiver, time and
// words; a batch cannot send a Go payload). Handle still runs where a batch does not: on
// coast forward after a rollback, for an element that overflows its output slots, and
// whenever offload is off; a model that breaks the twin property gives results that differ
// from the sequential ones (CheckRollbacks catches it on re-execution).
type Batcher interface {
	// BatchKernel returns the kernel that handles ev, or nil when ev must be handled by
	// Handle. Events that share a kernel go into the same batch; the kernel should be built
	// once and returned by pointer every time.
	BatchKernel(ev *Event) *gpuoffload.Kernel
	// PackState writes the LP's state into dst (the kernel's StateWords words). The
	// generator is not part of it: the kernel gets the LP's generator separately.
	PackState(dst []uint64)
	// UnpackState sets the LP's state from src, as PackState wrote it or the kernel left it.
	UnpackState(src []uint64)
}

// DeviceModeler is implemented by LPs whose every event the device-resident time warp
// (simulation type GPU, package gpuwarp) can handle: the model's device code, and its
// state as words (as Batcher's PackState and UnpackState).
type DeviceModeler interface {
	// DeviceModel returns the model's device code; every LP of a simulation returns the
	// same one, built once.
	DeviceModel() *gpuwarp.Model
	PackState(dst []uint64)
	UnpackState(src []uint64)
}
