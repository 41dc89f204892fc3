package kademlia

// deviceSource is the CUDA text of the node's handler for package gpuwarp: wtw_handle is
// Handle, statement for statement (kad_closest is network.closest, kad_add Shortlist.add,
// kad_ask Node.ask), on the state words of PackState's layout and the overlay that
// deviceParams lays out in the parameters. There is no wtw_reverse: the model sets
// SaveState. An unknown kind, which the model never sends (Handle panics on one), changes
// nothing and sends nothing.
const deviceSource = `
#define KAD_MAX_K 32
#define KAD_START 0u
#define KAD_FIND_NODE 1u
#define KAD_REPLY 2u
#define KAD_UNQUERIED 0u
#define KAD_ASKED 1u
#define KAD_ANSWERED 2u

// Parameter words (deviceParams).
#define KAD_P_K 0
#define KAD_P_ALPHA 1
#define KAD_P_INTERVAL 2
#define KAD_P_MIN 3
#define KAD_P_SPREAD 4
#define KAD_P_IDS 6
#define KAD_P_START 7
#define KAD_P_CONTACTS 8
#define KAD_P_DSTART 9
#define KAD_P_DIR 10

// State words (PackState).
#define KAD_S_STARTED 0
#define KAD_S_COMPLETED 1
#define KAD_S_REQUESTS 2
#define KAD_S_SERVED 3
#define KAD_S_STALE 4
#define KAD_S_HOPS 5
#define KAD_S_LATENCY 6
#define KAD_S_KEY 7
#define KAD_S_BEGIN 8
#define KAD_S_FLAGS 9
#define KAD_S_LIST 10

// kad_u32 is element i of the 32-bit table whose offset is parameter word table.
__device__ __forceinline__ warped_u32 kad_u32(const warped_u64* p, int table, warped_u64 i) {
    return ((const warped_u32*)(p + p[table]))[i];
}

// kad_id is node v's id.
__device__ __forceinline__ warped_u64 kad_id(const warped_u64* p, warped_u32 v) { return p[p[KAD_P_IDS] + v]; }

// Shortlist entries: node | status<<32 | depth<<40.
__device__ __forceinline__ warped_u32 kad_node(warped_u64 e) { return (warped_u32)e; }
__device__ __forceinline__ warped_u32 kad_status(warped_u64 e) { return (warped_u32)(e >> 32) & 0xffu; }
__device__ __forceinline__ warped_u32 kad_depth(warped_u64 e) { return (warped_u32)(e >> 40) & 0xffu; }
__device__ __forceinline__ warped_u64 kad_entry(warped_u32 v, warped_u32 status, warped_u32 depth) {
    return (warped_u64)v | (warped_u64)status << 32 | (warped_u64)depth << 40;
}

// kad_closest is network.closest: the (at most k) contacts of node u's table closest to
// key, into out in increasing distance; it returns their number. Its four passes are
// closest's four loops over the buckets (the first two highest first, the others lowest
// first).
__device__ warped_u32 kad_closest(const warped_u64* p, warped_u32 u, warped_u64 key, warped_u32 k, warped_u32* out) {
    const warped_u64 t = kad_id(p, u) ^ key;
    int j = 63;
    while (j >= 0 && ((t >> j) & 1u) == 0) j--;
    const warped_u32 d0 = kad_u32(p, KAD_P_DSTART, u), d1 = kad_u32(p, KAD_P_DSTART, u + 1u);
    const warped_u32 cend = kad_u32(p, KAD_P_START, u + 1u);
    const warped_u64* dir = p + p[KAD_P_DIR];
    warped_u64 dist[KAD_MAX_K];
    warped_u32 n = 0;
    for (int pass = 0; pass < 4; pass++) {
        for (warped_u32 q = 0; q < d1 - d0; q++) {
            const warped_u32 b = pass < 2 ? d0 + q : d1 - 1u - q;
            const int i = (int)(dir[b] >> 32);
            bool take;
            switch (pass) {
            case 0: take = i == j; break;
            case 1: take = i < j && ((t >> i) & 1u) == 1; break;
            case 2: take = i < j && ((t >> i) & 1u) == 0; break;
            default: take = i > j; break;
            }
            if (!take) continue;
            const warped_u32 end = b + 1u < d1 ? (warped_u32)dir[b + 1u] : cend;
            for (warped_u32 c = (warped_u32)dir[b]; c < end; c++) {
                const warped_u32 v = kad_u32(p, KAD_P_CONTACTS, c);
                const warped_u64 d = kad_id(p, v) ^ key;
                if (n == k && d >= dist[n - 1u]) continue;
                if (n < k) n++;
                warped_u32 x = n - 1u;
                for (; x > 0 && dist[x - 1u] > d; x--) {
                    dist[x] = dist[x - 1u];
                    out[x] = out[x - 1u];
                }
                dist[x] = d;
                out[x] = v;
            }
            if (n == k) return n;
        }
    }
    return n;
}

// kad_find is Shortlist.find on the n entries of list.
__device__ __forceinline__ int kad_find(const warped_u64* list, warped_u32 n, warped_u32 v) {
    for (warped_u32 i = 0; i < n; i++) {
        if (kad_node(list[i]) == v) return (int)i;
    }
    return -1;
}

// kad_add is Shortlist.add: list holds *n entries of at most k.
__device__ void kad_add(const warped_u64* p, warped_u64* list, warped_u32* n, warped_u64 key, warped_u32 k,
                        warped_u32 self, warped_u32 v, warped_u32 depth) {
    if (v == self) return;
    const warped_u64 d = kad_id(p, v) ^ key;
    warped_u32 m = *n;
    if (m == k && d > (kad_id(p, kad_node(list[m - 1u])) ^ key)) return;
    const int i = kad_find(list, m, v);
    if (i >= 0) {
        const warped_u64 e = list[i];
        if (depth < kad_depth(e)) list[i] = kad_entry(kad_node(e), kad_status(e), depth);
        return;
    }
    warped_u32 pos = m;
    while (pos > 0 && (kad_id(p, kad_node(list[pos - 1u])) ^ key) > d) pos--;
    if (pos >= k) return;
    if (m < k) {
        m++;
        *n = m;
    }
    for (warped_u32 x = m - 1u; x > pos; x--) list[x] = list[x - 1u];
    list[pos] = kad_entry(v, KAD_UNQUERIED, depth);
}

// kad_delay is shared.delay.
__device__ __forceinline__ double kad_delay(const warped_u64* p, WarpedXORWOW* g) {
    return warped_bits_f64(p[KAD_P_MIN]) + warped_exponential(g, warped_bits_f64(p[KAD_P_SPREAD]));
}

// kad_ask is Node.ask: FIND_NODE requests to the closest entries not asked yet, until
// alpha are in flight; it returns the events sent.
__device__ warped_u32 kad_ask(const warped_u64* p, warped_u64* s, warped_u64* list, warped_u32 n, warped_u32* inflight,
                              WarpedXORWOW* g, warped_u32 lp, double now,
                              warped_u32* out_to, double* out_at, warped_u64* out_words) {
    const warped_u32 alpha = (warped_u32)p[KAD_P_ALPHA];
    warped_u32 sent = 0;
    for (warped_u32 i = 0; i < n && *inflight < alpha; i++) {
        const warped_u64 e = list[i];
        if (kad_status(e) != KAD_UNQUERIED) continue;
        list[i] = kad_entry(kad_node(e), KAD_ASKED, kad_depth(e));
        *inflight = (*inflight + 1u) & 0xffu;
        s[KAD_S_REQUESTS]++;
        out_to[sent] = kad_node(e);
        out_at[sent] = now + kad_delay(p, g);
        warped_u64* w = out_words + 4u * sent;
        w[0] = KAD_FIND_NODE;
        w[1] = s[KAD_S_KEY];
        w[2] = (warped_u64)lp | (s[KAD_S_STARTED] & 0xffffffffull) << 32;
        w[3] = kad_depth(e);
        sent++;
    }
    return sent;
}

__device__ warped_u32 wtw_handle(const warped_u64* p, warped_u64* s, WarpedXORWOW* g, warped_u32 lp,
                                 warped_u32 lps, double now, const warped_u64* w,
                                 warped_u32* out_to, double* out_at, warped_u64* out_words) {
    const warped_u32 k = (warped_u32)p[KAD_P_K];
    warped_u64* list = s + KAD_S_LIST;
    const warped_u64 f = s[KAD_S_FLAGS];
    warped_u32 active = (warped_u32)f & 0xffu, inflight = (warped_u32)(f >> 8) & 0xffu;
    warped_u32 depth = (warped_u32)(f >> 16) & 0xffu, n = (warped_u32)(f >> 24) & 0xffu;
    warped_u32 sent = 0;
    warped_u32 own[KAD_MAX_K];
    switch (w[0]) {
    case KAD_START: {
        s[KAD_S_STARTED]++;
        active = 1;
        inflight = 0;
        depth = 0;
        const warped_u64 hi = warped_next(g);
        const warped_u64 key = hi << 32 | (warped_u64)warped_next(g);
        s[KAD_S_KEY] = key;
        s[KAD_S_BEGIN] = warped_f64_bits(now);
        n = 0;
        for (warped_u32 i = 0; i < k; i++) list[i] = 0;
        const warped_u32 c = kad_closest(p, lp, key, k, own);
        for (warped_u32 i = 0; i < c; i++) kad_add(p, list, &n, key, k, lp, own[i], 1u);
        sent = kad_ask(p, s, list, n, &inflight, g, lp, now, out_to, out_at, out_words);
        break;
    }
    case KAD_FIND_NODE:
        s[KAD_S_SERVED]++;
        out_to[0] = (warped_u32)w[2];
        out_at[0] = now + kad_delay(p, g);
        out_words[0] = KAD_REPLY;
        out_words[1] = w[1];
        out_words[2] = w[2] >> 32;
        out_words[3] = (warped_u64)lp | w[3] << 32;
        sent = 1;
        break;
    case KAD_REPLY: {
        const warped_u64 key = s[KAD_S_KEY];
        if (!active || w[2] != (s[KAD_S_STARTED] & 0xffffffffull) || w[1] != key) {
            s[KAD_S_STALE]++;
            break;
        }
        const warped_u32 responder = (warped_u32)w[3], d = (warped_u32)(w[3] >> 32) & 0xffu;
        inflight = (inflight - 1u) & 0xffu;
        depth = depth > d ? depth : d;
        const int i = kad_find(list, n, responder);
        if (i >= 0) list[i] = kad_entry(responder, KAD_ANSWERED, kad_depth(list[i]));
        const warped_u32 c = kad_closest(p, responder, key, k, own);
        const warped_u32 learned = (d < 254u ? d : 254u) + 1u;
        for (warped_u32 x = 0; x < c; x++) kad_add(p, list, &n, key, k, lp, own[x], learned);
        bool done = true;
        for (warped_u32 x = 0; x < n && done; x++) done = kad_status(list[x]) == KAD_ANSWERED;
        if (done) {
            active = 0;
            s[KAD_S_COMPLETED]++;
            s[KAD_S_HOPS] += depth;
            s[KAD_S_LATENCY] = warped_f64_bits(warped_bits_f64(s[KAD_S_LATENCY]) + (now - warped_bits_f64(s[KAD_S_BEGIN])));
            out_to[0] = lp;
            out_at[0] = now + warped_exponential(g, warped_bits_f64(p[KAD_P_INTERVAL]));
            for (int x = 0; x < 4; x++) out_words[x] = 0; // KAD_START
            sent = 1;
            break;
        }
        sent = kad_ask(p, s, list, n, &inflight, g, lp, now, out_to, out_at, out_words);
        break;
    }
    default:
        break;
    }
    s[KAD_S_FLAGS] = (warped_u64)active | (warped_u64)inflight << 8 | (warped_u64)depth << 16 | (warped_u64)n << 24;
    return sent;
}
`
