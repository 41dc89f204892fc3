package phold_test

import (
	"testing"

	"github.com/warpedgo/warped/internal/ptxcheck"
	"github.com/warpedgo/warped/models/phold"
)

// TestCompilePTX compiles PHOLD's batch kernel and device loop with NVRTC, as a run on a
// GPU compiles them (the tests on the CUDA stand-in build them as host C++).
func TestCompilePTX(t *testing.T) {
	c := phold.DefaultConfig()
	t.Run("batch kernel", func(t *testing.T) { ptxcheck.Batch(t, phold.BatchKernel(c)) })
	t.Run("device loop", func(t *testing.T) { ptxcheck.Device(t, phold.DeviceModel(c), 0) })
}
