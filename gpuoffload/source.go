package gpuoffload

import (
	_ "embed" // the CUDA sources
	"unsafe"
)

//go:embed kernels/warped.cuh
var headerSource string

//go:embed kernels/xorwow.cu
var xorwowSource string

// Names of the built-in kernels (kernels/xorwow.cu).
const (
	advanceKernel = "warped_xorwow_advance"
	rewindKernel  = "warped_xorwow_rewind"
)

// Header returns kernels/warped.cuh, the CUDA header every kernel is compiled after: the
// WarpedBatch layout, the XORWOW generator and rng's portable arithmetic (warped_log,
// warped_uniform, warped_range, warped_exponential).
func Header() string { return headerSource }

// Source returns the complete CUDA C++ text that the backends compile for k: Header, then
// k.Source (with a #line directive, so that compiler messages give k.Source's own line
// numbers under the file name k.Name + ".cu").
func Source(k *Kernel) string {
	return headerSource + "\n#line 1 \"" + k.Name + ".cu\"\n" + k.Source + "\n"
}

// BuiltinSource returns the complete CUDA C++ text of the built-in XORWOW kernels
// (warped_xorwow_advance and warped_xorwow_rewind), as compiled.
func BuiltinSource() string {
	return headerSource + "\n#line 1 \"xorwow.cu\"\n" + xorwowSource + "\n"
}

// CompileOptions returns the NVRTC options used for compute capability major.minor; nvcc
// takes the same ones (nvcc -ptx --gpu-architecture=compute_90 --fmad=false file.cu).
func CompileOptions(major, minor int) []string {
	return []string{"--gpu-architecture=compute_" + itoa(10*major+minor), "--fmad=false"}
}

// itoa formats a small non-negative int.
func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// batchArgs mirrors WarpedBatch (kernels/warped.cuh) with device pointers: 11 pointers
// and 4 uint32, 104 bytes.
type batchArgs struct {
	params, lp, time, evWords, rng, state, outCount, outTo, outTime, outWords, overflow uint64
	n, stateWords, outSlots, nParams                                                    uint32
}

// hostBatchArgs mirrors WarpedBatch with host pointers (the host-C++ backend).
type hostBatchArgs struct {
	params, lp, time, evWords, rng, state, outCount, outTo, outTime, outWords, overflow unsafe.Pointer
	n, stateWords, outSlots, nParams                                                    uint32
}

// The C side asserts the same size (static_assert in warped.cuh).
const batchArgsSize = 104

var (
	_ [batchArgsSize - unsafe.Sizeof(batchArgs{})]struct{}
	_ [unsafe.Sizeof(batchArgs{}) - batchArgsSize]struct{}
	_ [batchArgsSize - unsafe.Sizeof(hostBatchArgs{})]struct{}
	_ [unsafe.Sizeof(hostBatchArgs{}) - batchArgsSize]struct{}
)

// batchLayout gives the byte offsets of a batch's arrays in one device (and pinned host)
// buffer. Inputs come first, then the in/out arrays, then the outputs, so that one copy
// [0, outCount) uploads and one copy [rng, end) downloads.
type batchLayout struct {
	params, lp, time, evWords, rng, state             uintptr
	outCount, outTo, outTime, outWords, overflow, end uintptr
}

// layoutAlign is the alignment of each array (and more than any access needs).
const layoutAlign = 256

// newBatchLayout lays out a batch of n elements of a kernel with sw state words, os
// output slots and np params.
func newBatchLayout(n, sw, os, np int) batchLayout {
	var l batchLayout
	off := uintptr(0)
	put := func(bytes int) uintptr {
		o := off
		off = alignUp(off+uintptr(bytes), layoutAlign)
		return o
	}
	l.params = put(8 * np)
	l.lp = put(4 * n)
	l.time = put(8 * n)
	l.evWords = put(8 * EventWords * n)
	l.rng = put(4 * 6 * n)
	l.state = put(8 * sw * n)
	l.outCount = put(4 * n)
	l.outTo = put(4 * os * n)
	l.outTime = put(8 * os * n)
	l.outWords = put(8 * EventWords * os * n)
	l.overflow = put(n)
	l.end = off
	return l
}

// alignUp rounds x up to a multiple of a (a power of two).
func alignUp(x, a uintptr) uintptr { return (x + a - 1) &^ (a - 1) }

// view returns the n values of type T at byte offset off of base (nil when n is 0).
func view[T any](base unsafe.Pointer, off uintptr, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Add(base, off)), n)
}

// pack copies k's params and b's inputs and in/out arrays into the buffer at host.
func (l *batchLayout) pack(host unsafe.Pointer, k *Kernel, b *Batch) {
	n := b.N
	copy(view[uint64](host, l.params, len(k.Params)), k.Params)
	copy(view[uint32](host, l.lp, n), b.LP)
	copy(view[float64](host, l.time, n), b.Time)
	copy(view[uint64](host, l.evWords, EventWords*n), b.EvWords)
	copy(view[uint32](host, l.rng, 6*n), b.RNG)
	copy(view[uint64](host, l.state, k.StateWords*n), b.State)
}

// unpack copies the in/out arrays and the outputs from the buffer at host into b.
func (l *batchLayout) unpack(host unsafe.Pointer, b *Batch) {
	n, sw, os := b.N, b.StateWords, b.OutSlots
	copy(b.RNG, view[uint32](host, l.rng, 6*n))
	copy(b.State, view[uint64](host, l.state, sw*n))
	copy(b.OutCount, view[uint32](host, l.outCount, n))
	copy(b.OutTo, view[uint32](host, l.outTo, os*n))
	copy(b.OutTime, view[float64](host, l.outTime, os*n))
	copy(b.OutWords, view[uint64](host, l.outWords, EventWords*os*n))
	copy(b.Overflow, view[uint8](host, l.overflow, n))
}

// args returns the WarpedBatch of a batch of n elements laid out at device address base.
func (l *batchLayout) args(base uint64, k *Kernel, n int) batchArgs {
	at := func(off uintptr) uint64 { return base + uint64(off) }
	return batchArgs{
		params: at(l.params), lp: at(l.lp), time: at(l.time), evWords: at(l.evWords),
		rng: at(l.rng), state: at(l.state), outCount: at(l.outCount), outTo: at(l.outTo),
		outTime: at(l.outTime), outWords: at(l.outWords), overflow: at(l.overflow),
		n: uint32(n), stateWords: uint32(k.StateWords), outSlots: uint32(k.OutSlots),
		nParams: uint32(len(k.Params)),
	}
}
