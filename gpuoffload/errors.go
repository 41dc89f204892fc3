package gpuoffload

import (
	"fmt"
	"strings"
)

// cuResult is a CUresult.
type cuResult int32

// CUresult values used by name.
const (
	cudaSuccess                    cuResult = 0
	cudaErrorOutOfMemory           cuResult = 2
	cudaErrorUnsupportedPTXVersion cuResult = 222
)

// CUDAError is a CUDA driver API call that failed.
type CUDAError struct {
	// Call is the driver function, as exported by libcuda (for example "cuMemAlloc_v2").
	Call string
	// Code is the CUresult.
	Code int
	// Name is the CUresult's name (cuGetErrorName), for example "CUDA_ERROR_OUT_OF_MEMORY".
	Name string
	// Description is cuGetErrorString's text.
	Description string
	// Detail is context added by gpuoffload (sizes, free memory, the JIT log), or "".
	Detail string
}

// Error implements error.
func (e *CUDAError) Error() string {
	s := fmt.Sprintf("%s failed: %s (%s)", e.Call, e.Name, e.Description)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is makes errors.Is(err, ErrOutOfMemory) true for CUDA_ERROR_OUT_OF_MEMORY.
func (e *CUDAError) Is(target error) bool {
	return target == ErrOutOfMemory && cuResult(e.Code) == cudaErrorOutOfMemory
}

// NVRTCError is an NVRTC call that failed; for nvrtcCompileProgram, Log holds the
// compiler's messages.
type NVRTCError struct {
	// Call is the NVRTC function.
	Call string
	// Code is the nvrtcResult.
	Code int
	// Message is nvrtcGetErrorString's text.
	Message string
	// Program names the source being compiled and Options the compile options.
	Program, Options string
	// Log is the compile log, or "".
	Log string
}

// Error implements error.
func (e *NVRTCError) Error() string {
	s := fmt.Sprintf("%s failed: %s", e.Call, e.Message)
	if e.Program != "" {
		s += fmt.Sprintf(" (compiling %s with %s)", e.Program, e.Options)
	}
	if e.Log != "" {
		s += "\n" + strings.TrimRight(e.Log, "\x00\n")
	}
	return s
}
