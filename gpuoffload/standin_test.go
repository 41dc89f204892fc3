//go:build linux

package gpuoffload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/rng"
)

// The CUDA backend's tests run against the CUDA stand-in (package gpuoffload/standin)
// where there is no NVIDIA driver: TestMain builds it with the system C++ compiler and
// points WARPED_CUDA_LIBRARY at it before any test loads the driver. With a driver they
// run on the GPU; with WARPED_CUDA_LIBRARY already set they use that library.

// standinLib is the stand-in library the tests load as the driver, or "".
var standinLib string

// standinWhy says why the stand-in is not in use (no compiler, a real driver, ...).
var standinWhy string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests sets up the stand-in and runs the tests.
func runTests(m *testing.M) int {
	switch p := os.Getenv(cudaLibraryEnv); {
	case p != "":
		if isStandin(p) {
			standinLib = p
		} else {
			standinWhy = fmt.Sprintf("%s=%s is not the stand-in", cudaLibraryEnv, p)
		}
	case hasDriver():
		standinWhy = "an NVIDIA driver is installed: the CUDA tests run on it"
	default:
		dir, err := os.MkdirTemp("", "warped-cuda-standin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		lib, err := standin.Build(dir, "")
		if err != nil {
			standinWhy = err.Error()
			break
		}
		if err := os.Setenv(cudaLibraryEnv, lib); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		standinLib = lib
	}
	return m.Run()
}

// hasDriver reports whether libcuda.so.1 loads.
func hasDriver() bool {
	_, err := purego.Dlopen(libcudaName, purego.RTLD_NOW|purego.RTLD_LOCAL)
	return err == nil
}

// isStandin reports whether the library at p is the stand-in.
func isStandin(p string) bool {
	_, err := standin.Count(p, "launches")
	return err == nil
}

// needStandin skips the test when the stand-in is not in use, and fails it when a C++
// compiler is present but the stand-in did not build (the CUDA tests would all skip).
func needStandin(t *testing.T) string {
	t.Helper()
	if standinLib != "" {
		return standinLib
	}
	if _, err := exec.LookPath("c++"); err == nil && strings.Contains(standinWhy, "compiling") {
		t.Fatalf("the CUDA stand-in does not build: %s", standinWhy)
	}
	t.Skipf("no CUDA stand-in: %s", standinWhy)
	return ""
}

// setFaults injects faults for the rest of t, and clears them after it.
func setFaults(t *testing.T, lib, spec string) {
	t.Helper()
	require.NoError(t, standin.SetFaults(lib, spec))
	t.Cleanup(func() { require.NoError(t, standin.SetFaults(lib, "")) })
}

// count returns a stand-in count.
func count(t *testing.T, lib, what string) int64 {
	t.Helper()
	n, err := standin.Count(lib, what)
	require.NoError(t, err)
	return n
}

func TestStandinDevice(t *testing.T) {
	lib := needStandin(t)
	ds := Devices()
	require.Len(t, ds, 2)
	require.True(t, ds[1].Available, ds[1].Reason)
	require.Equal(t, "warped CUDA stand-in (host CPU)", ds[1].Name)
	require.Equal(t, "12.4", ds[1].Driver)
	require.Contains(t, ds[1].Compiler, "NVRTC 12.4 ("+lib+")", "NVRTC defaults to WARPED_CUDA_LIBRARY")
	require.Equal(t, 9, ds[1].CCMajor)

	be, note, err := Open(ModeOn, Options{})
	require.NoError(t, err)
	require.Empty(t, note)
	require.Contains(t, be.Name(), "cuda:0 (warped CUDA stand-in (host CPU), sm_90)")
	require.NoError(t, be.Close())
	_, _, err = Open(ModeOn, Options{Device: 1})
	require.ErrorContains(t, err, "there is no CUDA device 1 (1 devices: 0..0)")
}

// TestStandinReleasesEverything checks that a backend's Close frees every allocation,
// stream and module and releases the context, and that compiling the same kernel again is
// answered from the stand-in's cache.
func TestStandinReleasesEverything(t *testing.T) {
	lib := needStandin(t)
	before := map[string]int64{}
	for _, w := range []string{"allocs", "host_allocs", "streams", "modules", "context_refs"} {
		before[w] = count(t, lib, w)
	}
	hits, launches := count(t, lib, "cache_hits"), count(t, lib, "launches")
	be, err := NewCUDA(0)
	require.NoError(t, err)
	require.Equal(t, before["streams"]+MaxInFlight+1, count(t, lib, "streams"))
	k := newTestKernel(1, 100)
	var b Batch
	fillRandom(rand.New(rand.NewPCG(1, 1)), &b, k, 300, 100)
	want := serialTwin(k, &b)
	require.NoError(t, be.Run(k, &b))
	require.Empty(t, diffBatches(want, &b))
	states, counts := randomStates(rand.New(rand.NewPCG(2, 2)), 10, 5)
	require.NoError(t, be.Advance(states, counts))
	require.Equal(t, launches+2, count(t, lib, "launches"))
	require.Greater(t, count(t, lib, "cache_hits"), hits, "xorwow.cu was compiled before: the cache has it")
	require.NoError(t, be.Close())
	for w, n := range before {
		require.Equal(t, n, count(t, lib, w), w)
	}
}

// TestStandinFaults injects each fault and checks the error the backend gives: one clear
// line naming the call and the CUresult (a compile error adds the compiler's log below).
func TestStandinFaults(t *testing.T) {
	lib := needStandin(t)
	k := newTestKernel(1, 100)
	run := func(t *testing.T, be Backend) error {
		var b Batch
		fillRandom(rand.New(rand.NewPCG(3, 3)), &b, k, 100, 100)
		return be.Run(k, &b)
	}
	open := func(t *testing.T) Backend {
		be, err := NewCUDA(0)
		require.NoError(t, err)
		t.Cleanup(func() { _ = be.Close() })
		return be
	}

	t.Run("alloc", func(t *testing.T) {
		setFaults(t, lib, "alloc")
		be := open(t)
		err := run(t, be)
		require.ErrorIs(t, err, ErrOutOfMemory)
		require.Regexp(t, `^gpuoffload: kernel warped_test_kernel on cuda:0 \(.*\): cuMemAlloc_v2 failed: `+
			`CUDA_ERROR_OUT_OF_MEMORY \(out of memory\): allocating 1 MiB of device memory \(the device has `+
			`[0-9]+ MiB free of 4096 MiB\); use a smaller batch$`, err.Error())
		require.ErrorIs(t, be.Advance([]rng.XORWOW{rng.New(1, 1)}, []uint32{1}), ErrOutOfMemory)
		require.NoError(t, standin.SetFaults(lib, ""))
		require.NoError(t, run(t, be), "the backend works once memory is there")
	})

	t.Run("compile", func(t *testing.T) {
		setFaults(t, lib, "compile:warped_test_kernel")
		be := open(t) // xorwow.cu compiles
		err := be.Prepare(k)
		var ne *NVRTCError
		require.ErrorAs(t, err, &ne)
		first, log, _ := strings.Cut(err.Error(), "\n")
		require.Equal(t, "gpuoffload: kernel warped_test_kernel: nvrtcCompileProgram failed: "+
			"NVRTC_ERROR_COMPILATION (compiling warped_test_kernel.cu with --gpu-architecture=compute_90 "+
			"--fmad=false)", first)
		require.Contains(t, log, "warped_test_kernel.cu(1): error: compile failure injected")
		require.ErrorAs(t, run(t, be), &ne)

		// Open fails when the built-in kernels do not compile; auto says why on one line.
		require.NoError(t, standin.SetFaults(lib, "compile:xorwow"))
		_, err = NewCUDA(0)
		require.ErrorContains(t, err, "gpuoffload: CUDA device 0: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION "+
			"(compiling xorwow.cu with --gpu-architecture=compute_90 --fmad=false)\nxorwow.cu(1): error:")
		be, note, err := Open(ModeAuto, Options{})
		require.NoError(t, err)
		require.Nil(t, be)
		require.Equal(t, "gpu offload off: CUDA device 0: nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION "+
			"(compiling xorwow.cu with --gpu-architecture=compute_90 --fmad=false)", note)
	})

	t.Run("launch", func(t *testing.T) {
		setFaults(t, lib, "launch:warped_test")
		be := open(t)
		err := run(t, be)
		require.Regexp(t, `^gpuoffload: batch on cuda:0 \(.*\): cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_FAILED `+
			`\(unspecified launch failure\)$`, err.Error())
		states, counts := randomStates(rand.New(rand.NewPCG(4, 4)), 100, 50)
		want := append([]rng.XORWOW(nil), states...)
		for i := range want {
			want[i].Advance(uint64(counts[i]))
		}
		require.NoError(t, be.Advance(states, counts), "other kernels still run")
		require.Equal(t, want, states)
	})

	t.Run("context", func(t *testing.T) {
		setFaults(t, lib, "context")
		be := open(t)
		err := run(t, be)
		require.Regexp(t, `^gpuoffload: kernel warped_test_kernel on cuda:0 \(.*\): cuLaunchKernel failed: `+
			`CUDA_ERROR_CONTEXT_IS_DESTROYED \(context is destroyed\)$`, err.Error())
		err = run(t, be)
		require.Regexp(t, `^gpuoffload: cuda:0 \(.*\): cuCtxSetCurrent failed: CUDA_ERROR_CONTEXT_IS_DESTROYED `+
			`\(context is destroyed\)$`, err.Error())
		require.ErrorContains(t, be.Advance([]rng.XORWOW{rng.New(1, 1)}, []uint32{1}), "CUDA_ERROR_CONTEXT_IS_DESTROYED")
		_, err = NewCUDA(0)
		require.ErrorContains(t, err, "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_CONTEXT_IS_DESTROYED")
		require.NoError(t, be.Close(), "closing after a lost context releases what is left")
		require.ErrorIs(t, run(t, be), ErrClosed)
	})

	t.Run("ptxversion", func(t *testing.T) {
		// A driver older than NVRTC rejects the PTX: the backend compiles to CUBIN instead.
		setFaults(t, lib, "ptxversion")
		be := open(t)
		var b Batch
		fillRandom(rand.New(rand.NewPCG(5, 5)), &b, k, 500, 100)
		want := serialTwin(k, &b)
		require.NoError(t, be.Run(k, &b))
		require.Empty(t, diffBatches(want, &b))
	})

	require.ErrorContains(t, standin.SetFaults(lib, "alloc,bogus"), `bad fault list "alloc,bogus"`)
}

// TestStandinChecks checks that the stand-in rejects what a real driver would: a call on a
// thread without a current context, a copy outside an allocation.
func TestStandinChecks(t *testing.T) {
	needStandin(t)
	be, err := newCUDA(0, 1)
	require.NoError(t, err)
	defer be.Close()
	d := be.d
	done := make(chan error)
	go func() {
		// A thread with no context current: the driver refuses to allocate. (The goroutine
		// ends locked, so its thread ends with it.)
		runtime.LockOSThread()
		r := d.cuCtxSetCurrent(0)
		if r == cudaSuccess {
			var p uint64
			r = d.cuMemAlloc(&p, 16)
		}
		done <- d.check("cuMemAlloc_v2", r)
	}()
	err = <-done
	require.ErrorContains(t, err, "CUDA_ERROR_INVALID_CONTEXT")

	leave, err := be.enter()
	require.NoError(t, err)
	defer leave()
	var p uint64
	require.NoError(t, d.check("cuMemAlloc_v2", d.cuMemAlloc(&p, 64)))
	buf := make([]byte, 128)
	err = d.check("cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync(p, unsafe.Pointer(&buf[0]), 128, 0))
	require.ErrorContains(t, err, "CUDA_ERROR_INVALID_VALUE", "a copy past the allocation's end")
	require.NoError(t, d.check("cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync(p, unsafe.Pointer(&buf[0]), 64, 0)))
	require.NoError(t, d.check("cuMemFree_v2", d.cuMemFree(p)))
	require.ErrorContains(t, d.check("cuMemFree_v2", d.cuMemFree(p)), "CUDA_ERROR_INVALID_VALUE", "double free")
	require.True(t, errors.Is(d.check("x", cudaErrorOutOfMemory), ErrOutOfMemory))
}

// TestStandinCache checks the compiled-kernel cache: with WARPED_CUDA_CACHE naming a
// directory, a backend stores each image it compiled, and a later backend loads them
// without compiling (an injected compile fault does not fire); an entry that does not load
// is compiled again and rewritten; "off" stores nothing.
func TestStandinCache(t *testing.T) {
	lib := needStandin(t)
	dir := t.TempDir()
	t.Setenv(cacheEnv, dir)
	k := newTestKernel(1, 100)
	prepare := func() error {
		be, err := NewCUDA(0)
		if err != nil {
			return err
		}
		defer be.Close()
		return be.Prepare(k)
	}
	require.NoError(t, prepare())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "xorwow.cu and the test kernel")

	setFaults(t, lib, "compile")
	require.NoError(t, prepare(), "both images come from the cache")

	for _, e := range entries {
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), []byte("not an image"), 0o644))
	}
	require.ErrorContains(t, prepare(), "nvrtcCompileProgram failed", "a bad entry is compiled again")
	require.NoError(t, standin.SetFaults(lib, ""))
	require.NoError(t, prepare())
	setFaults(t, lib, "compile")
	require.NoError(t, prepare(), "the bad entries were rewritten")

	t.Setenv(cacheEnv, "off")
	require.ErrorContains(t, prepare(), "nvrtcCompileProgram failed", "off: the cache is not read")
	require.Equal(t, kernelCache{}, openCache())
	t.Setenv(cacheEnv, "")
	require.Equal(t, kernelCache{}, openCache(), "off under the stand-in unless a directory is named")
}

// orderSource numbers the threads of a launch in the order they run: a race on a GPU, and
// on the stand-in the order it runs them in.
const orderSource = `
extern "C" __global__ void warped_test_order(unsigned int* next, unsigned int* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (*next)++;
}
`

// TestStandinThreadOrder checks the stand-in's thread orders on a kernel that numbers its
// threads as they run, over several blocks and a partial last one: in order by default,
// reversed, and shuffled, each thread exactly once and each launch in another order.
func TestStandinThreadOrder(t *testing.T) {
	lib := needStandin(t)
	r, err := OpenResident(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Compile("order_test.cu", orderSource, "warped_test_order"))
	const n = 1000 // four blocks of 256 threads, the last one partly idle
	next, err := r.Alloc(4)
	require.NoError(t, err)
	out, err := r.Alloc(4 * n)
	require.NoError(t, err)
	count := uint32(n)
	order := func() []uint32 {
		t.Helper()
		require.NoError(t, r.Fill32(next, 0, 1))
		require.NoError(t, r.Launch("warped_test_order", n, unsafe.Pointer(&next), unsafe.Pointer(&out), unsafe.Pointer(&count)))
		got := make([]uint32, n)
		require.NoError(t, r.Download(unsafe.Pointer(&got[0]), out, 4*n))
		return got
	}
	inOrder := make([]uint32, n)
	for i := range inOrder {
		inOrder[i] = uint32(i)
	}
	require.Equal(t, inOrder, order(), "by default")
	t.Run("reverse", func(t *testing.T) {
		standin.ThreadOrder(t, "reverse")
		got := order()
		for i, v := range got {
			require.Equal(t, uint32(n-1-i), v, "thread %d", i)
		}
	})
	t.Run("shuffle", func(t *testing.T) {
		standin.ThreadOrder(t, "shuffle:7")
		a, b := order(), order()
		require.NotEqual(t, a, b, "two launches in the same order")
		for _, got := range [][]uint32{a, b} {
			require.NotEqual(t, inOrder, got, "shuffled into the order")
			require.ElementsMatch(t, inOrder, got, "each thread once")
		}
	})
	require.Equal(t, inOrder, order(), "in order again after the test that shuffled")
	require.ErrorContains(t, standin.SetOrder(lib, "sideways"), `bad thread order "sideways"`)
}
