//go:build linux

package gpuoffload

import (
	"fmt"
	"os"
	"slices"
)

// CompilePTX compiles CUDA source src (named name in messages) for compute capability
// major.minor with the options a run on such a device uses (CompileOptions), and returns
// the PTX. It needs NVRTC alone, no device or driver, so a machine without a GPU can check
// that kernels compile as a GPU run would compile them: the CUDA stand-in builds the same
// source as host C++, which accepts things NVRTC rejects and the other way round. NVRTC is
// looked for as a run looks for it ($WARPED_NVRTC first), but never in the stand-in
// ($WARPED_CUDA_LIBRARY), whose compiler makes no PTX. Without NVRTC the error matches
// ErrNoNVRTC.
func CompilePTX(name, src string, major, minor int) ([]byte, error) {
	return compileAlone(name, src, major, minor, false)
}

// CompileCUBIN is CompilePTX to the device code of compute capability major.minor
// (sm_XY), what the driver makes of the PTX when a run loads it: it also checks what only
// the assembler sees, such as a kernel's registers and shared memory against the
// architecture's limits. It needs NVRTC 11.1 or later.
func CompileCUBIN(name, src string, major, minor int) ([]byte, error) {
	return compileAlone(name, src, major, minor, true)
}

// compileAlone compiles src with NVRTC, without a driver (see CompilePTX).
func compileAlone(name, src string, major, minor int, cubin bool) ([]byte, error) {
	c := nvrtcCandidates(0)
	if p := os.Getenv(cudaLibraryEnv); p != "" && os.Getenv(nvrtcEnv) == "" {
		c = slices.DeleteFunc(c, func(s string) bool { return s == p })
	}
	r, err := loadNVRTC(c)
	if err != nil {
		return nil, err
	}
	opts := CompileOptions(major, minor)
	if cubin {
		opts[0] = fmt.Sprintf("--gpu-architecture=sm_%d%d", major, minor)
	}
	img, err := r.compile(name, src, opts, cubin)
	if err != nil {
		return nil, fmt.Errorf("gpuoffload: compiling %s for compute capability %d.%d with NVRTC %d.%d: %w",
			name, major, minor, r.major, r.minor, err)
	}
	return img, nil
}
