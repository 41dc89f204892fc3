package phold

import (
	"math"

	"github.com/warpedgo/warped/gpuwarp"
)

// DeviceModel returns PHOLD's device code for configuration c, which must be valid: the
// handler is BatchKernel's body, and the reverse handler is (*LP).Reverse (it replays the
// draws on the generator as the handler found it). The state words are PackState's.
func DeviceModel(c Config) *gpuwarp.Model {
	return &gpuwarp.Model{
		Name:       "phold",
		Source:     deviceSource,
		StateWords: StateWords,
		OutSlots:   1,
		Params: []uint64{math.Float64bits(c.Remote), math.Float64bits(c.Mean), math.Float64bits(c.Lookahead),
			uint64(c.Grain)},
	}
}

// DeviceModel implements kernel.DeviceModeler.
func (lp *LP) DeviceModel() *gpuwarp.Model { return lp.cfg.device }

// deviceSource is the CUDA text of PHOLD's handlers for package gpuwarp; warped_phold_work
// is batchSource's.
const deviceSource = batchWork + `
__device__ warped_u32 wtw_handle(const warped_u64* params, warped_u64* s, WarpedXORWOW* g, warped_u32 lp,
                                 warped_u32 lps, double now, const warped_u64* words,
                                 warped_u32* out_to, double* out_at, warped_u64* out_words) {
    const double remote = warped_bits_f64(params[0]);
    const double mean = warped_bits_f64(params[1]);
    const double lookahead = warped_bits_f64(params[2]);
    const warped_u64 grain = params[3];
    s[0]++;
    if (grain > 0) {
        s[2] = (warped_u32)s[2] ^ warped_phold_work(*g, grain);
    }
    warped_u32 dest = lp;
    if (warped_uniform(g) <= remote) {
        dest = (warped_u32)warped_range(g, 0, lps - 1u);
        s[1]++;
    }
    out_to[0] = dest;
    out_at[0] = now + (lookahead + warped_exponential(g, mean - lookahead));
    return 1;
}

__device__ void wtw_reverse(const warped_u64* params, warped_u64* s, WarpedXORWOW g, warped_u32 lp,
                            warped_u32 lps, double now, const warped_u64* words) {
    const double remote = warped_bits_f64(params[0]);
    const warped_u64 grain = params[3];
    s[0]--;
    if (grain > 0) {
        s[2] = (warped_u32)s[2] ^ warped_phold_work(g, grain);
    }
    if (warped_uniform(&g) <= remote) {
        s[1]--;
    }
}
`
