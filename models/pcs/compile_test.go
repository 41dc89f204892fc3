package pcs

import (
	"testing"

	"github.com/warpedgo/warped/internal/ptxcheck"
)

// TestCompilePTX compiles PCS's batch kernels and device loop with NVRTC, as a run on a
// GPU compiles them (the tests on the CUDA stand-in build them as host C++), the loop
// with the lists PCS's runs size (128 slots for 50 portables a cell).
func TestCompilePTX(t *testing.T) {
	c := DefaultConfig()
	for _, k := range BatchKernels(c) {
		t.Run(k.Name, func(t *testing.T) { ptxcheck.Batch(t, k) })
	}
	t.Run("device loop", func(t *testing.T) { ptxcheck.Device(t, DeviceModel(c), 128) })
}
