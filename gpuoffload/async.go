//go:build linux

package gpuoffload

import (
	"fmt"
	"unsafe"
)

// The asynchronous side of Resident: pinned host memory, copies that do not wait, and
// events that tell the host when the work queued before them has run. A device-resident
// loop uses them to keep work queued ahead while the host reads small counters of work
// that has finished, so the device never idles waiting for the host.

// hostBlock is one allocation of pinned host memory.
type hostBlock struct {
	p    unsafe.Pointer
	size int
}

// Event marks a point of the stream (Record) that the host can wait for (Wait).
type Event struct {
	e uintptr
}

// AllocHost allocates size bytes of pinned (page-locked) host memory, zeroed, for
// UploadAsync and DownloadAsync; Close frees it. The memory is not Go's: the garbage
// collector neither moves nor frees it, so the device may copy to and from it while the
// host goes on.
func (r *Resident) AllocHost(size int) (unsafe.Pointer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("gpuoffload: pinned host memory of %d bytes", size)
	}
	leave, err := r.c.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	var p unsafe.Pointer
	if err := r.c.d.check("cuMemAllocHost_v2", r.c.d.cuMemAllocHost(&p, uintptr(size))); err != nil {
		return nil, fmt.Errorf("gpuoffload: %d bytes of pinned host memory on %s: %w", size, r.c.name, err)
	}
	clear(unsafe.Slice((*byte)(p), size))
	r.hosts = append(r.hosts, hostBlock{p, size})
	return p, nil
}

// pinned reports whether [p, p+size) lies inside one AllocHost allocation.
func (r *Resident) pinned(p unsafe.Pointer, size int) bool {
	for _, h := range r.hosts {
		off := uintptr(p) - uintptr(h.p)
		if uintptr(p) >= uintptr(h.p) && off <= uintptr(h.size) && uintptr(size) <= uintptr(h.size)-off {
			return true
		}
	}
	return false
}

// async queues op (a copy of size bytes to or from pinned host memory at host) on the
// stream without waiting for it.
func (r *Resident) async(host unsafe.Pointer, size int, call string, op func() cuResult) error {
	if size == 0 {
		return nil
	}
	if !r.pinned(host, size) {
		return fmt.Errorf("gpuoffload: %s: %d bytes at %p are not pinned host memory from AllocHost", call, size, host)
	}
	return r.call(call, op)
}

// UploadAsync queues a copy of size bytes from pinned host memory src (AllocHost) to
// device address dst, after the work queued before it, and does not wait: src must keep
// its bytes until an event recorded after the copy has passed (Wait).
func (r *Resident) UploadAsync(dst uint64, src unsafe.Pointer, size int) error {
	return r.async(src, size, "cuMemcpyHtoDAsync_v2", func() cuResult {
		return r.c.d.cuMemcpyHtoDAsync(dst, src, uintptr(size), r.stream)
	})
}

// DownloadAsync queues a copy of size bytes from device address src to pinned host
// memory dst (AllocHost), after the work queued before it, and does not wait: dst holds
// the bytes once an event recorded after the copy has passed (Wait).
func (r *Resident) DownloadAsync(dst unsafe.Pointer, src uint64, size int) error {
	return r.async(dst, size, "cuMemcpyDtoHAsync_v2", func() cuResult {
		return r.c.d.cuMemcpyDtoHAsync(dst, src, uintptr(size), r.stream)
	})
}

// NewEvent creates an event (without timing); Close destroys it.
func (r *Resident) NewEvent() (*Event, error) {
	leave, err := r.c.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	const disableTiming = 2 // CU_EVENT_DISABLE_TIMING: cheaper to record and wait for
	e := &Event{}
	if err := r.c.d.check("cuEventCreate", r.c.d.cuEventCreate(&e.e, disableTiming)); err != nil {
		return nil, fmt.Errorf("gpuoffload: %s: %w", r.c.name, err)
	}
	r.events = append(r.events, e)
	return e, nil
}

// Record queues e on the stream, after the work queued so far; it does not wait. A
// later Wait(e) waits for that work.
func (r *Resident) Record(e *Event) error {
	return r.call("cuEventRecord", func() cuResult { return r.c.d.cuEventRecord(e.e, r.stream) })
}

// Wait waits until the work queued before e's last Record has run, and no longer: work
// queued after it goes on. A kernel's failure before the record shows here.
func (r *Resident) Wait(e *Event) error {
	return r.call("cuEventSynchronize", func() cuResult { return r.c.d.cuEventSynchronize(e.e) })
}
