package pcs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/rng"
)

// handled is one call of (*Cell).Handle as a simulation made it: the input (LP, time, event
// words, state and generator before) and what Handle did (state and generator after, and
// the event it sent, as its receiver got it).
type handled struct {
	lp            kernel.LPID
	now           kernel.Time
	words         kernel.Words
	before, after State
	genIn, genOut kernel.RNG
	sentTo        kernel.LPID
	sentAt        kernel.Time
	sentWords     kernel.Words
	seen          bool // the sent event was received before the end time
}

// recorder collects the Handle calls of one sequential run.
type recorder struct {
	r         *rand.Rand
	randomize bool
	calls     []handled
	// bySend maps (sender, seq) to the call that sent the event.
	bySend map[[2]uint64]int
}

// recordingCell wraps a PCS cell and records each Handle call.
type recordingCell struct {
	*Cell
	rec  *recorder
	sent uint64 // the cell's send count, which is the next send's sequence number
}

// Init implements kernel.LogicalProcess: Init sends one event per portable.
func (w *recordingCell) Init(ctx *kernel.Context) {
	w.Cell.Init(ctx)
	w.sent = uint64(w.cfg.Portables)
}

// Handle implements kernel.LogicalProcess: it notes the event's sender, optionally
// randomizes the state and the generator (so that blocked calls and hand-offs, rare with
// the configured channels, are common), and records Handle's effect.
func (w *recordingCell) Handle(ctx *kernel.Context, ev *kernel.Event) {
	rec := w.rec
	if i, ok := rec.bySend[[2]uint64{uint64(ev.Sender), ev.Seq}]; ok {
		c := &rec.calls[i]
		c.sentTo, c.sentAt, c.sentWords, c.seen = ev.Receiver, ev.RecvTime, ev.Words, true
	}
	if rec.randomize {
		r := rec.r
		w.S = State{IdleChannels: r.Uint64N(3), CallAttempts: r.Uint64(), ChannelBlocks: r.Uint64(),
			HandoffBlocks: r.Uint64()}
		if r.IntN(4) == 0 {
			w.S.IdleChannels = r.Uint64()
		}
		*ctx.RNG() = randomGen(r)
	}
	c := handled{lp: ctx.Self(), now: ctx.Now(), words: ev.Words, before: w.S, genIn: *ctx.RNG()}
	w.Cell.Handle(ctx, ev)
	c.after, c.genOut = w.S, *ctx.RNG()
	rec.bySend[[2]uint64{uint64(ctx.Self()), w.sent}] = len(rec.calls)
	w.sent++
	rec.calls = append(rec.calls, c)
}

// randomGen returns a random generator state.
func randomGen(r *rand.Rand) kernel.RNG {
	return kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
}

// record runs PCS sequentially to end and returns its Handle calls.
func record(t *testing.T, c Config, end float64, randomize bool) []handled {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	rec := &recorder{r: rand.New(rand.NewPCG(uint64(c.CellsX), uint64(c.CallInterval))), randomize: randomize,
		bySend: map[[2]uint64]int{}}
	wrapped := make([]kernel.LogicalProcess, len(lps))
	for i, l := range lps {
		wrapped[i] = &recordingCell{Cell: l.(*Cell), rec: rec}
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 11, Type: kernel.Sequential}, wrapped)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, rec.calls)
	return rec.calls
}

// batchConfigs are the PCS configurations the batch kernels are checked on against Handle,
// with end times that give a few thousand events each. Their means cover counting (below
// rng.PTRSMean, and 0: no draw) and PTRS (from 10 up, where small counts take the slow
// path through logFactorial).
var batchConfigs = []struct {
	c         Config
	end       float64
	randomize bool
}{
	{Config{CellsX: 6, CellsY: 5, Channels: 15, CallInterval: 200, CallDuration: 50, MoveInterval: 100, Portables: 8, MaxHops: 1}, 400, false},
	{Config{CellsX: 6, CellsY: 5, Channels: 15, CallInterval: 200, CallDuration: 50, MoveInterval: 100, Portables: 8, MaxHops: 3}, 400, true},
	{Config{CellsX: 4, CellsY: 3, Channels: 2, CallInterval: 10, CallDuration: 11, MoveInterval: 12, Portables: 5, MaxHops: 1}, 300, false},
	{Config{CellsX: 3, CellsY: 7, Channels: 1, CallInterval: 3, CallDuration: 9, MoveInterval: 5, Portables: 4, MaxHops: 2}, 200, true},
	{Config{CellsX: 1, CellsY: 1, Channels: 0, CallInterval: 0, CallDuration: 1, MoveInterval: 2, Portables: 3, MaxHops: 1}, 500, false},
	{Config{CellsX: 9, CellsY: 1, Channels: 3, CallInterval: 1000, CallDuration: 1 << 20, MoveInterval: 7, Portables: 6, MaxHops: 1}, 150, true},
}

// batchOf builds a batch of kernel k from the calls (one LP may appear several times: the
// elements are independent, which is all a batch needs).
func batchOf(k *gpuoffload.Kernel, calls []handled) *gpuoffload.Batch {
	var b gpuoffload.Batch
	b.Reset(len(calls), k)
	for i, c := range calls {
		b.Set(i, uint32(c.lp), c.now, c.genIn, c.words)
		cell := &Cell{}
		cell.S = c.before
		PackState(cell, b.StateOf(i))
	}
	return &b
}

// checkAgainstHandle compares a batch's results with the recorded Handle calls and returns
// the number of sent events compared.
func checkAgainstHandle(t *testing.T, b *gpuoffload.Batch, calls []handled) int {
	t.Helper()
	seen := 0
	for i, c := range calls {
		var cell Cell
		UnpackState(&cell, b.StateOf(i))
		require.Equal(t, c.after, cell.S, "call %d: state", i)
		require.Equal(t, c.genOut, b.Gen(i), "call %d: generator", i)
		require.Zero(t, b.Overflow[i], "call %d", i)
		require.EqualValues(t, 1, b.OutCount[i], "call %d", i)
		to, at, w := b.Out(i, 0)
		require.Equal(t, kernel.Time(sendTime(w)), at, "call %d: an event is sent for the time its kind says", i)
		if c.seen {
			seen++
			require.Equal(t, c.sentTo, to, "call %d: destination", i)
			require.Equal(t, math.Float64bits(c.sentAt), math.Float64bits(at), "call %d: time %v, want %v", i, at, c.sentAt)
			require.Equal(t, c.sentWords, kernel.Words(w), "call %d: words", i)
		} else {
			require.GreaterOrEqual(t, at, c.now, "call %d", i)
		}
	}
	return seen
}

// sendTime is the time at which a portable event with words w is sent: its next call,
// the end of its call, or its move.
func sendTime(w kernel.Words) uint64 {
	switch Method(w[0]) {
	case NextCall:
		return w[2]
	case CompleteCall:
		return w[1]
	}
	return w[3]
}

// backends returns the backends to check the kernels on; those that do not open are
// skipped in subtests, saying why.
func backends() []struct {
	name string
	open func() (gpuoffload.Backend, error)
} {
	return []struct {
		name string
		open func() (gpuoffload.Backend, error)
	}{
		{"cpu", func() (gpuoffload.Backend, error) { return gpuoffload.NewCPU(3), nil }},
		{"host-c++", func() (gpuoffload.Backend, error) { return gpuoffload.NewHostCXX("") }},
		{"cuda", func() (gpuoffload.Backend, error) { return gpuoffload.NewCUDA(0) }},
	}
}

// openOrSkip opens a backend, or skips the test saying why it cannot.
func openOrSkip(t *testing.T, name string, open func() (gpuoffload.Backend, error)) gpuoffload.Backend {
	t.Helper()
	b, err := open()
	if err != nil {
		switch name {
		case "cuda":
			t.Skipf("no CUDA GPU or driver, so the CUDA text is not run on a device here: %v", err)
		case "host-c++":
			t.Skipf("no C++ compiler (g++, clang++ or $CXX) to compile the CUDA text as host C++: %v", err)
		}
		t.Skipf("no %s backend: %v", name, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// byKind splits calls by event kind.
func byKind(calls []handled) [numMethods][]handled {
	var out [numMethods][]handled
	for _, c := range calls {
		out[c.words[0]] = append(out[c.words[0]], c)
	}
	return out
}

// TestBatchKernelsMatchHandle records the Handle calls of sequential PCS runs (some with
// random states and generators) and replays their inputs, kind by kind, through that kind's
// batch kernel on every backend: the state, the generator and the sent event (receiver,
// time and words, as its receiver got it) must be identical.
func TestBatchKernelsMatchHandle(t *testing.T) {
	type recorded struct {
		c     Config
		calls [numMethods][]handled
	}
	var runs []recorded
	for _, bc := range batchConfigs {
		runs = append(runs, recorded{bc.c, byKind(record(t, bc.c, bc.end, bc.randomize))})
	}
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			var total, seen [numMethods]int
			for _, r := range runs {
				ks := BatchKernels(r.c)
				for kind, calls := range r.calls {
					if len(calls) == 0 {
						continue
					}
					batch := batchOf(ks[kind], calls)
					require.NoError(t, b.Run(ks[kind], batch), "%+v", r.c)
					t.Run(fmt.Sprintf("%dx%d-ch%d-%s", r.c.CellsX, r.c.CellsY, r.c.Channels, ks[kind].Name), func(t *testing.T) {
						seen[kind] += checkAgainstHandle(t, batch, calls)
						total[kind] += len(calls)
					})
				}
			}
			for kind := range numMethods {
				require.Greater(t, total[kind], 500, "kind %d: enough Handle calls", kind)
				require.Greater(t, seen[kind], total[kind]*2/3, "kind %d: most sent events were received and compared", kind)
			}
			t.Logf("Handle calls by kind %v, sent events compared %v", total, seen)
		})
	}
}

// randomBatch returns a batch of n elements of kernel k with random inputs: LPs of a
// cellsX*cellsY torus, times and event words (the three times anywhere in [0, 2^64), so that
// the sums wrap), states and generators. About one element in five is of another kind than
// want, and must overflow.
func randomBatch(r *rand.Rand, k *gpuoffload.Kernel, want Method, n, cells int) *gpuoffload.Batch {
	var b gpuoffload.Batch
	b.Reset(n, k)
	word := func() uint64 {
		switch r.IntN(3) {
		case 0:
			return r.Uint64N(1000)
		case 1:
			return math.MaxUint64 - r.Uint64N(1000)
		}
		return r.Uint64()
	}
	for i := range n {
		m := uint64(want)
		if r.IntN(5) == 0 {
			m = r.Uint64N(numMethods + 1)
		}
		b.Set(i, r.Uint32N(uint32(cells)), r.Float64()*1e6, randomGen(r), kernel.Words{m, word(), word(), word()})
		cell := &Cell{}
		cell.S = State{IdleChannels: r.Uint64N(3), CallAttempts: r.Uint64(), ChannelBlocks: r.Uint64(), HandoffBlocks: r.Uint64()}
		if r.IntN(3) == 0 {
			cell.S.IdleChannels = word()
		}
		PackState(cell, b.StateOf(i))
	}
	return &b
}

// goTwin runs k's Go twin over a copy of b and returns the copy.
func goTwin(k *gpuoffload.Kernel, b *gpuoffload.Batch) *gpuoffload.Batch {
	want := *b
	want.State = append([]uint64(nil), b.State...)
	want.RNG = append([]uint32(nil), b.RNG...)
	want.OutCount = make([]uint32, b.N)
	want.OutTo = make([]uint32, b.N*k.OutSlots)
	want.OutTime = make([]float64, b.N*k.OutSlots)
	want.OutWords = make([]uint64, gpuoffload.EventWords*b.N*k.OutSlots)
	want.Overflow = make([]uint8, b.N)
	for i := range b.N {
		k.Go(&want, i)
	}
	return &want
}

// requireSameResults compares the outputs and in/out arrays of two batches: bit for bit,
// except the output slots of overflowing elements, which are to be discarded.
func requireSameResults(t *testing.T, want, got *gpuoffload.Batch, msg string) {
	t.Helper()
	require.Equal(t, want.Overflow, got.Overflow, "%s: overflow", msg)
	require.Equal(t, want.OutCount, got.OutCount, "%s: output counts", msg)
	require.Equal(t, want.State, got.State, "%s: states", msg)
	require.Equal(t, want.RNG, got.RNG, "%s: generators", msg)
	for i := range want.N {
		if want.Overflow[i] != 0 {
			continue
		}
		wt, wat, ww := want.Out(i, 0)
		gt, gat, gw := got.Out(i, 0)
		require.Equal(t, wt, gt, "%s: element %d: receiver", msg, i)
		require.Equal(t, math.Float64bits(wat), math.Float64bits(gat), "%s: element %d: time", msg, i)
		require.Equal(t, ww, gw, "%s: element %d: words", msg, i)
	}
}

// TestBatchKernelsCUDATextMatchesGoTwin runs the CUDA text of every kernel (compiled as host
// C++, and on a GPU where there is one) on random inputs, for means that take every path of
// the Poisson sampler (none, counting, PTRS with its fast and slow paths, huge means), and
// compares everything with the Go twin, bit for bit. The Go twin is Handle's code (see
// TestBatchKernelsMatchHandle).
func TestBatchKernelsCUDATextMatchesGoTwin(t *testing.T) {
	configs := []Config{
		DefaultConfig(),
		{CellsX: 1, CellsY: 1, Channels: 0, CallInterval: 0, CallDuration: 1, MoveInterval: 9, Portables: 1, MaxHops: 1},
		{CellsX: 3, CellsY: 2, Channels: 1, CallInterval: 10, CallDuration: 11, MoveInterval: 13, Portables: 1, MaxHops: 3},
		{CellsX: 7, CellsY: 1, Channels: 2, CallInterval: 2, CallDuration: 37, MoveInterval: 5, Portables: 1, MaxHops: 1},
		{CellsX: 2, CellsY: 9, Channels: 2, CallInterval: 1 << 40, CallDuration: 1e6, MoveInterval: 1 << 53, Portables: 1, MaxHops: 7},
		{CellsX: 50, CellsY: 40, Channels: 2, CallInterval: 1 << 53, CallDuration: 1<<53 - 1, MoveInterval: 12345, Portables: 1, MaxHops: 1},
	}
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			r := rand.New(rand.NewPCG(7, 8))
			for _, c := range configs {
				require.NoError(t, c.Validate())
				for kind, k := range BatchKernels(c) {
					batch := randomBatch(r, k, Method(kind), 3000, c.CellsX*c.CellsY)
					want := goTwin(k, batch)
					require.NoError(t, b.Run(k, batch))
					requireSameResults(t, want, batch, fmt.Sprintf("%+v %s", c, k.Name))
					overflowed := 0
					for i := range batch.N {
						if batch.Ev(i)[0] != uint64(kind) {
							overflowed++
							require.EqualValues(t, 1, batch.Overflow[i])
						}
					}
					require.Positive(t, overflowed)
				}
			}
		})
	}
}

// floorKernel runs warped_pcs_floor and warped_pcs_abs (of batchSource) on each element's
// first event word (float64 bits): slot 0 gets floor in its time and abs in word 0.
func floorKernel() *gpuoffload.Kernel {
	return &gpuoffload.Kernel{
		Name: "warped_pcs_test_floor",
		Source: batchSource + `
extern "C" __global__ void warped_pcs_test_floor(WarpedBatch b) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    const double x = warped_bits_f64(b.ev_words[4ull * i]);
    b.out_time[i] = warped_pcs_floor(x);
    b.out_words[4ull * i] = warped_f64_bits(warped_pcs_abs(x));
    b.out_count[i] = 1;
    b.overflow[i] = 0;
}
`,
		OutSlots: 1,
		Go: func(b *gpuoffload.Batch, i int) {
			x := math.Float64frombits(b.Ev(i)[0])
			b.SetOut(i, 0, 0, math.Floor(x), kernel.Words{math.Float64bits(math.Abs(x))})
			b.OutCount[i], b.Overflow[i] = 1, 0
		},
	}
}

// TestFloorAndAbs checks the CUDA floor and abs of the PTRS sampler against math.Floor and
// math.Abs, bit for bit, on edge cases and random values.
func TestFloorAndAbs(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 0.3, -0.3, 1, -1, 1.5, -1.5, 2.5, -2.5, 0.999999999, -0.999999999,
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1 << 52, -(1 << 52), 1<<52 + 0.5, -(1<<52 + 0.5),
		1<<53 - 1, -(1<<53 - 1), 1 << 63, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		math.Nextafter(1, 0), math.Nextafter(-1, 0), math.Nextafter(2, 3), math.Nextafter(-2, -3), 4503599627370495.5,
		-4503599627370495.5, 123456.75, -123456.75}
	r := rand.New(rand.NewPCG(9, 10))
	for range 5000 {
		xs = append(xs, math.Float64frombits(r.Uint64()), (r.Float64()-0.5)*math.Pow(2, float64(r.IntN(120)-60)))
	}
	k := floorKernel()
	var batch gpuoffload.Batch
	batch.Reset(len(xs), k)
	for i, x := range xs {
		batch.Set(i, 0, 0, rng.XORWOW{}, kernel.Words{math.Float64bits(x)})
	}
	want := goTwin(k, &batch)
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			got := batch
			got.OutCount = make([]uint32, got.N)
			got.OutTo = make([]uint32, got.N)
			got.OutTime = make([]float64, got.N)
			got.OutWords = make([]uint64, 4*got.N)
			got.Overflow = make([]uint8, got.N)
			require.NoError(t, b.Run(k, &got))
			for i, x := range xs {
				_, wf, wa := want.Out(i, 0)
				_, gf, ga := got.Out(i, 0)
				if math.IsNaN(wf) {
					require.True(t, math.IsNaN(gf), "floor(%v)", x)
				} else {
					require.Equal(t, math.Float64bits(wf), math.Float64bits(gf), "floor(%v) = %v, want %v", x, gf, wf)
				}
				require.Equal(t, wa[0], ga[0], "abs(%v)", x)
			}
		})
	}
}

// TestLogFactorial checks the CUDA log(k!) of the PTRS sampler against rng's, bit for bit,
// for every k up to 3000 and random k up to 2^62. (Through the draws alone, a difference in
// the last bit would almost never show.)
func TestLogFactorial(t *testing.T) {
	var ks []float64
	for k := range 3000 {
		ks = append(ks, float64(k))
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		ks = append(ks, float64(r.Uint64N(1<<uint(1+r.IntN(62)))))
	}
	k := &gpuoffload.Kernel{
		Name: "warped_pcs_test_log_factorial",
		Source: batchSource + `
extern "C" __global__ void warped_pcs_test_log_factorial(WarpedBatch b) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    b.out_time[i] = warped_pcs_log_factorial(warped_bits_f64(b.ev_words[4ull * i]));
    b.out_count[i] = 1;
    b.overflow[i] = 0;
}
`,
		OutSlots: 1,
		Go: func(b *gpuoffload.Batch, i int) {
			b.SetOut(i, 0, 0, rng.LogFactorial(math.Float64frombits(b.Ev(i)[0])), kernel.Words{})
			b.OutCount[i], b.Overflow[i] = 1, 0
		},
	}
	var batch gpuoffload.Batch
	batch.Reset(len(ks), k)
	for i, x := range ks {
		batch.Set(i, 0, 0, rng.XORWOW{}, kernel.Words{math.Float64bits(x)})
	}
	want := goTwin(k, &batch)
	require.InDelta(t, math.Log(120), want.OutTime[5], 1e-12, "log(5!)")
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			got := goTwin(k, &batch) // fresh output arrays, overwritten by the backend
			clear(got.OutTime)
			require.NoError(t, b.Run(k, got))
			for i, x := range ks {
				require.Equal(t, math.Float64bits(want.OutTime[i]), math.Float64bits(got.OutTime[i]),
					"log(%v!) = %v, want %v", x, got.OutTime[i], want.OutTime[i])
			}
		})
	}
}

// TestSourceConstants checks that each constant the CUDA text gives by its bits is the
// float64 of the decimal literal in its comment (as in package rng), and that half log 2pi
// is rng's constant expression.
func TestSourceConstants(t *testing.T) {
	re := regexp.MustCompile(`warped_bits_f64\(0x([0-9a-f]{16})ull\);\s*// (-?[0-9.]+(e[-+][0-9]+)?)`)
	found := re.FindAllStringSubmatch(batchSource, -1)
	require.Len(t, found, 14, "10 Stirling coefficients, half log 2pi, 0.013, 0.07 and 0.43")
	for _, m := range found {
		bits, err := strconv.ParseUint(m[1], 16, 64)
		require.NoError(t, err)
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(v), bits, "%s is not the bits of %s", m[1], m[2])
	}
	const halfLog2Pi = 0.5 * 1.8378770664093453 // as rng.LogFactorial has it
	require.Contains(t, batchSource, fmt.Sprintf("warped_bits_f64(%#016xull); // %v", math.Float64bits(halfLog2Pi), halfLog2Pi))
}

// TestPoissonWords checks the sampler parameters the CUDA text reads against package rng's
// own sampler, bit for bit, in the order the CUDA text reads them.
func TestPoissonWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	means := []float64{0, 1, 5, 9, 9.999999999999998, 10, 11, 12, 37, 50, 100, 200, 1e6, 1 << 40, 1 << 62, math.MaxInt64}
	for range 2000 {
		means = append(means, float64(r.IntN(1<<20)), r.Float64()*30)
	}
	for _, mean := range means {
		sampler := rng.NewPoisson(mean)
		p := reflect.ValueOf(sampler)
		want := []uint64{}
		for _, name := range []string{"mean", "loglam", "a", "b", "vr", "logInvalpha"} {
			f := p.FieldByName(name)
			require.True(t, f.IsValid(), "rng.Poisson has no field %s: update poissonWords", name)
			want = append(want, math.Float64bits(f.Float()))
		}
		got := poissonWords(&sampler)
		require.Equal(t, want, got[:], "mean %v", mean)
	}
	require.Equal(t, poissonParams, reflect.TypeFor[rng.Poisson]().NumField(), "rng.Poisson's fields changed: update poissonWords")
}

func TestPackUnpackState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		var a, b Cell
		a.S = State{IdleChannels: r.Uint64(), CallAttempts: r.Uint64(), ChannelBlocks: r.Uint64(), HandoffBlocks: r.Uint64()}
		words := make([]uint64, StateWords)
		PackState(&a, words)
		UnpackState(&b, words)
		require.Equal(t, a.S, b.S)
		require.Equal(t, []uint64{a.S.IdleChannels, a.S.CallAttempts, a.S.ChannelBlocks, a.S.HandoffBlocks}, words)
	}
}

func TestBatchKernelsParams(t *testing.T) {
	c := DefaultConfig()
	c.CellsX, c.CellsY, c.CallDuration, c.MaxHops = 30, 20, 7, 4
	ks := BatchKernels(c)
	require.Len(t, ks, numMethods)
	want := []uint64{30, 20}
	for _, mean := range []int{200, 7, 100} {
		p := rng.NewPoisson(float64(mean))
		w := poissonWords(&p)
		want = append(want, w[:]...)
	}
	want = append(want, 4)
	names := map[string]bool{}
	for kind, k := range ks {
		require.NoError(t, k.Validate())
		require.Equal(t, kernelNames[kind], k.Name)
		require.Equal(t, StateWords, k.StateWords)
		require.Equal(t, 1, k.OutSlots, "every PCS event sends exactly one event")
		require.Equal(t, want, k.Params)
		require.Equal(t, math.Float64bits(7), k.Params[paramCallDuration])
		require.Contains(t, batchSource, fmt.Sprintf("params[%d], g)", paramMaxHops), "the CUDA text reads MaxHops where kernels puts it")
		for _, off := range []int{paramCallInterval, paramCallDuration, paramMoveInterval} {
			require.Contains(t, stepSource, fmt.Sprintf("= params + %d;", off), "the CUDA text reads the samplers where kernels puts them")
		}
		require.Contains(t, deviceSource, fmt.Sprintf("one_draw(params + %d,", paramCallInterval))
		require.Contains(t, deviceSource, fmt.Sprintf("one_draw(params + %d,", paramMoveInterval))
		require.Contains(t, gpuoffload.Source(k), "extern \"C\" __global__ void "+k.Name+"(WarpedBatch b)")
		names[k.Name] = true
	}
	require.Len(t, names, numMethods, "one entry point per kind")
	require.Equal(t, "warped_pcs_next_call", ks[NextCall].Name)
	require.Equal(t, "warped_pcs_move_call_out", ks[MoveCallOut].Name)
}

// TestBatchKernelGroupsByKind checks that every cell of a model returns the same kernel,
// built once by New, for all events of one kind, a different one for each kind, and nil
// for an unknown kind.
func TestBatchKernelGroupsByKind(t *testing.T) {
	lps, err := New(small())
	require.NoError(t, err)
	first := lps[0].(kernel.Batcher)
	seen := map[*gpuoffload.Kernel]bool{}
	for m := range Method(numMethods) {
		k := first.BatchKernel(&kernel.Event{Words: kernel.Words{uint64(m), 1, 2, 3}})
		require.NotNil(t, k)
		require.Equal(t, kernelNames[m], k.Name)
		seen[k] = true
		for _, lp := range lps {
			require.Same(t, k, lp.(kernel.Batcher).BatchKernel(&kernel.Event{Words: kernel.Words{uint64(m), 9, 8, 7}}))
		}
	}
	require.Len(t, seen, numMethods)
	require.Nil(t, first.BatchKernel(&kernel.Event{Words: kernel.Words{numMethods}}))
	require.Nil(t, first.BatchKernel(&kernel.Event{Words: kernel.Words{math.MaxUint64}}))
	other, err := New(small())
	require.NoError(t, err)
	require.NotSame(t, first.BatchKernel(&kernel.Event{}), other[0].(kernel.Batcher).BatchKernel(&kernel.Event{}),
		"each model has its own kernels")
}

// stateHash is a SHA-256 over the cells' states, in order.
func stateHash(lps []kernel.LogicalProcess) string {
	h := sha256.New()
	for _, l := range lps {
		_ = binary.Write(h, binary.LittleEndian, l.(*Cell).S)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSequentialResultsPinned pins sequential results, so that any change of the model's
// behaviour shows here: WARPED2's one-hop moves (the default), and the 1 to 3 hops of
// --max-hops 3, both with WARPED2's TS_OFFSET on the move-out.
func TestSequentialResultsPinned(t *testing.T) {
	for _, tc := range []struct {
		c         Config
		end       float64
		events    uint64
		res       Results
		states    string
		seqDigest string
	}{
		{Config{CellsX: 8, CellsY: 6, Channels: 15, CallInterval: 200, CallDuration: 50, MoveInterval: 100, Portables: 20, MaxHops: 3}, 500,
			12052, Results{1901, 566, 119}, "81a9e5bb4ae08350d7e6244fd91b346ad6be873631303257edd0cc1452786b4e",
			"352fb59849d435ee3be4ecfeb70930c251f38b764ff2e3fe84e5ed9b4592d017"},
		{Config{CellsX: 5, CellsY: 7, Channels: 3, CallInterval: 5, CallDuration: 12, MoveInterval: 8, Portables: 6, MaxHops: 3}, 300,
			17739, Results{4161, 2871, 1238}, "1a7b74d5b27a99e67e2deb7df7199700528b40288c155857552bb361ba428206",
			"f8d92175bc718b81aa3cbc56a455649ca9a7d4d028ff2a4958af5ee17bf9006f"},
		{Config{CellsX: 3, CellsY: 1, Channels: 0, CallInterval: 0, CallDuration: 9, MoveInterval: 10, Portables: 4, MaxHops: 3}, 200,
			2581, Results{2195, 2195, 0}, "1c7f52dd1ab0488a2465e3fc349dc8bb686385e3ebf3cb1250e4921ed1007044",
			"ba7303dc53eab5f224940b60656747e7075aeda8d24b21c1d82a7763cd80538d"},
		{Config{CellsX: 8, CellsY: 6, Channels: 15, CallInterval: 200, CallDuration: 50, MoveInterval: 100, Portables: 20, MaxHops: 1}, 500,
			12137, Results{1903, 574, 134}, "8d9cb003f03c648e3724173588e4b40378dfbab1b80633144abf2af7cb6d4e6d",
			"1e9e3d0774feed079d9d1bac20329b7f0b7c8a9a67e0b05faaee0804b5df3d1e"},
		{Config{CellsX: 5, CellsY: 7, Channels: 3, CallInterval: 5, CallDuration: 12, MoveInterval: 8, Portables: 6, MaxHops: 1}, 300,
			17797, Results{4154, 2837, 1225}, "c59f26c96c3dfeb1f40e2285461a971cbbd8c778235742013780624ed62779e9",
			"3191d303abe468d31f0b918dc961807931dce596d2d83e0b091fe7d3498eb6e2"},
		{Config{CellsX: 3, CellsY: 1, Channels: 0, CallInterval: 0, CallDuration: 9, MoveInterval: 10, Portables: 4, MaxHops: 1}, 200,
			2588, Results{2188, 2188, 0}, "67b3b7f8d86d3305dc768ac83a43fd371605a1f0ac5b1041dad6ccc371713ad6",
			"c15430df8e142e24eff258c43caa713ceae941eeed242f43eb906a69784fcccd"},
	} {
		r, res, lps := runPCS(t, tc.c, tc.end, 42)
		require.Equal(t, tc.events, r.EventsCommitted, "%+v", tc.c)
		require.Equal(t, tc.res, res, "%+v", tc.c)
		require.Equal(t, tc.states, stateHash(lps), "%+v", tc.c)
		require.Equal(t, tc.seqDigest, r.Digest, "%+v", tc.c)
	}
}

// twCase is a time-warp configuration of the offload determinism test.
type twCase struct {
	name string
	tw   kernel.TimeWarpConfig
}

// TestOffloadDeterminism runs PCS under time warp with its events handled in batches on the
// CPU backend (the Go twins), for batch sizes 1, 7, 64 and tuned, with aggressive and lazy
// cancellation and every rollback checked (PCS has no Reverse, so periodic state saving
// only): the digest, the committed events and the results are the sequential ones, and
// batches really ran.
func TestOffloadDeterminism(t *testing.T) {
	be := gpuoffload.NewCPU(2)
	defer be.Close()
	c := small()
	c.Channels, c.MoveInterval = 3, 20 // many blocks and hand-offs
	const end = 150
	seq, seqRes, _ := runPCS(t, c, end, 5)
	var rolled, coasted uint64
	for _, size := range []int{1, 7, 64, 0} {
		for _, tc := range []twCase{
			{"aggressive", kernel.TimeWarpConfig{Workers: 4, Schedulers: 2, StateSavingPeriod: 3, OptimismWindow: 30}},
			{"lazy", kernel.TimeWarpConfig{Workers: 3, StateSavingPeriod: 5, Cancellation: "lazy"}},
			{"bounded", kernel.TimeWarpConfig{Workers: 4, StateSavingPeriod: 1, OptimismWindow: 40}},
		} {
			t.Run(fmt.Sprintf("batch%d-%s", size, tc.name), func(t *testing.T) {
				tw := tc.tw
				tw.Offload, tw.BatchSize, tw.CheckRollbacks = be, size, true
				r, res := runOffload(t, c, end, 5, tw)
				require.Equal(t, seq.Digest, r.Digest)
				require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
				require.Equal(t, seqRes, res)
				require.NotZero(t, r.BatchedEvents, "no event was handled in a batch")
				require.NotZero(t, r.OffloadBatches)
				require.LessOrEqual(t, r.BatchedEvents, r.EventsProcessed)
				require.Empty(t, r.OffloadNote)
				if tw.Cancellation == "lazy" {
					require.NotZero(t, r.SuppressedSends, "lazy cancellation found no regenerated output")
				}
				rolled += r.EventsRolledBack
				coasted += r.CoastForwardEvents
			})
		}
	}
	require.NotZero(t, rolled, "no rollback happened")
	require.NotZero(t, coasted, "no coast forward (Handle re-executing batched events) happened")
	t.Logf("%d events rolled back and %d coasted forward in all, %d committed per run", rolled, coasted, seq.EventsCommitted)
}

// TestOffloadDeterminismCUDAText runs PCS under time warp with the batches on the host-C++
// backend (the CUDA text) and, where there is a GPU, on CUDA: the digest is the sequential
// one.
func TestOffloadDeterminismCUDAText(t *testing.T) {
	c := small()
	c.Channels = 4
	const end = 150
	seq, seqRes, _ := runPCS(t, c, end, 9)
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			for _, size := range []int{7, 64} {
				for _, cancel := range []string{"aggressive", "lazy"} {
					r, res := runOffload(t, c, end, 9, kernel.TimeWarpConfig{Workers: 3, StateSavingPeriod: 4,
						Cancellation: cancel, Offload: b, BatchSize: size, CheckRollbacks: true})
					require.Equal(t, seq.Digest, r.Digest, "batch %d, %s", size, cancel)
					require.Equal(t, seqRes, res)
					require.NotZero(t, r.BatchedEvents)
				}
			}
		})
	}
}

// runOffload runs PCS under time warp with tw and returns the result and the totals.
func runOffload(t *testing.T, c Config, end float64, seed uint64, tw kernel.TimeWarpConfig) (kernel.Result, Results) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed, Type: kernel.TimeWarp, TimeWarp: tw}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps)
}
