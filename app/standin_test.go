//go:build linux

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
)

// The command against the CUDA stand-in (package gpuoffload/standin): the driver is loaded
// once per process, so each run is a child process (this test binary, re-executed with
// childEnv set) with WARPED_CUDA_LIBRARY, and faults in WARPED_CUDA_STANDIN_FAULTS.

// childEnv holds a child's command-line arguments (JSON); set, TestMain runs the command
// instead of the tests.
const childEnv = "WARPED_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(signalChildEnv); spec != "" {
		os.Exit(runSignalChild(spec)) // signal_process_test.go
	}
	if a := os.Getenv(childEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if standinBuildDir != "" {
		_ = os.RemoveAll(standinBuildDir)
	}
	os.Exit(code)
}

// standinBuildDir is where buildStandin put the stand-in ("" before), removed by TestMain.
var standinBuildDir string

// buildStandin builds the stand-in once per test process.
var buildStandin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "warped-cmd-standin-")
	if err != nil {
		return "", err
	}
	standinBuildDir = dir
	return standin.Build(dir, "")
})

// standinLib returns the stand-in's path, or skips the test saying why it cannot be built
// (no C++ compiler); a compiler that fails on it fails the test.
func standinLib(t *testing.T) string {
	t.Helper()
	lib, err := buildStandin()
	if err != nil {
		if strings.Contains(err.Error(), "no C++ compiler") {
			t.Skipf("no CUDA stand-in: %v", err)
		}
		t.Fatal(err)
	}
	return lib
}

// warpedStandin runs the command in a child process with the stand-in as the CUDA driver
// and faults injected, and returns its exit status, stdout and stderr.
func warpedStandin(t *testing.T, faults string, args ...string) (int, string, string) {
	t.Helper()
	lib := standinLib(t)
	a, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(a), standin.LibraryEnv+"="+lib, standin.FaultsEnv+"="+faults)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running %v: %v", args, err)
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// standinBatches matches the statistics line of a run that batched on the stand-in.
var standinBatches = regexp.MustCompile(`(?m)^  Batched events: +[1-9][0-9]* in [1-9][0-9]* batches on ` +
	`cuda:0 \(warped CUDA stand-in \(host CPU\), sm_90\)$`)

// TestStandinDevices lists the stand-in's device.
func TestStandinDevices(t *testing.T) {
	code, out, errOut := warpedStandin(t, "", "devices")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^  cuda:0: warped CUDA stand-in \(host CPU\), compute capability 9\.0, 1 SMs, 4096 MiB, `+
		`driver API 12\.4, NVRTC 12\.4 \(.*libwarped-cuda-standin\.so\) \[available\]$`, out)
}

// TestStandinGPUOnMatchesSequential runs PHOLD and PCS with --gpu on, on the stand-in: the
// events are handled by the models' CUDA kernels, compiled and run by the stand-in, and
// the digest is the sequential one.
func TestStandinGPUOnMatchesSequential(t *testing.T) {
	for _, m := range [][]string{
		{"phold", "--lps", "128", "--max-sim-time", "30"},
		{"pcs", "--num-cells-x", "4", "--num-cells-y", "4", "--max-sim-time", "100"},
	} {
		code, out, errOut := warped(append(m, "--simulation-type", "sequential")...)
		require.Equal(t, 0, code, errOut)
		want := digestOf(t, out)
		for _, extra := range [][]string{
			{"--time-warp-worker-threads", "2"},
			{"--time-warp-worker-threads", "2", "--gpu-batch-size", "16", "--time-warp-state-saving-period", "3"},
		} {
			args := append(append(append([]string(nil), m...), extra...), "--gpu", "on")
			code, out, errOut = warpedStandin(t, "", args...)
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			require.Equal(t, want, digestOf(t, out), "%v", args)
			require.Regexp(t, standinBatches, out, "%v", args)
		}
	}
}

// TestStandinFaults injects each fault: with --gpu auto the run goes on without offload,
// commits the sequential result and says why on one line; with --gpu on it fails with one
// line saying what failed.
func TestStandinFaults(t *testing.T) {
	// Long enough (about 0.2 s, more under the race detector) for auto to batch: it
	// measures 10 ms without batching first.
	m := []string{"phold", "--lps", "256", "--max-sim-time", "3000", "--time-warp-worker-threads", "2"}
	if raceEnabled {
		m[4] = "600"
	}
	code, out, errOut := warped(append(m, "--simulation-type", "sequential")...)
	require.Equal(t, 0, code, errOut)
	want := digestOf(t, out)
	const backend = `cuda:0 \(warped CUDA stand-in \(host CPU\), sm_90\)`
	for _, tc := range []struct{ fault, why string }{
		{"alloc", `kernel warped_phold_handle on ` + backend + `: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY ` +
			`\(out of memory\): allocating [0-9]+ MiB of device memory \(the device has [0-9]+ MiB free of 4096 MiB\); ` +
			`use a smaller batch`},
		{"compile:phold", `kernel warped_phold_handle: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION ` +
			`\(compiling warped_phold_handle\.cu with --gpu-architecture=compute_90 --fmad=false\)`},
		{"launch", `batch on ` + backend + `: cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_FAILED ` +
			`\(unspecified launch failure\)`},
		// The launch that destroys the context fails, and so may another worker's next call
		// (it makes the context current first, allocates its own slot's buffers, or copies
		// its batch in, when its context was made current before the loss): whichever the
		// run meets first is the note.
		{"context", `(kernel warped_phold_handle on ` + backend + `: (cuLaunchKernel|cuMemAlloc_v2|cuMemAllocHost_v2|cuMemcpyHtoDAsync_v2)|` +
			backend + `: cuCtxSetCurrent) failed: CUDA_ERROR_CONTEXT_IS_DESTROYED \(context is destroyed\)` +
			`(: allocating [0-9]+ MiB of (device|pinned host) memory)?`},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			// A fixed batch size: auto batches from its first probe on, 10 ms into the run.
			code, out, errOut := warpedStandin(t, tc.fault, append(m, "--gpu", "auto", "--gpu-batch-size", "8")...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, want, digestOf(t, out))
			require.Regexp(t, `^warped phold: gpu offload off: `+backend+` failed: `+tc.why+
				`; the run went on without it\n$`, errOut)

			code, _, errOut = warpedStandin(t, tc.fault, append(m, "--gpu", "on", "--gpu-batch-size", "8")...)
			require.Equal(t, 1, code)
			require.Regexp(t, `^warped phold: run failed: gpu offload on `+backend+`: (gpuoffload: )?`+tc.why+`\n`, errOut)
		})
	}

	// A fault at start: --gpu auto runs on the CPU from the start and says why; on fails.
	code, out, errOut = warpedStandin(t, "compile:xorwow", append(m, "--gpu", "auto")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, digestOf(t, out))
	require.Equal(t, "warped phold: gpu offload off: CUDA device 0: nvrtcCompileProgram failed: "+
		"NVRTC_ERROR_COMPILATION (compiling xorwow.cu with --gpu-architecture=compute_90 --fmad=false)\n", errOut)
	code, _, errOut = warpedStandin(t, "compile:xorwow", append(m, "--gpu", "on")...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "warped phold: --gpu on: gpuoffload: CUDA device 0: nvrtcCompileProgram failed")
}

// TestStandinGPUDevice: --gpu-device names the device of --gpu offload too, not device 0
// whatever the flag says.
func TestStandinGPUDevice(t *testing.T) {
	code, out, errOut := warpedStandin(t, "", "phold", "--lps", "64", "--max-sim-time", "5", "--gpu", "on", "--gpu-device", "7")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "7")
	require.NotContains(t, out, "on cuda:0")
	code, out, errOut = warpedStandin(t, "", "phold", "--lps", "64", "--max-sim-time", "5", "--gpu", "on", "--gpu-device", "0")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, standinBatches, out)
}
