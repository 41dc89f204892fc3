//go:build linux

package pcs

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// The device model's tests run the device loop (package gpuwarp) on a GPU where there is a
// driver, else on the CUDA stand-in (package gpuoffload/standin), which TestMain builds
// with the system C++ compiler; without either they skip, saying why. The driver is loaded
// once per process, so TestMain sets it up before any test: the batch tests' "cuda"
// backend then runs on the stand-in too.

// noDevice says why no CUDA library is available, or "".
var noDevice string

func TestMain(m *testing.M) { standin.Main(m.Run, &noDevice) }

// needDevice skips the test when there is no CUDA library.
func needDevice(t *testing.T) {
	t.Helper()
	if noDevice != "" {
		t.Skip(noDevice)
	}
}

// runType runs PCS c to end with dispatcher typ and returns the result and PCS's totals.
func runType(t *testing.T, c Config, end float64, typ string, g kernel.GPUConfig) (kernel.Result, Results) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 5, Type: typ, GPU: g}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps)
}

// TestDeviceDigest checks that the device loop gives the sequential digest and results:
// with the defaults on a small torus (lists sized from the 50 portables a cell), with 32
// slots (fewer than a cell's portables, so lists overflow from the start), longer moves, few channels (many blocked calls
// and hand-offs, whose reversal is the subtle one) with unbounded optimism, tuned, tight
// and unbounded bounds, 1 and 3 executions, and lists of 8 slots.
func TestDeviceDigest(t *testing.T) {
	needDevice(t)
	for _, tc := range []struct {
		name     string
		end      float64
		mod      func(*Config)
		gpu      kernel.GPUConfig
		overflow bool // lists must have put events back in transit
	}{
		{"sized slots", 200, nil, kernel.GPUConfig{}, false},
		{"32 slots", 200, nil, kernel.GPUConfig{Slots: 32}, true},
		{"max hops 3, 32 slots", 150, func(c *Config) { c.MaxHops = 3 }, kernel.GPUConfig{Slots: 32}, true},
		// At LP 90, an event sent at 86 to itself for 173 is rolled back while it waits in
		// transit (the list is closed above an earlier refused event), and the re-execution
		// sends an event of the same key (receive time, send time, depth, sender, sequence)
		// with other words; the anti-message must mark the stale one, not the new one.
		{"max hops 3, same-key resend", 200, func(c *Config) { c.MaxHops = 3 }, kernel.GPUConfig{Bound: 1, Slots: 32}, true},
		{"short intervals, max hops 3, same-key resends", 250,
			func(c *Config) {
				c.MaxHops, c.Channels, c.Portables, c.CallInterval, c.CallDuration, c.MoveInterval = 3, 3, 20, 60, 30, 40
			},
			kernel.GPUConfig{Slots: 32}, true},
		{"2 channels, unbounded", 150, func(c *Config) { c.Channels, c.Portables = 2, 12 },
			kernel.GPUConfig{Bound: math.Inf(1)}, false},
		{"1 channel, short calls, unbounded, 3 executions", 150,
			func(c *Config) {
				c.Channels, c.Portables, c.CallInterval, c.CallDuration, c.MoveInterval = 1, 8, 20, 30, 15
			},
			kernel.GPUConfig{Bound: math.Inf(1), Executions: 3}, false},
		{"tight bound, 1 execution", 150, func(c *Config) { c.Channels, c.Portables = 3, 10 }, kernel.GPUConfig{Bound: 2, Executions: 1}, false},
		{"8 slots, unbounded", 120, func(c *Config) { c.Channels, c.Portables = 3, 12 },
			kernel.GPUConfig{Slots: 8, Bound: math.Inf(1)}, true},
		{"8 slots, 3 executions, max hops 2", 120, func(c *Config) { c.Channels, c.Portables, c.MaxHops = 3, 6, 2 },
			kernel.GPUConfig{Slots: 8, Executions: 3, Bound: 20}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.CellsX, c.CellsY = 10, 10
			if tc.mod != nil {
				tc.mod(&c)
			}
			want, wantRes := runType(t, c, tc.end, kernel.Sequential, kernel.GPUConfig{})
			got, gotRes := runType(t, c, tc.end, kernel.GPU, tc.gpu)
			require.Equal(t, want.Digest, got.Digest)
			require.Equal(t, wantRes, gotRes)
			require.Equal(t, want.Stats.EventsCommitted, got.Stats.EventsCommitted)
			require.Equal(t, want.Stats.FinalTime, got.Stats.FinalTime)
			require.NotZero(t, got.Stats.EventsRolledBack, "nothing rolled back: the reverse handler was not run")
			if tc.overflow {
				require.NotZero(t, got.Stats.DeviceReturned, "the lists never overflowed: the case tests nothing")
			}
			t.Logf("%+v: %d committed, %d processed, %d rolled back, %d returned, %d iterations", wantRes,
				got.Stats.EventsCommitted, got.Stats.EventsProcessed, got.Stats.EventsRolledBack, got.Stats.DeviceReturned,
				got.Stats.DeviceIterations)
		})
	}
}

// TestDeviceThreadOrder runs PCS's device loop with the stand-in running each launch's
// threads reversed and shuffled, where lists overflow and same-key events are resent: a
// GPU runs them in no order, so handlers or loop kernels that read what another thread
// of the launch writes would give another digest here than in order (a race on a GPU).
// On a GPU it skips (TestDeviceDigest runs there).
func TestDeviceThreadOrder(t *testing.T) {
	needDevice(t)
	c := DefaultConfig()
	c.CellsX, c.CellsY, c.MaxHops = 10, 10, 3
	want, wantRes := runType(t, c, 200, kernel.Sequential, kernel.GPUConfig{})
	for _, order := range []string{"reverse", "shuffle:5"} {
		t.Run(order, func(t *testing.T) {
			standin.ThreadOrder(t, order)
			for _, g := range []kernel.GPUConfig{{Bound: 1, Slots: 32}, {Bound: math.Inf(1), Executions: 3}} {
				got, gotRes := runType(t, c, 200, kernel.GPU, g)
				require.Equal(t, want.Digest, got.Digest, "%+v", g)
				require.Equal(t, wantRes, gotRes, "%+v", g)
			}
		})
	}
}

// TestDeviceModelBuiltOnce checks that every cell returns the one device model New built,
// with the batch kernels' parameters, one output slot and payload words, and that a call
// duration of mean 0, which Reverse cannot undo, has none (so --simulation-type gpu says
// the model has no device code).
func TestDeviceModelBuiltOnce(t *testing.T) {
	c := small()
	lps, err := New(c)
	require.NoError(t, err)
	m := lps[0].(*Cell).DeviceModel()
	require.NotNil(t, m)
	for _, l := range lps {
		require.Same(t, m, l.(kernel.DeviceModeler).DeviceModel())
	}
	require.Equal(t, DeviceStateWords, m.StateWords)
	require.Equal(t, 1, m.OutSlots, "every PCS event sends exactly one event")
	require.True(t, m.Words)
	require.Equal(t, BatchKernels(c)[0].Params, m.Params)
	require.Equal(t, m, DeviceModel(c))

	c.CallDuration = 0
	require.Nil(t, DeviceModel(c))
	lps, err = New(c)
	require.NoError(t, err)
	require.Nil(t, lps[0].(*Cell).DeviceModel())
	s, err := dispatch.New(kernel.Config{MaxSimTime: 50, Type: kernel.GPU}, lps)
	if err == nil {
		_, err = s.Run(context.Background())
	}
	require.ErrorContains(t, err, "has no device code")
}

// TestDevicePackState checks that PackState zeroes the device's extra word and UnpackState
// ignores it.
func TestDevicePackState(t *testing.T) {
	lps, err := New(small())
	require.NoError(t, err)
	cell := lps[0].(*Cell)
	cell.S = State{IdleChannels: 3, CallAttempts: 4, ChannelBlocks: 5, HandoffBlocks: 6}
	words := []uint64{9, 9, 9, 9, 9}
	cell.PackState(words)
	require.Equal(t, []uint64{3, 4, 5, 6, 0}, words)
	words[4] = 77
	cell.S = State{}
	cell.UnpackState(words)
	require.Equal(t, State{IdleChannels: 3, CallAttempts: 4, ChannelBlocks: 5, HandoffBlocks: 6}, cell.S)
}

// deviceTestKernel runs the device model's wtw_handle and then wtw_reverse (given the
// generator as wtw_handle found it) on each element: slot 0 gets the event wtw_handle
// sent, slot 1 the state words it left (the Weyl word as slot 1's receiver), the element's
// state what wtw_reverse left, and its generator wtw_handle's. Its Go twin is step, with
// the state restored.
func deviceTestKernel(c Config) *gpuoffload.Kernel {
	m := newShared(c)
	return &gpuoffload.Kernel{
		Name: "warped_pcs_test_device",
		Source: deviceSource + `
extern "C" __global__ void warped_pcs_test_device(WarpedBatch b) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    warped_u64* s = b.state + (warped_u64)b.state_words * i;
    const warped_u64* ev = b.ev_words + 4ull * i;
    const warped_u32 lps = (warped_u32)(b.params[0] * b.params[1]);
    const WarpedXORWOW g0 = warped_rng_load(b.rng, b.n, i);
    WarpedXORWOW g = g0;
    const warped_u64 o = (warped_u64)b.out_slots * i;
    warped_u32 n = wtw_handle(b.params, s, &g, b.lp[i], lps, b.time[i], ev, b.out_to + o, b.out_time + o,
                              b.out_words + 4ull * o);
    b.out_to[o + 1] = (warped_u32)s[4];
    b.out_time[o + 1] = 0.0;
    for (int k = 0; k < 4; k++) {
        b.out_words[4ull * (o + 1) + k] = s[k];
    }
    wtw_reverse(b.params, s, g0, b.lp[i], lps, b.time[i], ev);
    b.out_count[i] = n + 1u;
    b.overflow[i] = 0;
    warped_rng_store(b.rng, b.n, i, g);
}
`,
		StateWords: DeviceStateWords,
		OutSlots:   2,
		Params:     m.params(),
		Go: func(b *gpuoffload.Batch, i int) {
			st := b.StateOf(i)
			s := State{IdleChannels: st[0], CallAttempts: st[1], ChannelBlocks: st[2], HandoffBlocks: st[3]}
			g := b.Gen(i)
			to, ts, w := m.step(kernel.LPID(b.LP[i]), b.LP[i], &s, &g, b.Ev(i))
			b.SetOut(i, 0, to, float64(ts), w)
			b.SetOut(i, 1, g.D, 0, kernel.Words{s.IdleChannels, s.CallAttempts, s.ChannelBlocks, s.HandoffBlocks})
			b.SetGen(i, g)
			b.OutCount[i], b.Overflow[i] = 2, 0
		},
	}
}

// TestDeviceReverseUndoesHandle runs the device handlers' CUDA text (as host C++, on the
// stand-in or a GPU where there is one) on random states, events and generators, as
// TestReverseUndoesStep does Go's: wtw_handle does what step does, bit for bit, and
// wtw_reverse, given the generator as wtw_handle found it and the Weyl word wtw_handle
// kept, restores the state, whichever branch the handling took; with WARPED2's means,
// with the smallest a reversible configuration allows (no draws for the call and move
// intervals, call duration 1), and with PTRS means and longer moves.
func TestDeviceReverseUndoesHandle(t *testing.T) {
	configs := []Config{DefaultConfig(),
		{CellsX: 5, CellsY: 3, Channels: 2, CallInterval: 0, CallDuration: 1, MoveInterval: 0, Portables: 1, MaxHops: 1},
		{CellsX: 7, CellsY: 9, Channels: 2, CallInterval: 30, CallDuration: 12, MoveInterval: 3, Portables: 1, MaxHops: 4},
	}
	for _, be := range backends()[1:] {
		t.Run(be.name, func(t *testing.T) {
			b := openOrSkip(t, be.name, be.open)
			r := rand.New(rand.NewPCG(3, 4))
			for _, c := range configs {
				k := deviceTestKernel(c)
				const n = 4000
				var batch gpuoffload.Batch
				batch.Reset(n, k)
				for i := range n {
					g := randomGen(r)
					w := kernel.Words{uint64(i % numMethods), r.Uint64N(300), r.Uint64N(300), r.Uint64N(300)}
					batch.Set(i, uint32(r.IntN(c.CellsX*c.CellsY)), 0, g, w)
					copy(batch.StateOf(i), []uint64{r.Uint64N(3), r.Uint64N(100) + 10, r.Uint64N(100) + 10,
						r.Uint64N(100) + 10, uint64(g.D)})
				}
				want := goTwin(k, &batch)
				require.NoError(t, b.Run(k, &batch))
				requireSameResults(t, want, &batch, fmt.Sprintf("%+v", c))
				branches := map[[2]uint64]bool{} // (kind, change in ChannelBlocks) seen
				for i := range n {
					for s := range 2 {
						wt, wat, ww := want.Out(i, s)
						gt, gat, gw := batch.Out(i, s)
						require.Equal(t, []any{wt, math.Float64bits(wat), ww}, []any{gt, math.Float64bits(gat), gw},
							"%+v: element %d, slot %d", c, i, s)
					}
					_, _, after := want.Out(i, 1)
					branches[[2]uint64{batch.Ev(i)[0], after[2] - want.StateOf(i)[2]}] = true
				}
				require.True(t, branches[[2]uint64{uint64(NextCall), 1}], "%+v: no call was blocked", c)
				require.True(t, branches[[2]uint64{uint64(NextCall), 0}], "%+v: no call took a channel", c)
				require.True(t, branches[[2]uint64{uint64(MoveCallIn), 1}], "%+v: no hand-off was blocked", c)
			}
		})
	}
}
