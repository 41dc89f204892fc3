//go:build linux

package standin

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/warpedgo/warped/internal/cxx"
)

//go:embed csrc/cuda_standin.cpp csrc/host_prelude.h csrc/standin_launch.h
var sources embed.FS

// Environment variables of the stand-in and of gpuoffload.
const (
	// LibraryEnv names the CUDA driver library gpuoffload loads instead of libcuda.so.1
	// (and, unless WARPED_NVRTC is set, the NVRTC library too).
	LibraryEnv = "WARPED_CUDA_LIBRARY"
	// FaultsEnv holds faults to inject from the start (the list SetFaults takes).
	FaultsEnv = "WARPED_CUDA_STANDIN_FAULTS"
	// OrderEnv holds the order in which launches run their threads from the start (what
	// SetOrder takes).
	OrderEnv = "WARPED_CUDA_STANDIN_ORDER"
	// CXXEnv names the C++ compiler the stand-in compiles kernels with (default $CXX,
	// else c++).
	CXXEnv = "WARPED_CUDA_STANDIN_CXX"
	// CacheEnv names the directory of compiled kernels (default
	// $TMPDIR/warped-cuda-standin-UID); kernels are cached by a hash of their text.
	CacheEnv = "WARPED_CUDA_STANDIN_CACHE"
)

// LibraryName is the file name of the built library.
const LibraryName = "libwarped-cuda-standin.so"

// CompileFlags are the flags Build compiles the library with (scripts/cuda-standin.sh
// uses the same).
func CompileFlags() []string {
	return []string{"-std=c++14", "-O2", "-fPIC", "-shared"}
}

// Build compiles the stand-in into dir with compiler (""; $CXX, else c++, g++ or clang++
// from PATH) and returns the library's path. The headers the stand-in compiles kernels
// with are written beside it.
func Build(dir, compiler string) (string, error) {
	cxx, err := findCXX(compiler)
	if err != nil {
		return "", err
	}
	for _, f := range []string{"cuda_standin.cpp", "host_prelude.h", "standin_launch.h"} {
		b, err := sources.ReadFile("csrc/" + f)
		if err != nil {
			return "", fmt.Errorf("standin: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", fmt.Errorf("standin: writing the sources: %w", err)
		}
	}
	lib := filepath.Join(dir, LibraryName)
	args := append(CompileFlags(), "-o", lib, filepath.Join(dir, "cuda_standin.cpp"), "-ldl", "-lpthread")
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("standin: compiling the CUDA stand-in (%s %s): %v\n%s", cxx, strings.Join(args, " "),
			err, strings.TrimSpace(string(out)))
	}
	return lib, nil
}

// findCXX resolves the compiler command (see cxx.Find).
func findCXX(compiler string) (string, error) {
	p, err := cxx.Find(compiler)
	if err != nil {
		return "", fmt.Errorf("standin: %w", err)
	}
	return p, nil
}

// open loads the library at lib (the handle of an already loaded one, if it is) and binds
// fn to symbol name.
func open(lib, name string, fn any) error {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return fmt.Errorf("standin: loading %s: %w", lib, err)
	}
	addr, err := purego.Dlsym(h, name)
	if err != nil {
		return fmt.Errorf("standin: %s has no %s: %w", lib, name, err)
	}
	purego.RegisterFunc(fn, addr)
	return nil
}

// SetFaults replaces the faults the stand-in at lib injects (in this process) with spec,
// a comma-separated list ("" clears them and revives a lost context):
//
//	alloc        cuMemAlloc_v2 fails with CUDA_ERROR_OUT_OF_MEMORY
//	hostalloc    cuMemAllocHost_v2 fails with CUDA_ERROR_OUT_OF_MEMORY
//	compile[:S]  nvrtcCompileProgram of a program whose name contains S (any) fails
//	             with NVRTC_ERROR_COMPILATION
//	launch[:S]   a kernel whose name contains S (any) fails when its stream is
//	             synchronized, with CUDA_ERROR_LAUNCH_FAILED
//	context      the next cuLaunchKernel destroys the context: it and every later call
//	             that needs it fail with CUDA_ERROR_CONTEXT_IS_DESTROYED
//	ptxversion   cuModuleLoadDataEx rejects PTX (not CUBIN) with
//	             CUDA_ERROR_UNSUPPORTED_PTX_VERSION
func SetFaults(lib, spec string) error {
	var set func(string) int32
	if err := open(lib, "warped_standin_set_faults", &set); err != nil {
		return err
	}
	if set(spec) != 0 {
		return fmt.Errorf("standin: bad fault list %q (want alloc, hostalloc, compile[:NAME], launch[:NAME], context, "+
			"ptxversion, comma-separated)", spec)
	}
	return nil
}

// SetOrder sets the order in which the stand-in at lib runs the threads of each later
// launch: "forward" (or "", the default), "reverse", "shuffle" (a new order each launch)
// or "shuffle:SEED". A GPU runs them at once, in no order: a kernel whose results change
// with the order is racy there, which the stand-in in order would hide. The environment
// variable OrderEnv sets the same when the stand-in starts.
func SetOrder(lib, spec string) error {
	var set func(string) int32
	if err := open(lib, "warped_standin_set_order", &set); err != nil {
		return err
	}
	if set(spec) != 0 {
		return fmt.Errorf("standin: bad thread order %q (want forward, reverse, shuffle or shuffle:SEED)", spec)
	}
	return nil
}

// ThreadOrder makes the stand-in run the threads of each launch in order spec (SetOrder)
// for the rest of test t, and in order again when t ends. Where the CUDA library is not a
// stand-in (a GPU's driver, or none), it skips t: a GPU runs threads in its own order.
// Tests that use it must not run in parallel with tests that need the threads in order.
func ThreadOrder(t testing.TB, spec string) {
	t.Helper()
	lib := os.Getenv(LibraryEnv)
	var set func(string) int32
	if lib == "" || open(lib, "warped_standin_set_order", &set) != nil {
		t.Skip("no CUDA stand-in here (a GPU runs the threads of a launch in its own order, or there is no CUDA library)")
	}
	if err := SetOrder(lib, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SetOrder(lib, "forward"); err != nil {
			t.Error(err)
		}
	})
}

// Count returns one of the stand-in's counts: "allocs", "host_allocs", "streams",
// "modules", "events" (live objects), "context_refs" (retains of the primary context), "launches"
// (kernels run), "compiles" (compiler runs) or "cache_hits" (compiles found compiled).
func Count(lib, what string) (int64, error) {
	var count func(string) int64
	if err := open(lib, "warped_standin_count", &count); err != nil {
		return 0, err
	}
	n := count(what)
	if n < 0 {
		return 0, fmt.Errorf("standin: no count %q", what)
	}
	return n, nil
}

// Use points gpuoffload's CUDA backend at a stand-in built into a temporary directory,
// unless LibraryEnv is already set or an NVIDIA driver (libcuda.so.1) loads, in which case
// it changes nothing. It returns the function that removes the directory, and why there is
// no CUDA library at all ("" when there is one: the driver, LibraryEnv's, or the stand-in
// built). Tests call it from TestMain, before anything loads the driver; err is an error of
// the machine (no temporary directory), not a missing compiler.
func Use() (cleanup func(), why string, err error) {
	cleanup = func() {}
	if os.Getenv(LibraryEnv) != "" {
		return cleanup, "", nil
	}
	if _, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
		return cleanup, "", nil
	}
	dir, err := os.MkdirTemp("", "warped-cuda-standin-")
	if err != nil {
		return cleanup, "", err
	}
	cleanup = func() { os.RemoveAll(dir) }
	lib, err := Build(dir, "")
	if err != nil {
		return cleanup, "no NVIDIA driver and no CUDA stand-in: " + err.Error(), nil
	}
	return cleanup, "", os.Setenv(LibraryEnv, lib)
}

// Main is a test package's TestMain around Use: it sets the stand-in up, stores in *why
// why there is no CUDA library ("" when there is one), runs the tests (run: the
// testing.M's Run), removes the stand-in and exits with the tests' code. An error of the
// machine exits with 1 before any test.
func Main(run func() int, why *string) {
	cleanup, w, err := Use()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*why = w
	code := run()
	cleanup()
	os.Exit(code)
}
