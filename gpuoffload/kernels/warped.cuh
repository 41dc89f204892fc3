// warped.cuh: the device side of package gpuoffload (github.com/warpedgo/warped/gpuoffload).
//
// Every batch kernel is compiled with this header in front of it (the CUDA backend with
// NVRTC, --fmad=false; the host-C++ checking backend with the system C++ compiler,
// -ffp-contract=off). It defines the batch layout (WarpedBatch, mirrored by package
// gpuoffload's Batch), the XORWOW generator exactly as package rng has it, and the
// portable floating-point helpers of package rng (warped_log is rng.Log, operation for
// operation), so that a kernel written with them gives the same bits as its Go twin.
//
// Rules for kernel code: IEEE double +, -, *, / and integer arithmetic only; no library
// transcendental (log, exp, pow: they differ from Go's in the last bit); no fused
// multiply-add (the compile options forbid contraction, do not call fma()); no
// single-precision float.
#ifndef WARPED_CUH
#define WARPED_CUH

typedef unsigned int warped_u32;
typedef unsigned long long warped_u64;
typedef long long warped_i64;

// WarpedBatch describes a batch of n events of n distinct LPs in structure-of-arrays form.
// Element i's arrays:
//   lp[i], time[i]                  the LP and the event's receive time (now)
//   ev_words[4*i .. 4*i+3]          the event's inline payload words
//   rng[i], rng[(1+j)*n + i]        the LP's generator: d, then v[j] for j = 0..4
//   state[state_words*i ..]         the LP's state words
//   out_count[i]                    number of output events (at most out_slots)
//   out_to[out_slots*i + s], out_time[...], out_words[4*(out_slots*i + s) ..]  output slot s
//   overflow[i]                     1: the element needs more than out_slots outputs; the
//                                   host discards its results and runs it on the CPU
// The kernel must set out_count[i] and overflow[i] for every element it is given.
typedef struct {
    const warped_u64* params;   // n_params kernel constants (Kernel.Params)
    const warped_u32* lp;
    const double* time;
    const warped_u64* ev_words;
    warped_u32* rng;
    warped_u64* state;
    warped_u32* out_count;
    warped_u32* out_to;
    double* out_time;
    warped_u64* out_words;
    unsigned char* overflow;
    warped_u32 n, state_words, out_slots, n_params;
} WarpedBatch;

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(WarpedBatch) == 104, "WarpedBatch must match package gpuoffload's batchArgs (104 bytes)");
#endif

// WARPED_INDEX is the element index of the calling thread.
#define WARPED_INDEX() (blockIdx.x * blockDim.x + threadIdx.x)

// WARPED_WEYL is rng.Weyl.
#define WARPED_WEYL 362437u

// WarpedXORWOW is rng.XORWOW: curandStateXORWOW_t's d and v[5].
typedef struct {
    warped_u32 d, v0, v1, v2, v3, v4;
} WarpedXORWOW;

__device__ __forceinline__ WarpedXORWOW warped_rng_load(const warped_u32* rng, warped_u32 n, warped_u32 i) {
    WarpedXORWOW g;
    g.d = rng[i];
    g.v0 = rng[n + i];
    g.v1 = rng[2u * n + i];
    g.v2 = rng[3u * n + i];
    g.v3 = rng[4u * n + i];
    g.v4 = rng[5u * n + i];
    return g;
}

__device__ __forceinline__ void warped_rng_store(warped_u32* rng, warped_u32 n, warped_u32 i, WarpedXORWOW g) {
    rng[i] = g.d;
    rng[n + i] = g.v0;
    rng[2u * n + i] = g.v1;
    rng[3u * n + i] = g.v2;
    rng[4u * n + i] = g.v3;
    rng[5u * n + i] = g.v4;
}

// WARPED_XORWOW_FWD(a, b) is one xorshift step on registers, with a holding v[0] and b
// holding v[4]: the new v[4] goes into a, so that the logical order rotates by one
// register. Five steps FWD(v0,v4) FWD(v1,v0) FWD(v2,v1) FWD(v3,v2) FWD(v4,v3) bring it back.
// (d is not touched.)
#define WARPED_XORWOW_FWD(a, b) do { \
    warped_u32 t_ = (a) ^ ((a) >> 2); \
    (a) = ((b) ^ ((b) << 4)) ^ (t_ ^ (t_ << 1)); \
} while (0)

// WARPED_XORWOW_REV(a, b) undoes one step, with a holding v[4] and b holding v[3]: the old
// v[0] goes into a. Five steps REV(v4,v3) REV(v3,v2) REV(v2,v1) REV(v1,v0) REV(v0,v4)
// bring the order back. (d is not touched.)
#define WARPED_XORWOW_REV(a, b) do { \
    warped_u32 u_ = (a) ^ (b) ^ ((b) << 4); \
    u_ ^= u_ << 1; \
    u_ ^= u_ << 2; \
    u_ ^= u_ << 4; \
    u_ ^= u_ << 8; \
    u_ ^= u_ << 16; \
    u_ ^= u_ >> 2; \
    u_ ^= u_ >> 4; \
    u_ ^= u_ >> 8; \
    u_ ^= u_ >> 16; \
    (a) = u_; \
} while (0)

// warped_next is rng.(*XORWOW).Next (curand()).
__device__ __forceinline__ warped_u32 warped_next(WarpedXORWOW* g) {
    warped_u32 t = g->v0 ^ (g->v0 >> 2);
    g->v0 = g->v1;
    g->v1 = g->v2;
    g->v2 = g->v3;
    g->v3 = g->v4;
    g->v4 = (g->v4 ^ (g->v4 << 4)) ^ (t ^ (t << 1));
    g->d += WARPED_WEYL;
    return g->v4 + g->d;
}

// warped_advance is rng.(*XORWOW).Advance.
__device__ __forceinline__ void warped_advance(WarpedXORWOW* g, warped_u64 n) {
    warped_u32 v0 = g->v0, v1 = g->v1, v2 = g->v2, v3 = g->v3, v4 = g->v4;
    warped_u64 k;
    for (k = n / 5u; k != 0; k--) {
        WARPED_XORWOW_FWD(v0, v4);
        WARPED_XORWOW_FWD(v1, v0);
        WARPED_XORWOW_FWD(v2, v1);
        WARPED_XORWOW_FWD(v3, v2);
        WARPED_XORWOW_FWD(v4, v3);
    }
    for (k = n % 5u; k != 0; k--) {
        warped_u32 t = v0 ^ (v0 >> 2);
        v0 = v1;
        v1 = v2;
        v2 = v3;
        v3 = v4;
        v4 = (v4 ^ (v4 << 4)) ^ (t ^ (t << 1));
    }
    g->v0 = v0;
    g->v1 = v1;
    g->v2 = v2;
    g->v3 = v3;
    g->v4 = v4;
    g->d += (warped_u32)n * WARPED_WEYL;
}

// warped_rewind is rng.(*XORWOW).Rewind.
__device__ __forceinline__ void warped_rewind(WarpedXORWOW* g, warped_u64 n) {
    warped_u32 v0 = g->v0, v1 = g->v1, v2 = g->v2, v3 = g->v3, v4 = g->v4;
    warped_u64 k;
    for (k = n / 5u; k != 0; k--) {
        WARPED_XORWOW_REV(v4, v3);
        WARPED_XORWOW_REV(v3, v2);
        WARPED_XORWOW_REV(v2, v1);
        WARPED_XORWOW_REV(v1, v0);
        WARPED_XORWOW_REV(v0, v4);
    }
    for (k = n % 5u; k != 0; k--) {
        warped_u32 u = v4;
        WARPED_XORWOW_REV(u, v3);
        v4 = v3;
        v3 = v2;
        v2 = v1;
        v1 = v0;
        v0 = u;
    }
    g->v0 = v0;
    g->v1 = v1;
    g->v2 = v2;
    g->v3 = v3;
    g->v4 = v4;
    g->d -= (warped_u32)n * WARPED_WEYL;
}

__device__ __forceinline__ double warped_bits_f64(warped_u64 b) { return __longlong_as_double((warped_i64)b); }
__device__ __forceinline__ warped_u64 warped_f64_bits(double x) { return (warped_u64)__double_as_longlong(x); }

// warped_log is rng.Log: fdlibm's e_log.c in portable arithmetic (no FMA, no library log).
// The constants are given by their bits, the same as rng/log.go's decimal literals.
__device__ __forceinline__ double warped_log(double x) {
    const double ln2Hi = warped_bits_f64(0x3fe62e42fee00000ull);
    const double ln2Lo = warped_bits_f64(0x3dea39ef35793c76ull);
    const double L1 = warped_bits_f64(0x3fe5555555555593ull);
    const double L2 = warped_bits_f64(0x3fd999999997fa04ull);
    const double L3 = warped_bits_f64(0x3fd2492494229359ull);
    const double L4 = warped_bits_f64(0x3fcc71c51d8e78afull);
    const double L5 = warped_bits_f64(0x3fc7466496cb03deull);
    const double L6 = warped_bits_f64(0x3fc39a09d078c69full);
    const double L7 = warped_bits_f64(0x3fc2f112df3e5244ull);
    warped_u64 b = warped_f64_bits(x);
    warped_i64 k = 0;
    if (b - (1ull << 52) >= 0x7ff0000000000000ull - (1ull << 52)) {
        // Not a positive normal number.
        if (x != x || b == 0x7ff0000000000000ull) {
            return x; // NaN or +Inf
        }
        if (x < 0.0) {
            return warped_bits_f64(0x7ff8000000000001ull); // Go's math.NaN()
        }
        if (x == 0.0) {
            return warped_bits_f64(0xfff0000000000000ull); // -Inf
        }
        b = warped_f64_bits(x * 4503599627370496.0); // subnormal: scale by 2^52 (exact)
        k = -52;
    }
    warped_i64 e = ((warped_i64)(b - 0x3fe6a09e667f3bcdull)) >> 52;
    k += e;
    double f1 = warped_bits_f64(b - ((warped_u64)e << 52));
    double f = f1 - 1.0;
    double kf = (double)k;
    double s = f / (2.0 + f);
    double s2 = s * s;
    double s4 = s2 * s2;
    double t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
    double t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
    double r = t1 + t2;
    double hfsq = 0.5 * f * f;
    return kf * ln2Hi - ((hfsq - (s * (hfsq + r) + kf * ln2Lo)) - f);
}

// warped_to_uniform maps a raw draw to (0, 1] as rng does: (x + 1) * 2^-32, exact.
__device__ __forceinline__ double warped_to_uniform(warped_u32 x) {
    return ((double)x + 1.0) * 2.3283064365386962890625e-10;
}

// warped_uniform is rng.(*XORWOW).Uniform (one draw).
__device__ __forceinline__ double warped_uniform(WarpedXORWOW* g) {
    return warped_to_uniform(warped_next(g));
}

// warped_range is rng.(*XORWOW).Range (one draw); the span hi-lo+1 must be in [1, 2^32]
// (the host checks this where rng would panic).
__device__ __forceinline__ warped_u64 warped_range(WarpedXORWOW* g, warped_u64 lo, warped_u64 hi) {
    return lo + (((warped_u64)warped_next(g) * (hi - lo + 1u)) >> 32);
}

// warped_exponential is rng.(*XORWOW).Exponential (one draw).
__device__ __forceinline__ double warped_exponential(WarpedXORWOW* g, double mean) {
    return mean * (0.0 - warped_log(warped_to_uniform(warped_next(g))));
}

#endif // WARPED_CUH
