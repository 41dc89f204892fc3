//go:build linux

package gpuwarp_test

import (
	"testing"

	"github.com/warpedgo/warped/internal/ptxcheck"
)

// TestCompilePTX compiles the device loop of the fold model with NVRTC, as a run on a GPU
// compiles it (the other tests run it on the CUDA stand-in, which builds it as host C++),
// on reverse handlers and on state saving.
func TestCompilePTX(t *testing.T) {
	t.Run("reverse", func(t *testing.T) { ptxcheck.Device(t, foldModel(false, false), 0) })
	t.Run("state saving", func(t *testing.T) { ptxcheck.Device(t, foldModel(true, true), 4) })
}
