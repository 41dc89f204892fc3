// runs.cu: how the loop of package gpuwarp calls a model's handlers, alone or with the
// runs of a study merged into one loop (gpuwarp.RunMany).
//
// Compiled after the model's source and before loop.cu, with WTW_RUNS (1: several runs)
// and WTW_PARAMS (one run's parameter words). A single run calls the handlers directly.
// Several runs are disjoint sets of LPs, run k's numbered from its first LP; its handlers
// see the run alone (its parameters, its LP numbers from 0 and its LP count), and what
// they send goes back to the run's numbering, so a run's events never leave its set and
// every run is handled as it would be on its own. The parameter words then hold:
//
//   the run of each LP, a 32-bit index, two per word ((lps + 1) / 2 words);
//   per run, WTW_PARAMS + 2 words: its first LP, its LP count, its parameters.

#if WTW_RUNS
// wtw_run_of returns the record of LP lp's run (first LP, LP count, parameters).
__device__ __forceinline__ const warped_u64* wtw_run_of(const warped_u64* params, warped_u32 lps, warped_u32 lp) {
    const warped_u32 k = ((const warped_u32*)params)[lp];
    return params + (lps + 1u) / 2u + (warped_u64)k * (WTW_PARAMS + 2u);
}
#endif

// wtw_call_handle calls wtw_handle for LP lp of lps (see loop.cu for the arguments).
__device__ __forceinline__ warped_u32 wtw_call_handle(const warped_u64* params, warped_u64* state, WarpedXORWOW* g,
                                                     warped_u32 lp, warped_u32 lps, double now, const warped_u64* words,
                                                     warped_u32* out_to, double* out_at, warped_u64* out_words) {
#if WTW_RUNS
    const warped_u64* run = wtw_run_of(params, lps, lp);
    const warped_u32 first = (warped_u32)run[0];
    const warped_u32 n = wtw_handle(run + 2, state, g, lp - first, (warped_u32)run[1], now, words, out_to, out_at, out_words);
    for (warped_u32 k = 0; k < n; k++) out_to[k] += first;
    return n;
#else
    return wtw_handle(params, state, g, lp, lps, now, words, out_to, out_at, out_words);
#endif
}

#if !WTW_SAVE
// wtw_call_reverse calls wtw_reverse for LP lp of lps (a model that saves states has none).
__device__ __forceinline__ void wtw_call_reverse(const warped_u64* params, warped_u64* state, WarpedXORWOW g,
                                                 warped_u32 lp, warped_u32 lps, double now, const warped_u64* words) {
#if WTW_RUNS
    const warped_u64* run = wtw_run_of(params, lps, lp);
    wtw_reverse(run + 2, state, g, lp - (warped_u32)run[0], (warped_u32)run[1], now, words);
#else
    wtw_reverse(params, state, g, lp, lps, now, words);
#endif
}
#endif
