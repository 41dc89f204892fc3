package gpuoffload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/rng"
)

// diffBatches describes the first difference between the results of two runs of one
// batch (the generators, the state words and the meaningful outputs), or returns "".
func diffBatches(want, got *Batch) string {
	for i := range want.N {
		if want.Overflow[i] != got.Overflow[i] {
			return fmt.Sprintf("element %d: overflow %d, want %d", i, got.Overflow[i], want.Overflow[i])
		}
		if w, g := want.Gen(i), got.Gen(i); w != g {
			return fmt.Sprintf("element %d: generator %+v, want %+v", i, g, w)
		}
		for j, w := range want.StateOf(i) {
			if g := got.StateOf(i)[j]; g != w {
				return fmt.Sprintf("element %d: state word %d = %#x, want %#x", i, j, g, w)
			}
		}
		if want.OutCount[i] != got.OutCount[i] {
			return fmt.Sprintf("element %d: %d outputs, want %d", i, got.OutCount[i], want.OutCount[i])
		}
		for s := range int(want.OutCount[i]) {
			wt, wtime, ww := want.Out(i, s)
			gt, gtime, gw := got.Out(i, s)
			if wt != gt || math.Float64bits(wtime) != math.Float64bits(gtime) || ww != gw {
				return fmt.Sprintf("element %d slot %d: (%d, %v, %x), want (%d, %v, %x)", i, s, gt, gtime, gw,
					wt, wtime, ww)
			}
		}
	}
	return ""
}

// serialTwin runs k's Go twin over a copy of b, one element at a time.
func serialTwin(k *Kernel, b *Batch) *Batch {
	want := cloneBatch(b)
	for i := range want.N {
		k.Go(want, i)
	}
	return want
}

// backendCase opens one backend for the conformance tests, or says why it cannot.
type backendCase struct {
	name string
	open func() (Backend, error)
	// gens is how many generators to test XORWOW on (the host-C++ backend is slow).
	gens int
}

func backendCases() []backendCase {
	return []backendCase{
		{"cpu", func() (Backend, error) { return NewCPU(4), nil }, 1 << 16},
		{"host-c++", func() (Backend, error) { return NewHostCXX("") }, 1 << 12},
		{"cuda", func() (Backend, error) { return NewCUDA(0) }, 1 << 16},
	}
}

// openOrSkip opens c's backend or skips the test, saying why.
func openOrSkip(t testing.TB, c backendCase) Backend {
	t.Helper()
	be, err := c.open()
	if err != nil {
		if c.name == "cuda" {
			t.Skipf("no CUDA: %v", err)
		}
		t.Skipf("no %s backend: %v", c.name, err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

// randomStates returns n random generator states and counts below maxCount (with zeros
// and the maximum among them).
func randomStates(r *rand.Rand, n int, maxCount uint32) ([]rng.XORWOW, []uint32) {
	states := make([]rng.XORWOW, n)
	counts := make([]uint32, n)
	for i := range states {
		if i%3 == 0 {
			states[i] = rng.New(r.Uint64(), uint64(i))
		} else {
			states[i] = rng.XORWOW{D: r.Uint32(), V: [5]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
		}
		counts[i] = r.Uint32N(maxCount + 1)
	}
	counts[0], counts[n-1] = 0, maxCount
	return states, counts
}

// TestBackendXORWOW checks Advance and Reverse of every backend against package rng on
// random states, and that Reverse undoes Advance.
func TestBackendXORWOW(t *testing.T) {
	for _, c := range backendCases() {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			r := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			states, counts := randomStates(r, c.gens, 300)
			start := append([]rng.XORWOW(nil), states...)
			want := append([]rng.XORWOW(nil), states...)
			for i := range want {
				want[i].Advance(uint64(counts[i]))
			}
			require.NoError(t, be.Advance(states, counts))
			for i := range states {
				if states[i] != want[i] {
					t.Fatalf("Advance(%+v, %d) = %+v, want %+v", start[i], counts[i], states[i], want[i])
				}
			}
			require.NoError(t, be.Reverse(states, counts))
			require.Equal(t, start, states, "Reverse undoes Advance")

			// Reverse on its own against rng.Rewind (from states that were not advanced).
			for i := range want {
				want[i] = start[i]
				want[i].Rewind(uint64(counts[i]))
			}
			require.NoError(t, be.Reverse(states, counts))
			for i := range states {
				if states[i] != want[i] {
					t.Fatalf("Reverse(%+v, %d) = %+v, want %+v", start[i], counts[i], states[i], want[i])
				}
			}
			require.NoError(t, be.Advance(nil, nil), "empty is fine")
			require.ErrorContains(t, be.Advance(states, counts[:1]), "counts")
		})
	}
}

// TestBackendKernelMatchesGoTwin runs the test kernel on every backend and compares with
// the Go twin run serially, for batch sizes around the 256-thread block.
func TestBackendKernelMatchesGoTwin(t *testing.T) {
	for _, c := range backendCases() {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			r := rand.New(rand.NewPCG(2, 3))
			for _, nlps := range []uint64{1, 7, 1 << 20, 1 << 32} {
				k := newTestKernel(0.5+r.Float64()*10, nlps)
				require.NoError(t, be.Prepare(k))
				for _, n := range []int{0, 1, 255, 256, 257, 3001} {
					var b Batch
					fillRandom(r, &b, k, n, nlps)
					want := serialTwin(k, &b)
					require.NoError(t, be.Run(k, &b), "n=%d", n)
					if d := diffBatches(want, &b); d != "" {
						t.Fatalf("%s, nlps %d, n %d: %s", be.Name(), nlps, n, d)
					}
				}
			}
		})
	}
}

// TestBackendTwoInFlight submits MaxInFlight batches, checks that one more is refused,
// and that the results are right; and runs several goroutines through Run at once.
func TestBackendTwoInFlight(t *testing.T) {
	for _, c := range backendCases() {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			r := rand.New(rand.NewPCG(4, 5))
			k := newTestKernel(2, 1000)
			var bs [MaxInFlight + 1]Batch
			var wants [MaxInFlight + 1]*Batch
			for i := range bs {
				fillRandom(r, &bs[i], k, 1000+i, 1000)
				wants[i] = serialTwin(k, &bs[i])
			}
			var ps [MaxInFlight]Pending
			for i := range ps {
				p, err := be.Submit(k, &bs[i])
				require.NoError(t, err)
				ps[i] = p
			}
			_, err := be.Submit(k, &bs[MaxInFlight])
			require.ErrorIs(t, err, ErrBusy)
			for i, p := range ps {
				require.NoError(t, p.Wait())
				require.NoError(t, p.Wait(), "Wait twice")
				require.Empty(t, diffBatches(wants[i], &bs[i]))
			}
			p, err := be.Submit(k, &bs[MaxInFlight])
			require.NoError(t, err, "a slot is free again")
			require.NoError(t, p.Wait())
			require.Empty(t, diffBatches(wants[MaxInFlight], &bs[MaxInFlight]))

			var wg sync.WaitGroup
			errs := make([]error, 4)
			for g := range errs {
				var b Batch
				fillRandom(r, &b, k, 500, 1000)
				want := serialTwin(k, &b)
				wg.Go(func() {
					for range 3 {
						b2 := cloneBatch(&b)
						if err := be.Run(k, b2); err != nil {
							errs[g] = err
							return
						}
						if d := diffBatches(want, b2); d != "" {
							errs[g] = errors.New(d)
							return
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
		})
	}
}

// TestBackendLanes checks that a backend opened for several lanes (Options.Lanes) takes
// MaxInFlight batches in flight for each, no more, with the right results.
func TestBackendLanes(t *testing.T) {
	const lanes = 3
	for _, c := range []backendCase{
		{"cpu", func() (Backend, error) { return newCPU(4, lanes), nil }, 0},
		{"cuda", func() (Backend, error) { return newCUDA(0, lanes) }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			r := rand.New(rand.NewPCG(6, 7))
			k := newTestKernel(2, 1000)
			var bs [lanes*MaxInFlight + 1]Batch
			var wants [lanes*MaxInFlight + 1]*Batch
			for i := range bs {
				fillRandom(r, &bs[i], k, 300+i, 1000)
				wants[i] = serialTwin(k, &bs[i])
			}
			var ps [lanes * MaxInFlight]Pending
			for i := range ps {
				p, err := be.Submit(k, &bs[i])
				require.NoError(t, err, "batch %d of %d", i+1, len(ps))
				ps[i] = p
			}
			_, err := be.Submit(k, &bs[len(ps)])
			require.ErrorIs(t, err, ErrBusy)
			for i, p := range ps {
				require.NoError(t, p.Wait())
				require.Empty(t, diffBatches(wants[i], &bs[i]))
			}
		})
	}
}

// TestBackendErrors checks argument errors and use after Close.
func TestBackendErrors(t *testing.T) {
	for _, c := range backendCases() {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			k := newTestKernel(1, 10)
			var b Batch
			b.Reset(10, k)
			other := *k
			other.StateWords = 3
			require.ErrorContains(t, be.Run(&other, &b), "call Reset with the kernel")
			b.LP = b.LP[:5]
			require.ErrorContains(t, be.Run(k, &b), "size them with Reset")
			require.ErrorContains(t, be.Run(&Kernel{Name: "x y"}, &b), "not a C identifier")
			require.ErrorContains(t, be.Run(k, nil), "nil batch")

			require.NoError(t, be.Close())
			require.ErrorIs(t, be.Close(), ErrClosed)
			b.Reset(10, k)
			require.ErrorIs(t, be.Run(k, &b), ErrClosed)
			require.ErrorIs(t, be.Advance(nil, nil), ErrClosed)
			_, err := be.Submit(k, &b)
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}

// TestCompileErrors checks that a kernel that does not compile gives the compiler's
// message, on the backends that compile.
func TestCompileErrors(t *testing.T) {
	for _, c := range backendCases()[1:] {
		t.Run(c.name, func(t *testing.T) {
			be := openOrSkip(t, c)
			k := newTestKernel(1, 10)
			k.Name = "warped_broken"
			k.Source = "extern \"C\" __global__ void warped_broken(WarpedBatch b) { this is not C; }\n"
			err := be.Prepare(k)
			require.Error(t, err)
			require.Contains(t, err.Error(), "warped_broken")
			require.Regexp(t, `warped_broken\.cu(:1:|\(1\))`, err.Error(), "the log names the kernel's own line")
			var b Batch
			b.Reset(3, k)
			require.Error(t, be.Run(k, &b))

			// A kernel whose entry point is missing.
			k2 := newTestKernel(1, 10)
			k2.Name = "warped_missing"
			require.ErrorContains(t, be.Prepare(k2), "warped_missing")
		})
	}
}

func TestCPUPanicBecomesError(t *testing.T) {
	be := NewCPU(2)
	k := &Kernel{Name: "boom", Go: func(b *Batch, i int) {
		if i == 700 {
			panic("model bug")
		}
	}}
	var b Batch
	b.Reset(1000, k)
	err := be.Run(k, &b)
	require.ErrorContains(t, err, "boom")
	require.ErrorContains(t, err, "model bug")
}

func TestKernelValidate(t *testing.T) {
	good := newTestKernel(1, 2)
	require.NoError(t, good.Validate())
	for _, tc := range []struct {
		mod  func(*Kernel)
		want string
	}{
		{func(k *Kernel) { k.Name = "" }, "no Name"},
		{func(k *Kernel) { k.Name = "9lives" }, "not a C identifier"},
		{func(k *Kernel) { k.Go = nil }, "no Go twin"},
		{func(k *Kernel) { k.StateWords = -1 }, "StateWords"},
		{func(k *Kernel) { k.OutSlots = 5000 }, "OutSlots"},
	} {
		k := *good
		tc.mod(&k)
		require.ErrorContains(t, k.Validate(), tc.want)
	}
	var nilK *Kernel
	require.ErrorContains(t, nilK.Validate(), "nil kernel")
}

func TestBatchResetDoesNotAllocate(t *testing.T) {
	k := newTestKernel(1, 2)
	var b Batch
	b.Reset(4096, k)
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset(4096, k)
		b.Reset(17, k)
		b.Reset(0, k)
		b.Reset(4000, k)
	})
	require.Zero(t, allocs)
	require.Equal(t, 4000, b.N)
	require.Len(t, b.OutWords, 4000*2*EventWords)
}

func TestBatchAccessors(t *testing.T) {
	k := newTestKernel(1, 2)
	var b Batch
	b.Reset(3, k)
	g := rng.New(5, 6)
	b.Set(1, 42, 2.5, g, [EventWords]uint64{1, 2, 3, 4})
	require.Equal(t, g, b.Gen(1))
	require.Equal(t, uint32(42), b.LP[1])
	require.Equal(t, 2.5, b.Time[1])
	require.Equal(t, [EventWords]uint64{1, 2, 3, 4}, b.Ev(1))
	require.Equal(t, g.D, b.RNG[1])
	require.Equal(t, g.V[2], b.RNG[3*3+1], "structure of arrays: V[j] at (1+j)*N + i")
	b.StateOf(2)[4] = 99
	require.Equal(t, uint64(99), b.State[5*2+4])
	b.SetOut(2, 1, 7, 3.5, [EventWords]uint64{9, 8, 7, 6})
	to, tm, w := b.Out(2, 1)
	require.Equal(t, uint32(7), to)
	require.Equal(t, 3.5, tm)
	require.Equal(t, [EventWords]uint64{9, 8, 7, 6}, w)
	require.Equal(t, uint64(9), b.OutWords[EventWords*(2*2+1)])
	b.OutCount[0], b.Overflow[0] = 3, 1
	b.Reset(3, k)
	require.Zero(t, b.OutCount[0], "Reset clears the output counts")
	require.Zero(t, b.Overflow[0])
}

// TestCPUXORWOWProperty checks the CPU backend against rng for many random sizes and
// worker counts.
func TestCPUXORWOWProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 30 {
		n := 1 + r.IntN(3000)
		be := NewCPU(1 + r.IntN(8))
		states, counts := randomStates(r, n, uint32(r.IntN(2000)))
		want := append([]rng.XORWOW(nil), states...)
		for i := range want {
			want[i].Advance(uint64(counts[i]))
		}
		got := append([]rng.XORWOW(nil), states...)
		require.NoError(t, be.Advance(got, counts))
		require.Equal(t, want, got)
		require.NoError(t, be.Reverse(got, counts))
		require.Equal(t, states, got)
	}
}

// TestLayoutPackUnpack checks that the transfer layout round-trips a batch (the device
// kernel does nothing between pack and unpack here).
func TestLayoutPackUnpack(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	k := newTestKernel(1, 1000)
	var b Batch
	fillRandom(r, &b, k, 777, 1000)
	for i := range b.OutCount {
		b.OutCount[i] = uint32(i)
		b.Overflow[i] = uint8(i)
	}
	lay := newBatchLayout(b.N, k.StateWords, k.OutSlots, len(k.Params))
	for _, off := range []uintptr{lay.params, lay.lp, lay.time, lay.evWords, lay.rng, lay.state, lay.outCount,
		lay.outTo, lay.outTime, lay.outWords, lay.overflow, lay.end} {
		require.Zero(t, off%layoutAlign)
	}
	require.Less(t, lay.state, lay.outCount)
	buf := make([]uint64, lay.end/8)
	host := unsafePointer(buf)
	lay.pack(host, k, &b)
	// The device would write the outputs; copy them in as if it had.
	copy(view[uint32](host, lay.outCount, b.N), b.OutCount)
	copy(view[uint32](host, lay.outTo, len(b.OutTo)), b.OutTo)
	copy(view[float64](host, lay.outTime, len(b.OutTime)), b.OutTime)
	copy(view[uint64](host, lay.outWords, len(b.OutWords)), b.OutWords)
	copy(view[uint8](host, lay.overflow, b.N), b.Overflow)
	want := cloneBatch(&b)
	b.Reset(b.N, k)
	clear(b.RNG)
	clear(b.State)
	lay.unpack(host, &b)
	require.Equal(t, want.RNG, b.RNG)
	require.Equal(t, want.State, b.State)
	require.Equal(t, want.OutCount, b.OutCount)
	require.Equal(t, want.OutTo, b.OutTo)
	require.Equal(t, want.OutTime, b.OutTime)
	require.Equal(t, want.OutWords, b.OutWords)
	require.Equal(t, want.Overflow, b.Overflow)
	require.Equal(t, k.Params, view[uint64](host, lay.params, 2))
	require.Equal(t, want.LP, view[uint32](host, lay.lp, b.N))

	a := lay.args(0x1000, k, b.N)
	require.Equal(t, uint64(0x1000)+uint64(lay.overflow), a.overflow)
	require.Equal(t, uint32(777), a.n)
	require.Equal(t, uint32(5), a.stateWords)
	require.Equal(t, uint32(2), a.nParams)
}

func TestOpenModes(t *testing.T) {
	be, note, err := Open(ModeOff, Options{})
	require.NoError(t, err)
	require.Nil(t, be)
	require.Empty(t, note)

	be, note, err = Open(ModeCPU, Options{Workers: 3})
	require.NoError(t, err)
	require.Equal(t, "cpu", be.Name())
	require.Empty(t, note)
	require.NoError(t, be.Close())

	for _, bad := range []string{"", "yes", "ON", "gpu"} {
		_, _, err = Open(bad, Options{})
		require.ErrorContains(t, err, "unknown offload mode")
		require.ErrorContains(t, err, "off, on, auto, cpu")
		require.NotContains(t, err.Error(), "\n")
		require.Error(t, CheckMode(bad))
	}
	for _, m := range Modes() {
		require.NoError(t, CheckMode(m))
	}

	c, cudaErr := NewCUDA(0)
	if cudaErr == nil {
		require.NoError(t, c.Close())
	}
	be, note, err = Open(ModeAuto, Options{})
	require.NoError(t, err, "auto never fails")
	switch {
	case errors.Is(cudaErr, ErrNoDriver):
		// No NVIDIA driver: nothing to say, nothing was asked of a GPU; on says why.
		require.Nil(t, be)
		require.Empty(t, note)
		_, _, err = Open(ModeOn, Options{})
		require.ErrorIs(t, err, ErrNoDriver)
		require.ErrorContains(t, err, "--gpu on: gpuoffload: no NVIDIA driver: ")
	case cudaErr != nil:
		require.Nil(t, be)
		require.True(t, strings.HasPrefix(note, "gpu offload off: "), note)
		require.NotContains(t, note, "\n")
		_, _, err = Open(ModeOn, Options{})
		require.ErrorContains(t, err, "--gpu on")
		t.Logf("auto: %s", note)
	default:
		require.NotNil(t, be)
		require.Empty(t, note)
		require.NoError(t, be.Close())
	}
}

func TestDevices(t *testing.T) {
	ds := Devices()
	require.GreaterOrEqual(t, len(ds), 2)
	require.Equal(t, "cpu", ds[0].Backend)
	require.True(t, ds[0].Available)
	require.Contains(t, ds[0].String(), "cpu: ")
	for _, d := range ds[1:] {
		require.Equal(t, "cuda", d.Backend)
		if !d.Available {
			require.NotEmpty(t, d.Reason, "an unavailable backend says why")
		}
		t.Log(d.String())
	}
}

func TestCUDAErrorIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &CUDAError{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY",
		Description: "out of memory", Detail: "allocating 10 MiB"})
	require.ErrorIs(t, err, ErrOutOfMemory)
	require.Equal(t, "wrapped: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory): allocating 10 MiB",
		err.Error())
	require.NotErrorIs(t, &CUDAError{Code: 1}, ErrOutOfMemory)
	e := &NVRTCError{Call: "nvrtcCompileProgram", Code: 6, Message: "NVRTC_ERROR_COMPILATION",
		Program: "k.cu", Options: "--fmad=false", Log: "k.cu(1): error: oops\n\x00"}
	require.Equal(t, "nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION (compiling k.cu with --fmad=false)\n"+
		"k.cu(1): error: oops", e.Error())
}

func TestSourceAndOptions(t *testing.T) {
	k := newTestKernel(1, 2)
	s := Source(k)
	require.True(t, strings.HasPrefix(s, Header()))
	require.Contains(t, s, "#line 1 \"warped_test_kernel.cu\"")
	require.Contains(t, BuiltinSource(), "warped_xorwow_advance")
	require.Contains(t, BuiltinSource(), "warped_xorwow_rewind")
	require.Equal(t, []string{"--gpu-architecture=compute_90", "--fmad=false"}, CompileOptions(9, 0))
	require.Equal(t, []string{"--gpu-architecture=compute_120", "--fmad=false"}, CompileOptions(12, 0))
}

// unsafePointer returns the address of s's array.
func unsafePointer(s []uint64) unsafe.Pointer { return unsafe.Pointer(&s[0]) }
