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
// ChannelBlocks, HandoffBlocks; it zeroes the words after them (the device model's
// DeviceStateWords have one more, which its handler keeps).
func PackState(cell *Cell, dst []uint64) {
	s := &cell.S
	dst[0], dst[1], dst[2], dst[3] = s.IdleChannels, s.CallAttempts, s.ChannelBlocks, s.HandoffBlocks
	clear(dst[StateWords:])
}

// UnpackState sets cell's state from src[0:StateWords] (written by PackState, a batch
// kernel or the device model; words after them are not the cell's state).
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
	params := m.params()
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

// params returns the parameter words of m's CUDA code (the batch kernels' and the device
// model's): the torus's size, the three delay samplers, then MaxHops.
func (m *shared) params() []uint64 {
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
	return params
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

// batchSource is the CUDA text of the four batch kernels (compiled after gpuoffload.Header):
// step's (stepSource) for one event of the kernel's kind per thread.
const batchSource = stepSource + `
// warped_pcs_handle is (*pcs.Cell).Handle for one event of the given kind per thread.
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
    WarpedXORWOW g = warped_rng_load(b.rng, b.n, i);
    const warped_u64 o = (warped_u64)b.out_slots * i;
    warped_u32 to;
    const warped_u64 at = warped_pcs_step(b.params, kind, b.lp[i], b.state + (warped_u64)b.state_words * i, &g, ev,
                                          &to, b.out_words + 4ull * o);
    b.out_to[o] = to;
    b.out_time[o] = (double)at;
    b.out_count[i] = 1;
    b.overflow[i] = 0;
    warped_rng_store(b.rng, b.n, i, g);
}

extern "C" __global__ void warped_pcs_next_call(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_NEXT_CALL); }
extern "C" __global__ void warped_pcs_complete_call(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_COMPLETE_CALL); }
extern "C" __global__ void warped_pcs_move_call_in(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_MOVE_CALL_IN); }
extern "C" __global__ void warped_pcs_move_call_out(WarpedBatch b) { warped_pcs_handle(b, WARPED_PCS_MOVE_CALL_OUT); }
`
