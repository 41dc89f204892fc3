package pcs

import (
	"math"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
)

var _ kernel.Batcher = (*Cell)(nil)

// StateWords is the number of batch state words of a cell: IdleChannels, CallAttempts,
// ChannelBlocks, HandoffBlocks.
const StateWords = 4

// numMethods is the number of event kinds (Method values), each with its batch kernel.
const numMethods = 4

// kernelNames are the CUDA entry points of the batch kernels, by event kind.
var kernelNames = [numMethods]string{
	NextCall:     "warped_pcs_next_call",
	CompleteCall: "warped_pcs_complete_call",
	MoveCallIn:   "warped_pcs_move_call_in",
	MoveCallOut:  "warped_pcs_move_call_out",
}

// Parameter words of the batch kernels (gpuoffload.Kernel.Params), the same for all four:
// the torus's size, the three delay samplers (see poissonWords), then MaxHops.
const (
	paramCellsX       = 0
	paramCellsY       = 1
	paramCallInterval = 2
	paramCallDuration = paramCallInterval + poissonParams
	paramMoveInterval = paramCallDuration + poissonParams
	paramMaxHops      = paramMoveInterval + poissonParams
	numParams         = paramMaxHops + 1
)

// poissonParams is the number of parameter words of a delay sampler: its mean and
// rng.NewPoisson's PTRS constants loglam, a, b, vr and log(1/alpha), as float64 bits.
const poissonParams = 6

// poissonWords returns the parameter words of sampler p: its mean and its transformed-
// rejection constants (rng.Poisson.PTRS, zero below rng.PTRSMean, where they are not
// used), so that the CUDA sampler reads them instead of recomputing them for every event.
func poissonWords(p *kernel.Poisson) [poissonParams]uint64 {
	loglam, a, b, vr, logInvalpha := p.PTRS()
	return [poissonParams]uint64{math.Float64bits(p.Mean()), math.Float64bits(loglam), math.Float64bits(a),
		math.Float64bits(b), math.Float64bits(vr), math.Float64bits(logInvalpha)}
}

// PackState writes cell's state into dst[0:StateWords]: IdleChannels, CallAttempts,
// ChannelBlocks, HandoffBlocks.
func PackState(cell *Cell, dst []uint64) {
	s := &cell.S
	dst[0], dst[1], dst[2], dst[3] = s.IdleChannels, s.CallAttempts, s.ChannelBlocks, s.HandoffBlocks
}

// UnpackState sets cell's state from src[0:StateWords] (written by PackState or a batch
// kernel).
func UnpackState(cell *Cell, src []uint64) {
	cell.S = State{IdleChannels: src[0], CallAttempts: src[1], ChannelBlocks: src[2], HandoffBlocks: src[3]}
}

// BatchKernel implements kernel.Batcher: each event kind (Words[0]) has its own batch
// kernel (see BatchKernels; New builds them once per model), so that a batch holds events
// of one kind. An event of an unknown kind gets nil and goes to Handle, which panics on it.
func (c *Cell) BatchKernel(ev *kernel.Event) *gpuoffload.Kernel {
	if m := ev.Words[0]; m < numMethods {
		return c.cfg.batch[m]
	}
	return nil
}

// PackState implements kernel.Batcher with the package function PackState.
func (c *Cell) PackState(dst []uint64) { PackState(c, dst) }

// UnpackState implements kernel.Batcher with the package function UnpackState.
func (c *Cell) UnpackState(src []uint64) { UnpackState(c, src) }

// BatchKernels returns PCS's batch kernels for configuration c, which must be valid, indexed
// by Method: NextCall, CompleteCall, MoveCallIn and MoveCallOut. The kernel of kind m does
// for each element exactly what (*Cell).Handle does for an event of kind m at the cell
// whose LP id is the element's LP, in a simulation of the cells New makes (so that LP id
// and torus index coincide): update the state words (PackState's), draw the Poisson delays
// or the random move from the cell's generator, and send the portable's next event (one
// output slot, never overflowing: every PCS event causes exactly one). An element whose
// event is of another kind overflows, so that Handle handles it ((*Cell).BatchKernel never
// gives a kernel such an event). The Go twins call the same code as Handle, and the CUDA source is its transliteration
// with package rng's arithmetic (Poisson draws by counting below rng.PTRSMean and by PTRS
// from it, with warped_log and without fused multiply-add), so the results are identical
// bit for bit.
func BatchKernels(c Config) []*gpuoffload.Kernel { return newShared(c).kernels() }

// kernels builds the batch kernels of m; their Go twins use m's samplers.
func (m *shared) kernels() []*gpuoffload.Kernel {
	params := make([]uint64, numParams)
	params[paramCellsX] = uint64(m.CellsX)
	params[paramCellsY] = uint64(m.CellsY)
	for _, p := range []struct {
		off int
		p   *kernel.Poisson
	}{{paramCallInterval, &m.callInterval}, {paramCallDuration, &m.callDuration}, {paramMoveInterval, &m.moveInterval}} {
		w := poissonWords(p.p)
		copy(params[p.off:p.off+poissonParams], w[:])
	}
	params[paramMaxHops] = uint64(m.MaxHops)
	ks := make([]*gpuoffload.Kernel, numMethods)
	for kind := range Method(numMethods) {
		ks[kind] = &gpuoffload.Kernel{
			Name:       kernelNames[kind],
			Source:     batchSource,
			StateWords: StateWords,
			OutSlots:   1,
			Params:     params,
			Go:         func(b *gpuoffload.Batch, i int) { m.handleBatched(kind, b, i) },
		}
	}
	return ks
}

// handleBatched is the Go twin of the batch kernel of kind: Handle (step) for element i of
// b.
func (m *shared) handleBatched(kind Method, b *gpuoffload.Batch, i int) {
	ev := b.Ev(i)
	if Method(ev[0]) != kind {
		b.OutCount[i], b.Overflow[i] = 0, 1
		return
	}
	st := b.StateOf(i)
	s := State{IdleChannels: st[0], CallAttempts: st[1], ChannelBlocks: st[2], HandoffBlocks: st[3]}
	g := b.Gen(i)
	to, ts, w := m.step(kernel.LPID(b.LP[i]), b.LP[i], &s, &g, ev)
	st[0], st[1], st[2], st[3] = s.IdleChannels, s.CallAttempts, s.ChannelBlocks, s.HandoffBlocks
	b.SetGen(i, g)
	b.SetOut(i, 0, to, kernel.Time(ts), w)
	b.OutCount[i], b.Overflow[i] = 1, 0
}

// batchSource is the CUDA text of the four batch kernels (compiled after gpuoffload.Header).
// The constants given by their bits are those of package rng (rng.go), as Go rounds them.
const batchSource = `
// warped_pcs_abs is math.Abs: x with its sign bit cleared.
__device__ __forceinline__ double warped_pcs_abs(double x) {
    return warped_bits_f64(warped_f64_bits(x) & 0x7fffffffffffffffull);
}

// warped_pcs_floor is math.Floor, exactly, by the bits (no library call: the same text
// compiles with NVRTC and as host C++).
__device__ __forceinline__ double warped_pcs_floor(double x) {
    warped_u64 b = warped_f64_bits(x);
    const int e = (int)((b >> 52) & 0x7ffu) - 1023; // the unbiased exponent
    if (e >= 52) {
        return x; // a whole number, an infinity or NaN
    }
    if (e < 0) { // |x| < 1
        if ((b >> 63) == 0) {
            return 0.0; // [+0, 1)
        }
        return (b << 1) == 0 ? x : -1.0; // -0 stays -0; (-1, -0) gives -1
    }
    const warped_u64 frac = 0x000fffffffffffffull >> e; // the bits below the units
    if ((b & frac) == 0) {
        return x; // a whole number
    }
    if ((b >> 63) != 0) {
        b += 0x0010000000000000ull >> e; // negative: one unit more in magnitude
    }
    return warped_bits_f64(b & ~frac);
}

// warped_pcs_log_factorial is rng.LogFactorial: log(k!) by numpy's Stirling series.
__device__ double warped_pcs_log_factorial(double k) {
    double x = k + 1.0;
    if (x == 1.0 || x == 2.0) {
        return 0.0;
    }
    double n = 0.0;
    if (x < 7.0) {
        n = 7.0 - x;
    }
    double x0 = x + n;
    double x2 = (1.0 / x0) * (1.0 / x0);
    // gl0 folds rng.loggamCoef[9] down to [0] in with x2.
    double gl0 = warped_bits_f64(0xbff6476701181f35ull); // -1.39243221690590e+00
    gl0 = gl0 * x2 + warped_bits_f64(0x3fc6fe96381e0685ull); // 1.796443723688307e-01
    gl0 = gl0 * x2 + warped_bits_f64(0xbf9e4286cb0f5397ull); // -2.955065359477124e-02
    gl0 = gl0 * x2 + warped_bits_f64(0x3f7a41a41a41a41aull); // 6.410256410256410e-03
    gl0 = gl0 * x2 + warped_bits_f64(0xbf5f6ab0d9993c7full); // -1.917526917526918e-03
    gl0 = gl0 * x2 + warped_bits_f64(0x3f4b951e2b18ff24ull); // 8.417508417508418e-04
    gl0 = gl0 * x2 + warped_bits_f64(0xbf43813813813813ull); // -5.952380952380952e-04
    gl0 = gl0 * x2 + warped_bits_f64(0x3f4a01a01a01a01aull); // 7.936507936507937e-04
    gl0 = gl0 * x2 + warped_bits_f64(0xbf66c16c16c16c17ull); // -2.777777777777778e-03
    gl0 = gl0 * x2 + warped_bits_f64(0x3fb5555555555555ull); // 8.333333333333333e-02
    const double half_log_2pi = warped_bits_f64(0x3fed67f1c864beb4ull); // 0.9189385332046727 = 0.5 * 1.8378770664093453
    double gl = gl0 / x0 + half_log_2pi + (x0 - 0.5) * warped_log(x0) - x0;
    for (; n > 0.0; n = n - 1.0) {
        x0 = x0 - 1.0;
        gl = gl - warped_log(x0);
    }
    return gl;
}

// warped_pcs_poisson is rng's (*Poisson).Draw for the sampler whose parameter words (mean,
// loglam, a, b, vr, log(1/alpha): see poissonWords) are at p.
__device__ warped_u64 warped_pcs_poisson(const warped_u64* p, WarpedXORWOW* g) {
    const double mean = warped_bits_f64(p[0]);
    if (!(mean >= 10.0)) { // rng.PTRSMean: count the arrivals in [0, mean]
        if (!(mean > 0.0)) {
            return 0;
        }
        warped_u64 k = 0;
        double sum = 0.0;
        for (;;) {
            sum = sum - warped_log(warped_uniform(g));
            if (sum > mean) {
                return k;
            }
            k++;
        }
    }
    const double loglam = warped_bits_f64(p[1]);
    const double a = warped_bits_f64(p[2]);
    const double b = warped_bits_f64(p[3]);
    const double vr = warped_bits_f64(p[4]);
    const double log_invalpha = warped_bits_f64(p[5]);
    const double c013 = warped_bits_f64(0x3f8a9fbe76c8b439ull); // 0.013
    const double c07 = warped_bits_f64(0x3fb1eb851eb851ecull);  // 0.07
    const double c43 = warped_bits_f64(0x3fdb851eb851eb85ull);  // 0.43
    for (;;) {
        const double u = warped_uniform(g) - 0.5;
        const double v = warped_uniform(g);
        const double us = 0.5 - warped_pcs_abs(u);
        if (us == 0.0) {
            continue;
        }
        const double k = warped_pcs_floor((2.0 * a / us + b) * u + mean + c43);
        if (k < 0.0 || (us < c013 && v > us)) {
            continue;
        }
        if (us >= c07 && v <= vr) {
            return (warped_u64)k;
        }
        const double lhs = warped_log(v) + log_invalpha - warped_log(a / (us * us) + b);
        const double rhs = -mean + k * loglam - warped_pcs_log_factorial(k);
        if (lhs <= rhs) {
            return (warped_u64)k;
        }
    }
}

// warped_pcs_delay is pcs's delay: a Poisson draw plus one.
__device__ __forceinline__ warped_u64 warped_pcs_delay(const warped_u64* p, WarpedXORWOW* g) {
    return warped_pcs_poisson(p, g) + 1u;
}

// The event kinds (pcs.Method) and min_ts's answers (pcs.minTS).
#define WARPED_PCS_NEXT_CALL 0u
#define WARPED_PCS_COMPLETE_CALL 1u
#define WARPED_PCS_MOVE_CALL_IN 2u
#define WARPED_PCS_MOVE_CALL_OUT 3u
#define WARPED_PCS_ACT_NEXT 0
#define WARPED_PCS_ACT_COMPLETE 1
#define WARPED_PCS_ACT_MOVE 2

// warped_pcs_min_ts is pcs's minTS: which time comes first, a move winning ties.
__device__ __forceinline__ int warped_pcs_min_ts(warped_u64 complete, warped_u64 next, warped_u64 move) {
    if (complete <= next) {
        return complete < move ? WARPED_PCS_ACT_COMPLETE : WARPED_PCS_ACT_MOVE;
    }
    return next < move ? WARPED_PCS_ACT_NEXT : WARPED_PCS_ACT_MOVE;
}

// warped_pcs_random_move is pcs's randomMove: the cell one random hop from index, or 1 to
// max_hops random hops (the count drawn first) when max_hops is above 1.
__device__ __forceinline__ warped_u32 warped_pcs_random_move(warped_u32 index, warped_u32 nx, warped_u32 ny, warped_u64 max_hops, WarpedXORWOW* g) {
    warped_u32 x = index % nx, y = index / nx;
    warped_u64 hops = 1;
    if (max_hops > 1) {
        hops = warped_range(g, 1, max_hops);
    }
    for (; hops > 0; hops--) {
        switch (warped_range(g, 0, 3)) {
        case 0:
            x = (x + nx - 1u) % nx;
            break;
        case 1:
            x = (x + 1u) % nx;
            break;
        case 2:
            y = (y + ny - 1u) % ny;
            break;
        default:
            y = (y + 1u) % ny;
            break;
        }
    }
    return x + y * nx;
}

// warped_pcs_handle is (*pcs.Cell).Handle for one event of the given kind per thread.
// params: the torus's width and height, the call-interval, call-duration and
// move-interval samplers (6 words each), then the most hops of a move.
__device__ __forceinline__ void warped_pcs_handle(const WarpedBatch& b, const warped_u64 kind) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    const warped_u64* ev = b.ev_words + 4ull * i;
    if (ev[0] != kind) { // not this kernel's kind: Handle handles it
        b.out_count[i] = 0;
        b.overflow[i] = 1;
        return;
    }
    const warped_u64* call_interval = b.params + 2;
    const warped_u64* call_duration = b.params + 8;
    const warped_u64* move_interval = b.params + 14;
    warped_u64 complete = ev[1], next = ev[2], move = ev[3];
    warped_u64* s = b.state + (warped_u64)b.state_words * i;
    warped_u64 idle = s[0], attempts = s[1], channel_blocks = s[2], handoff_blocks = s[3];
    WarpedXORWOW g = warped_rng_load(b.rng, b.n, i);
    warped_u32 to = b.lp[i];
    warped_u64 method = 0, at = 0; // set on every path below

    if (kind == WARPED_PCS_NEXT_CALL) {
        attempts++;
        if (idle == 0) { // blocked
            channel_blocks++;
            next += warped_pcs_delay(call_interval, &g);
            complete = next + warped_pcs_delay(call_duration, &g);
            if (move <= next) {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            } else {
                method = WARPED_PCS_NEXT_CALL, at = next;
            }
        } else {
            idle--;
            next = complete + warped_pcs_delay(call_interval, &g);
            if (complete < move) {
                method = WARPED_PCS_COMPLETE_CALL, at = complete;
            } else {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            }
        }
    } else if (kind == WARPED_PCS_COMPLETE_CALL) {
        idle++;
        complete = next + warped_pcs_delay(call_duration, &g);
        if (warped_pcs_min_ts(complete, next, move) == WARPED_PCS_ACT_MOVE) {
            method = WARPED_PCS_MOVE_CALL_OUT, at = move;
        } else {
            method = WARPED_PCS_NEXT_CALL, at = next;
        }
    } else if (kind == WARPED_PCS_MOVE_CALL_OUT) {
        if (complete < next) { // on a call: free its channel
            idle++;
        }
        to = warped_pcs_random_move(b.lp[i], (warped_u32)b.params[0], (warped_u32)b.params[1], b.params[20], &g);
        complete += 1, next += 1, move += 1; // WARPED2's TS_OFFSET as the portable leaves
        method = WARPED_PCS_MOVE_CALL_IN, at = move;
    } else { // WARPED_PCS_MOVE_CALL_IN
        move += warped_pcs_delay(move_interval, &g);
        const int act = warped_pcs_min_ts(complete, next, move);
        if (complete > next) { // not on a call
            if (act == WARPED_PCS_ACT_MOVE) {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            } else {
                method = WARPED_PCS_NEXT_CALL, at = next;
            }
        } else if (idle == 0) { // hand-off blocked: the call is dropped
            handoff_blocks++;
            channel_blocks++;
            complete = next + warped_pcs_delay(call_duration, &g);
            if (next < move) {
                method = WARPED_PCS_NEXT_CALL, at = next;
            } else {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            }
        } else {
            idle--;
            if (act == WARPED_PCS_ACT_MOVE) {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            } else {
                method = WARPED_PCS_COMPLETE_CALL, at = complete;
            }
        }
    }

    const warped_u64 o = (warped_u64)b.out_slots * i;
    b.out_to[o] = to;
    b.out_time[o] = (double)at;
    warped_u64* w = b.out_words + 4ull * o;
    w[0] = method;
    w[1] = complete;
    w[2] = next;
    w[3] = move;
    b.out_count[i] = 1;
    b.overflow[i] = 0;
    s[0] = idle;
    s[1] = attempts;
    s[2] = channel_blocks;
    s[3] = handoff_blocks;
    warped_rng_store(b.rng, b.n, i, g);
}

extern "C" __global__ void warped_pcs_next_call(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_NEXT_CALL); }
extern "C" __global__ void warped_pcs_complete_call(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_COMPLETE_CALL); }
extern "C" __global__ void warped_pcs_move_call_in(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_MOVE_CALL_IN); }
extern "C" __global__ void warped_pcs_move_call_out(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_MOVE_CALL_OUT); }
`
