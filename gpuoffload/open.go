package gpuoffload

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// Device describes one backend device and whether it can be used.
type Device struct {
	// Backend is "cpu" or "cuda".
	Backend string
	// Index is the CUDA device number (-1 when the CUDA backend has no device to list).
	Index int
	// Name is the device's name ("NVIDIA H100 80GB HBM3"), or the CPU count.
	Name string
	// CCMajor and CCMinor are a CUDA device's compute capability.
	CCMajor, CCMinor int
	// Multiprocessors is a CUDA device's SM count.
	Multiprocessors int
	// MemoryBytes is a CUDA device's global memory.
	MemoryBytes uint64
	// Driver is the CUDA driver API version ("12.4").
	Driver string
	// Compiler is the NVRTC used to compile kernels ("NVRTC 12.4 (libnvrtc.so.12)").
	Compiler string
	// Available reports whether the backend opens on this device.
	Available bool
	// Reason says why not, when Available is false.
	Reason string
}

// String describes d on one line.
func (d Device) String() string {
	var b strings.Builder
	switch {
	case d.Backend == "cpu":
		fmt.Fprintf(&b, "cpu: %s", d.Name)
	case d.Index < 0:
		b.WriteString("cuda: no device")
	default:
		fmt.Fprintf(&b, "cuda:%d: %s, compute capability %d.%d, %d SMs, %d MiB", d.Index, d.Name,
			d.CCMajor, d.CCMinor, d.Multiprocessors, d.MemoryBytes>>20)
		if d.Driver != "" {
			fmt.Fprintf(&b, ", driver API %s", d.Driver)
		}
		if d.Compiler != "" {
			fmt.Fprintf(&b, ", %s", d.Compiler)
		}
	}
	if d.Available {
		b.WriteString(" [available]")
	} else {
		fmt.Fprintf(&b, " [unavailable: %s]", d.Reason)
	}
	return b.String()
}

// Devices lists the backends' devices: the CPU (always available), then each CUDA device,
// or one CUDA entry saying why there is none (no driver, cuInit failing, no device). A
// CUDA device is available when the backend opens on it (NewCUDA: driver, NVRTC and the
// built-in kernels compile and load), so listing takes a moment per device.
func Devices() []Device {
	cpu := Device{Backend: "cpu", Index: 0, Available: true,
		Name: fmt.Sprintf("%d logical CPUs (GOMAXPROCS %d), %s/%s", runtime.NumCPU(), runtime.GOMAXPROCS(0),
			runtime.GOOS, runtime.GOARCH)}
	return append([]Device{cpu}, cudaDevices()...)
}

// reason turns an error into a Device.Reason.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), "gpuoffload: ")
}

// Offload modes accepted by Open (the --gpu flag).
const (
	// ModeOff runs without a batch backend: every event is handled by the model's Handle.
	ModeOff = "off"
	// ModeOn requires the CUDA backend and fails if it does not open.
	ModeOn = "on"
	// ModeAuto uses the CUDA backend when it opens, and otherwise runs without offload,
	// saying why once, unless the machine has no NVIDIA driver at all (ErrNoDriver).
	ModeAuto = "auto"
	// ModeCPU uses the CPU backend (the Go twins on all cores): the batch path without a
	// GPU, for testing that it changes nothing.
	ModeCPU = "cpu"
)

// Modes lists the accepted offload modes.
func Modes() []string { return []string{ModeOff, ModeOn, ModeAuto, ModeCPU} }

// CheckMode returns a one-line error for an unknown mode.
func CheckMode(mode string) error {
	for _, m := range Modes() {
		if mode == m {
			return nil
		}
	}
	return fmt.Errorf("gpuoffload: unknown offload mode %q (want one of %s)", mode, strings.Join(Modes(), ", "))
}

// ErrNoDriver is the error, wrapped, of a CUDA backend that does not open because the
// machine has no NVIDIA driver (libcuda.so.1 cannot be loaded). A driver named by
// WARPED_CUDA_LIBRARY that cannot be loaded is another error: it was asked for.
var ErrNoDriver = errors.New("no NVIDIA driver")

// Options are Open's settings.
type Options struct {
	// Device is the CUDA device number (default 0).
	Device int
	// Workers is the CPU backend's goroutine count (0: GOMAXPROCS).
	Workers int
	// Lanes is how many goroutines submit batches at once (the workers of a time-warp
	// process; 0: one). The CUDA and CPU backends accept MaxInFlight batches in flight for
	// each, the CUDA backend on a stream of its own for each, so that one worker's batches
	// never wait for another's.
	Lanes int
}

// Open returns the backend for an offload mode:
//
//	off   nil: no offload
//	cpu   the CPU backend
//	on    the CUDA backend, or an error saying why it does not open
//	auto  the CUDA backend if it opens; otherwise nil (no offload) and a one-line note
//	      saying why, for the caller to print once; no note where the machine has no
//	      NVIDIA driver (ErrNoDriver): nothing was asked of a GPU it does not have
//
// An unknown mode is a one-line error. The caller closes a non-nil backend.
func Open(mode string, o Options) (b Backend, note string, err error) {
	if err := CheckMode(mode); err != nil {
		return nil, "", err
	}
	switch mode {
	case ModeCPU:
		return newCPU(o.Workers, o.Lanes), "", nil
	case ModeOn, ModeAuto:
		c, err := newCUDA(o.Device, o.Lanes)
		if err == nil {
			return c, "", nil
		}
		switch {
		case mode == ModeOn:
			return nil, "", fmt.Errorf("--gpu on: %w", err)
		case errors.Is(err, ErrNoDriver):
			return nil, "", nil
		}
		return nil, "gpu offload off: " + firstLine(reason(err)), nil
	}
	return nil, "", nil
}

// firstLine returns s up to its first newline (compile logs stay in the full error).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
