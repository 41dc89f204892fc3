//go:build linux

package gpuoffload

import (
	_ "embed" // the host prelude
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/warpedgo/warped/internal/cxx"
	"github.com/warpedgo/warped/rng"
)

// hostPrelude makes CUDA kernel source compile as host C++: the qualifiers vanish, the
// thread indices become globals set by the launch loop, and the bit-cast intrinsics are
// memcpy. It is put in front of Source(k). The CUDA stand-in (package gpuoffload/standin)
// compiles kernels with the same file.
//
//go:embed standin/csrc/host_prelude.h
var hostPrelude string

// hostLaunch is the launch loop for a batch kernel: every thread of every block of a
// 256-thread grid, in order, as a GPU would run them (in some order).
const hostLaunch = `
extern "C" void warped_host_run(const WarpedBatch* b) {
    const unsigned int block = 256;
    const unsigned int grid = (b->n + block - 1) / block;
    blockDim.x = block; blockDim.y = 1; blockDim.z = 1;
    gridDim.x = grid; gridDim.y = 1; gridDim.z = 1;
    blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;
    for (unsigned int g = 0; g < grid; g++) {
        for (unsigned int t = 0; t < block; t++) {
            blockIdx.x = g;
            threadIdx.x = t;
            KERNEL(*b);
        }
    }
}
`

// hostXORWOWLaunch is the launch loop for the built-in XORWOW kernels.
const hostXORWOWLaunch = `
extern "C" void warped_host_xorwow(int reverse, warped_u32* st, const warped_u32* counts, warped_u32 n) {
    const unsigned int block = 256;
    const unsigned int grid = (n + block - 1) / block;
    blockDim.x = block; blockDim.y = 1; blockDim.z = 1;
    gridDim.x = grid; gridDim.y = 1; gridDim.z = 1;
    blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;
    for (unsigned int g = 0; g < grid; g++) {
        for (unsigned int t = 0; t < block; t++) {
            blockIdx.x = g;
            threadIdx.x = t;
            if (reverse) {
                warped_xorwow_rewind(st, counts, n);
            } else {
                warped_xorwow_advance(st, counts, n);
            }
        }
    }
}
`

// hostCompileFlags keep the host compiler to IEEE double arithmetic without contraction,
// as --fmad=false does for NVRTC.
func hostCompileFlags() []string {
	return []string{"-std=c++14", "-O2", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared"}
}

// hostBackend compiles the CUDA sources as host C++ and runs them one thread at a time.
//
// Locking: life is held shared by every operation (enter) and exclusively by Close, which
// alone writes closed and unloads handles, so Close never unloads a library an operation
// runs. mu serializes compiling and running (the C thread indices are globals): kernels,
// handles and seq are written under it, or by the constructor before the backend is
// shared; xorwow is set by the constructor and read under mu. inFlight counts the batches
// accepted and not yet waited for, lock-free (MaxInFlight).
type hostBackend struct {
	cxx, version, dir string
	life              sync.RWMutex
	closed            bool
	mu                sync.Mutex
	kernels           map[string]func(args unsafe.Pointer)
	handles           []uintptr
	xorwow            func(reverse int32, st, counts unsafe.Pointer, n uint32)
	inFlight          atomic.Int32
	seq               int
}

// NewHostCXX returns a checking backend that needs no GPU: it compiles each kernel's CUDA
// source (and the built-in XORWOW kernels) as host C++ with the system C++ compiler (with
// -ffp-contract=off, as NVRTC gets --fmad=false), loads it, and runs the kernel thread by
// thread over a 256-thread grid, as a GPU would. Its results must equal the Go twin's bit
// for bit, so it tests the CUDA text of a kernel on a machine without CUDA. compiler is
// the C++ compiler command; "" means $CXX, else c++, g++ or clang++ from PATH. It is slow
// (one thread) and meant for tests.
func NewHostCXX(compiler string) (Backend, error) {
	cxx, err := findCXX(compiler)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(cxx, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("gpuoffload: C++ compiler %s does not run: %w", cxx, err)
	}
	dir, err := os.MkdirTemp("", "warped-hostcxx-")
	if err != nil {
		return nil, fmt.Errorf("gpuoffload: host C++ backend: %w", err)
	}
	h := &hostBackend{cxx: cxx, version: strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]),
		dir: dir, kernels: map[string]func(unsafe.Pointer){}}
	lib, err := h.compile("xorwow", BuiltinSource()+hostXORWOWLaunch)
	if err == nil {
		err = bindAll(lib, "xorwow", []symbol{{"warped_host_xorwow", &h.xorwow, false}})
	}
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	return h, nil
}

// findCXX resolves the compiler command (see cxx.Find).
func findCXX(compiler string) (string, error) {
	p, err := cxx.Find(compiler)
	if err != nil {
		return "", fmt.Errorf("gpuoffload: %w", err)
	}
	return p, nil
}

// Name implements Backend.
func (h *hostBackend) Name() string { return "host-c++ (" + h.version + ")" }

// compile compiles src into a shared library and loads it (h.mu held or during setup).
func (h *hostBackend) compile(name, src string) (uintptr, error) {
	h.seq++
	base := filepath.Join(h.dir, fmt.Sprintf("%s-%d", name, h.seq))
	if err := os.WriteFile(base+".cpp", []byte(hostPrelude+src), 0o600); err != nil {
		return 0, fmt.Errorf("gpuoffload: host C++ backend: %w", err)
	}
	args := append(hostCompileFlags(), "-o", base+".so", base+".cpp")
	if out, err := exec.Command(h.cxx, args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("gpuoffload: compiling %s as host C++ (%s %s): %v\n%s", name, h.cxx,
			strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	lib, err := dlopen(base+".so", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("gpuoffload: loading %s: %w", base+".so", err)
	}
	h.handles = append(h.handles, lib)
	return lib, nil
}

// kernel returns k's compiled launch loop (h.mu held).
func (h *hostBackend) kernel(k *Kernel) (func(unsafe.Pointer), error) {
	key := k.Name + "\x00" + k.Source
	if f, ok := h.kernels[key]; ok {
		return f, nil
	}
	src := Source(k) + "\n#define KERNEL " + k.Name + "\n" + hostLaunch
	lib, err := h.compile(k.Name, src)
	if err != nil {
		return nil, err
	}
	var f func(unsafe.Pointer)
	if err := bindAll(lib, k.Name, []symbol{{"warped_host_run", &f, false}}); err != nil {
		return nil, fmt.Errorf("gpuoffload: %w", err)
	}
	h.kernels[key] = f
	return f, nil
}

// enter takes life shared, failing after Close; the returned function releases it.
func (h *hostBackend) enter() (func(), error) {
	h.life.RLock()
	if h.closed {
		h.life.RUnlock()
		return nil, ErrClosed
	}
	return h.life.RUnlock, nil
}

// use is how Prepare and Run start: it checks k (then with check, Run's batch), enters
// the backend, locks it and returns k's function (compiled at its first use) and the
// function that unlocks and leaves.
func (h *hostBackend) use(k *Kernel, check func() error) (f func(unsafe.Pointer), done func(), err error) {
	if err := k.Validate(); err != nil {
		return nil, nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, err
		}
	}
	leave, err := h.enter()
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	done = func() { h.mu.Unlock(); leave() }
	if f, err = h.kernel(k); err != nil {
		done()
		return nil, nil, err
	}
	return f, done, nil
}

// Prepare implements Backend.
func (h *hostBackend) Prepare(k *Kernel) error {
	_, done, err := h.use(k, nil)
	if err == nil {
		done()
	}
	return err
}

// Run implements Backend.
func (h *hostBackend) Run(k *Kernel, b *Batch) error {
	f, done, err := h.use(k, func() error { return b.check(k) })
	if err != nil {
		return err
	}
	defer done()
	if b.N == 0 {
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	args := hostBatchArgs{
		params: pinned(&pin, k.Params), lp: pinned(&pin, b.LP), time: pinned(&pin, b.Time),
		evWords: pinned(&pin, b.EvWords), rng: pinned(&pin, b.RNG), state: pinned(&pin, b.State),
		outCount: pinned(&pin, b.OutCount), outTo: pinned(&pin, b.OutTo), outTime: pinned(&pin, b.OutTime),
		outWords: pinned(&pin, b.OutWords), overflow: pinned(&pin, b.Overflow),
		n: uint32(b.N), stateWords: uint32(k.StateWords), outSlots: uint32(k.OutSlots),
		nParams: uint32(len(k.Params)),
	}
	f(unsafe.Pointer(&args))
	runtime.KeepAlive(b)
	runtime.KeepAlive(k)
	return nil
}

// pinned pins s's array and returns its address (nil for an empty slice).
func pinned[T any](pin *runtime.Pinner, s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	pin.Pin(&s[0])
	return unsafe.Pointer(&s[0])
}

// Submit implements Backend: the batch runs at once; Wait returns its error.
func (h *hostBackend) Submit(k *Kernel, b *Batch) (Pending, error) {
	if h.inFlight.Add(1) > MaxInFlight {
		h.inFlight.Add(-1)
		return nil, ErrBusy
	}
	err := h.Run(k, b)
	if errors.Is(err, ErrClosed) {
		h.inFlight.Add(-1)
		return nil, err
	}
	return &donePending{err: err, release: func() { h.inFlight.Add(-1) }}, nil
}

// donePending is a batch that has already run.
type donePending struct {
	err     error
	release func()
	once    sync.Once
}

// Wait implements Pending.
func (p *donePending) Wait() error {
	p.once.Do(p.release)
	return p.err
}

// Advance implements Backend.
func (h *hostBackend) Advance(states []rng.XORWOW, counts []uint32) error {
	return h.runXORWOW(0, states, counts)
}

// Reverse implements Backend.
func (h *hostBackend) Reverse(states []rng.XORWOW, counts []uint32) error {
	return h.runXORWOW(1, states, counts)
}

// runXORWOW runs a built-in XORWOW kernel over states.
func (h *hostBackend) runXORWOW(reverse int32, states []rng.XORWOW, counts []uint32) error {
	if err := checkStates(states, counts); err != nil {
		return err
	}
	leave, err := h.enter()
	if err != nil {
		return err
	}
	defer leave()
	n := len(states)
	if n == 0 {
		return nil
	}
	st := make([]uint32, 6*n)
	for i, g := range states {
		st[i] = g.D
		st[n+i], st[2*n+i], st[3*n+i], st[4*n+i], st[5*n+i] = g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
	}
	h.mu.Lock()
	h.xorwow(reverse, unsafe.Pointer(&st[0]), unsafe.Pointer(&counts[0]), uint32(n))
	h.mu.Unlock()
	runtime.KeepAlive(st)
	runtime.KeepAlive(counts)
	for i := range states {
		states[i] = rng.XORWOW{D: st[i], V: [5]uint32{st[n+i], st[2*n+i], st[3*n+i], st[4*n+i], st[5*n+i]}}
	}
	return nil
}

// Close implements Backend: it unloads the libraries and removes the build directory.
func (h *hostBackend) Close() error {
	h.life.Lock()
	defer h.life.Unlock()
	if h.closed {
		return ErrClosed
	}
	h.closed = true
	var errs []error
	for _, l := range h.handles {
		if err := purego.Dlclose(l); err != nil {
			errs = append(errs, err)
		}
	}
	h.handles = nil
	if err := os.RemoveAll(h.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gpuoffload: closing the host C++ backend: %w", err)
	}
	return nil
}
