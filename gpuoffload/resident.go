//go:build linux

package gpuoffload

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Resident holds one CUDA device for a program that keeps its data in device memory for
// the whole run (package gpuwarp's device-resident time warp): memory allocated once,
// kernels of one compiled module launched in order on one stream, and copies only where
// the caller asks for them. It is used by one goroutine at a time.
type Resident struct {
	c      *cudaBackend
	stream uintptr
	allocs []uint64
	fns    map[string]cudaFunc
	graphs []*Graph
	hosts  []hostBlock // pinned host memory (AllocHost)
	events []*Event
}

// Graph is a sequence of launches captured once (a CUDA graph) and replayed by Replay at
// the cost of one call; the arguments' values are those they had when it was captured.
type Graph struct {
	graph, exec uintptr
}

// OpenResident opens CUDA device number device (0 is the first) for a device-resident
// program. The error says why CUDA cannot be used, as NewCUDA's does.
func OpenResident(device int) (*Resident, error) {
	c, err := newCUDA(device, 1)
	if err != nil {
		return nil, err
	}
	r := &Resident{c: c, fns: map[string]cudaFunc{}}
	leave, err := c.enter()
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	defer leave()
	if err := c.d.check("cuStreamCreate", c.d.cuStreamCreate(&r.stream, 1)); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("gpuoffload: %s: %w", c.name, err)
	}
	return r, nil
}

// Name names the device, as the CUDA backend's Name does.
func (r *Resident) Name() string { return r.c.name }

// Compile compiles src (complete CUDA text: callers put Header in front) with NVRTC for
// the device, or takes it from the kernel cache, and looks up the named kernels, which
// Launch then runs by name.
func (r *Resident) Compile(name, src string, kernels ...string) error {
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	r.c.compileMu.Lock()
	defer r.c.compileMu.Unlock()
	m, err := r.c.loadModule(name, src)
	if err != nil {
		return fmt.Errorf("gpuoffload: compiling %s: %w", name, err)
	}
	for _, k := range kernels {
		f, err := r.c.getFunction(m, k)
		if err != nil {
			return fmt.Errorf("gpuoffload: %s: %w", name, err)
		}
		r.fns[k] = f
	}
	return nil
}

// Alloc allocates size bytes of device memory, freed by Close. Running out of memory
// matches ErrOutOfMemory and says how much the device has free.
func (r *Resident) Alloc(size int) (uint64, error) {
	leave, err := r.c.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	var p uint64
	if err := r.c.d.check("cuMemAlloc_v2", r.c.d.cuMemAlloc(&p, uintptr(max(size, 1)))); err != nil {
		return 0, r.c.memoryDetail(err, uintptr(size), "device-resident buffer")
	}
	r.allocs = append(r.allocs, p)
	return p, nil
}

// Upload copies size bytes at src to device address dst and waits for the copy.
func (r *Resident) Upload(dst uint64, src unsafe.Pointer, size int) error {
	return r.queue(size, "cuMemcpyHtoDAsync_v2", func() cuResult {
		return r.c.d.cuMemcpyHtoDAsync(dst, src, uintptr(size), r.stream)
	})
}

// queue runs op (a call that queues work of size units on the stream; none when size is
// 0) on the device and waits for the stream.
func (r *Resident) queue(size int, call string, op func() cuResult) error {
	if size == 0 {
		return nil
	}
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := r.c.d.check(call, op()); err != nil {
		return fmt.Errorf("gpuoffload: %s: %w", r.c.name, err)
	}
	return r.sync()
}

// Fill32 sets n 32-bit words at device address dst to v and waits.
func (r *Resident) Fill32(dst uint64, v uint32, n int) error {
	return r.queue(n, "cuMemsetD32Async", func() cuResult {
		return r.c.d.cuMemsetD32Async(dst, v, uintptr(n), r.stream)
	})
}

// Download copies size bytes at device address src to dst, after the work queued before
// it, and waits for the copy.
func (r *Resident) Download(dst unsafe.Pointer, src uint64, size int) error {
	return r.queue(size, "cuMemcpyDtoHAsync_v2", func() cuResult {
		return r.c.d.cuMemcpyDtoHAsync(dst, src, uintptr(size), r.stream)
	})
}

// Launch queues kernel (compiled by Compile) over threads threads on the stream; args
// point to the kernel's arguments' values. It does not wait.
func (r *Resident) Launch(kernel string, threads int, args ...unsafe.Pointer) error {
	f, ok := r.fns[kernel]
	if !ok {
		return fmt.Errorf("gpuoffload: kernel %s was not compiled", kernel)
	}
	if threads <= 0 {
		return nil
	}
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := r.c.launch(f, threads, r.stream, args...); err != nil {
		return fmt.Errorf("gpuoffload: kernel %s on %s: %w", kernel, r.c.name, err)
	}
	return nil
}

// Call is one kernel launch of a sequence (LaunchAll).
type Call struct {
	// Kernel names a kernel compiled by Compile.
	Kernel string
	// Threads is the number of threads to launch.
	Threads int
	// Args point to the kernel's arguments' values, read when the call is launched.
	Args []unsafe.Pointer
}

// LaunchAll queues calls in order, as Launch would one by one, entering the device once
// (a device-resident loop launches a few kernels per iteration, so the per-call locking
// and context switch would dominate small grids). It does not wait.
func (r *Resident) LaunchAll(calls []Call) error {
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	for _, c := range calls {
		f, ok := r.fns[c.Kernel]
		if !ok {
			return fmt.Errorf("gpuoffload: kernel %s was not compiled", c.Kernel)
		}
		if c.Threads <= 0 {
			continue
		}
		if err := r.c.launch(f, c.Threads, r.stream, c.Args...); err != nil {
			return fmt.Errorf("gpuoffload: kernel %s on %s: %w", c.Kernel, r.c.name, err)
		}
	}
	return nil
}

// Graphs reports whether the driver has CUDA graphs (Capture and Replay).
func (r *Resident) Graphs() bool {
	d := r.c.d
	return d.cuStreamBeginCapture != nil && d.cuStreamEndCapture != nil && d.cuGraphInstantiateWithFlags != nil &&
		d.cuGraphLaunch != nil && d.cuGraphExecDestroy != nil && d.cuGraphDestroy != nil
}

// Capture records calls, as LaunchAll would queue them, into a graph that Replay runs;
// nothing runs now. Close frees it. The driver must have graphs (Graphs).
func (r *Resident) Capture(calls []Call) (*Graph, error) {
	if !r.Graphs() {
		return nil, fmt.Errorf("gpuoffload: %s: the driver has no CUDA graphs", r.c.name)
	}
	leave, err := r.c.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	d := r.c.d
	const relaxed = 2 // CU_STREAM_CAPTURE_MODE_RELAXED
	if err := d.check("cuStreamBeginCapture_v2", d.cuStreamBeginCapture(r.stream, relaxed)); err != nil {
		return nil, fmt.Errorf("gpuoffload: %s: %w", r.c.name, err)
	}
	g := &Graph{}
	for _, c := range calls {
		f, ok := r.fns[c.Kernel]
		if !ok {
			err = fmt.Errorf("gpuoffload: kernel %s was not compiled", c.Kernel)
			break
		}
		if c.Threads <= 0 {
			continue
		}
		if err = r.c.launch(f, c.Threads, r.stream, c.Args...); err != nil {
			err = fmt.Errorf("gpuoffload: capturing kernel %s on %s: %w", c.Kernel, r.c.name, err)
			break
		}
	}
	if end := d.check("cuStreamEndCapture", d.cuStreamEndCapture(r.stream, &g.graph)); err == nil && end != nil {
		err = fmt.Errorf("gpuoffload: %s: %w", r.c.name, end)
	}
	if err == nil {
		err = d.check("cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0))
	}
	if err != nil {
		if g.graph != 0 {
			d.cuGraphDestroy(g.graph)
		}
		return nil, err
	}
	r.graphs = append(r.graphs, g)
	return g, nil
}

// Replay queues the launches of g on the stream. It does not wait.
func (r *Resident) Replay(g *Graph) error {
	return r.call("cuGraphLaunch", func() cuResult { return r.c.d.cuGraphLaunch(g.exec, r.stream) })
}

// call makes the driver call op, named call, on the device's thread, and says which device
// failed.
func (r *Resident) call(call string, op func() cuResult) error {
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := r.c.d.check(call, op()); err != nil {
		return fmt.Errorf("gpuoffload: %s: %w", r.c.name, err)
	}
	return nil
}

// Sync waits for everything queued on the stream; a kernel's failure shows here.
func (r *Resident) Sync() error {
	leave, err := r.c.enter()
	if err != nil {
		return err
	}
	defer leave()
	return r.sync()
}

func (r *Resident) sync() error {
	if err := r.c.d.check("cuStreamSynchronize", r.c.d.cuStreamSynchronize(r.stream)); err != nil {
		return fmt.Errorf("gpuoffload: %s: %w", r.c.name, err)
	}
	return nil
}

// Close waits for the stream, frees the memory and releases the device.
func (r *Resident) Close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errs []error
	if r.c.d.cuCtxSetCurrent(r.c.ctx) == cudaSuccess {
		if err := r.c.d.check("cuStreamSynchronize", r.c.d.cuStreamSynchronize(r.stream)); err != nil {
			errs = append(errs, err)
		}
		for _, g := range r.graphs {
			if err := r.c.d.check("cuGraphExecDestroy", r.c.d.cuGraphExecDestroy(g.exec)); err != nil {
				errs = append(errs, err)
			}
			if err := r.c.d.check("cuGraphDestroy", r.c.d.cuGraphDestroy(g.graph)); err != nil {
				errs = append(errs, err)
			}
		}
		r.graphs = nil
		for _, e := range r.events {
			if err := r.c.d.check("cuEventDestroy_v2", r.c.d.cuEventDestroy(e.e)); err != nil {
				errs = append(errs, err)
			}
		}
		r.events = nil
		for _, h := range r.hosts {
			if err := r.c.d.check("cuMemFreeHost", r.c.d.cuMemFreeHost(h.p)); err != nil {
				errs = append(errs, err)
			}
		}
		r.hosts = nil
		for _, p := range r.allocs {
			if err := r.c.d.check("cuMemFree_v2", r.c.d.cuMemFree(p)); err != nil {
				errs = append(errs, err)
			}
		}
		if err := r.c.d.check("cuStreamDestroy_v2", r.c.d.cuStreamDestroy(r.stream)); err != nil {
			errs = append(errs, err)
		}
	}
	r.allocs = nil
	errs = append(errs, r.c.Close())
	return errors.Join(errs...)
}
