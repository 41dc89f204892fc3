package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/rng"
)

// cpuBackend returns a CPU offload backend closed at the end of the test.
func cpuBackend(t *testing.T) gpuoffload.Backend {
	t.Helper()
	be := gpuoffload.NewCPU(2)
	t.Cleanup(func() { _ = be.Close() })
	return be
}

// pholdModel builds PHOLD with 64 LPs, two start events each, and the given grain.
func pholdModel(t *testing.T, grain int) func() []kernel.LogicalProcess {
	return func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs, c.StartEvents, c.Grain = 64, 2, grain
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
}

// TestOffloadDeterminismMatrix runs PHOLD with batched event handling on the CPU backend,
// with fixed batch sizes and a tuned one (a short tuning window, so that the size changes
// during the run), periodic state saving and reverse computation, aggressive and lazy
// cancellation, every rollback checked: the digest is the sequential one, batches really
// ran, and in the rollback-heavy configuration rollbacks really happened (CheckRollbacks
// then compares each coast-forward re-execution by Handle with what the batch produced).
func TestOffloadDeterminismMatrix(t *testing.T) {
	be := cpuBackend(t)
	for _, m := range []struct {
		name  string
		end   float64
		build func() []kernel.LogicalProcess
		tw    kernel.TimeWarpConfig
	}{
		// End times under the race detector: racesize_test.go.
		{"phold", underRace(30.0, 12), pholdModel(t, 0), kernel.TimeWarpConfig{Workers: 2, StateSavingPeriod: 3}},
		{"phold-rollbacks", underRace(10.0, 4), zeroLookaheadPHOLD(t, 64, 4),
			kernel.TimeWarpConfig{Workers: 4, Schedulers: 2, StateSavingPeriod: 4}},
		{"phold-grain", underRace(20.0, 8), pholdModel(t, 300), kernel.TimeWarpConfig{Workers: 3, StateSavingPeriod: 2,
			OptimismWindow: 2}},
	} {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 7}, m.build())
		var rolled uint64
		for _, size := range []int{1, 7, 64, 0} {
			for _, ss := range []string{"periodic", "reverse"} {
				for _, c := range []string{"aggressive", "lazy"} {
					tw := m.tw
					tw.Offload, tw.BatchSize, tw.StateSaving, tw.Cancellation = be, size, ss, c
					tw.CheckRollbacks, tw.TuneWindow = true, 200*time.Microsecond
					t.Run(fmt.Sprintf("%s/batch%d-%s-%s", m.name, size, ss, c), func(t *testing.T) {
						in := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 7, TimeWarp: tw}, m.build())
						require.Equal(t, seq.Digest, in.Digest)
						require.Equal(t, seq.EventsCommitted, in.EventsCommitted)
						require.NotZero(t, in.BatchedEvents, "no event was handled in a batch")
						require.NotZero(t, in.OffloadBatches)
						require.LessOrEqual(t, in.BatchedEvents, in.EventsProcessed)
						require.Empty(t, in.OffloadNote)
						rolled += in.EventsRolledBack
					})
				}
			}
		}
		if m.name == "phold-rollbacks" {
			require.NotZero(t, rolled, "no rollback happened with offload")
		}
	}
}

// TestOffloadAutoKeepsResults runs the auto mode (the tuner may turn batching off and on)
// with a very short window: whatever it decides, the result is the sequential one.
func TestOffloadAutoKeepsResults(t *testing.T) {
	be := cpuBackend(t)
	build := pholdModel(t, 20)
	seq := run(t, kernel.Config{MaxSimTime: 60, Seed: 3}, build())
	for _, size := range []int{0, 16} {
		in := runTW(t, kernel.Config{MaxSimTime: 60, Seed: 3, TimeWarp: kernel.TimeWarpConfig{Workers: 2,
			Offload: be, BatchSize: size, OffloadAuto: true, CheckRollbacks: true, TuneWindow: 50 * time.Microsecond}}, build())
		require.Equal(t, seq.Digest, in.Digest)
		require.Empty(t, in.OffloadNote)
	}
}

// TestOffloadModelWithoutBatcher runs PCS, whose LPs have no batch kernel, with a backend
// set: every event goes through Handle, and the result is unchanged.
func TestOffloadModelWithoutBatcher(t *testing.T) {
	be := cpuBackend(t)
	var pcs model
	for _, m := range smallModels(t) {
		if m.name == "pcs" {
			pcs = m
		}
	}
	// PCS has batch kernels; wrapping its cells in an interface value hides them (and every
	// other optional method), so the offloader finds no Batcher.
	plain := func() []kernel.LogicalProcess {
		lps := pcs.build()
		for i, lp := range lps {
			lps[i] = struct{ kernel.LogicalProcess }{lp}
		}
		return lps
	}
	seq := run(t, kernel.Config{MaxSimTime: pcs.end, Seed: 5}, plain())
	for _, auto := range []bool{false, true} {
		in := runTW(t, kernel.Config{MaxSimTime: pcs.end, Seed: 5, TimeWarp: kernel.TimeWarpConfig{Workers: 3,
			Offload: be, OffloadAuto: auto, Cancellation: "lazy", CheckRollbacks: true}}, plain())
		require.Equal(t, seq.Digest, in.Digest)
		require.Zero(t, in.BatchedEvents)
		require.Zero(t, in.OffloadBatches)
	}
}

// mixedLP is a PHOLD LP whose batch kernel overflows now and then, and which leaves every
// fourth event of a sender to Handle: a batch mixes events handled by the kernel, by
// Handle because they have no kernel, and by Handle because they overflowed.
type mixedLP struct {
	*phold.LP
	k *gpuoffload.Kernel
}

func (m *mixedLP) BatchKernel(ev *kernel.Event) *gpuoffload.Kernel {
	if ev.Seq%4 == 3 {
		return nil
	}
	return m.k
}

// overflowing wraps PHOLD's kernel: an element whose LP and event count are both even
// overflows, leaving garbage that must be discarded.
func overflowing(inner *gpuoffload.Kernel) *gpuoffload.Kernel {
	k := *inner
	k.Name = "test_overflowing"
	k.Go = func(b *gpuoffload.Batch, i int) {
		inner.Go(b, i)
		if b.LP[i]%2 == 0 && b.StateOf(i)[0]%2 == 0 {
			b.Overflow[i] = 1
			b.StateOf(i)[0] = 12345
			b.SetGen(i, rng.XORWOW{})
			b.SetOut(i, 0, 0, -1, kernel.Words{1, 2, 3, 4})
		}
	}
	return &k
}

func mixedModel(t *testing.T) func() []kernel.LogicalProcess {
	return func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs, c.StartEvents, c.Lookahead = 48, 3, 0.05
		lps, err := phold.New(c)
		require.NoError(t, err)
		k := overflowing(phold.BatchKernel(c))
		for i, lp := range lps {
			lps[i] = &mixedLP{LP: lp.(*phold.LP), k: k}
		}
		return lps
	}
}

func TestOffloadOverflowAndMixedEvents(t *testing.T) {
	be := cpuBackend(t)
	build := mixedModel(t)
	seq := run(t, kernel.Config{MaxSimTime: 25, Seed: 11}, build())
	for _, c := range []string{"aggressive", "lazy"} {
		for _, ss := range []string{"periodic", "reverse"} {
			in := runTW(t, kernel.Config{MaxSimTime: 25, Seed: 11, TimeWarp: kernel.TimeWarpConfig{Workers: 3,
				Offload: be, BatchSize: 32, Cancellation: c, StateSaving: ss, CheckRollbacks: true}}, build())
			require.Equal(t, seq.Digest, in.Digest, "%s %s", c, ss)
			require.NotZero(t, in.BatchedEvents)
			// At least the events without a kernel were handled by Handle.
			require.Less(t, in.BatchedEvents, in.EventsProcessed*4/5)
		}
	}
}

// faultyBackend is the CPU backend with faults: Prepare fails, or Submit and Run fail
// once a number of batches has run, or Submit always finds every slot taken.
type faultyBackend struct {
	gpuoffload.Backend
	failPrepare bool
	left        atomic.Int64 // batches before Submit and Run fail (negative: never)
	busy        bool
}

var errDeviceGone = errors.New("gpuoffload: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (test)\nsecond line")

func newFaulty(t *testing.T, left int64) *faultyBackend {
	f := &faultyBackend{Backend: cpuBackend(t)}
	f.left.Store(left)
	return f
}

func (f *faultyBackend) Prepare(k *gpuoffload.Kernel) error {
	if f.failPrepare {
		return fmt.Errorf("gpuoffload: kernel %s: NVRTC compile failed (test)", k.Name)
	}
	return f.Backend.Prepare(k)
}

func (f *faultyBackend) fail() bool { return f.left.Load() >= 0 && f.left.Add(-1) < 0 }

func (f *faultyBackend) Submit(k *gpuoffload.Kernel, b *gpuoffload.Batch) (gpuoffload.Pending, error) {
	if f.busy {
		return nil, gpuoffload.ErrBusy
	}
	if f.fail() {
		return nil, errDeviceGone
	}
	return f.Backend.Submit(k, b)
}

func (f *faultyBackend) Run(k *gpuoffload.Kernel, b *gpuoffload.Batch) error {
	if f.fail() {
		return errDeviceGone
	}
	return f.Backend.Run(k, b)
}

// TestOffloadFaults: a backend error fails the run without OffloadAuto, naming the
// backend, and with it turns offload off with a note, the run going on to the sequential
// result; a backend that never has a free slot for Submit is used through Run.
func TestOffloadFaults(t *testing.T) {
	build := pholdModel(t, 0)
	end := underRace(40.0, 16) // racesize_test.go
	seq := run(t, kernel.Config{MaxSimTime: end, Seed: 2}, build())
	cfg := func(be gpuoffload.Backend, auto bool) kernel.Config {
		return kernel.Config{MaxSimTime: end, Seed: 2, Type: kernel.TimeWarp, TimeWarp: kernel.TimeWarpConfig{
			Workers: 2, Offload: be, BatchSize: 8, OffloadAuto: auto, TuneWindow: 20 * time.Microsecond}}
	}

	// Without auto: the run fails.
	bad := newFaulty(t, 3)
	_, err := dispatch.RunTimeWarpInternals(context.Background(), cfg(bad, false), build())
	require.ErrorIs(t, err, errDeviceGone)
	require.ErrorContains(t, err, "gpu offload on cpu: gpuoffload: cuLaunchKernel")
	noCompile := newFaulty(t, -1)
	noCompile.failPrepare = true
	_, err = dispatch.RunTimeWarpInternals(context.Background(), cfg(noCompile, false), build())
	require.ErrorContains(t, err, "gpu offload on cpu: gpuoffload: kernel warped_phold_handle: NVRTC compile failed (test)")

	// With auto: offload goes off, the note says why on one line, and the result stands.
	for _, be := range []*faultyBackend{newFaulty(t, 3), noCompile} {
		in := runTW(t, cfg(be, true), build())
		require.Equal(t, seq.Digest, in.Digest)
		require.Equal(t, seq.EventsCommitted, in.EventsCommitted)
		if be.failPrepare {
			require.Equal(t, "gpu offload off: cpu failed: kernel warped_phold_handle: NVRTC compile failed (test); "+
				"the run went on without it", in.OffloadNote)
			require.Zero(t, in.OffloadBatches)
		} else if in.OffloadBatches > 3 || in.OffloadNote != "" {
			// The tuner probed batching long enough to meet the fault.
			require.Equal(t, "gpu offload off: cpu failed: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (test); "+
				"the run went on without it", in.OffloadNote)
		}
	}

	// Every Submit finds the slots taken: batches run through Run.
	busy := newFaulty(t, -1)
	busy.busy = true
	in := runTW(t, cfg(busy, false), build())
	require.Equal(t, seq.Digest, in.Digest)
	require.NotZero(t, in.BatchedEvents)
}

func TestOffloadConfigErrors(t *testing.T) {
	for _, n := range []int{-1, kernel.MaxBatchSize + 1} {
		_, err := dispatch.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{BatchSize: n}}, pingPong())
		require.ErrorContains(t, err, "time-warp offload batch size must be in [0, 1048576] (0: tuned)")
	}
}

// TestOffloadSharedQueue forms offload batches from a schedule queue shared by two workers
// (group.go) and checks the sequential digest, with lazy cancellation and every rollback
// checked.
func TestOffloadSharedQueue(t *testing.T) {
	be := cpuBackend(t)
	build := pholdModel(t, 0)
	seq := run(t, kernel.Config{MaxSimTime: 30, Seed: 7}, build())
	for _, c := range []string{"aggressive", "lazy"} {
		in := runTW(t, kernel.Config{MaxSimTime: 30, Seed: 7, TimeWarp: kernel.TimeWarpConfig{Workers: 2,
			Schedulers: 1, Offload: be, BatchSize: 16, Cancellation: c,
			CheckRollbacks: true}}, build())
		require.Equal(t, seq.Digest, in.Digest, c)
		require.NotZero(t, in.BatchedEvents, c)
		require.Equal(t, "calendar, 1 shared by 2 workers", in.ScheduleQueues)
	}
}
