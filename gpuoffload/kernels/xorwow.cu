// xorwow.cu: the built-in batched XORWOW kernels of package gpuoffload (compiled after
// warped.cuh). One thread per generator; the states are structure-of-arrays like
// WarpedBatch.rng: st[i] = d, st[(1+j)*n + i] = v[j].

// warped_xorwow_advance steps generator i forward counts[i] times (rng.XORWOW.Advance).
extern "C" __global__ void warped_xorwow_advance(warped_u32* __restrict__ st,
                                                 const warped_u32* __restrict__ counts,
                                                 warped_u32 n) {
    warped_u32 i = WARPED_INDEX();
    if (i >= n) {
        return;
    }
    WarpedXORWOW g = warped_rng_load(st, n, i);
    warped_advance(&g, counts[i]);
    warped_rng_store(st, n, i, g);
}

// warped_xorwow_rewind steps generator i back counts[i] times (rng.XORWOW.Rewind).
extern "C" __global__ void warped_xorwow_rewind(warped_u32* __restrict__ st,
                                                const warped_u32* __restrict__ counts,
                                                warped_u32 n) {
    warped_u32 i = WARPED_INDEX();
    if (i >= n) {
        return;
    }
    WarpedXORWOW g = warped_rng_load(st, n, i);
    warped_rewind(&g, counts[i]);
    warped_rng_store(st, n, i, g);
}
