package core

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel/internal/frame"
)

// TestFrameOfIsTheContext: FrameOf's conversion needs a kernel.Context to be its frame and
// nothing else, and a frame set through it is what the Context's methods read.
func TestFrameOfIsTheContext(t *testing.T) {
	var c Context
	require.Equal(t, unsafe.Sizeof(frame.Frame{}), unsafe.Sizeof(c), "kernel.Context must hold its frame alone")
	require.Equal(t, unsafe.Pointer(&c), unsafe.Pointer(FrameOf(&c)))
	s := &Sim{LPs: make([]LPRecord, 3)}
	c = s.NewContext(nil)
	Enter(&c, 2.5, 1, 2, &s.LPs[2])
	require.Equal(t, 2.5, c.Now())
	require.Equal(t, LPID(2), c.Self())
	require.Equal(t, 3, c.NumLPs())
	require.Same(t, &s.LPs[2].RNG, c.RNG())
}
