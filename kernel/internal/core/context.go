package core

import (
	"context"
	"unsafe"

	"github.com/warpedgo/warped/kernel/internal/frame"
)

// FrameOf returns c's frame, for the dispatcher that owns c. A kernel.Context's only field
// is its frame.Frame (kernel/context.go), so a pointer to the one is a pointer to the
// other (unsafe.Pointer's first rule: the same memory layout); TestFrameOfIsTheContext
// checks the sizes. Package kernel cannot hand the frame out itself without showing it to
// models.
func FrameOf(c *Context) *Frame { return (*Frame)(unsafe.Pointer(c)) }

// InitStopped returns why ctx ended when it has, else nil: the error a dispatcher returns
// to stop its run's Init, looked at before each LP's Init.
// A look is an atomic load (a context's Err), nanoseconds, and an Init may take
// milliseconds (a model that reads each LP's data): a signal must stop the run as it
// comes, not once a thousand more LPs have sent their first events.
func InitStopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// Enter prepares c for running LP self (record lp) at time now and depth depth.
func Enter(c *Context, now Time, depth uint32, self LPID, lp *LPRecord) {
	f := FrameOf(c)
	f.Now, f.Depth, f.Self, f.LP = now, depth, self, &lp.LPState
}

// NewContext returns a Context of s whose sends go to out.
func (s *Sim) NewContext(out Sink) Context {
	var c Context
	*FrameOf(&c) = frame.Frame{Out: out, Sim: &s.Shared, NumLPs: len(s.LPs), Lookahead: s.Lookahead}
	return c
}
