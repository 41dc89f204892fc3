package pcs

// stepSource is the CUDA text of step, which the batch kernels (batchSource) and the device
// model (deviceSource) share, with package rng's arithmetic that step's draws need. It is
// compiled after gpuoffload.Header. The constants given by their bits are those of package
// rng (rng.go), as Go rounds them; the parameter words are the batch kernels' (see
// kernels: the torus's width and height, the call-interval, call-duration and
// move-interval samplers, 6 words each, then MaxHops).
const stepSource = `
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

// warped_pcs_step is pcs's step: it handles the portable event of the given kind with words
// ev (the kind, then the times of the call's end, the next call and the next move) at the
// cell of LP id and torus index lp, whose state words (PackState's) are s[0..3], drawing
// from g. It writes the one event it sends (every PCS event sends exactly one) to *to_out
// and w[0..3] and returns its time. kind must be one of the four; the callers pass a
// constant where they can, so that an inlined copy keeps one kind's path.
__device__ __forceinline__ warped_u64 warped_pcs_step(const warped_u64* params, const warped_u64 kind, warped_u32 lp,
                                                      warped_u64* s, WarpedXORWOW* g, const warped_u64* ev,
                                                      warped_u32* to_out, warped_u64* w) {
    const warped_u64* call_interval = params + 2;
    const warped_u64* call_duration = params + 8;
    const warped_u64* move_interval = params + 14;
    warped_u64 complete = ev[1], next = ev[2], move = ev[3];
    warped_u64 idle = s[0], attempts = s[1], channel_blocks = s[2], handoff_blocks = s[3];
    warped_u32 to = lp;
    warped_u64 method = 0, at = 0; // set on every path below

    if (kind == WARPED_PCS_NEXT_CALL) {
        attempts++;
        if (idle == 0) { // blocked
            channel_blocks++;
            next += warped_pcs_delay(call_interval, g);
            complete = next + warped_pcs_delay(call_duration, g);
            if (move <= next) {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            } else {
                method = WARPED_PCS_NEXT_CALL, at = next;
            }
        } else {
            idle--;
            next = complete + warped_pcs_delay(call_interval, g);
            if (complete < move) {
                method = WARPED_PCS_COMPLETE_CALL, at = complete;
            } else {
                method = WARPED_PCS_MOVE_CALL_OUT, at = move;
            }
        }
    } else if (kind == WARPED_PCS_COMPLETE_CALL) {
        idle++;
        complete = next + warped_pcs_delay(call_duration, g);
        if (warped_pcs_min_ts(complete, next, move) == WARPED_PCS_ACT_MOVE) {
            method = WARPED_PCS_MOVE_CALL_OUT, at = move;
        } else {
            method = WARPED_PCS_NEXT_CALL, at = next;
        }
    } else if (kind == WARPED_PCS_MOVE_CALL_OUT) {
        if (complete < next) { // on a call: free its channel
            idle++;
        }
        to = warped_pcs_random_move(lp, (warped_u32)params[0], (warped_u32)params[1], params[20], g);
        complete += 1, next += 1, move += 1; // WARPED2's TS_OFFSET as the portable leaves
        method = WARPED_PCS_MOVE_CALL_IN, at = move;
    } else { // WARPED_PCS_MOVE_CALL_IN
        move += warped_pcs_delay(move_interval, g);
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
            complete = next + warped_pcs_delay(call_duration, g);
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

    *to_out = to;
    w[0] = method;
    w[1] = complete;
    w[2] = next;
    w[3] = move;
    s[0] = idle;
    s[1] = attempts;
    s[2] = channel_blocks;
    s[3] = handoff_blocks;
    return at;
}
`
