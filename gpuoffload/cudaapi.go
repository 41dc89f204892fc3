//go:build linux

package gpuoffload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// This file loads the CUDA driver API (libcuda.so.1) and NVRTC (libnvrtc.so) at run time
// with purego: no cgo and no CUDA toolkit are needed to build. Each library is loaded at
// most once per process (sync.OnceValues); the handles are never closed.

// CUdevice_attribute, CUfunction_attribute and CUjit_option values (cuda.h).
const (
	cuDeviceAttributeMultiprocessorCount    = 16
	cuDeviceAttributeComputeCapabilityMajor = 75
	cuDeviceAttributeComputeCapabilityMinor = 76
	cuFuncAttributeMaxThreadsPerBlock       = 0
	cuJITErrorLogBuffer                     = 5
	cuJITErrorLogBufferSizeBytes            = 6
	cuStreamNonBlocking                     = 1
)

// symbol pairs a C function name with the Go function variable it is bound to.
type symbol struct {
	name     string
	fptr     any
	optional bool
}

// bindAll binds every symbol of lib; a missing required symbol is an error naming it.
func bindAll(lib uintptr, libName string, syms []symbol) error {
	for _, s := range syms {
		addr, err := purego.Dlsym(lib, s.name)
		if err != nil || addr == 0 {
			if s.optional {
				continue
			}
			return fmt.Errorf("%s has no symbol %s (too old a version?)", libName, s.name)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// driverAPI is the part of the CUDA driver API that gpuoffload uses. Functions that cuda.h
// maps to a versioned name (#define cuMemAlloc cuMemAlloc_v2) are bound to that name.
type driverAPI struct {
	lib     uintptr
	version int // cuDriverGetVersion: 1000*major + 10*minor

	cuInit                    func(flags uint32) cuResult
	cuDriverGetVersion        func(v *int32) cuResult
	cuGetErrorName            func(r cuResult, s *unsafe.Pointer) cuResult
	cuGetErrorString          func(r cuResult, s *unsafe.Pointer) cuResult
	cuDeviceGetCount          func(n *int32) cuResult
	cuDeviceGet               func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) cuResult
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease func(dev int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuMemGetInfo              func(free, total *uintptr) cuResult
	cuMemAlloc                func(p *uint64, size uintptr) cuResult
	cuMemFree                 func(p uint64) cuResult
	cuMemAllocHost            func(p *unsafe.Pointer, size uintptr) cuResult
	cuMemFreeHost             func(p unsafe.Pointer) cuResult
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, size uintptr, stream uintptr) cuResult
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, size uintptr, stream uintptr) cuResult
	cuStreamCreate            func(s *uintptr, flags uint32) cuResult
	cuStreamDestroy           func(s uintptr) cuResult
	cuStreamSynchronize       func(s uintptr) cuResult
	cuModuleLoadDataEx        func(m *uintptr, image *byte, nopts uint32, opts *int32, vals *uintptr) cuResult
	cuModuleUnload            func(m uintptr) cuResult
	cuModuleGetFunction       func(f *uintptr, m uintptr, name string) cuResult
	cuFuncGetAttribute        func(v *int32, attr int32, f uintptr) cuResult
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr,
		params *unsafe.Pointer, extra unsafe.Pointer) cuResult
	cuMemsetD32Async   func(dst uint64, v uint32, n uintptr, stream uintptr) cuResult
	cuEventCreate      func(e *uintptr, flags uint32) cuResult
	cuEventRecord      func(e, s uintptr) cuResult
	cuEventSynchronize func(e uintptr) cuResult
	cuEventDestroy     func(e uintptr) cuResult
	// CUDA graphs (optional: Resident replays captured launches with them where present).
	cuStreamBeginCapture        func(s uintptr, mode int32) cuResult
	cuStreamEndCapture          func(s uintptr, g *uintptr) cuResult
	cuGraphInstantiateWithFlags func(e *uintptr, g uintptr, flags uint64) cuResult
	cuGraphLaunch               func(e, s uintptr) cuResult
	cuGraphExecDestroy          func(e uintptr) cuResult
	cuGraphDestroy              func(g uintptr) cuResult
}

// symbols lists d's functions with their exported names.
func (d *driverAPI) symbols() []symbol {
	return []symbol{
		{"cuInit", &d.cuInit, false},
		{"cuDriverGetVersion", &d.cuDriverGetVersion, false},
		{"cuGetErrorName", &d.cuGetErrorName, false},
		{"cuGetErrorString", &d.cuGetErrorString, false},
		{"cuDeviceGetCount", &d.cuDeviceGetCount, false},
		{"cuDeviceGet", &d.cuDeviceGet, false},
		{"cuDeviceGetName", &d.cuDeviceGetName, false},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute, false},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, false},
		{"cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, false},
		{"cuDevicePrimaryCtxRelease_v2", &d.cuDevicePrimaryCtxRelease, false},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent, false},
		{"cuMemGetInfo_v2", &d.cuMemGetInfo, false},
		{"cuMemAlloc_v2", &d.cuMemAlloc, false},
		{"cuMemFree_v2", &d.cuMemFree, false},
		{"cuMemAllocHost_v2", &d.cuMemAllocHost, false},
		{"cuMemFreeHost", &d.cuMemFreeHost, false},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync, false},
		{"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync, false},
		{"cuStreamCreate", &d.cuStreamCreate, false},
		{"cuStreamDestroy_v2", &d.cuStreamDestroy, false},
		{"cuStreamSynchronize", &d.cuStreamSynchronize, false},
		{"cuModuleLoadDataEx", &d.cuModuleLoadDataEx, false},
		{"cuModuleUnload", &d.cuModuleUnload, false},
		{"cuModuleGetFunction", &d.cuModuleGetFunction, false},
		{"cuFuncGetAttribute", &d.cuFuncGetAttribute, false},
		{"cuLaunchKernel", &d.cuLaunchKernel, false},
		{"cuMemsetD32Async", &d.cuMemsetD32Async, false},
		{"cuEventCreate", &d.cuEventCreate, false},
		{"cuEventRecord", &d.cuEventRecord, false},
		{"cuEventSynchronize", &d.cuEventSynchronize, false},
		{"cuEventDestroy_v2", &d.cuEventDestroy, false},
		{"cuStreamBeginCapture_v2", &d.cuStreamBeginCapture, true},
		{"cuStreamEndCapture", &d.cuStreamEndCapture, true},
		{"cuGraphInstantiateWithFlags", &d.cuGraphInstantiateWithFlags, true},
		{"cuGraphLaunch", &d.cuGraphLaunch, true},
		{"cuGraphExecDestroy", &d.cuGraphExecDestroy, true},
		{"cuGraphDestroy", &d.cuGraphDestroy, true},
	}
}

// cString copies the NUL-terminated C string at p (nil gives "").
func cString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// check turns a CUresult into nil or a *CUDAError naming call.
func (d *driverAPI) check(call string, r cuResult) error {
	if r == cudaSuccess {
		return nil
	}
	e := &CUDAError{Call: call, Code: int(r), Name: fmt.Sprintf("CUresult %d", r), Description: "unknown error"}
	var p unsafe.Pointer
	if d.cuGetErrorName(r, &p) == cudaSuccess && p != nil {
		e.Name = cString(p)
	}
	p = nil
	if d.cuGetErrorString(r, &p) == cudaSuccess && p != nil {
		e.Description = cString(p)
	}
	return e
}

// versionString formats a CUDA version number (12040) as "12.4".
func versionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// libcudaName is the driver library's name.
const libcudaName = "libcuda.so.1"

// dlopen is purego.Dlopen on one OS thread: purego asks dlerror for the reason after
// dlopen returns, and dlerror's message is the calling thread's, so a goroutine moved to
// another thread in between read none (the reason came out empty in about half the runs).
func dlopen(name string, mode int) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(name, mode)
	if err != nil && err.Error() == "" {
		err = errors.New("dlopen gave no reason")
	}
	return h, err
}

// loadDriverOnce loads and initializes the driver at most once per process.
var loadDriverOnce = sync.OnceValues(loadDriver)

// loadDriver opens libcuda.so.1 (or $WARPED_CUDA_LIBRARY), binds the API and calls cuInit.
func loadDriver() (*driverAPI, error) {
	name := libcudaName
	if p := os.Getenv(cudaLibraryEnv); p != "" {
		name = p
	}
	h, err := dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		if name != libcudaName {
			return nil, fmt.Errorf("gpuoffload: no CUDA driver: %s=%s cannot be loaded (%v); "+
				"unset it or build the stand-in with scripts/cuda-standin.sh", cudaLibraryEnv, name, err)
		}
		return nil, fmt.Errorf("gpuoffload: %w: %s cannot be loaded (%v)", ErrNoDriver, libcudaName, err)
	}
	d := &driverAPI{lib: h}
	if err := bindAll(h, name, d.symbols()); err != nil {
		return nil, fmt.Errorf("gpuoffload: unusable NVIDIA driver: %w", err)
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, fmt.Errorf("gpuoffload: the NVIDIA driver does not initialize: %w", err)
	}
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return nil, fmt.Errorf("gpuoffload: %w", err)
	}
	d.version = int(v)
	return d, nil
}

// nvrtcAPI is the part of NVRTC that gpuoffload uses.
type nvrtcAPI struct {
	lib          uintptr
	path         string
	major, minor int
	archs        []int // supported compute capabilities as 10*major+minor, ascending; nil: unknown

	nvrtcVersion              func(major, minor *int32) int32
	nvrtcGetErrorString       func(r int32) string
	nvrtcCreateProgram        func(prog *uintptr, src, name string, nh int32, headers, names unsafe.Pointer) int32
	nvrtcCompileProgram       func(prog uintptr, nopts int32, opts *unsafe.Pointer) int32
	nvrtcGetProgramLogSize    func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog        func(prog uintptr, log *byte) int32
	nvrtcGetPTXSize           func(prog uintptr, n *uintptr) int32
	nvrtcGetPTX               func(prog uintptr, ptx *byte) int32
	nvrtcDestroyProgram       func(prog *uintptr) int32
	nvrtcGetNumSupportedArchs func(n *int32) int32 // optional (CUDA 11.2+)
	nvrtcGetSupportedArchs    func(a *int32) int32 // optional
	nvrtcGetCUBINSize         func(prog uintptr, n *uintptr) int32
	nvrtcGetCUBIN             func(prog uintptr, cubin *byte) int32
}

// symbols lists r's functions.
func (r *nvrtcAPI) symbols() []symbol {
	return []symbol{
		{"nvrtcVersion", &r.nvrtcVersion, false},
		{"nvrtcGetErrorString", &r.nvrtcGetErrorString, false},
		{"nvrtcCreateProgram", &r.nvrtcCreateProgram, false},
		{"nvrtcCompileProgram", &r.nvrtcCompileProgram, false},
		{"nvrtcGetProgramLogSize", &r.nvrtcGetProgramLogSize, false},
		{"nvrtcGetProgramLog", &r.nvrtcGetProgramLog, false},
		{"nvrtcGetPTXSize", &r.nvrtcGetPTXSize, false},
		{"nvrtcGetPTX", &r.nvrtcGetPTX, false},
		{"nvrtcDestroyProgram", &r.nvrtcDestroyProgram, false},
		{"nvrtcGetNumSupportedArchs", &r.nvrtcGetNumSupportedArchs, true},
		{"nvrtcGetSupportedArchs", &r.nvrtcGetSupportedArchs, true},
		{"nvrtcGetCUBINSize", &r.nvrtcGetCUBINSize, true},
		{"nvrtcGetCUBIN", &r.nvrtcGetCUBIN, true},
	}
}

// nvrtcEnv names an environment variable that, when set, is the NVRTC library to load.
const nvrtcEnv = "WARPED_NVRTC"

// nvrtcCandidates lists the NVRTC libraries to try, best first: $WARPED_NVRTC (else
// $WARPED_CUDA_LIBRARY, which may export NVRTC too, as the stand-in does), then the
// version matching the driver's major version, the unversioned name, other majors, and
// CUDA toolkit installations under /usr/local.
func nvrtcCandidates(driverVersion int) []string {
	var c []string
	if p := os.Getenv(nvrtcEnv); p != "" {
		return []string{p} // the library asked for, or an error naming it: not another quietly
	} else if p := os.Getenv(cudaLibraryEnv); p != "" {
		c = append(c, p)
	}
	if driverVersion > 0 {
		c = append(c, fmt.Sprintf("libnvrtc.so.%d", driverVersion/1000))
	}
	c = append(c, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")
	var found []string
	for _, pat := range []string{"/usr/local/cuda*/lib64/libnvrtc.so*", "/usr/local/cuda*/targets/*/lib/libnvrtc.so*"} {
		m, _ := filepath.Glob(pat)
		found = append(found, m...)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(found))) // newer toolkits first
	seen := map[string]bool{}
	var out []string
	for _, p := range append(c, found...) {
		if !seen[p] && !strings.HasSuffix(p, ".alt") {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// loadNVRTCOnce loads NVRTC at most once per process.
var loadNVRTCOnce = sync.OnceValues(func() (*nvrtcAPI, error) {
	v := 0
	if d, err := loadDriverOnce(); err == nil {
		v = d.version
	}
	return loadNVRTC(nvrtcCandidates(v))
})

// loadNVRTC opens the first candidate library that loads and has the API.
func loadNVRTC(candidates []string) (*nvrtcAPI, error) {
	var tried []string
	for _, p := range candidates {
		if strings.Contains(p, "/") {
			// NVRTC loads its builtins library by name; make the one beside it visible.
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "libnvrtc-builtins.so*")); len(m) > 0 {
				sort.Strings(m)
				_, _ = dlopen(m[len(m)-1], purego.RTLD_NOW|purego.RTLD_GLOBAL)
			}
		}
		h, err := dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			tried = append(tried, p)
			continue
		}
		r := &nvrtcAPI{lib: h, path: p}
		if err := bindAll(h, p, r.symbols()); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		var maj, minor int32
		if rc := r.nvrtcVersion(&maj, &minor); rc != 0 {
			tried = append(tried, fmt.Sprintf("%s (nvrtcVersion: %s)", p, r.nvrtcGetErrorString(rc)))
			continue
		}
		r.major, r.minor = int(maj), int(minor)
		if r.nvrtcGetNumSupportedArchs != nil && r.nvrtcGetSupportedArchs != nil {
			var n int32
			if r.nvrtcGetNumSupportedArchs(&n) == 0 && n > 0 {
				a := make([]int32, n)
				if r.nvrtcGetSupportedArchs(&a[0]) == 0 {
					for _, x := range a {
						r.archs = append(r.archs, int(x))
					}
					sort.Ints(r.archs)
				}
			}
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: tried %s; install the CUDA toolkit's NVRTC or set %s to its path",
		ErrNoNVRTC, strings.Join(tried, ", "), nvrtcEnv)
}

// errNoCubin says NVRTC cannot produce a CUBIN (before CUDA 11.1).
var errNoCubin = errors.New("this NVRTC cannot produce CUBIN")

// compile compiles src (named name) with opts and returns the PTX, or the CUBIN when
// cubin is set.
func (r *nvrtcAPI) compile(name, src string, opts []string, cubin bool) ([]byte, error) {
	if cubin && (r.nvrtcGetCUBINSize == nil || r.nvrtcGetCUBIN == nil) {
		return nil, errNoCubin
	}
	fail := func(call string, rc int32, log string) error {
		return &NVRTCError{Call: call, Code: int(rc), Message: r.nvrtcGetErrorString(rc),
			Program: name, Options: strings.Join(opts, " "), Log: log}
	}
	var prog uintptr
	if rc := r.nvrtcCreateProgram(&prog, src, name, 0, nil, nil); rc != 0 {
		return nil, fail("nvrtcCreateProgram", rc, "")
	}
	defer r.nvrtcDestroyProgram(&prog)

	// The options are C strings in Go memory, pinned while NVRTC reads them.
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]unsafe.Pointer, len(opts))
	for i, o := range opts {
		b := append([]byte(o), 0)
		pin.Pin(&b[0])
		ptrs[i] = unsafe.Pointer(&b[0])
	}
	var optp *unsafe.Pointer
	if len(ptrs) > 0 {
		optp = &ptrs[0]
	}
	rc := r.nvrtcCompileProgram(prog, int32(len(opts)), optp)
	if rc != 0 {
		return nil, fail("nvrtcCompileProgram", rc, r.log(prog))
	}
	sizeFn, getFn, what := r.nvrtcGetPTXSize, r.nvrtcGetPTX, "nvrtcGetPTX"
	if cubin {
		sizeFn, getFn, what = r.nvrtcGetCUBINSize, r.nvrtcGetCUBIN, "nvrtcGetCUBIN"
	}
	var n uintptr
	if rc := sizeFn(prog, &n); rc != 0 {
		return nil, fail(what+"Size", rc, "")
	}
	out := make([]byte, n+1) // PTX is NUL-terminated text; one spare byte either way
	if rc := getFn(prog, &out[0]); rc != 0 {
		return nil, fail(what, rc, "")
	}
	return out, nil
}

// log returns prog's compile log.
func (r *nvrtcAPI) log(prog uintptr) string {
	var n uintptr
	if r.nvrtcGetProgramLogSize(prog, &n) != 0 || n <= 1 {
		return ""
	}
	b := make([]byte, n)
	if r.nvrtcGetProgramLog(prog, &b[0]) != 0 {
		return ""
	}
	return strings.TrimRight(string(b), "\x00")
}
