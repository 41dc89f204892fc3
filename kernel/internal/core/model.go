package core

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/rng"
)

// The event types, as package kernel names them.
type (
	Time  = event.Time
	LPID  = event.LPID
	Event = event.Event
	Words = event.Words
	RNG   = rng.XORWOW
)

// LogicalProcess is kernel.LogicalProcess, where its contract is documented for models.
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

// StateAppender is kernel.StateAppender, where its contract is documented for models.
type StateAppender interface {
	// AppendState appends a deterministic encoding of the LP's state to b.
	AppendState(b []byte) []byte
}

// Reverser is kernel.Reverser, where its contract is documented for models.
type Reverser interface {
	Reverse(ctx *Context, ev *Event)
}

// Committer is kernel.Committer, where its contract is documented for models.
type Committer interface {
	Commit(ctx *Context, ev *Event)
}

// Reversible is kernel.Reversible, where its contract is documented for models.
type Reversible interface {
	Reversible() bool
}

// Lookahead is kernel.Lookahead, where its contract is documented for models.
type Lookahead interface {
	Lookahead() Time
}

// CanReverse reports whether lp can be rolled back by reverse computation.
func CanReverse(lp LogicalProcess) bool {
	if _, ok := lp.(Reverser); !ok {
		return false
	}
	r, ok := lp.(Reversible)
	return !ok || r.Reversible()
}

// Batcher is kernel.Batcher, where its contract is documented for models.
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

// GPUConfig configures the device-resident time warp; zero fields take gpuwarp's
// defaults (see gpuwarp.Options).
type GPUConfig struct {
	// Device is the CUDA device's number.
	Device int
	// Slots is each LP's event list capacity (a power of two).
	Slots int
	// Bound is the optimism bound; 0 tunes it while the run proceeds.
	Bound float64
	// Executions is how many handling passes an iteration makes.
	Executions int
	// Buffer is the capacity for events in transit.
	Buffer int
}
