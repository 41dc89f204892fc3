// loop.cu: the device-resident time warp of package gpuwarp (github.com/warpedgo/warped/gpuwarp).
//
// Compiled after warped.cuh, the run's constants (WTW_STATE, WTW_OUT, WTW_WORDS, WTW_CAP,
// WTW_SAVE) and the model's source, which defines
//
//   __device__ warped_u32 wtw_handle(const warped_u64* params, warped_u64* state,
//       WarpedXORWOW* g, warped_u32 lp, warped_u32 lps, double now, const warped_u64* words,
//       warped_u32* out_to, double* out_at, warped_u64* out_words)
//     handles one event: returns the number of events sent (at most WTW_OUT), written to
//     out_to[k], out_at[k] and out_words[4k..4k+3];
//   __device__ void wtw_reverse(const warped_u64* params, warped_u64* state,
//       WarpedXORWOW g, warped_u32 lp, warped_u32 lps, double now, const warped_u64* words)
//     undoes it on the state, given the generator as wtw_handle found it; a model with
//     WTW_SAVE set need not define it (see wtw_save);
//
// then runs.cu, whose wtw_call_handle and wtw_call_reverse call them for one run, or for
// the runs of a study merged into one loop.
//
// Every LP owns a circular list of WTW_CAP event slots, sorted by the kernel's event key:
// [head, proc) processed and not yet committed, [proc, tail) pending. An iteration is a
// fixed sequence of launches (the host never waits on one):
//
//   wtw_gvt       GVT: the least pending receive time, over the LPs, the events in
//                 transit and the anti-messages in transit (an atomic minimum);
//   wtw_step      fossil collection below GVT, then each LP handles its earliest pending
//                 event if it lies below min(GVT + bound, end); wtw_execute does the latter
//                 alone for further executions in the iteration;
//   wtw_deliver   each sent event is appended to its receiver's list (atomics), or left in
//                 transit when the list is full or closed to it (see wtw_sort);
//   wtw_sort      each LP sorts what arrived and rolls back past a straggler, undoing
//                 events with wtw_reverse and XORWOW reversal and sending anti-messages;
//   wtw_cancel, wtw_annul (rounds)  each anti-message marks its positive; each LP rolls
//                 back past a marked processed event and removes the marked ones.
//
// After a chunk of iterations wtw_tally sums the LPs' counters for the host, which reads
// them while the next chunks run (see "Counters" below). Once an iteration finds GVT at or
// past the end, or an error, the run is done and every kernel of the loop returns at once,
// so chunks queued ahead of the host change nothing.
//
// Anti-messages match their positive by key and, when events carry words, by words too: a
// rolled-back handling's re-execution reuses its sequence numbers, so it may send an
// event of its cancelled one's key with other words, and when both wait in transit the
// anti-message may meet the new one first. Events of one key and the same words are the
// same event, so whichever it marks is right.
//
// Room: an event refused by a full list raises its receiver's "want"; wtw_sort then
// rolls back and puts back in transit every event after it, and admits nothing later than
// it until the list has room, so the earliest event always gets in. Buffers that cannot
// grow set an error bit the host reports with the size to raise.
//
// Keys: (receive time, send time, depth, sender, sequence), compared as package event's.
// Times are non-negative doubles, so their bit patterns order as they do.

#define WTW_NONE 0xffffffffu
#define WTW_MAX_PASSES 16u
#define WTW_INF_BITS 0x7ff0000000000000ull

// Error bits (WtwRun.err).
#define WTW_ERR_EVENTS 1u  // the event buffer overflowed
#define WTW_ERR_ANTIS 2u   // the anti-message buffer overflowed

// Counters. WtwLive is what the iterations keep up to date; WtwRun.err points at it (the
// error bits are its first word, so it needs no field of its own in WtwRun). wtw_tally
// copies it with the LPs' sums into a WtwTally that the host copies to its memory.
typedef struct {
    warped_u32 err;          // error bits (WTW_ERR_*)
    warped_u32 done;         // 1 once an iteration found GVT >= end or an error bit
    warped_u64 gvt;          // the bits of the last iteration's GVT
    warped_u64 iterations;   // iterations run, the one that found the run done included
} WtwLive;

typedef struct {
    WtwLive live;
    warped_u64 processed;    // the sums over the LPs of processed,
    warped_u64 rolled;       // rolled,
    warped_u64 moved;        // moved,
    warped_u64 pending;      // tail - proc (events in the lists, not handled)
    warped_u64 history;      // and proc - head (handled, not yet committed)
} WtwTally;

typedef struct {
    // Per LP.
    warped_u32* head;
    warped_u32* proc;
    warped_u32* tail;
    warped_u32* stail;       // tail after the last sort: [stail, tail) arrived since
    warped_u32* cancel;      // 1: an anti-message marked one of the LP's slots
    warped_u64* want;        // least receive time (bits) of an event refused for room
    warped_u64* limit;       // receive times (bits) above this are not admitted
    warped_u64* state;       // WTW_STATE words per LP
    warped_u32* rng;         // 6 words per LP: d, v0..v4
    warped_u64* seq;         // next send sequence number
    warped_u64* processed;   // events handled, rolled back ones included
    warped_u64* rolled;      // events rolled back
    double* last;            // receive time of the LP's last committed event
    warped_u64* moved;       // events put back in transit to make room
    warped_u32* active;      // events handled by each execution pass of the iteration
    // Per slot (LP * WTW_CAP + position % WTW_CAP).
    double* recv;
    double* send;
    warped_u32* depth;
    warped_u32* sender;
    warped_u64* sseq;
    warped_u64* words;       // 4 per slot when WTW_WORDS
    warped_u32* draws;       // generator draws the handling took
    warped_u32* mark;        // marked by an anti-message
    warped_u32* nout;        // events it sent
    warped_u32* out_to;      // WTW_OUT per slot
    double* out_at;          // WTW_OUT per slot
    warped_u64* out_words;   // 4 * WTW_OUT per slot when WTW_WORDS
    const warped_u64* params;
    warped_u32* err;
    warped_u32 lps;
    warped_u32 threshold;    // a pass runs only if the one before it handled this many events
    double end;
    double bound;
    warped_u64* saved;       // WTW_STATE words per slot when WTW_SAVE: the state before its handling
} WtwRun;

// WtwBuf is a buffer of events or anti-messages in transit.
typedef struct {
    warped_u32* count;
    warped_u32* to;
    double* recv;
    double* send;
    warped_u32* depth;
    warped_u32* sender;
    warped_u64* seq;
    warped_u64* words;       // 4 per entry when WTW_WORDS
    warped_u32 cap;
    warped_u32 pad;
} WtwBuf;

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(WtwRun) == 264, "WtwRun must match package gpuwarp's runArgs");
static_assert(sizeof(WtwBuf) == 72, "WtwBuf must match package gpuwarp's bufArgs");
static_assert(sizeof(WtwTally) == 64, "WtwTally must match package gpuwarp's tally");
#endif

// wtw_done reports whether the run is done (WtwLive.done): a kernel after the wtw_step that
// set it reads the same answer in every thread.
__device__ __forceinline__ bool wtw_done(const WtwRun* r) {
    return ((volatile const WtwLive*)r->err)->done != 0u;
}

// wtw_stop is wtw_step's done test for GVT gvt (bits): thread 0 counts the iteration,
// keeps its GVT and marks the run done at the end or an error; every thread answers
// whether to return. The answer is the same in every thread when GVT reached the end;
// after an error bit, threads may differ, which is harmless: the run stops with the
// error.
__device__ __forceinline__ bool wtw_stop(const WtwRun* r, warped_u64 gvt, warped_u32 lp) {
    WtwLive* live = (WtwLive*)r->err;
    bool end = warped_bits_f64(gvt) >= r->end;
    if (lp == 0 && !live->done) {
        live->iterations++;
        live->gvt = gvt;
        if (end || live->err != 0u) live->done = 1u;
    }
    return end || wtw_done(r);
}

__device__ __forceinline__ warped_u32 wtw_minu(warped_u32 a, warped_u32 b) { return a < b ? a : b; }

__device__ __forceinline__ warped_u64 wtw_slot(warped_u32 lp, warped_u32 pos) {
    return (warped_u64)lp * WTW_CAP + (pos & (WTW_CAP - 1u));
}

// wtw_less reports whether key a sorts before key b.
__device__ __forceinline__ bool wtw_less(double ar, double as, warped_u32 ad, warped_u32 asn, warped_u64 aq,
                                         double br, double bs, warped_u32 bd, warped_u32 bsn, warped_u64 bq) {
    if (ar != br) return ar < br;
    if (as != bs) return as < bs;
    if (ad != bd) return ad < bd;
    if (asn != bsn) return asn < bsn;
    return aq < bq;
}

__device__ __forceinline__ bool wtw_slot_less(const WtwRun* r, warped_u64 a, warped_u64 b) {
    return wtw_less(r->recv[a], r->send[a], r->depth[a], r->sender[a], r->sseq[a],
                    r->recv[b], r->send[b], r->depth[b], r->sender[b], r->sseq[b]);
}

__device__ __forceinline__ void wtw_slot_copy(const WtwRun* r, warped_u64 d, warped_u64 s) {
    r->recv[d] = r->recv[s];
    r->send[d] = r->send[s];
    r->depth[d] = r->depth[s];
    r->sender[d] = r->sender[s];
    r->sseq[d] = r->sseq[s];
#if WTW_WORDS
    for (int k = 0; k < 4; k++) r->words[4 * d + k] = r->words[4 * s + k];
#endif
    r->draws[d] = r->draws[s];
    r->mark[d] = r->mark[s];
    r->nout[d] = r->nout[s];
    for (int k = 0; k < WTW_OUT; k++) {
        r->out_to[(warped_u64)WTW_OUT * d + k] = r->out_to[(warped_u64)WTW_OUT * s + k];
        r->out_at[(warped_u64)WTW_OUT * d + k] = r->out_at[(warped_u64)WTW_OUT * s + k];
    }
#if WTW_WORDS
    for (int k = 0; k < 4 * WTW_OUT; k++) {
        r->out_words[4ull * WTW_OUT * d + k] = r->out_words[4ull * WTW_OUT * s + k];
    }
#endif
}

// Atomics on one word that every thread hits (the GVT minimum, the buffers' counts) are
// combined per warp first: one atomic per warp instead of one per thread, which would
// serialize a million threads on one address. The stand-in and the host-C++ backend run
// threads one at a time, so there each thread is its own warp.
#ifdef __CUDA_ARCH__
// wtw_reserve returns the first of k consecutive entries counted by *count for the calling
// thread; k must be the same for every active thread of the warp.
__device__ __forceinline__ warped_u32 wtw_reserve(warped_u32* count, warped_u32 k) {
    const unsigned mask = __activemask();
    const unsigned lane = threadIdx.x & 31u;
    const unsigned leader = __ffs(mask) - 1u;
    const unsigned rank = __popc(mask & ((1u << lane) - 1u));
    warped_u32 base = 0;
    if (lane == leader) base = atomicAdd(count, k * (warped_u32)__popc(mask));
    return __shfl_sync(mask, base, leader) + rank * k;
}

// wtw_warp_min lowers *p to the least b of the warp; every thread of the warp must call it.
__device__ __forceinline__ void wtw_warp_min(warped_u64* p, warped_u64 b) {
    for (int off = 16; off > 0; off >>= 1) {
        warped_u64 o = __shfl_down_sync(0xffffffffu, b, off);
        b = o < b ? o : b;
    }
    if ((threadIdx.x & 31u) == 0 && b < *(volatile warped_u64*)p) atomicMin(p, b);
}

// wtw_warp_add adds the warp's v to *p; every thread of the warp must call it.
__device__ __forceinline__ void wtw_warp_add(warped_u64* p, warped_u64 v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31u) == 0 && v != 0) atomicAdd(p, v);
}
#else
__device__ __forceinline__ warped_u32 wtw_reserve(warped_u32* count, warped_u32 k) { return atomicAdd(count, k); }

__device__ __forceinline__ void wtw_warp_min(warped_u64* p, warped_u64 b) {
    if (b < *p) *p = b;
}

__device__ __forceinline__ void wtw_warp_add(warped_u64* p, warped_u64 v) { *p += v; }
#endif

__device__ __forceinline__ WarpedXORWOW wtw_rng(const WtwRun* r, warped_u32 lp) {
    const warped_u32* s = r->rng + 6ull * lp;
    WarpedXORWOW g;
    g.d = s[0]; g.v0 = s[1]; g.v1 = s[2]; g.v2 = s[3]; g.v3 = s[4]; g.v4 = s[5];
    return g;
}

__device__ __forceinline__ void wtw_set_rng(const WtwRun* r, warped_u32 lp, WarpedXORWOW g) {
    warped_u32* s = r->rng + 6ull * lp;
    s[0] = g.d; s[1] = g.v0; s[2] = g.v1; s[3] = g.v2; s[4] = g.v3; s[5] = g.v4;
}

// wtw_push appends an entry to b and returns its index, or WTW_NONE (and the error bit)
// when b is full.
__device__ __forceinline__ warped_u32 wtw_push(const WtwBuf* b, warped_u32* err, warped_u32 bit) {
    warped_u32 i = wtw_reserve(b->count, 1u);
    if (i >= b->cap) {
        atomicOr(err, bit);
        return WTW_NONE;
    }
    return i;
}

#if WTW_SAVE
// State saving, for models without a reverse handler (a handling that drops information,
// such as a merge that keeps the k closest): wtw_save copies the LP's state into the
// slot of the event about to be handled, and wtw_restore copies it back when the event is
// rolled back. The loop undoes an LP's events latest first, so the last copy restored is
// the state before the earliest undone event. Only processed slots hold a copy, and those
// never move (sorting, making room and removing cancelled events move pending slots
// only), so wtw_slot_copy need not carry it.
__device__ __forceinline__ void wtw_save(const WtwRun* r, warped_u32 lp, warped_u64 s) {
    const warped_u64* from = r->state + (warped_u64)WTW_STATE * lp;
    warped_u64* to = r->saved + (warped_u64)WTW_STATE * s;
    for (int k = 0; k < WTW_STATE; k++) to[k] = from[k];
}

__device__ __forceinline__ void wtw_restore(const WtwRun* r, warped_u32 lp, warped_u64 s) {
    const warped_u64* from = r->saved + (warped_u64)WTW_STATE * s;
    warped_u64* to = r->state + (warped_u64)WTW_STATE * lp;
    for (int k = 0; k < WTW_STATE; k++) to[k] = from[k];
}
#endif

// wtw_undo rolls back the LP's last processed event (slot position proc-1): reverse (or
// restore) the state, rewind the generator, and send an anti-message for each event it
// sent.
__device__ void wtw_undo(const WtwRun* r, warped_u32 lp, warped_u32 pos, const WtwBuf* anti) {
    warped_u64 s = wtw_slot(lp, pos);
    WarpedXORWOW g = wtw_rng(r, lp);
    warped_rewind(&g, r->draws[s]);
    wtw_set_rng(r, lp, g);
#if WTW_SAVE
    wtw_restore(r, lp, s);
#else
#if WTW_WORDS
    const warped_u64* w = r->words + 4 * s;
#else
    const warped_u64* w = 0;
#endif
    wtw_call_reverse(r->params, r->state + (warped_u64)WTW_STATE * lp, g, lp, r->lps, r->recv[s], w);
#endif
    warped_u32 n = r->nout[s];
    warped_u64 q = r->seq[lp] - n;
    r->seq[lp] = q;
    for (warped_u32 k = 0; k < n; k++) {
        warped_u32 i = wtw_push(anti, r->err, WTW_ERR_ANTIS);
        if (i == WTW_NONE) continue;
        double at = r->out_at[(warped_u64)WTW_OUT * s + k];
        anti->to[i] = r->out_to[(warped_u64)WTW_OUT * s + k];
        anti->recv[i] = at;
        anti->send[i] = r->recv[s];
        anti->depth[i] = at == r->recv[s] ? r->depth[s] + 1u : 0u;
        anti->sender[i] = lp;
        anti->seq[i] = q + k;
#if WTW_WORDS
        for (int j = 0; j < 4; j++) anti->words[4ull * i + j] = r->out_words[4ull * (WTW_OUT * s + k) + j];
#endif
    }
    r->rolled[lp]++;
}

// wtw_gvt: GVT, the least pending receive time, into *gvt (which starts at +inf). Every
// thread of the grid takes part in the warps' minimum, those past the LPs too.
extern "C" __global__ void wtw_gvt(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ evp, const WtwBuf* __restrict__ antip, warped_u64* gvt) {
    const WtwRun& r = *rp;
    const WtwBuf& ev = *evp;
    const WtwBuf& anti = *antip;
    if (wtw_done(&r)) return;
    warped_u32 i = WARPED_INDEX();
    warped_u32 stride = gridDim.x * blockDim.x;
    if (i < WTW_MAX_PASSES) r.active[i] = 0;
    warped_u64 m = WTW_INF_BITS;
    if (i < r.lps) {
        warped_u32 p = r.proc[i];
        if (p != r.tail[i]) m = warped_f64_bits(r.recv[wtw_slot(i, p)]);
    }
    warped_u32 n = wtw_minu(*ev.count, ev.cap);
    for (warped_u32 k = i; k < n; k += stride) {
        if (ev.to[k] != WTW_NONE) {
            warped_u64 b = warped_f64_bits(ev.recv[k]);
            m = b < m ? b : m;
        }
    }
    n = wtw_minu(*anti.count, anti.cap);
    for (warped_u32 k = i; k < n; k += stride) {
        warped_u64 b = warped_f64_bits(anti.recv[k]);
        m = b < m ? b : m;
    }
    wtw_warp_min(gvt, m);
}

// wtw_exec handles LP lp's earliest pending event if it lies below the limit.
__device__ __forceinline__ void wtw_exec(const WtwRun* r, warped_u32 lp, double gvt, const WtwBuf* ev, warped_u32 pass) {
    warped_u32 p = r->proc[lp];
    if (p == r->tail[lp]) return;
    warped_u64 s = wtw_slot(lp, p);
    double now = r->recv[s];
    if (!(now < r->end && now <= gvt + r->bound)) return;
    warped_u32 base = wtw_reserve(ev->count, (warped_u32)WTW_OUT);
    if (base + WTW_OUT > ev->cap) {
        // No room to send: the event waits for the next iteration (wtw_sort empties ev).
        for (warped_u32 i = base; i < ev->cap; i++) ev->to[i] = WTW_NONE;
        return;
    }
    warped_u32 to[WTW_OUT];
    double at[WTW_OUT];
    warped_u64 ow[4 * WTW_OUT];
    WarpedXORWOW g = wtw_rng(r, lp);
    warped_u32 d0 = g.d;
#if WTW_WORDS
    const warped_u64* w = r->words + 4 * s;
#else
    const warped_u64* w = 0;
#endif
#if WTW_SAVE
    wtw_save(r, lp, s);
#endif
    warped_u32 n = wtw_call_handle(r->params, r->state + (warped_u64)WTW_STATE * lp, &g, lp, r->lps, now, w, to, at, ow);
    // The draws taken: d moved by WARPED_WEYL per draw; 0x385e5f0d is WARPED_WEYL's inverse
    // modulo 2^32 (362437 * 0x385e5f0d = 1 mod 2^32).
    r->draws[s] = (g.d - d0) * 0x385e5f0du;
    wtw_set_rng(r, lp, g);
    warped_u64 q = r->seq[lp];
    warped_u32 dep = r->depth[s];
    for (warped_u32 k = 0; k < WTW_OUT; k++) {
        warped_u32 i = base + k;
        if (k >= n) {
            ev->to[i] = WTW_NONE;
            continue;
        }
        ev->to[i] = to[k];
        ev->recv[i] = at[k];
        ev->send[i] = now;
        ev->depth[i] = at[k] == now ? dep + 1u : 0u;
        ev->sender[i] = lp;
        ev->seq[i] = q + k;
#if WTW_WORDS
        for (int j = 0; j < 4; j++) ev->words[4ull * i + j] = ow[4 * k + j];
#endif
        r->out_to[(warped_u64)WTW_OUT * s + k] = to[k];
        r->out_at[(warped_u64)WTW_OUT * s + k] = at[k];
#if WTW_WORDS
        for (int j = 0; j < 4; j++) r->out_words[4ull * (WTW_OUT * s + k) + j] = ow[4 * k + j];
#endif
    }
    r->seq[lp] = q + n;
    r->nout[s] = n;
    r->proc[lp] = p + 1;
    r->processed[lp]++;
    wtw_reserve(&r->active[pass], 1u);
}

// wtw_step: fossil collection below GVT, then one execution. It also resets the other GVT
// word for the next iteration.
extern "C" __global__ void wtw_step(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ evp, const warped_u64* gvt, warped_u64* next) {
    const WtwRun& r = *rp;
    const WtwBuf& ev = *evp;
    warped_u32 lp = WARPED_INDEX();
    if (wtw_stop(&r, *gvt, lp)) return;
    if (lp == 0) *next = WTW_INF_BITS;
    if (lp >= r.lps) return;
    double g = warped_bits_f64(*gvt);
    warped_u32 h = r.head[lp], p = r.proc[lp];
    if (h != p && r.recv[wtw_slot(lp, h)] < g) {
        do {
            h++;
        } while (h != p && r.recv[wtw_slot(lp, h)] < g);
        r.last[lp] = r.recv[wtw_slot(lp, h - 1)];
        r.head[lp] = h;
    }
    wtw_exec(&r, lp, g, &ev, 0);
}

// wtw_execute: execution pass number pass (1, 2, ...) of the iteration, run only while
// the pass before it handled at least r.threshold events (the inactivity threshold).
extern "C" __global__ void wtw_execute(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ evp, const warped_u64* gvt, warped_u32 pass) {
    const WtwRun& r = *rp;
    const WtwBuf& ev = *evp;
    warped_u32 lp = WARPED_INDEX();
    if (lp >= r.lps || wtw_done(&r) || r.active[pass - 1] < r.threshold) return;
    wtw_exec(&r, lp, warped_bits_f64(*gvt), &ev, pass);
}

// wtw_move copies entry i of in to entry j of out, with its words when words is set.
__device__ __forceinline__ void wtw_move(const WtwBuf* in, warped_u32 i, const WtwBuf* out, warped_u32 j, bool words) {
    out->to[j] = in->to[i];
    out->recv[j] = in->recv[i];
    out->send[j] = in->send[i];
    out->depth[j] = in->depth[i];
    out->sender[j] = in->sender[i];
    out->seq[j] = in->seq[i];
#if WTW_WORDS
    if (words) {
        for (int k = 0; k < 4; k++) out->words[4ull * j + k] = in->words[4ull * i + k];
    }
#endif
}

// wtw_take writes event i of buffer b into slot s, unmarked.
__device__ __forceinline__ void wtw_take(const WtwRun* r, warped_u64 s, const WtwBuf* b, warped_u32 i) {
    r->recv[s] = b->recv[i];
    r->send[s] = b->send[i];
    r->depth[s] = b->depth[i];
    r->sender[s] = b->sender[i];
    r->sseq[s] = b->seq[i];
    r->mark[s] = 0;
#if WTW_WORDS
    for (int k = 0; k < 4; k++) r->words[4 * s + k] = b->words[4ull * i + k];
#endif
}

// wtw_put writes the event in slot s of LP to into entry j of buffer b (wtw_take's inverse).
__device__ __forceinline__ void wtw_put(const WtwBuf* b, warped_u32 j, const WtwRun* r, warped_u64 s, warped_u32 to) {
    b->to[j] = to;
    b->recv[j] = r->recv[s];
    b->send[j] = r->send[s];
    b->depth[j] = r->depth[s];
    b->sender[j] = r->sender[s];
    b->seq[j] = r->sseq[s];
#if WTW_WORDS
    for (int k = 0; k < 4; k++) b->words[4ull * j + k] = r->words[4 * s + k];
#endif
}

// wtw_deliver: every event of ev goes into its receiver's list, or into carry when the
// list is full (raising the receiver's want) or closed above its limit.
extern "C" __global__ void wtw_deliver(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ evp, const WtwBuf* __restrict__ carryp) {
    const WtwRun& r = *rp;
    const WtwBuf& ev = *evp;
    const WtwBuf& carry = *carryp;
    if (wtw_done(&r)) return;
    warped_u32 stride = gridDim.x * blockDim.x;
    warped_u32 n = wtw_minu(*ev.count, ev.cap);
    for (warped_u32 i = WARPED_INDEX(); i < n; i += stride) {
        warped_u32 to = ev.to[i];
        if (to == WTW_NONE) continue;
        warped_u64 at = warped_f64_bits(ev.recv[i]);
        bool ok = at <= r.limit[to];
        if (ok) {
            warped_u32 pos = atomicAdd(&r.tail[to], 1u);
            if (pos - r.head[to] < WTW_CAP - 1u) { // one slot stays free for wtw_sort
                wtw_take(&r, wtw_slot(to, pos), &ev, i);
                continue;
            }
            atomicSub(&r.tail[to], 1u);
            atomicMin(&r.want[to], at);
        }
        warped_u32 j = wtw_push(&carry, r.err, WTW_ERR_EVENTS);
        if (j != WTW_NONE) wtw_move(&ev, i, &carry, j, true);
    }
}

// wtw_sort: each LP sorts the events that arrived, rolls back past the earliest of them,
// and makes room for an event it refused. It empties ev (which wtw_deliver read).
extern "C" __global__ void wtw_sort(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ evp, const WtwBuf* __restrict__ carryp, const WtwBuf* __restrict__ antip) {
    const WtwRun& r = *rp;
    const WtwBuf& ev = *evp;
    const WtwBuf& carry = *carryp;
    const WtwBuf& anti = *antip;
    if (wtw_done(&r)) return;
    warped_u32 lp = WARPED_INDEX();
    if (lp == 0) *ev.count = 0;
    if (lp >= r.lps) return;
    warped_u32 h = r.head[lp], p = r.proc[lp], st = r.stail[lp], t = r.tail[lp];
    if (st != t) {
        // The earliest arrival.
        warped_u64 m = wtw_slot(lp, st);
        for (warped_u32 k = st + 1; k != t; k++) {
            warped_u64 s = wtw_slot(lp, k);
            if (wtw_slot_less(&r, s, m)) m = s;
        }
        // Roll back every processed event after it.
        while (p != h && wtw_slot_less(&r, m, wtw_slot(lp, p - 1))) {
            wtw_undo(&r, lp, p - 1, &anti);
            p--;
        }
        // Insertion sort of [p, t): [p, st) is sorted.
        const warped_u64 tmp = wtw_slot(lp, h - 1); // the free slot before head (the list is never full here)
        for (warped_u32 k = st; k != t; k++) {
            warped_u32 j = k;
            if (j == p || !wtw_slot_less(&r, wtw_slot(lp, j), wtw_slot(lp, j - 1))) continue;
            wtw_slot_copy(&r, tmp, wtw_slot(lp, k));
            while (j != p && wtw_slot_less(&r, tmp, wtw_slot(lp, j - 1))) {
                wtw_slot_copy(&r, wtw_slot(lp, j), wtw_slot(lp, j - 1));
                j--;
            }
            wtw_slot_copy(&r, wtw_slot(lp, j), tmp);
        }
    }
    warped_u64 want = r.want[lp];
    if (want != WTW_INF_BITS) {
        // Make room: everything after the refused event goes back in transit, and nothing
        // after it is admitted until the list has room.
        double w = warped_bits_f64(want);
        while (p != h && r.recv[wtw_slot(lp, p - 1)] > w) {
            wtw_undo(&r, lp, p - 1, &anti);
            p--;
        }
        while (t != p && r.recv[wtw_slot(lp, t - 1)] > w) {
            warped_u32 j = wtw_push(&carry, r.err, WTW_ERR_EVENTS);
            if (j != WTW_NONE) wtw_put(&carry, j, &r, wtw_slot(lp, t - 1), lp);
            t--;
            r.moved[lp]++;
        }
        r.limit[lp] = want;
        r.want[lp] = WTW_INF_BITS;
    } else if (r.limit[lp] != WTW_INF_BITS && t - h <= WTW_CAP / 2) {
        r.limit[lp] = WTW_INF_BITS;
    }
    r.proc[lp] = p;
    r.tail[lp] = t;
    r.stail[lp] = t;
}

// wtw_same_words reports whether slot s carries the words of anti-message i of anti
// (always, without words).
__device__ __forceinline__ bool wtw_same_words(const WtwRun* r, warped_u64 s, const WtwBuf* anti, warped_u32 i) {
#if WTW_WORDS
    for (int k = 0; k < 4; k++) {
        if (r->words[4 * s + k] != anti->words[4ull * i + k]) return false;
    }
#endif
    return true;
}

// wtw_cancel: each anti-message marks its positive in the receiver's list; one whose
// positive is not there yet (still in transit) waits in next.
extern "C" __global__ void wtw_cancel(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ antip, const WtwBuf* __restrict__ nextp) {
    const WtwRun& r = *rp;
    const WtwBuf& anti = *antip;
    const WtwBuf& next = *nextp;
    if (wtw_done(&r)) return;
    warped_u32 stride = gridDim.x * blockDim.x;
    warped_u32 n = wtw_minu(*anti.count, anti.cap);
    for (warped_u32 i = WARPED_INDEX(); i < n; i += stride) {
        warped_u32 to = anti.to[i];
        warped_u32 h = r.head[to], t = r.tail[to];
        bool found = false;
        for (warped_u32 k = h; k != t && !found; k++) {
            warped_u64 s = wtw_slot(to, k);
            if (r.recv[s] == anti.recv[i] && r.sseq[s] == anti.seq[i] && r.sender[s] == anti.sender[i] &&
                r.send[s] == anti.send[i] && r.depth[s] == anti.depth[i] && wtw_same_words(&r, s, &anti, i) &&
                atomicCAS(&r.mark[s], 0u, 1u) == 0u) {
                found = true;
                r.cancel[to] = 1u;
            }
        }
        if (found) continue;
        warped_u32 j = wtw_push(&next, r.err, WTW_ERR_ANTIS);
        if (j != WTW_NONE) wtw_move(&anti, i, &next, j, true);
    }
}

// wtw_annul: each LP with marked slots rolls back past the earliest marked processed one
// and removes the marked ones. It empties anti (which wtw_cancel read); the anti-messages
// of the roll-back go to next.
extern "C" __global__ void wtw_annul(const WtwRun* __restrict__ rp, const WtwBuf* __restrict__ antip, const WtwBuf* __restrict__ nextp) {
    const WtwRun& r = *rp;
    const WtwBuf& anti = *antip;
    const WtwBuf& next = *nextp;
    if (wtw_done(&r)) return;
    warped_u32 lp = WARPED_INDEX();
    if (lp == 0) *anti.count = 0;
    if (lp >= r.lps || !r.cancel[lp]) return;
    r.cancel[lp] = 0;
    warped_u32 h = r.head[lp], p = r.proc[lp], t = r.tail[lp];
    warped_u32 first = t;
    for (warped_u32 k = h; k != t; k++) {
        if (r.mark[wtw_slot(lp, k)]) {
            first = k;
            break;
        }
    }
    if (first == t) return;
    while (p - h > first - h) {
        wtw_undo(&r, lp, p - 1, &next);
        p--;
    }
    warped_u32 j = first;
    for (warped_u32 k = first; k != t; k++) {
        warped_u64 s = wtw_slot(lp, k);
        if (r.mark[s]) continue;
        if (j != k) wtw_slot_copy(&r, wtw_slot(lp, j), s);
        j++;
    }
    r.proc[lp] = p;
    r.tail[lp] = j;
    r.stail[lp] = j;
}

// wtw_finish: fossil collection of everything (after the last iteration, GVT >= end) so
// that last holds each LP's last event's time.
extern "C" __global__ void wtw_finish(const WtwRun* __restrict__ rp) {
    const WtwRun& r = *rp;
    warped_u32 lp = WARPED_INDEX();
    if (lp >= r.lps) return;
    warped_u32 h = r.head[lp], p = r.proc[lp];
    if (h != p) {
        r.last[lp] = r.recv[wtw_slot(lp, p - 1)];
        r.head[lp] = p;
    }
}

// wtw_tally: the run's counters into *out for the host: WtwLive as it is, and the sums of
// the LPs' counters, which must start at 0. It clears the sums of *next, the block of the
// tally after (two blocks alternate: the host's copy of one is queued before the tally that
// clears it). Every thread of the grid takes part in the warps' sums.
extern "C" __global__ void wtw_tally(const WtwRun* __restrict__ rp, WtwTally* out, WtwTally* next) {
    const WtwRun& r = *rp;
    warped_u32 lp = WARPED_INDEX();
    if (lp == 0) {
        out->live = *(const WtwLive*)r.err;
        next->processed = next->rolled = next->moved = next->pending = next->history = 0;
    }
    warped_u64 processed = 0, rolled = 0, moved = 0, pending = 0, history = 0;
    if (lp < r.lps) {
        processed = r.processed[lp];
        rolled = r.rolled[lp];
        moved = r.moved[lp];
        pending = r.tail[lp] - r.proc[lp];
        history = r.proc[lp] - r.head[lp];
    }
    wtw_warp_add(&out->processed, processed);
    wtw_warp_add(&out->rolled, rolled);
    wtw_warp_add(&out->moved, moved);
    wtw_warp_add(&out->pending, pending);
    wtw_warp_add(&out->history, history);
}
