package gpuoffload

import (
	"errors"
	"fmt"
	"math"

	"github.com/warpedgo/warped/rng"
)

// Backend runs batched work: XORWOW advance and reversal over many generators, and batch
// kernels over events of distinct LPs. Every backend gives bit-identical results; they
// differ only in where the work runs. A Backend is safe for concurrent use by several
// goroutines.
type Backend interface {
	// Name says what runs the work, for people: "cpu", "cuda:0 (NVIDIA H100 ..., sm_90)".
	Name() string
	// Advance steps each generator states[i] forward counts[i] times, exactly like
	// states[i].Advance(uint64(counts[i])). len(counts) must equal len(states).
	Advance(states []rng.XORWOW, counts []uint32) error
	// Reverse steps each generator states[i] back counts[i] times, exactly like
	// states[i].Rewind(uint64(counts[i])). len(counts) must equal len(states).
	Reverse(states []rng.XORWOW, counts []uint32) error
	// Prepare compiles and loads k now (on the CUDA backend), so that compile errors show
	// up early and the first Submit has no compile latency. Run and Submit prepare k on
	// first use anyway.
	Prepare(k *Kernel) error
	// Run executes kernel k over all b.N elements of b and fills b's outputs. It is Submit
	// followed by Wait, except that it waits for a free slot instead of returning ErrBusy
	// (so a goroutine must not Run while it has MaxInFlight batches of its own in flight).
	Run(k *Kernel, b *Batch) error
	// Submit starts k over b and returns at once; the results are in b when the returned
	// Pending's Wait has returned nil. b must not be read or written until then. At most
	// MaxInFlight batches for each lane (Options.Lanes; one unless Open was given more) may
	// be in flight (submitted and not yet waited for); Submit returns ErrBusy beyond that.
	// Two per lane let one batch be filled while another runs.
	Submit(k *Kernel, b *Batch) (Pending, error)
	// Close releases the backend's resources (device memory, streams, the CUDA context).
	// Batches in flight should be waited for first. Later calls return ErrClosed.
	Close() error
}

// Pending is a submitted batch.
type Pending interface {
	// Wait blocks until the batch is done and its results are in the Batch, and returns
	// the error of the run, if any. Calling it again returns the same error.
	Wait() error
}

// MaxInFlight is the number of batches a Backend accepts at once through Submit for each
// lane (goroutine submitting; Options.Lanes): two, so that transfers and execution of one
// overlap with the other (double buffering).
const MaxInFlight = 2

// EventWords is the number of inline payload words of an event (kernel.Words).
const EventWords = 4

// Errors that callers may test for with errors.Is.
var (
	// ErrClosed is returned by a Backend's methods after Close.
	ErrClosed = errors.New("gpuoffload: the backend is closed")
	// ErrBusy is returned by Submit when MaxInFlight batches for each lane are already in
	// flight.
	ErrBusy = errors.New("gpuoffload: MaxInFlight batches for each lane already in flight; Wait for one first")
	// ErrOutOfMemory matches errors caused by the device running out of memory
	// (CUDA_ERROR_OUT_OF_MEMORY); a smaller batch may fit.
	ErrOutOfMemory = errors.New("gpuoffload: out of device memory")
	// ErrNoNVRTC matches errors caused by NVRTC (the CUDA runtime compiler) not being
	// found: no kernel can be compiled here.
	ErrNoNVRTC = errors.New("gpuoffload: no NVRTC (the CUDA runtime compiler, libnvrtc.so)")
)

// Kernel is a model's batch event handler for one event kind: the same computation as
// CUDA C source (for the CUDA backend) and as a Go function (for the CPU backend and as
// the reference), which must give bit-identical results.
//
// The kernel handles element i of a Batch as the model's Handle would handle the event
// (b.LP[i], b.Time[i], b.Ev(i)) for an LP whose state is b.StateOf(i) and whose generator
// is b.Gen(i): it updates the state words and the generator in place and writes its output
// events into the element's OutSlots slots, setting OutCount[i] and Overflow[i] (see
// Batch).
type Kernel struct {
	// Name is the CUDA entry point: an extern "C" __global__ function taking one
	// WarpedBatch argument by value (see kernels/warped.cuh). It also names the kernel in
	// errors.
	Name string
	// Source is the CUDA C++ text that defines Name. It is compiled after
	// kernels/warped.cuh (see Source) with floating-point contraction off; it must follow
	// that header's rules (IEEE double arithmetic, rng's formulas through the warped_*
	// helpers, no library transcendentals). One thread handles one element:
	//
	//	extern "C" __global__ void my_kernel(WarpedBatch b) {
	//	    warped_u32 i = WARPED_INDEX();
	//	    if (i >= b.n) return;
	//	    ...
	//	}
	Source string
	// Go is the Go twin: it handles element i of b exactly as Source does. It may be
	// called for different elements of one batch concurrently.
	Go func(b *Batch, i int)
	// StateWords is the number of uint64 state words per LP.
	StateWords int
	// OutSlots is the number of output event slots per element.
	OutSlots int
	// Params are the kernel's constants (WarpedBatch.params), the same for every element,
	// for example a model's configuration with floats as math.Float64bits.
	Params []uint64
}

// Validate reports what is wrong with k, if anything.
func (k *Kernel) Validate() error {
	switch {
	case k == nil:
		return errors.New("gpuoffload: nil kernel")
	case k.Name == "":
		return errors.New("gpuoffload: kernel has no Name")
	case !isIdent(k.Name):
		return fmt.Errorf("gpuoffload: kernel name %q is not a C identifier", k.Name)
	case k.Go == nil:
		return fmt.Errorf("gpuoffload: kernel %s has no Go twin", k.Name)
	case k.StateWords < 0 || k.StateWords > 1<<16:
		return fmt.Errorf("gpuoffload: kernel %s: StateWords %d out of range [0, 65536]", k.Name, k.StateWords)
	case k.OutSlots < 0 || k.OutSlots > 1<<10:
		return fmt.Errorf("gpuoffload: kernel %s: OutSlots %d out of range [0, 1024]", k.Name, k.OutSlots)
	case len(k.Params) > math.MaxUint32:
		return fmt.Errorf("gpuoffload: kernel %s: too many Params", k.Name)
	}
	return nil
}

// isIdent reports whether s is a C identifier.
func isIdent(s string) bool {
	for i, c := range s {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

// Batch holds N events of N distinct LPs in structure-of-arrays form, in the layout the
// CUDA kernels see (WarpedBatch in kernels/warped.cuh). Element i is:
//
//	inputs:   LP[i], Time[i] (the event's receive time), EvWords[4i : 4i+4]
//	in/out:   RNG: D at RNG[i], V[j] at RNG[(1+j)*N + i] (see Gen, SetGen);
//	          State[StateWords*i : StateWords*(i+1)] (see StateOf)
//	outputs:  OutCount[i] output events in slots s < OutCount[i]: OutTo[OutSlots*i+s],
//	          OutTime[OutSlots*i+s], OutWords[4*(OutSlots*i+s) : ...+4] (see Out, SetOut);
//	          Overflow[i] = 1 when the element needed more than OutSlots outputs
//
// When Overflow[i] is 1 the element's other outputs, state and generator are to be
// discarded and the event handled on the CPU path instead (from the state it had before
// the batch). Fill a Batch with Reset and Set; the slices may also be written directly.
type Batch struct {
	// N is the number of elements.
	N int
	// StateWords and OutSlots are the kernel's, set by Reset.
	StateWords, OutSlots int

	// LP is each element's LP id.
	LP []uint32
	// Time is each element's event receive time (the handler's now).
	Time []float64
	// EvWords is each element's event payload, EventWords words per element.
	EvWords []uint64
	// RNG is each element's generator, structure of arrays: 6*N words.
	RNG []uint32
	// State is each element's LP state, StateWords words per element.
	State []uint64

	// OutCount is the number of output events of each element.
	OutCount []uint32
	// OutTo is each output slot's destination LP, OutSlots slots per element.
	OutTo []uint32
	// OutTime is each output slot's receive time.
	OutTime []float64
	// OutWords is each output slot's payload, EventWords words per slot.
	OutWords []uint64
	// Overflow is 1 for an element whose outputs did not fit in OutSlots.
	Overflow []uint8
}

// Reset sizes b for n elements of kernel k, reusing the buffers' capacity: once b has
// held a batch at least as large, Reset allocates nothing. It clears OutCount and
// Overflow; the other contents are left for the caller to overwrite.
func (b *Batch) Reset(n int, k *Kernel) {
	if n < 0 {
		panic(fmt.Sprintf("gpuoffload: Batch.Reset with n = %d", n))
	}
	sw, os := k.StateWords, k.OutSlots
	b.N, b.StateWords, b.OutSlots = n, sw, os
	b.LP = resize(b.LP, n)
	b.Time = resize(b.Time, n)
	b.EvWords = resize(b.EvWords, EventWords*n)
	b.RNG = resize(b.RNG, 6*n)
	b.State = resize(b.State, sw*n)
	b.OutCount = resize(b.OutCount, n)
	b.OutTo = resize(b.OutTo, os*n)
	b.OutTime = resize(b.OutTime, os*n)
	b.OutWords = resize(b.OutWords, EventWords*os*n)
	b.Overflow = resize(b.Overflow, n)
	clear(b.OutCount)
	clear(b.Overflow)
}

// resize returns s with length n, reallocating only when its capacity is too small.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// Set fills element i's inputs: its LP, the event's time and payload, and the LP's
// generator. The state words are written separately (StateOf).
func (b *Batch) Set(i int, lp uint32, t float64, g rng.XORWOW, ev [EventWords]uint64) {
	b.LP[i] = lp
	b.Time[i] = t
	copy(b.EvWords[EventWords*i:EventWords*i+EventWords], ev[:])
	b.SetGen(i, g)
}

// Gen returns element i's generator.
func (b *Batch) Gen(i int) rng.XORWOW {
	n, r := b.N, b.RNG
	return rng.XORWOW{D: r[i], V: [5]uint32{r[n+i], r[2*n+i], r[3*n+i], r[4*n+i], r[5*n+i]}}
}

// SetGen sets element i's generator.
func (b *Batch) SetGen(i int, g rng.XORWOW) {
	n, r := b.N, b.RNG
	r[i] = g.D
	r[n+i], r[2*n+i], r[3*n+i], r[4*n+i], r[5*n+i] = g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
}

// StateOf returns element i's state words (a subslice of State).
func (b *Batch) StateOf(i int) []uint64 {
	return b.State[b.StateWords*i : b.StateWords*(i+1) : b.StateWords*(i+1)]
}

// Ev returns element i's event payload.
func (b *Batch) Ev(i int) [EventWords]uint64 {
	return [EventWords]uint64(b.EvWords[EventWords*i : EventWords*i+EventWords])
}

// Out returns output slot s of element i.
func (b *Batch) Out(i, s int) (to uint32, t float64, w [EventWords]uint64) {
	j := b.OutSlots*i + s
	return b.OutTo[j], b.OutTime[j], [EventWords]uint64(b.OutWords[EventWords*j : EventWords*j+EventWords])
}

// SetOut writes output slot s of element i (the caller sets OutCount[i]).
func (b *Batch) SetOut(i, s int, to uint32, t float64, w [EventWords]uint64) {
	j := b.OutSlots*i + s
	b.OutTo[j] = to
	b.OutTime[j] = t
	copy(b.OutWords[EventWords*j:EventWords*j+EventWords], w[:])
}

// check reports whether b is consistently sized for k.
func (b *Batch) check(k *Kernel) error {
	if b == nil {
		return errors.New("gpuoffload: nil batch")
	}
	n := b.N
	switch {
	case n < 0 || n > math.MaxUint32/6:
		return fmt.Errorf("gpuoffload: batch size %d out of range", n)
	case b.StateWords != k.StateWords || b.OutSlots != k.OutSlots:
		return fmt.Errorf("gpuoffload: batch was sized for %d state words and %d output slots, "+
			"kernel %s has %d and %d; call Reset with the kernel", b.StateWords, b.OutSlots, k.Name,
			k.StateWords, k.OutSlots)
	case len(b.LP) != n || len(b.Time) != n || len(b.EvWords) != EventWords*n ||
		len(b.RNG) != 6*n || len(b.State) != k.StateWords*n || len(b.OutCount) != n ||
		len(b.OutTo) != k.OutSlots*n || len(b.OutTime) != k.OutSlots*n ||
		len(b.OutWords) != EventWords*k.OutSlots*n || len(b.Overflow) != n:
		return fmt.Errorf("gpuoffload: batch buffers do not match N = %d; size them with Reset", n)
	}
	return nil
}

// checkStates reports whether Advance/Reverse arguments match.
func checkStates(states []rng.XORWOW, counts []uint32) error {
	if len(states) != len(counts) {
		return fmt.Errorf("gpuoffload: %d generators but %d counts", len(states), len(counts))
	}
	if len(states) > math.MaxUint32/6 {
		return fmt.Errorf("gpuoffload: %d generators is too many for one call", len(states))
	}
	return nil
}
