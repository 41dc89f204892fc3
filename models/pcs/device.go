package pcs

import (
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
)

var _ kernel.DeviceModeler = (*Cell)(nil)

// DeviceStateWords is the number of state words of a cell on the device: PackState's four,
// then the generator's Weyl word (XORWOW's d) as the last handling left it, from which the
// reverse handler learns how many draws the handling made (see deviceSource). PackState
// zeroes it and UnpackState ignores it, so the cell's state and the digest are the other
// dispatchers'.
const DeviceStateWords = StateWords + 1

// DeviceModel returns PCS's device code for configuration c, which must be valid, or nil
// when the call duration's mean is 0: then a blocked call or hand-off draws as much as one
// that took the last channel and nothing tells them apart (see Reversible), so the model
// has no reverse handler and --simulation-type gpu refuses it. The handler is step's CUDA
// text, the batch kernels' (one handler for the four kinds, switching on the event's kind
// word), and the reverse handler is Reverse's. Every event sends one event; the state
// words are DeviceStateWords; the parameters are the batch kernels'.
func DeviceModel(c Config) *gpuwarp.Model { return newShared(c).deviceModel() }

// deviceModel builds m's device model (nil when m's cells are not Reversible).
func (m *shared) deviceModel() *gpuwarp.Model {
	if m.CallDuration == 0 {
		return nil
	}
	return &gpuwarp.Model{
		Name:       "pcs",
		Source:     deviceSource,
		StateWords: DeviceStateWords,
		OutSlots:   1,
		Words:      true,
		Params:     m.params(),
	}
}

// DeviceModel implements kernel.DeviceModeler: the model's device code, built once by New
// (nil when the call duration's mean is 0, see DeviceModel).
func (c *Cell) DeviceModel() *gpuwarp.Model { return c.cfg.device }

// deviceSource is the CUDA text of PCS's handlers for package gpuwarp. wtw_handle is step
// (stepSource) for an event of any kind; it also keeps the generator's Weyl word after the
// handling in s[4]. wtw_reverse is unstep: the device loop gives it the generator as the
// handler found it but not the draws the handling made, which unstep compares with one
// Poisson draw's to tell a blocked call or hand-off from one that took the last channel.
// They follow from s[4]: the loop undoes an LP's events latest first, and each reversal
// puts back in s[4] the Weyl word of the generator it was given, which is the one the
// handling before left, so s[4] always holds the word after the event being undone. The
// Weyl word moves by a fixed odd constant per 32-bit draw, so two generators from one
// start have made as many draws (mod 2^32) exactly when their words are equal. An
// unknown kind, which PCS never sends (Handle panics on one), changes nothing and sends
// nothing.
const deviceSource = stepSource + `
__device__ warped_u32 wtw_handle(const warped_u64* params, warped_u64* s, WarpedXORWOW* g, warped_u32 lp,
                                 warped_u32 lps, double now, const warped_u64* words,
                                 warped_u32* out_to, double* out_at, warped_u64* out_words) {
    warped_u32 n = 0;
    if (words[0] <= WARPED_PCS_MOVE_CALL_OUT) {
        out_at[0] = (double)warped_pcs_step(params, words[0], lp, s, g, words, out_to, out_words);
        n = 1;
    }
    s[4] = g->d;
    return n;
}

// warped_pcs_one_draw reports whether a handling that found generator g and left the Weyl
// word after made exactly one Poisson draw from the sampler p (it did not block).
__device__ __forceinline__ bool warped_pcs_one_draw(const warped_u64* p, WarpedXORWOW g, warped_u64 after) {
    warped_pcs_poisson(p, &g);
    return g.d == (warped_u32)after;
}

__device__ void wtw_reverse(const warped_u64* params, warped_u64* s, WarpedXORWOW g, warped_u32 lp,
                            warped_u32 lps, double now, const warped_u64* words) {
    const warped_u64 after = s[4];
    s[4] = g.d;
    const warped_u64 complete = words[1], next = words[2];
    switch (words[0]) {
    case WARPED_PCS_NEXT_CALL:
        s[1]--;
        if (s[0] > 0 || warped_pcs_one_draw(params + 2, g, after)) {
            s[0]++;
        } else {
            s[2]--;
        }
        break;
    case WARPED_PCS_COMPLETE_CALL:
        s[0]--;
        break;
    case WARPED_PCS_MOVE_CALL_OUT:
        if (complete < next) {
            s[0]--;
        }
        break;
    case WARPED_PCS_MOVE_CALL_IN:
        if (complete > next) { // not on a call: nothing changed
            break;
        }
        if (s[0] > 0 || warped_pcs_one_draw(params + 14, g, after)) {
            s[0]++;
        } else {
            s[3]--;
            s[2]--;
        }
        break;
    }
}
`
