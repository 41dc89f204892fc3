package core

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/internal/frame"
	"github.com/warpedgo/warped/rng"
)

// The dispatchers' names for the kernel's types, which package kernel defines for models
// (and go doc shows there), and for the Context's frame.
type (
	Time = event.Time
	LPID = event.LPID
	RNG  = rng.XORWOW

	Context         = kernel.Context
	Frame           = frame.Frame
	Sink            = frame.Sink
	Config          = kernel.Config
	TimeWarpConfig  = kernel.TimeWarpConfig
	Stats           = kernel.Stats
	Progress        = kernel.Progress
	Sample          = kernel.Sample
	SeriesPoint     = kernel.SeriesPoint
	ModelPanicError = kernel.ModelPanicError
	PeerError       = kernel.PeerError
	MismatchError   = kernel.MismatchError

	LogicalProcess = kernel.LogicalProcess
	StateAppender  = kernel.StateAppender
	Reverser       = kernel.Reverser
	Committer      = kernel.Committer
	Reversible     = kernel.Reversible
	Lookahead      = kernel.Lookahead
	Batcher        = kernel.Batcher
	DeviceModeler  = kernel.DeviceModeler
	GPUConfig      = kernel.GPUConfig
)

// The configuration's constants, as the dispatchers use them (see package kernel).
const (
	Sequential            = kernel.Sequential
	TimeWarp              = kernel.TimeWarp
	GPU                   = kernel.GPU
	StateSavingAuto       = kernel.StateSavingAuto
	StateSavingPeriodic   = kernel.StateSavingPeriodic
	StateSavingReverse    = kernel.StateSavingReverse
	QueueCalendar         = kernel.QueueCalendar
	GVTSynchronous        = kernel.GVTSynchronous
	GVTTQ                 = kernel.GVTTQ
	CancelLazy            = kernel.CancelLazy
	SampleRealTime        = kernel.SampleRealTime
	DefaultSampleInterval = kernel.DefaultSampleInterval
)

// CanReverse reports whether lp can be rolled back by reverse computation.
func CanReverse(lp LogicalProcess) bool {
	if _, ok := lp.(Reverser); !ok {
		return false
	}
	r, ok := lp.(Reversible)
	return !ok || r.Reversible()
}
