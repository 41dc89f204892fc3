package phold

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/rng"
)

// handled is one call of (*LP).Handle as a simulation made it: the input (LP, time, state
// and generator before) and what Handle did (state and generator after, and the event it
// sent, as its receiver got it).
type handled struct {
	lp            kernel.LPID
	now           kernel.Time
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

// recordingLP wraps a PHOLD LP and records each Handle call.
type recordingLP struct {
	*LP
	rec  *recorder
	sent uint64 // the LP's send count, which is the next send's sequence number
}

// Init implements kernel.LogicalProcess.
func (w *recordingLP) Init(ctx *kernel.Context) {
	w.LP.Init(ctx)
	w.sent = uint64(w.cfg.StartEvents)
}

// Handle implements kernel.LogicalProcess: it notes the event's sender, optionally
// randomizes the state and the generator (to cover states a short run never reaches),
// and records Handle's effect.
func (w *recordingLP) Handle(ctx *kernel.Context, ev *kernel.Event) {
	rec := w.rec
	if i, ok := rec.bySend[[2]uint64{uint64(ev.Sender), ev.Seq}]; ok {
		c := &rec.calls[i]
		c.sentTo, c.sentAt, c.sentWords, c.seen = ev.Receiver, ev.RecvTime, ev.Words, true
	}
	if rec.randomize {
		r := rec.r
		w.S = State{Events: r.Uint64(), Remote: r.Uint64(), Work: r.Uint32()}
		*ctx.RNG() = kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
	}
	c := handled{lp: ctx.Self(), now: ctx.Now(), before: w.S, genIn: *ctx.RNG()}
	w.LP.Handle(ctx, ev)
	c.after, c.genOut = w.S, *ctx.RNG()
	rec.bySend[[2]uint64{uint64(ctx.Self()), w.sent}] = len(rec.calls)
	w.sent++
	rec.calls = append(rec.calls, c)
}

// record runs PHOLD sequentially to end and returns its Handle calls.
func record(t *testing.T, c Config, end float64, randomize bool) []handled {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	rec := &recorder{r: rand.New(rand.NewPCG(uint64(c.LPs), uint64(c.Grain))), randomize: randomize,
		bySend: map[[2]uint64]int{}}
	wrapped := make([]kernel.LogicalProcess, len(lps))
	for i, l := range lps {
		wrapped[i] = &recordingLP{LP: l.(*LP), rec: rec}
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 11, Type: kernel.Sequential}, wrapped)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, rec.calls)
	return rec.calls
}

// batchConfigs are the PHOLD configurations the batch kernel is checked on, with end
// times that give a few thousand events each.
var batchConfigs = []struct {
	c         Config
	end       float64
	randomize bool
}{
	{Config{LPs: 64, Remote: 0.25, Mean: 1, Lookahead: 0.1, StartEvents: 1}, 40, false},
	{Config{LPs: 64, Remote: 0.25, Mean: 1, Lookahead: 0.1, StartEvents: 1, Grain: 100}, 40, true},
	{Config{LPs: 1, Remote: 0.5, Mean: 0.5, Lookahead: 0.5, StartEvents: 3, Grain: 3}, 300, false},
	{Config{LPs: 300, Remote: 1, Mean: 2, Lookahead: 0, StartEvents: 2, Grain: 7}, 12, true},
	{Config{LPs: 33, Remote: 0, Mean: 1, Lookahead: 0.3, StartEvents: 1, Grain: 1}, 60, false},
	{Config{LPs: 5, Remote: 0.9, Mean: 1e-3, Lookahead: 1e-9, StartEvents: 4, Grain: 5}, 0.2, true},
}

// batchFromCalls builds a batch of the calls' inputs (one LP may appear several times:
// the elements are independent, which is all a batch needs).
func batchFromCalls(k *gpuoffload.Kernel, calls []handled) *gpuoffload.Batch {
	var b gpuoffload.Batch
	b.Reset(len(calls), k)
	for i, c := range calls {
		b.Set(i, c.lp, c.now, c.genIn, kernel.Words{uint64(i), 1, 2, 3})
		lp := &LP{}
		lp.S = c.before
		PackState(lp, b.StateOf(i))
	}
	return &b
}

// checkAgainstHandle compares a batch's results with the recorded Handle calls.
func checkAgainstHandle(t *testing.T, b *gpuoffload.Batch, calls []handled) {
	t.Helper()
	seen := 0
	for i, c := range calls {
		var lp LP
		UnpackState(&lp, b.StateOf(i))
		require.Equal(t, c.after, lp.S, "call %d: state", i)
		require.Equal(t, c.genOut, b.Gen(i), "call %d: generator", i)
		require.Zero(t, b.Overflow[i])
		require.EqualValues(t, 1, b.OutCount[i])
		to, at, w := b.Out(i, 0)
		require.Zero(t, w)
		if c.seen {
			seen++
			require.Equal(t, c.sentTo, to, "call %d: destination", i)
			require.Equal(t, math.Float64bits(c.sentAt), math.Float64bits(at), "call %d: time %v, want %v", i, at, c.sentAt)
			require.Equal(t, c.sentWords, kernel.Words(w))
		} else {
			require.True(t, at >= c.now)
		}
	}
	require.Greater(t, seen, len(calls)/2, "most sent events were received and compared")
	t.Logf("%d Handle calls, %d sent events compared", len(calls), seen)
}

// backends returns the backends to check the kernel on; those that do not open are
// skipped in subtests saying why.
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

// TestBatchKernelMatchesHandle records the Handle calls of sequential PHOLD runs and
// replays their inputs through the batch kernel on every backend: the state, the
// generator and the sent event (destination and time, as its receiver got it) must be
// identical.
func TestBatchKernelMatchesHandle(t *testing.T) {
	type recorded struct {
		c     Config
		calls []handled
	}
	var runs []recorded
	for _, bc := range batchConfigs {
		runs = append(runs, recorded{bc.c, record(t, bc.c, bc.end, bc.randomize)})
	}
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			b, err := be.open()
			if err != nil {
				if be.name == "cuda" {
					t.Skipf("no CUDA: %v", err)
				}
				t.Skipf("no %s backend: %v", be.name, err)
			}
			defer b.Close()
			for _, r := range runs {
				k := BatchKernel(r.c)
				batch := batchFromCalls(k, r.calls)
				require.NoError(t, b.Run(k, batch), "%+v", r.c)
				t.Run(fmt.Sprintf("lps%d-grain%d", r.c.LPs, r.c.Grain), func(t *testing.T) {
					checkAgainstHandle(t, batch, r.calls)
				})
			}
		})
	}
}

// TestBatchKernelHeavyGrain checks the CUDA text of the grain loop (unrolled by five)
// for grains around multiples of five and at the seed paper's scale, against the Go twin.
func TestBatchKernelHeavyGrain(t *testing.T) {
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b, err := be.open()
			if err != nil {
				t.Skipf("no %s: %v", be.name, err)
			}
			defer b.Close()
			r := rand.New(rand.NewPCG(3, 4))
			for _, grain := range []int{4, 5, 6, 9, 10, 11, 20000} {
				c := DefaultConfig()
				c.Grain = grain
				k := BatchKernel(c)
				var batch gpuoffload.Batch
				n := 300
				batch.Reset(n, k)
				for i := range n {
					g := kernel.RNG{D: r.Uint32(), V: [5]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
					batch.Set(i, r.Uint32N(uint32(c.LPs)), r.Float64()*100, g, kernel.Words{})
					lp := &LP{}
					lp.S = State{Events: r.Uint64(), Remote: r.Uint64(), Work: r.Uint32()}
					PackState(lp, batch.StateOf(i))
				}
				want := batch
				want.State = append([]uint64(nil), batch.State...)
				want.RNG = append([]uint32(nil), batch.RNG...)
				want.OutCount = make([]uint32, n)
				want.OutTo = make([]uint32, n)
				want.OutTime = make([]float64, n)
				want.OutWords = make([]uint64, 4*n)
				want.Overflow = make([]uint8, n)
				for i := range n {
					k.Go(&want, i)
				}
				require.NoError(t, b.Run(k, &batch))
				require.Equal(t, want.State, batch.State, "grain %d", grain)
				require.Equal(t, want.RNG, batch.RNG, "grain %d", grain)
				require.Equal(t, want.OutTo, batch.OutTo, "grain %d", grain)
				require.Equal(t, want.OutTime, batch.OutTime, "grain %d", grain)
				require.Equal(t, want.OutWords, batch.OutWords, "grain %d", grain)
			}
		})
	}
}

func TestPackUnpackState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		var a, b LP
		a.S = State{Events: r.Uint64(), Remote: r.Uint64(), Work: r.Uint32()}
		words := make([]uint64, StateWords)
		PackState(&a, words)
		UnpackState(&b, words)
		require.Equal(t, a.S, b.S)
		require.Equal(t, uint64(a.S.Work), words[2])
	}
}

func TestBatchKernelParams(t *testing.T) {
	c := DefaultConfig()
	c.Grain = 77
	k := BatchKernel(c)
	require.NoError(t, k.Validate())
	require.Equal(t, BatchKernelName, k.Name)
	require.Equal(t, StateWords, k.StateWords)
	require.Equal(t, 1, k.OutSlots)
	require.Equal(t, []uint64{math.Float64bits(0.25), math.Float64bits(1), math.Float64bits(0.1), 77, 16384}, k.Params)
	require.Contains(t, gpuoffload.Source(k), "extern \"C\" __global__ void warped_phold_handle(WarpedBatch b)")
	c.Grain = 1
	require.Equal(t, uint64(77), k.Params[paramGrain], "the kernel keeps its own copy of the configuration")
}

var (
	benchGrains  = flag.String("phold.grains", "0,100,1000,20000", "BenchmarkBatch: grains to measure")
	benchBatches = flag.String("phold.batches", "4096,65536,1048576", "BenchmarkBatch: batch sizes to measure")
)

// intList parses a comma-separated list of integers.
func intList(b *testing.B, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("bad list %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

// BenchmarkBatch measures PHOLD's batch kernel alone (no simulation around it) on the CPU
// and the CUDA backends, over -phold.grains and -phold.batches, with two batches in
// flight, and reports handled events per second (events/s). It gives the raw rate of the
// batch path for the crossover table; the CUDA variants skip, saying why, without a GPU.
//
//	go test -run XXX -bench Batch/cuda ./models/phold/ -args -phold.grains=20000 -phold.batches=1048576
func BenchmarkBatch(b *testing.B) {
	for _, be := range []struct {
		name string
		open func() (gpuoffload.Backend, error)
	}{backends()[0], backends()[2]} {
		b.Run(be.name, func(b *testing.B) {
			back, err := be.open()
			if err != nil {
				b.Skipf("no %s: %v", be.name, err)
			}
			defer back.Close()
			for _, grain := range intList(b, *benchGrains) {
				for _, n := range intList(b, *benchBatches) {
					b.Run(fmt.Sprintf("grain%d/batch%d", grain, n), func(b *testing.B) {
						c := DefaultConfig()
						c.LPs, c.Grain = max(n, 1), grain
						k := BatchKernel(c)
						var bs [gpuoffload.MaxInFlight]gpuoffload.Batch
						for j := range bs {
							bs[j].Reset(n, k)
							for i := range n {
								bs[j].Set(i, uint32(i), float64(j), rng.New(1, uint64(i)), kernel.Words{})
							}
						}
						var ps [gpuoffload.MaxInFlight]gpuoffload.Pending
						for b.Loop() {
							for j := range bs {
								if ps[j], err = back.Submit(k, &bs[j]); err != nil {
									b.Fatal(err)
								}
							}
							for _, p := range ps {
								if err := p.Wait(); err != nil {
									b.Fatal(err)
								}
							}
						}
						b.ReportMetric(float64(len(bs)*n*b.N)/b.Elapsed().Seconds(), "events/s")
					})
				}
			}
		})
	}
}
