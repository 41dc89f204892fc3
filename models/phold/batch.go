package phold

import (
	"math"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
)

// BatchKernelName is the CUDA entry point of PHOLD's batch kernel.
const BatchKernelName = "warped_phold_handle"

// StateWords is the number of batch state words of a PHOLD LP: Events, Remote, Work.
const StateWords = 3

// Parameter words of the batch kernel (gpuoffload.Kernel.Params).
const (
	paramRemote    = iota // math.Float64bits(Remote)
	paramMean             // math.Float64bits(Mean)
	paramLookahead        // math.Float64bits(Lookahead)
	paramGrain            // Grain
	paramLPs              // LPs: the number of LPs in the simulation
	numParams
)

// PackState writes lp's state into dst[0:StateWords]: Events, Remote, Work.
func PackState(lp *LP, dst []uint64) {
	dst[0], dst[1], dst[2] = lp.S.Events, lp.S.Remote, uint64(lp.S.Work)
}

// UnpackState sets lp's state from src[0:StateWords] (written by PackState or a batch
// kernel).
func UnpackState(lp *LP, src []uint64) {
	lp.S = State{Events: src[0], Remote: src[1], Work: uint32(src[2])}
}

// BatchKernel implements kernel.Batcher: every PHOLD event is handled by the model's batch
// kernel (the package function BatchKernel for its configuration, built once by New).
func (lp *LP) BatchKernel(*kernel.Event) *gpuoffload.Kernel { return lp.cfg.batch }

// PackState implements kernel.Batcher with the package function PackState.
func (lp *LP) PackState(dst []uint64) { PackState(lp, dst) }

// UnpackState implements kernel.Batcher with the package function UnpackState.
func (lp *LP) UnpackState(src []uint64) { UnpackState(lp, src) }

// BatchKernel returns PHOLD's batch kernel for configuration c, which must be valid. For
// each element it does exactly what (*LP).Handle does for one event of the LP in a
// simulation of c.LPs LPs (as New makes): count the event, fold Grain steps of busy work
// into Work, draw the destination (remote with probability Remote, then a uniform LP) and
// the delay (Lookahead plus an exponential with mean Mean-Lookahead) from the LP's
// generator, and send one event with an empty payload (one output slot, never
// overflowing). The state words are PackState's; the event's payload is not read. The Go
// twin calls the same code as Handle, and the CUDA source is its transliteration with
// package rng's arithmetic (warped.cuh), so the results are identical bit for bit.
func BatchKernel(c Config) *gpuoffload.Kernel {
	cfg := c
	twin := &LP{cfg: &model{Config: c}}
	params := make([]uint64, numParams)
	params[paramRemote] = math.Float64bits(c.Remote)
	params[paramMean] = math.Float64bits(c.Mean)
	params[paramLookahead] = math.Float64bits(c.Lookahead)
	params[paramGrain] = uint64(c.Grain)
	params[paramLPs] = uint64(c.LPs)
	return &gpuoffload.Kernel{
		Name:       BatchKernelName,
		Source:     batchSource,
		StateWords: StateWords,
		OutSlots:   1,
		Params:     params,
		Go: func(b *gpuoffload.Batch, i int) {
			st := b.StateOf(i)
			s := State{Events: st[0], Remote: st[1], Work: uint32(st[2])}
			g := b.Gen(i)
			// The body of Handle, on s and g instead of the LP and its context.
			s.Events++
			if n := cfg.Grain; n > 0 {
				s.Work ^= Work(g, n)
			}
			dest := b.LP[i]
			if g.Uniform() <= cfg.Remote {
				dest = kernel.LPID(g.Range(0, uint64(cfg.LPs-1)))
				s.Remote++
			}
			at := b.Time[i] + twin.delay(&g)
			st[0], st[1], st[2] = s.Events, s.Remote, uint64(s.Work)
			b.SetGen(i, g)
			b.SetOut(i, 0, dest, at, kernel.Words{})
			b.OutCount[i] = 1
			b.Overflow[i] = 0
		},
	}
}

// batchWork is the CUDA text of phold.Work, shared by the batch kernel and the device
// model (compiled after gpuoffload.Header).
const batchWork = `
// warped_phold_work is phold.Work: n steps of a copy of g, the outputs XOR-folded.
__device__ __forceinline__ warped_u32 warped_phold_work(WarpedXORWOW g, warped_u64 n) {
    warped_u32 acc = 0, d = g.d, v0 = g.v0, v1 = g.v1, v2 = g.v2, v3 = g.v3, v4 = g.v4;
    warped_u64 k;
    for (k = n / 5u; k != 0; k--) {
        WARPED_XORWOW_FWD(v0, v4); d += WARPED_WEYL; acc ^= v0 + d;
        WARPED_XORWOW_FWD(v1, v0); d += WARPED_WEYL; acc ^= v1 + d;
        WARPED_XORWOW_FWD(v2, v1); d += WARPED_WEYL; acc ^= v2 + d;
        WARPED_XORWOW_FWD(v3, v2); d += WARPED_WEYL; acc ^= v3 + d;
        WARPED_XORWOW_FWD(v4, v3); d += WARPED_WEYL; acc ^= v4 + d;
    }
    for (k = n % 5u; k != 0; k--) {
        warped_u32 t = v0 ^ (v0 >> 2);
        v0 = v1;
        v1 = v2;
        v2 = v3;
        v3 = v4;
        v4 = (v4 ^ (v4 << 4)) ^ (t ^ (t << 1));
        d += WARPED_WEYL;
        acc ^= v4 + d;
    }
    return acc;
}
`

// batchSource is the CUDA text of the batch kernel (compiled after gpuoffload.Header).
const batchSource = batchWork + `
// warped_phold_handle is (*phold.LP).Handle for one event per thread.
// params: remote, mean, lookahead (float64 bits), grain, number of LPs.
extern "C" __global__ void warped_phold_handle(WarpedBatch b) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    const double remote = warped_bits_f64(b.params[0]);
    const double mean = warped_bits_f64(b.params[1]);
    const double lookahead = warped_bits_f64(b.params[2]);
    const warped_u64 grain = b.params[3];
    const warped_u64 lps = b.params[4];

    warped_u64* s = b.state + (warped_u64)b.state_words * i;
    warped_u64 events = s[0], remote_count = s[1];
    warped_u32 work = (warped_u32)s[2];
    WarpedXORWOW g = warped_rng_load(b.rng, b.n, i);

    events++;
    if (grain > 0) {
        work ^= warped_phold_work(g, grain);
    }
    warped_u32 dest = b.lp[i];
    if (warped_uniform(&g) <= remote) {
        dest = (warped_u32)warped_range(&g, 0, lps - 1);
        remote_count++;
    }
    const double delay = lookahead + warped_exponential(&g, mean - lookahead);

    const warped_u64 o = (warped_u64)b.out_slots * i;
    b.out_to[o] = dest;
    b.out_time[o] = b.time[i] + delay;
    warped_u64* w = b.out_words + 4ull * o;
    w[0] = 0;
    w[1] = 0;
    w[2] = 0;
    w[3] = 0;
    b.out_count[i] = 1;
    b.overflow[i] = 0;
    s[0] = events;
    s[1] = remote_count;
    s[2] = work;
    warped_rng_store(b.rng, b.n, i, g);
}
`
