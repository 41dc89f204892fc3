package timewarp

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Time, LPID and Words are package event's, named as in the rest of the kernel.
type (
	Time  = event.Time
	LPID  = event.LPID
	Words = event.Words
)

// frame returns the dispatcher's side of the worker's Context (see [core.Frame]).
func (w *worker) frame() *core.Frame { return core.FrameOf(&w.ctx) }
