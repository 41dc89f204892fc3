//go:build !linux

package gpuoffload

import (
	"errors"
	"fmt"
)

// errNotLinux explains why the CUDA and host-C++ backends are missing.
var errNotLinux = errors.New("gpuoffload: the CUDA and host-C++ backends are built for Linux only")

// NewCUDA fails: the CUDA backend is built for Linux only.
func NewCUDA(device int) (Backend, error) { return nil, errNotLinux }

// newCUDA fails: the CUDA backend is built for Linux only.
func newCUDA(device, lanes int) (Backend, error) { return nil, errNotLinux }

// NewHostCXX fails: the host-C++ backend is built for Linux only.
func NewHostCXX(compiler string) (Backend, error) { return nil, errNotLinux }

// cudaDevices reports that there is no CUDA backend.
func cudaDevices() []Device {
	return []Device{{Backend: "cuda", Index: -1, Reason: reason(errNotLinux)}}
}

// CompilePTX fails: NVRTC is loaded on Linux only.
func CompilePTX(name, src string, major, minor int) ([]byte, error) {
	return nil, fmt.Errorf("%w: it is loaded on Linux only", ErrNoNVRTC)
}

// CompileCUBIN fails: NVRTC is loaded on Linux only.
func CompileCUBIN(name, src string, major, minor int) ([]byte, error) {
	return CompilePTX(name, src, major, minor)
}
