package gpuoffload

import (
	"math"
	"math/rand/v2"

	"github.com/warpedgo/warped/rng"
)

// testKernelSource exercises every part of the batch layout and of warped.cuh: state,
// payload, params, several output slots with overflow, Next, Uniform, Range, Exponential,
// Log on arbitrary bit patterns, Advance and Rewind.
const testKernelSource = `
extern "C" __global__ void warped_test_kernel(WarpedBatch b) {
    warped_u32 i = WARPED_INDEX();
    if (i >= b.n) {
        return;
    }
    const double scale = warped_bits_f64(b.params[0]);
    const warped_u64 nlps = b.params[1];
    WarpedXORWOW g = warped_rng_load(b.rng, b.n, i);
    warped_u64* s = b.state + (warped_u64)b.state_words * i;
    const warped_u64* ev = b.ev_words + 4ull * i;
    s[0] += 1;
    s[1] ^= ev[0];
    s[2] = warped_f64_bits(warped_log(warped_bits_f64(ev[3])));
    WarpedXORWOW h = g;
    warped_advance(&h, ev[0] % 1000u);
    s[3] = (warped_u64)h.d ^ ((warped_u64)h.v4 << 32);
    warped_rewind(&h, ev[0] % 777u);
    s[4] = (warped_u64)h.v0 ^ ((warped_u64)h.v2 << 32);
    warped_u32 k = (warped_u32)(ev[1] % 4u);
    if (k > b.out_slots) {
        b.overflow[i] = 1;
        b.out_count[i] = 0;
        warped_rng_store(b.rng, b.n, i, g);
        return;
    }
    b.overflow[i] = 0;
    for (warped_u32 j = 0; j < k; j++) {
        warped_u64 o = (warped_u64)b.out_slots * i + j;
        b.out_to[o] = (warped_u32)warped_range(&g, 0, nlps - 1);
        b.out_time[o] = b.time[i] + warped_exponential(&g, scale);
        warped_u64* w = b.out_words + 4ull * o;
        w[0] = ev[2] + j;
        w[1] = warped_next(&g);
        w[2] = warped_f64_bits(warped_log(warped_uniform(&g)));
        w[3] = b.lp[i];
    }
    b.out_count[i] = k;
    warped_rng_store(b.rng, b.n, i, g);
}
`

// newTestKernel returns the test kernel with its Go twin.
func newTestKernel(scale float64, nlps uint64) *Kernel {
	return &Kernel{
		Name:       "warped_test_kernel",
		Source:     testKernelSource,
		StateWords: 5,
		OutSlots:   2,
		Params:     []uint64{math.Float64bits(scale), nlps},
		Go: func(b *Batch, i int) {
			g := b.Gen(i)
			s := b.StateOf(i)
			ev := b.Ev(i)
			s[0]++
			s[1] ^= ev[0]
			s[2] = math.Float64bits(rng.Log(math.Float64frombits(ev[3])))
			h := g
			h.Advance(ev[0] % 1000)
			s[3] = uint64(h.D) ^ uint64(h.V[4])<<32
			h.Rewind(ev[0] % 777)
			s[4] = uint64(h.V[0]) ^ uint64(h.V[2])<<32
			k := int(ev[1] % 4)
			if k > b.OutSlots {
				b.Overflow[i] = 1
				b.OutCount[i] = 0
				b.SetGen(i, g)
				return
			}
			b.Overflow[i] = 0
			for j := range k {
				to := uint32(g.Range(0, nlps-1))
				t := b.Time[i] + g.Exponential(scale)
				w0 := ev[2] + uint64(j)
				w1 := uint64(g.Next())
				w2 := math.Float64bits(rng.Log(g.Uniform()))
				b.SetOut(i, j, to, t, [EventWords]uint64{w0, w1, w2, uint64(b.LP[i])})
			}
			b.OutCount[i] = uint32(k)
			b.SetGen(i, g)
		},
	}
}

// specialFloats are Log inputs worth checking: zeros, subnormals, infinities, NaNs,
// negatives, and values around 1.
var specialFloats = []uint64{
	0, 1, 0x000fffffffffffff, 0x0010000000000000, 0x000012688b70e62b, 0x7ff0000000000000,
	0xfff0000000000000, 0x7ff8000000000001, 0x7ff0000000000001, 0x8000000000000000,
	0xbff0000000000000, 0x3ff0000000000000, 0x3ff0000000000001, 0x3fefffffffffffff,
	0x3fe6a09e667f3bcd, 0x3fe6a09e667f3bcc, 0x7fefffffffffffff,
}

// fillRandom sizes b for k with n random elements of LPs below nlps.
func fillRandom(r *rand.Rand, b *Batch, k *Kernel, n int, nlps uint64) {
	b.Reset(n, k)
	for i := range n {
		g := rng.XORWOW{D: r.Uint32(), V: [5]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}}
		ev := [EventWords]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		switch r.IntN(3) {
		case 0:
			ev[3] = specialFloats[r.IntN(len(specialFloats))]
		case 1:
			ev[3] = math.Float64bits(r.Float64() * math.Pow(2, float64(r.IntN(200)-100)))
		}
		b.Set(i, uint32(r.Uint64N(nlps)), r.Float64()*1000, g, ev)
		for j := range b.StateOf(i) {
			b.StateOf(i)[j] = r.Uint64()
		}
	}
	// Garbage in the outputs, to show that the kernel writes what it must.
	for i := range b.OutTo {
		b.OutTo[i], b.OutTime[i] = r.Uint32(), r.Float64()
	}
	for i := range b.OutWords {
		b.OutWords[i] = r.Uint64()
	}
}

// cloneBatch returns a deep copy of b.
func cloneBatch(b *Batch) *Batch {
	c := *b
	c.LP = append([]uint32(nil), b.LP...)
	c.Time = append([]float64(nil), b.Time...)
	c.EvWords = append([]uint64(nil), b.EvWords...)
	c.RNG = append([]uint32(nil), b.RNG...)
	c.State = append([]uint64(nil), b.State...)
	c.OutCount = append([]uint32(nil), b.OutCount...)
	c.OutTo = append([]uint32(nil), b.OutTo...)
	c.OutTime = append([]float64(nil), b.OutTime...)
	c.OutWords = append([]uint64(nil), b.OutWords...)
	c.Overflow = append([]uint8(nil), b.Overflow...)
	return &c
}
