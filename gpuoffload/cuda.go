//go:build linux

package gpuoffload

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/warpedgo/warped/rng"
)

// cudaBackend runs kernels on one CUDA device through the driver API.
//
// Locking: life is held shared by every operation that touches the device and exclusively
// by Close, so Close never frees what an operation uses. mu guards the compiled functions
// and the batch slots' busy flags (slotFree signals a freed slot); closed is written under
// both life and mu. compileMu serializes compiling and loading modules (modules is
// guarded by it), so that a compile, which takes a while, does not hold mu and block the
// batches of kernels already loaded. rngMu serializes Advance and Reverse, which share one
// slot. Each operation locks its goroutine to an OS thread and makes the context current
// on it, since a CUDA context is current per thread.
type cudaBackend struct {
	d        *driverAPI
	r        *nvrtcAPI
	info     Device
	dev      int32
	ctx      uintptr
	arch     int // compile target, 10*major+minor
	name     string
	life     sync.RWMutex
	closed   bool
	mu       sync.Mutex
	slotFree *sync.Cond // on mu: a batch slot became free, or the backend closed
	funcs    map[string]cudaFunc
	// compileMu guards modules and orders compiles.
	compileMu sync.Mutex
	modules   []uintptr
	// slots are MaxInFlight batch slots for each lane (Options.Lanes), each with its own
	// stream; busy says which are taken.
	slots []*cudaSlot
	busy  []bool
	// cache keeps compiled images on disk (see kernelCache).
	cache   kernelCache
	rngMu   sync.Mutex
	rngSlot *cudaSlot
	advance cudaFunc
	rewind  cudaFunc
}

// cudaFunc is a loaded kernel and the block size to launch it with.
type cudaFunc struct {
	fn    uintptr
	block int
}

// cudaSlot is a stream with a device buffer and a pinned host staging buffer, both
// grown as needed; one batch (or one Advance/Reverse) uses it at a time.
type cudaSlot struct {
	stream uintptr
	dptr   uint64
	dcap   uintptr
	host   unsafe.Pointer
	hcap   uintptr
	// The batch in flight.
	lay  batchLayout
	args batchArgs
}

// NewCUDA opens CUDA device number device (0 is the first): it loads libcuda.so.1 and
// NVRTC, retains the device's primary context, and compiles the built-in XORWOW kernels
// for the device's compute capability. Model kernels are compiled at their first use (or
// by Prepare). The error says why CUDA cannot be used: no driver, cuInit failing, no
// such device, no NVRTC, a kernel that does not compile.
func NewCUDA(device int) (Backend, error) {
	c, err := newCUDA(device, 1)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newCUDA is NewCUDA returning the concrete type, with MaxInFlight batch slots for each of
// lanes goroutines (at least one).
func newCUDA(device, lanes int) (*cudaBackend, error) {
	d, err := loadDriverOnce()
	if err != nil {
		return nil, err
	}
	info, dev, err := deviceInfo(d, device)
	if err != nil {
		return nil, fmt.Errorf("gpuoffload: CUDA device %d: %w", device, err)
	}
	r, err := loadNVRTCOnce()
	if err != nil {
		return nil, err
	}
	arch, err := pickArch(info.CCMajor*10+info.CCMinor, r.archs, r)
	if err != nil {
		return nil, fmt.Errorf("gpuoffload: CUDA device %d: %w", device, err)
	}
	n := MaxInFlight * max(lanes, 1)
	c := &cudaBackend{d: d, r: r, info: info, dev: dev, arch: arch, funcs: map[string]cudaFunc{},
		slots: make([]*cudaSlot, n), busy: make([]bool, n), cache: openCache()}
	c.slotFree = sync.NewCond(&c.mu)
	c.name = fmt.Sprintf("cuda:%d (%s, sm_%d%d)", device, info.Name, info.CCMajor, info.CCMinor)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c.ctx, dev)); err != nil {
		return nil, fmt.Errorf("gpuoffload: CUDA device %d: %w", device, err)
	}
	if err := c.init(); err != nil {
		_ = c.release()
		return nil, fmt.Errorf("gpuoffload: CUDA device %d: %w", device, err)
	}
	return c, nil
}

// init creates the streams and loads the built-in kernels (on a locked thread).
func (c *cudaBackend) init() error {
	if err := c.setCurrent(); err != nil {
		return err
	}
	for i := range c.slots {
		s, err := c.newSlot()
		if err != nil {
			return err
		}
		c.slots[i] = s
	}
	s, err := c.newSlot()
	if err != nil {
		return err
	}
	c.rngSlot = s
	m, err := c.loadModule("xorwow.cu", BuiltinSource())
	if err != nil {
		return err
	}
	if c.advance, err = c.getFunction(m, advanceKernel); err != nil {
		return err
	}
	c.rewind, err = c.getFunction(m, rewindKernel)
	return err
}

// Name implements Backend.
func (c *cudaBackend) Name() string { return c.name }

// setCurrent makes the context current on this (locked) thread.
func (c *cudaBackend) setCurrent() error {
	return c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.ctx))
}

// newSlot creates a slot with its own non-blocking stream.
func (c *cudaBackend) newSlot() (*cudaSlot, error) {
	s := &cudaSlot{}
	if err := c.d.check("cuStreamCreate", c.d.cuStreamCreate(&s.stream, cuStreamNonBlocking)); err != nil {
		return nil, err
	}
	return s, nil
}

// ensure grows s's buffers to at least size bytes (s must be idle).
func (c *cudaBackend) ensure(s *cudaSlot, size uintptr) error {
	want := alignUp(size+size/4, 1<<20) // headroom, so that a growing batch reallocates rarely
	if s.dcap < size {
		if s.dptr != 0 {
			if err := c.d.check("cuMemFree_v2", c.d.cuMemFree(s.dptr)); err != nil {
				return err
			}
			s.dptr, s.dcap = 0, 0
		}
		if err := c.d.check("cuMemAlloc_v2", c.d.cuMemAlloc(&s.dptr, want)); err != nil {
			return c.memoryDetail(err, want, "device")
		}
		s.dcap = want
	}
	if s.hcap < size {
		if s.host != nil {
			if err := c.d.check("cuMemFreeHost", c.d.cuMemFreeHost(s.host)); err != nil {
				return err
			}
			s.host, s.hcap = nil, 0
		}
		if err := c.d.check("cuMemAllocHost_v2", c.d.cuMemAllocHost(&s.host, want)); err != nil {
			return c.memoryDetail(err, want, "pinned host")
		}
		s.hcap = want
	}
	return nil
}

// memoryDetail adds the request and the device's free memory to an allocation error.
func (c *cudaBackend) memoryDetail(err error, size uintptr, what string) error {
	var ce *CUDAError
	if errors.As(err, &ce) {
		ce.Detail = fmt.Sprintf("allocating %d MiB of %s memory", size>>20, what)
		var free, total uintptr
		if c.d.cuMemGetInfo(&free, &total) == cudaSuccess {
			ce.Detail += fmt.Sprintf(" (the device has %d MiB free of %d MiB); use a smaller batch",
				free>>20, total>>20)
		}
	}
	return err
}

// launch launches f over n threads on stream with the given kernel arguments (each a
// pointer to the argument's value).
func (c *cudaBackend) launch(f cudaFunc, n int, stream uintptr, args ...unsafe.Pointer) error {
	grid := (n + f.block - 1) / f.block
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, a := range args {
		pin.Pin(a)
	}
	return c.d.check("cuLaunchKernel", c.d.cuLaunchKernel(f.fn, uint32(grid), 1, 1, uint32(f.block), 1, 1, 0,
		stream, &args[0], nil))
}

// enter starts an operation: it locks the thread, takes life shared and makes the context
// current. The returned function ends it.
func (c *cudaBackend) enter() (func(), error) {
	runtime.LockOSThread()
	c.life.RLock()
	leave := func() {
		c.life.RUnlock()
		runtime.UnlockOSThread()
	}
	if c.closed {
		leave()
		return nil, ErrClosed
	}
	if err := c.setCurrent(); err != nil {
		leave()
		return nil, fmt.Errorf("gpuoffload: %s: %w", c.name, err)
	}
	return leave, nil
}

// Prepare implements Backend.
func (c *cudaBackend) Prepare(k *Kernel) error {
	if err := k.Validate(); err != nil {
		return err
	}
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	_, err = c.function(k)
	return err
}

// Run implements Backend. Unlike Submit, it waits for a free slot when MaxInFlight
// batches are in flight.
func (c *cudaBackend) Run(k *Kernel, b *Batch) error {
	p, err := c.submit(k, b, true)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Submit implements Backend: it copies b's inputs to pinned memory, queues the upload, the
// kernel and the download on a free slot's stream, and returns.
func (c *cudaBackend) Submit(k *Kernel, b *Batch) (Pending, error) {
	return c.submit(k, b, false)
}

// submit is Submit; with block it waits for a free slot instead of returning ErrBusy.
func (c *cudaBackend) submit(k *Kernel, b *Batch, block bool) (Pending, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if err := b.check(k); err != nil {
		return nil, err
	}
	// Take a slot before entering, so that waiting for one never holds life (which Close
	// needs, and the Wait that frees the slot too).
	slot, err := c.acquire(block)
	if err != nil {
		return nil, err
	}
	leave, err := c.enter()
	if err != nil {
		c.free(slot)
		return nil, err
	}
	defer leave()
	f, err := c.function(k)
	if err != nil {
		c.free(slot)
		return nil, err
	}
	p := &cudaPending{c: c, slot: slot, b: b}
	if b.N == 0 {
		return p, nil
	}
	if err := c.start(c.slots[slot], f, k, b); err != nil {
		c.free(slot)
		return nil, fmt.Errorf("gpuoffload: kernel %s on %s: %w", k.Name, c.name, err)
	}
	return p, nil
}

// acquire marks a free batch slot busy and returns it; when none is free it returns
// ErrBusy, or with block waits for one.
func (c *cudaBackend) acquire(block bool) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.closed {
			return -1, ErrClosed
		}
		for i, busy := range c.busy {
			if !busy {
				c.busy[i] = true
				return i, nil
			}
		}
		if !block {
			return -1, ErrBusy
		}
		c.slotFree.Wait()
	}
}

// start queues b's upload, k and the download on slot s.
func (c *cudaBackend) start(s *cudaSlot, f cudaFunc, k *Kernel, b *Batch) error {
	s.lay = newBatchLayout(b.N, k.StateWords, k.OutSlots, len(k.Params))
	if err := c.ensure(s, s.lay.end); err != nil {
		return err
	}
	s.lay.pack(s.host, k, b)
	if err := c.d.check("cuMemcpyHtoDAsync_v2",
		c.d.cuMemcpyHtoDAsync(s.dptr, s.host, s.lay.outCount, s.stream)); err != nil {
		return err
	}
	s.args = s.lay.args(s.dptr, k, b.N)
	if err := c.launch(f, b.N, s.stream, unsafe.Pointer(&s.args)); err != nil {
		return err
	}
	return c.d.check("cuMemcpyDtoHAsync_v2", c.d.cuMemcpyDtoHAsync(unsafe.Add(s.host, s.lay.rng),
		s.dptr+uint64(s.lay.rng), s.lay.end-s.lay.rng, s.stream))
}

// free marks slot i idle.
func (c *cudaBackend) free(i int) {
	c.mu.Lock()
	c.busy[i] = false
	c.slotFree.Broadcast()
	c.mu.Unlock()
}

// cudaPending is a batch queued on a slot.
type cudaPending struct {
	c    *cudaBackend
	slot int
	b    *Batch
	once sync.Once
	err  error
}

// Wait implements Pending: it synchronizes the slot's stream and copies the results from
// pinned memory into the Batch.
func (p *cudaPending) Wait() error {
	p.once.Do(func() {
		c := p.c
		defer c.free(p.slot)
		if p.b.N == 0 {
			return
		}
		leave, err := c.enter()
		if err != nil {
			p.err = err
			return
		}
		defer leave()
		s := c.slots[p.slot]
		if err := c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(s.stream)); err != nil {
			p.err = fmt.Errorf("gpuoffload: batch on %s: %w", c.name, err)
			return
		}
		s.lay.unpack(s.host, p.b)
	})
	return p.err
}

// Advance implements Backend.
func (c *cudaBackend) Advance(states []rng.XORWOW, counts []uint32) error {
	return c.xorwow(c.advance, states, counts)
}

// Reverse implements Backend.
func (c *cudaBackend) Reverse(states []rng.XORWOW, counts []uint32) error {
	return c.xorwow(c.rewind, states, counts)
}

// xorwow runs a built-in XORWOW kernel over states.
func (c *cudaBackend) xorwow(f cudaFunc, states []rng.XORWOW, counts []uint32) error {
	if err := checkStates(states, counts); err != nil {
		return err
	}
	leave, err := c.enter()
	if err != nil {
		return err
	}
	defer leave()
	if len(states) == 0 {
		return nil
	}
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	s := c.rngSlot
	n := len(states)
	cnt := alignUp(uintptr(24*n), layoutAlign)
	if err := c.ensure(s, cnt+uintptr(4*n)); err != nil {
		return fmt.Errorf("gpuoffload: XORWOW on %s: %w", c.name, err)
	}
	st := view[uint32](s.host, 0, 6*n)
	for i, g := range states {
		st[i] = g.D
		st[n+i], st[2*n+i], st[3*n+i], st[4*n+i], st[5*n+i] = g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
	}
	copy(view[uint32](s.host, cnt, n), counts)
	dst, dcnt, nn := s.dptr, s.dptr+uint64(cnt), uint32(n)
	err = c.d.check("cuMemcpyHtoDAsync_v2", c.d.cuMemcpyHtoDAsync(s.dptr, s.host, cnt+uintptr(4*n), s.stream))
	if err == nil {
		err = c.launch(f, n, s.stream, unsafe.Pointer(&dst), unsafe.Pointer(&dcnt), unsafe.Pointer(&nn))
	}
	if err == nil {
		err = c.d.check("cuMemcpyDtoHAsync_v2", c.d.cuMemcpyDtoHAsync(s.host, s.dptr, uintptr(24*n), s.stream))
	}
	if err == nil {
		err = c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(s.stream))
	}
	if err != nil {
		return fmt.Errorf("gpuoffload: XORWOW on %s: %w", c.name, err)
	}
	for i := range states {
		states[i] = rng.XORWOW{D: st[i], V: [5]uint32{st[n+i], st[2*n+i], st[3*n+i], st[4*n+i], st[5*n+i]}}
	}
	return nil
}

// Close implements Backend: it waits for the streams, frees all memory, unloads the
// modules and releases the primary context.
func (c *cudaBackend) Close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.life.Lock()
	defer c.life.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.mu.Lock()
	c.closed = true // written under both locks: acquire reads it under mu, enter under life
	c.slotFree.Broadcast()
	c.mu.Unlock()
	if err := c.release(); err != nil {
		return fmt.Errorf("gpuoffload: closing %s: %w", c.name, err)
	}
	return nil
}

// release frees everything c holds (thread locked; context retained).
func (c *cudaBackend) release() error {
	var errs []error
	keep := func(call string, r cuResult) {
		if err := c.d.check(call, r); err != nil {
			errs = append(errs, err)
		}
	}
	if c.d.cuCtxSetCurrent(c.ctx) == cudaSuccess {
		for _, s := range append(c.slots, c.rngSlot) {
			if s == nil {
				continue
			}
			keep("cuStreamSynchronize", c.d.cuStreamSynchronize(s.stream))
			keep("cuStreamDestroy_v2", c.d.cuStreamDestroy(s.stream))
			if s.dptr != 0 {
				keep("cuMemFree_v2", c.d.cuMemFree(s.dptr))
			}
			if s.host != nil {
				keep("cuMemFreeHost", c.d.cuMemFreeHost(s.host))
			}
		}
		for _, m := range c.modules {
			keep("cuModuleUnload", c.d.cuModuleUnload(m))
		}
	}
	keep("cuDevicePrimaryCtxRelease_v2", c.d.cuDevicePrimaryCtxRelease(c.dev))
	c.modules = nil
	clear(c.slots)
	c.rngSlot = nil
	return errors.Join(errs...)
}
