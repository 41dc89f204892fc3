package gpuoffload_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/internal/ptxcheck"
)

// TestCompilePTX compiles the built-in XORWOW kernels with NVRTC, as a run on a GPU
// compiles them (the stand-in builds them as host C++); the models' tests compile theirs.
func TestCompilePTX(t *testing.T) {
	ptxcheck.Source(t, "xorwow.cu", gpuoffload.BuiltinSource(), "warped_xorwow_advance", "warped_xorwow_rewind")
}

// TestCompilePTXRejects checks that source NVRTC rejects fails with an NVRTCError that
// holds the compiler's log and names the program and the compute capability.
func TestCompilePTXRejects(t *testing.T) {
	_, err := gpuoffload.CompilePTX("broken.cu", `extern "C" __global__ void k() { undeclared(); }`, 9, 0)
	if errors.Is(err, gpuoffload.ErrNoNVRTC) {
		t.Skipf("NVRTC is not installed here: %v", err)
	}
	var ne *gpuoffload.NVRTCError
	require.ErrorAs(t, err, &ne)
	require.ErrorContains(t, err, "broken.cu for compute capability 9.0")
	require.ErrorContains(t, err, "undeclared")
}
