// Package ptxcheck compiles kernels with NVRTC in tests, as a run on a GPU compiles them,
// on machines without one: the CUDA stand-in builds the same CUDA text as host C++, which
// accepts things NVRTC rejects (and the other way round), so a kernel the stand-in runs
// may still fail to compile on the first GPU it meets. Where NVRTC is not installed the
// checks skip and say so.
package ptxcheck

import (
	"bytes"
	"errors"
	"testing"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
)

// Archs are the compute capabilities checked: the H100's and H200's (9.0), and 7.0, the
// oldest that the kernels' atomics and warp intrinsics allow. Read only.
var Archs = [][2]int{{9, 0}, {7, 0}}

// Source compiles CUDA text src (named name) for each of Archs, to PTX as a run does and
// on to the architecture's device code as the driver does when it loads it, and fails t
// unless both compile and the PTX defines every named entry point.
func Source(t testing.TB, name, src string, entries ...string) {
	t.Helper()
	if raceEnabled {
		t.Skip("NVRTC's compile is native code that the race detector does not see: the plain run checks it")
	}
	for _, a := range Archs {
		ptx, err := gpuoffload.CompilePTX(name, src, a[0], a[1])
		if errors.Is(err, gpuoffload.ErrNoNVRTC) {
			t.Skipf("NVRTC is not installed here, so the kernels are not compiled as a GPU run compiles them: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !bytes.Contains(ptx, []byte(".entry "+e+"(")) {
				t.Fatalf("%s for compute capability %d.%d: no entry point %s in the PTX", name, a[0], a[1], e)
			}
		}
		if _, err := gpuoffload.CompileCUBIN(name, src, a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
}

// Batch compiles batch kernel k as the CUDA backend does (see Source).
func Batch(t testing.TB, k *gpuoffload.Kernel) {
	t.Helper()
	Source(t, k.Name+".cu", gpuoffload.Source(k), k.Name)
}

// Device compiles model m's device loop as a run does (see Source), alone and as a loop
// of several runs (a study's), with lists of slots slots (0: 32).
func Device(t testing.TB, m *gpuwarp.Model, slots int) {
	t.Helper()
	for _, several := range []bool{false, true} {
		name, src, kernels := gpuwarp.Source(m, gpuwarp.Options{Slots: slots}, several)
		Source(t, name, src, kernels...)
	}
}
