// cuda_standin.cpp: a host-side stand-in for the part of the CUDA driver API and NVRTC
// that package gpuoffload binds (gpuoffload/cudaapi.go), for tests on machines without a
// GPU. Package gpuoffload/standin builds it (Build), and so does scripts/cuda-standin.sh;
// gpuoffload loads it in place of libcuda.so.1 when WARPED_CUDA_LIBRARY names it.
//
// What it does, and what it checks on the way (a real driver would fail or misbehave):
//
//   - One device, "warped CUDA stand-in (host CPU)", compute capability 9.0, 4 GiB.
//     cuInit must come first; each call that needs a context checks that the primary
//     context is current on the calling thread (contexts are current per thread).
//   - Device memory is host memory (cuMemAlloc_v2 returns a host address). Copies check
//     that the device range lies inside one allocation.
//   - Streams run in order, lazily: the copies and launches queued on a stream run when it
//     is synchronized or destroyed (one valid schedule of a real GPU, the one that shows a
//     host reading results before synchronizing). cuMemFree_v2 and cuModuleUnload run all
//     queued work first, as the real ones synchronize. Launch parameters are copied at
//     launch, as the driver does.
//   - nvrtcCompileProgram builds the CUDA C source as host C++ with the system compiler
//     ($WARPED_CUDA_STANDIN_CXX, $CXX or c++), with host_prelude.h (the host-C++ backend's
//     prelude) in front and standin_launch.h plus one launch entry per __global__ function
//     behind, into a shared object in a content-addressed cache directory
//     ($WARPED_CUDA_STANDIN_CACHE, default $TMPDIR/warped-cuda-standin-UID); --fmad=false
//     becomes -ffp-contract=off. The "PTX" (or CUBIN) is a short text naming that shared
//     object; cuModuleLoadDataEx dlopens it and cuModuleGetFunction finds the entry.
//   - cuLaunchKernel queues the kernel; it runs every thread of the grid, one at a time, on
//     the thread that synchronizes: in order, or reversed or shuffled (a new order each
//     launch) where $WARPED_CUDA_STANDIN_ORDER (read by cuInit) or warped_standin_set_order
//     says "reverse" or "shuffle[:SEED]", which shows a kernel whose result depends on the
//     order of its threads (racy on a GPU; standin_launch.h).
//   - Events: cuEventRecord queues a record on a stream (not while it is being captured);
//     cuEventSynchronize runs that stream's work up to the event's last record, and no
//     further, so work queued behind it stays queued as on a busy GPU. Host memory from
//     cuMemAllocHost_v2 is the pinned memory of the asynchronous copies.
//
// Faults, for tests: $WARPED_CUDA_STANDIN_FAULTS (read by cuInit) or
// warped_standin_set_faults, a comma-separated list of
//
//   alloc           cuMemAlloc_v2 fails with CUDA_ERROR_OUT_OF_MEMORY
//   hostalloc       cuMemAllocHost_v2 fails with CUDA_ERROR_OUT_OF_MEMORY
//   compile[:S]     nvrtcCompileProgram of a program whose name contains S (any) fails
//   launch[:S]      a kernel whose name contains S (any) fails when its stream is
//                   synchronized: CUDA_ERROR_LAUNCH_FAILED
//   context         the next cuLaunchKernel destroys the context: it and every later call
//                   that needs the context fail with CUDA_ERROR_CONTEXT_IS_DESTROYED, until
//                   the primary context is released by all or the faults are reset
//   ptxversion      cuModuleLoadDataEx rejects PTX (not CUBIN) with
//                   CUDA_ERROR_UNSUPPORTED_PTX_VERSION (NVRTC newer than the driver)
//
// warped_standin_count reports live objects and counters (see the function).

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

extern char** environ;

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
};

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7,
};

static const int kDriverVersion = 12040; // reported as 12.4
static const int kCCMajor = 9, kCCMinor = 0;
static const unsigned long long kTotalMem = 4ull << 30;
static const char kDeviceName[] = "warped CUDA stand-in (host CPU)";
static const char kImageMagic[] = "// warped CUDA stand-in image\n";
static const int kArchs[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
static const int kMaxParams = 64;

// ---- state (all guarded by mu) ----

struct Ctx {
    int refs;
    bool lost;
};

struct Module;

struct Func {
    Module* mod;
    std::string name;
    void (*run)(const unsigned int*, void**);
    int argc;
    size_t sizes[kMaxParams];
};

struct Module {
    void* dl;
    std::map<std::string, Func*> funcs;
};

struct Event;

struct Op {
    enum Kind { HtoD, DtoH, Launch, Memset32, Record } kind;
    unsigned int value; // Memset32's value, written n times
    void* dst;
    const void* src;
    size_t n;
    Func* f;
    unsigned int dims[8]; // the grid, the block, the order and its seed (standin_launch.h)
    std::vector<unsigned char> args; // each parameter at a 16-byte aligned offset
    Event* ev;                       // Record's event; n is the record's number
};

struct Stream {
    std::deque<Op> ops;
    bool capturing = false;  // cuStreamBeginCapture_v2: queued work is recorded instead
    std::vector<Op> captured;
};

// Graph and GraphExec are a captured sequence of operations (kernels and copies), replayed
// in order on a stream by cuGraphLaunch.
struct Graph {
    std::vector<Op> ops;
};
struct GraphExec {
    std::vector<Op> ops;
};

// Event is a CUDA event: its records are numbered; done is the number of the last one run.
struct Event {
    unsigned long long records = 0, done = 0;
    struct Stream* stream = nullptr; // where the last record was queued
};

struct Faults {
    bool hostalloc = false;
    bool alloc = false, compile = false, launch = false, context = false, ptxversion = false;
    std::string compileMatch, launchMatch;
};

static std::mutex mu;
static bool initialized;
static Ctx* primary; // nullptr while no one retains it
static thread_local Ctx* current;
static std::map<uintptr_t, size_t> allocs;    // device allocations: base -> size
static std::map<void*, size_t> hostAllocs;     // cuMemAllocHost_v2
static std::set<Stream*> streams;
static std::set<Module*> modules;
static std::set<Graph*> graphs;
static std::set<GraphExec*> graphExecs;
static std::set<Event*> events;
static Faults faults;

// Order is the order in which a launch runs the threads of its grid (standin_launch.h):
// mode 0 in order, 1 reversed, 2 shuffled from seed plus the number of launches queued
// before (launchesQueued), so that each launch has its own order and a process's runs
// repeat. Guarded by mu.
struct Order {
    unsigned int mode, seed;
};
static Order order;
static bool orderSet; // by warped_standin_set_order, which cuInit's reading of the environment must not undo
static unsigned long long launchesQueued;

// parseOrder reads "", "forward", "reverse", "shuffle" or "shuffle:SEED" into *o.
static bool parseOrder(const char* spec, Order* o) {
    *o = Order{};
    if (spec == nullptr || *spec == 0 || strcmp(spec, "forward") == 0) {
        return true;
    }
    if (strcmp(spec, "reverse") == 0) {
        o->mode = 1;
        return true;
    }
    if (strncmp(spec, "shuffle", 7) != 0 || (spec[7] != 0 && spec[7] != ':')) {
        return false;
    }
    o->mode = 2;
    if (spec[7] == ':') {
        char* end;
        errno = 0;
        unsigned long v = strtoul(spec + 8, &end, 10);
        if (spec[8] == 0 || *end != 0 || errno != 0 || v > 0xffffffffu) {
            return false;
        }
        o->seed = (unsigned int)v;
    }
    return true;
}
static unsigned long long allocated;
static std::atomic<long long> launches, compiles, cacheHits;

// ---- helpers ----

// parseFaults parses a fault list into f; false on an unknown item.
static bool parseFaults(const char* spec, Faults* f, std::string* bad) {
    *f = Faults();
    std::string s = spec ? spec : "";
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) {
            j = s.size();
        }
        std::string item = s.substr(i, j - i), arg;
        i = j + 1;
        if (item.empty()) {
            continue;
        }
        size_t c = item.find(':');
        if (c != std::string::npos) {
            arg = item.substr(c + 1);
            item = item.substr(0, c);
        }
        if (item == "alloc" && arg.empty()) {
            f->alloc = true;
        } else if (item == "hostalloc" && arg.empty()) {
            f->hostalloc = true;
        } else if (item == "compile") {
            f->compile = true;
            f->compileMatch = arg;
        } else if (item == "launch") {
            f->launch = true;
            f->launchMatch = arg;
        } else if (item == "context" && arg.empty()) {
            f->context = true;
        } else if (item == "ptxversion" && arg.empty()) {
            f->ptxversion = true;
        } else {
            *bad = c == std::string::npos ? item : item + ":" + arg;
            return false;
        }
    }
    return true;
}

// needCtx checks that the calling thread has a live context current (mu held).
static CUresult needCtx() {
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (current == nullptr || current != primary) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (primary->lost) {
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    return CUDA_SUCCESS;
}

// inAlloc reports whether [p, p+n) lies inside one device allocation (mu held).
static bool inAlloc(uintptr_t p, size_t n) {
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) {
        return false;
    }
    --it;
    return p >= it->first && n <= it->second && p - it->first <= it->second - n;
}

// validStream reports whether s is a live stream (mu held).
static bool validStream(Stream* s) { return streams.count(s) != 0; }

// runOp runs one queued operation; it returns the operation's error (mu held).
static CUresult runOp(Op& op) {
    switch (op.kind) {
    case Op::Memset32: {
        unsigned int* d = static_cast<unsigned int*>(op.dst);
        for (size_t i = 0; i < op.n; i++) {
            d[i] = op.value;
        }
        return CUDA_SUCCESS;
    }
    case Op::HtoD:
    case Op::DtoH:
        memcpy(op.dst, op.src, op.n);
        return CUDA_SUCCESS;
    case Op::Launch: {
        if (faults.launch && op.f->name.find(faults.launchMatch) != std::string::npos) {
            return CUDA_ERROR_LAUNCH_FAILED;
        }
        void* params[kMaxParams];
        size_t off = 0;
        for (int i = 0; i < op.f->argc; i++) {
            params[i] = op.args.data() + off;
            off += (op.f->sizes[i] + 15) & ~size_t(15);
        }
        op.f->run(op.dims, params);
        launches++;
        return CUDA_SUCCESS;
    }
    case Op::Record:
        op.ev->done = op.n;
        return CUDA_SUCCESS;
    }
    return CUDA_SUCCESS;
}

// flush runs the work queued on s in order; after an error it drops the rest (mu held).
static CUresult flush(Stream* s) {
    CUresult r = CUDA_SUCCESS;
    while (!s->ops.empty()) {
        Op op = std::move(s->ops.front());
        s->ops.pop_front();
        if (r == CUDA_SUCCESS) {
            r = runOp(op);
        }
    }
    return r;
}

// flushAll runs the work queued on every stream (mu held). Errors stay with the streams'
// owners: a failed kernel's error is what its own synchronize would have returned, so it
// is kept for that synchronize.
static std::map<Stream*, CUresult> pendingErr;
static void flushAll() {
    for (Stream* s : streams) {
        CUresult r = flush(s);
        if (r != CUDA_SUCCESS && pendingErr.count(s) == 0) {
            pendingErr[s] = r;
        }
    }
}

// destroyAll releases everything the context owns (its last release; mu held).
static void destroyAll() {
    for (Graph* g : graphs) {
        delete g;
    }
    graphs.clear();
    for (GraphExec* e : graphExecs) {
        delete e;
    }
    graphExecs.clear();
    for (Event* e : events) {
        delete e;
    }
    events.clear();
    for (auto& a : allocs) {
        free(reinterpret_cast<void*>(a.first));
    }
    allocs.clear();
    allocated = 0;
    for (auto& a : hostAllocs) {
        free(a.first);
    }
    hostAllocs.clear();
    for (Stream* s : streams) {
        delete s;
    }
    streams.clear();
    pendingErr.clear();
    for (Module* m : modules) {
        for (auto& f : m->funcs) {
            delete f.second;
        }
        dlclose(m->dl);
        delete m;
    }
    modules.clear();
}

// ---- driver API ----

EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard<std::mutex> l(mu);
    if (!initialized) {
        std::string bad;
        const char* env = getenv("WARPED_CUDA_STANDIN_FAULTS");
        if (!parseFaults(env, &faults, &bad)) {
            fprintf(stderr, "warped CUDA stand-in: unknown fault %s in WARPED_CUDA_STANDIN_FAULTS=%s "
                            "(want alloc, hostalloc, compile[:NAME], launch[:NAME], context, ptxversion)\n", bad.c_str(), env);
            return CUDA_ERROR_INVALID_VALUE;
        }
        const char* ord = getenv("WARPED_CUDA_STANDIN_ORDER");
        Order o;
        if (!parseOrder(ord, &o)) {
            fprintf(stderr, "warped CUDA stand-in: WARPED_CUDA_STANDIN_ORDER=%s: want forward, reverse, "
                            "shuffle or shuffle:SEED\n", ord);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (!orderSet) {
            order = o;
        }
        initialized = true;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* v) {
    if (v == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *v = kDriverVersion;
    return CUDA_SUCCESS;
}

struct ErrorText {
    int code;
    const char *name, *text;
};
static const ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const ErrorText* findError(CUresult r) {
    for (const ErrorText& e : kErrors) {
        if (e.code == r) {
            return &e;
        }
    }
    return nullptr;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char** s) {
    if (s == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const ErrorText* e = findError(r);
    *s = e ? e->name : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char** s) {
    if (s == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const ErrorText* e = findError(r);
    *s = e ? e->text : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int* n) {
    std::lock_guard<std::mutex> l(mu);
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (n == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *n = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
    std::lock_guard<std::mutex> l(mu);
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (dev == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (ordinal != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *dev = 0;
    return CUDA_SUCCESS;
}

// checkDev checks that the driver is initialized and dev is the device (mu held).
static CUresult checkDev(CUdevice dev) {
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = checkDev(dev)) {
        return r;
    }
    if (name == nullptr || len <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    snprintf(name, (size_t)len, "%s", kDeviceName);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice dev) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = checkDev(dev)) {
        return r;
    }
    if (v == nullptr || attr <= 0 || attr > 150) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    switch (attr) {
    case 1: // MAX_THREADS_PER_BLOCK
    case 2: // MAX_BLOCK_DIM_X
    case 3: // MAX_BLOCK_DIM_Y
        *v = 1024;
        break;
    case 4: // MAX_BLOCK_DIM_Z
        *v = 64;
        break;
    case 5: // MAX_GRID_DIM_X
        *v = 2147483647;
        break;
    case 6: // MAX_GRID_DIM_Y
    case 7: // MAX_GRID_DIM_Z
        *v = 65535;
        break;
    case 10: // WARP_SIZE
        *v = 32;
        break;
    case 16: // MULTIPROCESSOR_COUNT
        *v = 1;
        break;
    case 75: // COMPUTE_CAPABILITY_MAJOR
        *v = kCCMajor;
        break;
    case 76: // COMPUTE_CAPABILITY_MINOR
        *v = kCCMinor;
        break;
    default:
        *v = 0;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = checkDev(dev)) {
        return r;
    }
    if (bytes == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *bytes = kTotalMem;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(Ctx** ctx, CUdevice dev) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = checkDev(dev)) {
        return r;
    }
    if (ctx == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (primary != nullptr && primary->lost) {
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (primary == nullptr) {
        primary = new Ctx(); // never freed: a stale handle must not match a new context
    }
    primary->refs++;
    *ctx = primary;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = checkDev(dev)) {
        return r;
    }
    if (primary == nullptr) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--primary->refs == 0) {
        destroyAll();
        primary = nullptr;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(Ctx* ctx) {
    std::lock_guard<std::mutex> l(mu);
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (ctx == nullptr) {
        current = nullptr;
        return CUDA_SUCCESS;
    }
    if (ctx != primary) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (primary->lost) {
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    current = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* total) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (freeBytes == nullptr || total == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *total = kTotalMem;
    *freeBytes = kTotalMem - allocated;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (p == nullptr || n == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (faults.alloc || n > kTotalMem - allocated) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void* m = nullptr;
    if (posix_memalign(&m, 256, n) != 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    allocs[reinterpret_cast<uintptr_t>(m)] = n;
    allocated += n;
    *p = reinterpret_cast<uintptr_t>(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    auto it = allocs.find(p);
    if (it == allocs.end()) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    flushAll();
    allocated -= it->second;
    allocs.erase(it);
    free(reinterpret_cast<void*>(p));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocHost_v2(void** p, size_t n) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (p == nullptr || n == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (faults.hostalloc) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void* m = nullptr;
    if (posix_memalign(&m, 4096, n) != 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    hostAllocs[m] = n;
    *p = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void* p) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    auto it = hostAllocs.find(p);
    if (it == hostAllocs.end()) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    flushAll();
    hostAllocs.erase(it);
    free(p);
    return CUDA_SUCCESS;
}

// enqueue queues op on s, or runs it now on the null stream (mu held).
static CUresult enqueue(Stream* s, Op&& op) {
    if (s == nullptr) {
        flushAll();
        return runOp(op);
    }
    if (s->capturing) {
        s->captured.push_back(std::move(op));
        return CUDA_SUCCESS;
    }
    s->ops.push_back(std::move(op));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if ((s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (dst % 4 != 0 || !inAlloc(dst, 4 * n)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Op op{};
    op.kind = Op::Memset32;
    op.dst = reinterpret_cast<void*>(dst);
    op.value = value;
    op.n = n;
    return enqueue(s, std::move(op));
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if ((s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (src == nullptr || !inAlloc(dst, n)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Op op{};
    op.kind = Op::HtoD;
    op.dst = reinterpret_cast<void*>(dst);
    op.src = src;
    op.n = n;
    return enqueue(s, std::move(op));
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if ((s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (dst == nullptr || !inAlloc(src, n)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Op op{};
    op.kind = Op::DtoH;
    op.dst = dst;
    op.src = reinterpret_cast<const void*>(src);
    op.n = n;
    return enqueue(s, std::move(op));
}

EXPORT CUresult cuStreamCreate(Stream** s, unsigned int flags) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (s == nullptr || flags > 1) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *s = new Stream();
    streams.insert(*s);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (!validStream(s)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    flush(s); // the real one lets queued work finish
    for (Event* e : events) {
        if (e->stream == s) {
            e->stream = nullptr; // its records have run
        }
    }
    pendingErr.erase(s);
    streams.erase(s);
    delete s;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (s == nullptr) {
        flushAll();
        return CUDA_SUCCESS;
    }
    if (!validStream(s)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    CUresult r = flush(s);
    auto it = pendingErr.find(s);
    if (it != pendingErr.end()) {
        if (r == CUDA_SUCCESS) {
            r = it->second;
        }
        pendingErr.erase(it);
    }
    return r;
}

// ---- events ----

EXPORT CUresult cuEventCreate(Event** e, unsigned int flags) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (e == nullptr || flags > 3) { // DEFAULT, BLOCKING_SYNC, DISABLE_TIMING
        return CUDA_ERROR_INVALID_VALUE;
    }
    *e = new Event();
    events.insert(*e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(Event* e, Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (events.count(e) == 0 || (s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (s != nullptr && s->capturing) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // the stand-in captures no event records
    }
    Op op{};
    op.kind = Op::Record;
    op.ev = e;
    op.n = ++e->records;
    e->stream = s;
    return enqueue(s, std::move(op));
}

// cuEventSynchronize runs the work queued on the stream of e's last record up to that
// record; a failure there drops the rest of the stream, as flush does, and is returned.
EXPORT CUresult cuEventSynchronize(Event* e) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (events.count(e) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    Stream* s = e->stream;
    if (s == nullptr || e->done == e->records) {
        return CUDA_SUCCESS;
    }
    auto it = pendingErr.find(s);
    if (it != pendingErr.end()) {
        CUresult r = it->second;
        pendingErr.erase(it);
        return r;
    }
    while (e->done != e->records && !s->ops.empty()) {
        Op op = std::move(s->ops.front());
        s->ops.pop_front();
        if (CUresult r = runOp(op)) {
            s->ops.clear();
            return r;
        }
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(Event* e) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (events.count(e) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    flushAll(); // a record still queued names it
    events.erase(e);
    delete e;
    return CUDA_SUCCESS;
}

// ---- graphs: stream capture, instantiation and launch ----

EXPORT CUresult cuStreamBeginCapture_v2(Stream* s, int mode) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (s == nullptr) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // the legacy stream cannot be captured
    }
    if (!validStream(s)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (s->capturing || mode < 0 || mode > 2) {
        return s->capturing ? CUDA_ERROR_ILLEGAL_STATE : CUDA_ERROR_INVALID_VALUE;
    }
    s->capturing = true;
    s->captured.clear();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(Stream* s, Graph** g) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (!validStream(s) || g == nullptr) {
        return g == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    }
    if (!s->capturing) {
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    *g = new Graph{std::move(s->captured)};
    s->captured.clear();
    s->capturing = false;
    graphs.insert(*g);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(GraphExec** e, Graph* g, unsigned long long flags) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (e == nullptr || graphs.count(g) == 0) {
        return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    }
    *e = new GraphExec{g->ops};
    graphExecs.insert(*e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(GraphExec* e, Stream* s) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (graphExecs.count(e) == 0 || (s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    for (const Op& op : e->ops) {
        Op copy = op;
        if (CUresult r = enqueue(s, std::move(copy))) {
            return r;
        }
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(GraphExec* e) {
    std::lock_guard<std::mutex> l(mu);
    if (graphExecs.erase(e) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    delete e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(Graph* g) {
    std::lock_guard<std::mutex> l(mu);
    if (graphs.erase(g) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    delete g;
    return CUDA_SUCCESS;
}

// writeLog puts msg in a JIT error log buffer, when the options give one.
static void writeLog(unsigned int nopts, const int* opts, void* const* vals, const std::string& msg) {
    char* buf = nullptr;
    size_t size = 0;
    for (unsigned int i = 0; opts != nullptr && vals != nullptr && i < nopts; i++) {
        if (opts[i] == 5) { // CU_JIT_ERROR_LOG_BUFFER
            buf = static_cast<char*>(vals[i]);
        } else if (opts[i] == 6) { // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
            size = reinterpret_cast<uintptr_t>(vals[i]);
        }
    }
    if (buf != nullptr && size > 0) {
        snprintf(buf, size, "%s", msg.c_str());
    }
}

EXPORT CUresult cuModuleLoadDataEx(Module** m, const void* image, unsigned int nopts, const int* opts,
                                   void* const* vals) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (m == nullptr || image == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const char* img = static_cast<const char*>(image);
    if (strncmp(img, kImageMagic, strlen(kImageMagic)) != 0) {
        writeLog(nopts, opts, vals, "the image was not made by the warped CUDA stand-in's NVRTC");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const char* target = strstr(img, "\n.target ");
    const char* lib = strstr(img, "\n.library ");
    if (target == nullptr || lib == nullptr) {
        writeLog(nopts, opts, vals, "the stand-in image has no .target or .library line");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (faults.ptxversion && strncmp(target + 9, "compute_", 8) == 0) {
        writeLog(nopts, opts, vals, "ptxas application ptx input, line 1; fatal   : Unsupported .version "
                                    "(fault injected by the warped CUDA stand-in)");
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    std::string path(lib + 10, strcspn(lib + 10, "\n"));
    void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) {
        const char* e = dlerror();
        writeLog(nopts, opts, vals, std::string("loading ") + path + ": " + (e ? e : "dlopen failed"));
        return CUDA_ERROR_INVALID_IMAGE;
    }
    Module* mod = new Module();
    mod->dl = dl;
    modules.insert(mod);
    *m = mod;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(Module* m) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (modules.count(m) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    flushAll();
    modules.erase(m);
    for (auto& f : m->funcs) {
        delete f.second;
    }
    dlclose(m->dl);
    delete m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(Func** f, Module* m, const char* name) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (f == nullptr || name == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (modules.count(m) == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    auto it = m->funcs.find(name);
    if (it != m->funcs.end()) {
        *f = it->second;
        return CUDA_SUCCESS;
    }
    std::string n(name);
    void* run = dlsym(m->dl, ("warped_standin_run_" + n).c_str());
    void* argc = dlsym(m->dl, ("warped_standin_argc_" + n).c_str());
    if (run == nullptr || argc == nullptr) {
        return CUDA_ERROR_NOT_FOUND;
    }
    Func* fn = new Func();
    fn->mod = m;
    fn->name = n;
    fn->run = reinterpret_cast<void (*)(const unsigned int*, void**)>(run);
    size_t sizes[kMaxParams + 1];
    fn->argc = reinterpret_cast<int (*)(size_t*)>(argc)(sizes);
    if (fn->argc > kMaxParams) {
        delete fn;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    memcpy(fn->sizes, sizes, sizeof(size_t) * (size_t)fn->argc);
    m->funcs[n] = fn;
    *f = fn;
    return CUDA_SUCCESS;
}

// validFunc reports whether f is a function of a loaded module (mu held).
static bool validFunc(Func* f) {
    for (Module* m : modules) {
        for (auto& e : m->funcs) {
            if (e.second == f) {
                return true;
            }
        }
    }
    return false;
}

EXPORT CUresult cuFuncGetAttribute(int* v, int attr, Func* f) {
    std::lock_guard<std::mutex> l(mu);
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (v == nullptr || attr < 0 || attr > 9) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!validFunc(f)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *v = attr == 0 ? 1024 : 0; // MAX_THREADS_PER_BLOCK; the rest (registers, memory) are 0
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(Func* f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int shmem, Stream* s, void** params,
                               void** extra) {
    std::lock_guard<std::mutex> l(mu);
    if (CUresult r = needCtx()) {
        return r;
    }
    if (faults.context) {
        faults.context = false;
        primary->lost = true;
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (!validFunc(f) || (s != nullptr && !validStream(s))) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (extra != nullptr) {
        return CUDA_ERROR_NOT_SUPPORTED; // kernelParams only
    }
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 || gz > 65535 ||
        (unsigned long long)bx * by * bz > 1024 || bz > 64 || shmem > 48 * 1024 ||
        (f->argc > 0 && params == nullptr)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Op op{};
    op.kind = Op::Launch;
    op.f = f;
    unsigned int dims[8] = {gx, gy, gz, bx, by, bz, order.mode, order.seed + (unsigned int)launchesQueued++};
    memcpy(op.dims, dims, sizeof dims);
    size_t total = 0;
    for (int i = 0; i < f->argc; i++) {
        total += (f->sizes[i] + 15) & ~size_t(15);
    }
    op.args.resize(total + 16);
    size_t off = 0;
    for (int i = 0; i < f->argc; i++) {
        if (params[i] == nullptr) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(op.args.data() + off, params[i], f->sizes[i]); // the driver copies the values now
        off += (f->sizes[i] + 15) & ~size_t(15);
    }
    return enqueue(s, std::move(op));
}

// ---- NVRTC ----

struct Prog {
    std::string src, name, log, image;
    bool compiled = false, cubin = false;
};

EXPORT int nvrtcVersion(int* major, int* minor) {
    if (major == nullptr || minor == nullptr) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    *major = kDriverVersion / 1000;
    *minor = kDriverVersion % 1000 / 10;
    return NVRTC_SUCCESS;
}

EXPORT const char* nvrtcGetErrorString(int r) {
    switch (r) {
    case NVRTC_SUCCESS:
        return "NVRTC_SUCCESS";
    case NVRTC_ERROR_OUT_OF_MEMORY:
        return "NVRTC_ERROR_OUT_OF_MEMORY";
    case NVRTC_ERROR_PROGRAM_CREATION_FAILURE:
        return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case NVRTC_ERROR_INVALID_INPUT:
        return "NVRTC_ERROR_INVALID_INPUT";
    case NVRTC_ERROR_INVALID_PROGRAM:
        return "NVRTC_ERROR_INVALID_PROGRAM";
    case NVRTC_ERROR_INVALID_OPTION:
        return "NVRTC_ERROR_INVALID_OPTION";
    case NVRTC_ERROR_COMPILATION:
        return "NVRTC_ERROR_COMPILATION";
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE:
        return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    }
    return "NVRTC_ERROR unknown";
}

EXPORT int nvrtcGetNumSupportedArchs(int* n) {
    if (n == nullptr) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    *n = (int)(sizeof kArchs / sizeof kArchs[0]);
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcGetSupportedArchs(int* a) {
    if (a == nullptr) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    memcpy(a, kArchs, sizeof kArchs);
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcCreateProgram(Prog** p, const char* src, const char* name, int nh, const char* const* headers,
                              const char* const* names) {
    (void)headers;
    (void)names;
    if (p == nullptr || src == nullptr) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    if (nh != 0) {
        return NVRTC_ERROR_INVALID_INPUT; // the stand-in takes no extra headers
    }
    Prog* pr = new Prog();
    pr->src = src;
    pr->name = name ? name : "default_program";
    *p = pr;
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcDestroyProgram(Prog** p) {
    if (p == nullptr || *p == nullptr) {
        return NVRTC_ERROR_INVALID_PROGRAM;
    }
    delete *p;
    *p = nullptr;
    return NVRTC_SUCCESS;
}

// selfDir is the directory of this library, where its headers lie.
static std::string selfDir() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&selfDir), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    std::string p = info.dli_fname;
    size_t s = p.rfind('/');
    return s == std::string::npos ? "." : p.substr(0, s);
}

// readFile reads path into out.
static bool readFile(const std::string& path, std::string* out) {
    FILE* f = fopen(path.c_str(), "rb");
    if (f == nullptr) {
        return false;
    }
    char buf[65536];
    size_t n;
    out->clear();
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        out->append(buf, n);
    }
    fclose(f);
    return true;
}

// kernelNames lists the __global__ functions of src (outside comments and literals).
static std::vector<std::string> kernelNames(const std::string& s) {
    std::vector<std::string> names;
    auto ident = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
    auto skipSpace = [&](size_t i) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
            i++;
        }
        return i;
    };
    size_t i = 0;
    while (i < s.size()) {
        if (s.compare(i, 2, "//") == 0) {
            i = s.find('\n', i);
            if (i == std::string::npos) {
                break;
            }
            continue;
        }
        if (s.compare(i, 2, "/*") == 0) {
            i = s.find("*/", i + 2);
            if (i == std::string::npos) {
                break;
            }
            i += 2;
            continue;
        }
        if (s[i] == '"' || s[i] == '\'') {
            char q = s[i++];
            while (i < s.size() && s[i] != q) {
                i += s[i] == '\\' ? 2 : 1;
            }
            i++;
            continue;
        }
        if (ident(s[i])) {
            size_t j = i;
            while (j < s.size() && ident(s[j])) {
                j++;
            }
            if (s.compare(i, j - i, "__global__") == 0) {
                size_t k = skipSpace(j);
                if (s.compare(k, 4, "void") == 0 && k + 4 < s.size() && !ident(s[k + 4])) {
                    size_t a = skipSpace(k + 4), b = a;
                    while (b < s.size() && ident(s[b])) {
                        b++;
                    }
                    if (b > a) {
                        names.push_back(s.substr(a, b - a));
                    }
                }
            }
            i = j;
            continue;
        }
        i++;
    }
    return names;
}

// cacheDir returns (creating it) the directory of compiled kernels.
static bool cacheDir(std::string* dir, std::string* err) {
    const char* env = getenv("WARPED_CUDA_STANDIN_CACHE");
    if (env != nullptr && *env != 0) {
        *dir = env;
    } else {
        const char* tmp = getenv("TMPDIR");
        *dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/warped-cuda-standin-" + std::to_string(getuid());
    }
    if (mkdir(dir->c_str(), 0700) != 0 && errno != EEXIST) {
        *err = "cannot create " + *dir + ": " + strerror(errno);
        return false;
    }
    struct stat st;
    if (lstat(dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        *err = *dir + " is not a directory of this user; set WARPED_CUDA_STANDIN_CACHE";
        return false;
    }
    return true;
}

// fnv1a hashes s.
static unsigned long long fnv1a(const std::string& s) {
    unsigned long long h = 14695981039346656037ull;
    for (unsigned char c : s) {
        h = (h ^ c) * 1099511628211ull;
    }
    return h;
}

// runCompiler runs argv with its output in logPath; it returns the exit status (-1: not run).
static int runCompiler(const std::vector<std::string>& args, const std::string& logPath) {
    std::vector<char*> argv;
    for (const std::string& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

EXPORT int nvrtcCompileProgram(Prog* p, int nopts, const char* const* opts) {
    if (p == nullptr) {
        return NVRTC_ERROR_INVALID_PROGRAM;
    }
    if (nopts < 0 || (nopts > 0 && opts == nullptr)) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    p->compiled = false;
    p->log.clear();
    std::string target = "compute_52";
    bool fmad = true;
    for (int i = 0; i < nopts; i++) {
        std::string o = opts[i] ? opts[i] : "";
        std::string v;
        if (o.rfind("--gpu-architecture=", 0) == 0) {
            v = o.substr(strlen("--gpu-architecture="));
        } else if (o.rfind("-arch=", 0) == 0) {
            v = o.substr(6);
        } else if (o == "--fmad=false" || o == "-fmad=false") {
            fmad = false;
            continue;
        } else if (o == "--fmad=true" || o == "-fmad=true") {
            fmad = true;
            continue;
        } else {
            p->log = "nvrtc: error: unrecognized option " + o + " (the warped CUDA stand-in takes "
                     "--gpu-architecture= and --fmad=)\n";
            return NVRTC_ERROR_INVALID_OPTION;
        }
        bool ok = false;
        for (int a : kArchs) {
            if (v == "compute_" + std::to_string(a) || v == "sm_" + std::to_string(a)) {
                ok = true;
            }
        }
        if (!ok) {
            p->log = "nvrtc: error: invalid value for --gpu-architecture (-arch): " + v + "\n";
            return NVRTC_ERROR_INVALID_OPTION;
        }
        target = v;
    }
    {
        std::lock_guard<std::mutex> l(mu);
        if (faults.compile && p->name.find(faults.compileMatch) != std::string::npos) {
            p->log = p->name + "(1): error: compile failure injected by the warped CUDA stand-in "
                     "(fault compile" + (faults.compileMatch.empty() ? "" : ":" + faults.compileMatch) + ")\n";
            return NVRTC_ERROR_COMPILATION;
        }
    }
    std::string dir = selfDir(), prelude, launch;
    if (!readFile(dir + "/host_prelude.h", &prelude) || !readFile(dir + "/standin_launch.h", &launch)) {
        p->log = "warped CUDA stand-in: cannot read host_prelude.h and standin_launch.h beside the library in " +
                 dir + "\n";
        return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
    }
    std::string text = "#line 1 \"host_prelude.h\"\n" + prelude + "\n#line 1 \"" + p->name + "\"\n" + p->src +
                       "\n#line 1 \"standin_launch.h\"\n" + launch + "\n";
    for (const std::string& k : kernelNames(p->src)) {
        text += "WARPED_STANDIN_ENTRY(" + k + ")\n";
    }
    const char* cxx = getenv("WARPED_CUDA_STANDIN_CXX");
    if (cxx == nullptr || *cxx == 0) {
        cxx = getenv("CXX");
    }
    if (cxx == nullptr || *cxx == 0) {
        cxx = "c++";
    }
    std::vector<std::string> args = {cxx, "-std=c++14", "-O2", fmad ? "-ffp-contract=fast" : "-ffp-contract=off",
                                     "-fno-fast-math", "-fPIC", "-shared", "-w"};
    std::string cache, err;
    if (!cacheDir(&cache, &err)) {
        p->log = "warped CUDA stand-in: " + err + "\n";
        return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
    }
    std::string key = "warped-cuda-standin 1\n";
    for (const std::string& a : args) {
        key += a + "\n";
    }
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", fnv1a(key + text));
    std::string base = cache + "/" + hash, so = base + ".so";
    struct stat st;
    if (stat(so.c_str(), &st) == 0) {
        cacheHits++;
    } else {
        // Build beside the final name and rename, so that a concurrent compile of the same
        // text, in this process or another, never sees a partial file.
        std::string uniq = base + "." + std::to_string(getpid()) + "." + std::to_string(compiles.fetch_add(1));
        std::string cpp = uniq + ".cpp", tmp = uniq + ".so", logPath = uniq + ".log";
        FILE* f = fopen(cpp.c_str(), "wb");
        if (f == nullptr || fwrite(text.data(), 1, text.size(), f) != text.size() || fclose(f) != 0) {
            p->log = "warped CUDA stand-in: cannot write " + cpp + ": " + strerror(errno) + "\n";
            return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
        }
        args.push_back("-o");
        args.push_back(tmp);
        args.push_back(cpp);
        int rc = runCompiler(args, logPath);
        std::string out;
        readFile(logPath, &out);
        unlink(logPath.c_str());
        unlink(cpp.c_str());
        if (rc == -1) {
            unlink(tmp.c_str());
            p->log = std::string("warped CUDA stand-in: cannot run the C++ compiler ") + cxx + ": " +
                     strerror(errno) + " (set WARPED_CUDA_STANDIN_CXX or CXX)\n";
            return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
        }
        if (rc != 0) {
            unlink(tmp.c_str());
            p->log = out.empty() ? std::string(cxx) + " exited with status " + std::to_string(rc) + "\n" : out;
            return NVRTC_ERROR_COMPILATION;
        }
        if (rename(tmp.c_str(), so.c_str()) != 0) {
            p->log = "warped CUDA stand-in: cannot rename " + tmp + ": " + strerror(errno) + "\n";
            unlink(tmp.c_str());
            return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
        }
    }
    p->cubin = target.rfind("sm_", 0) == 0;
    p->image = std::string(kImageMagic) + "// program " + p->name + "\n.target " + target + "\n.library " + so + "\n";
    p->compiled = true;
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcGetProgramLogSize(Prog* p, size_t* n) {
    if (p == nullptr || n == nullptr) {
        return p == nullptr ? NVRTC_ERROR_INVALID_PROGRAM : NVRTC_ERROR_INVALID_INPUT;
    }
    *n = p->log.size() + 1;
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcGetProgramLog(Prog* p, char* log) {
    if (p == nullptr || log == nullptr) {
        return p == nullptr ? NVRTC_ERROR_INVALID_PROGRAM : NVRTC_ERROR_INVALID_INPUT;
    }
    memcpy(log, p->log.c_str(), p->log.size() + 1);
    return NVRTC_SUCCESS;
}

// image gives a compiled program's image of the kind asked for.
static int image(Prog* p, bool cubin, size_t* n, char* out) {
    if (p == nullptr) {
        return NVRTC_ERROR_INVALID_PROGRAM;
    }
    if (n == nullptr && out == nullptr) {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    if (!p->compiled || p->cubin != cubin) {
        return NVRTC_ERROR_INVALID_INPUT; // not compiled, or compiled for the other kind
    }
    if (n != nullptr) {
        *n = p->image.size() + 1;
    }
    if (out != nullptr) {
        memcpy(out, p->image.c_str(), p->image.size() + 1);
    }
    return NVRTC_SUCCESS;
}

EXPORT int nvrtcGetPTXSize(Prog* p, size_t* n) { return n ? image(p, false, n, nullptr) : NVRTC_ERROR_INVALID_INPUT; }
EXPORT int nvrtcGetPTX(Prog* p, char* ptx) { return ptx ? image(p, false, nullptr, ptx) : NVRTC_ERROR_INVALID_INPUT; }
EXPORT int nvrtcGetCUBINSize(Prog* p, size_t* n) { return n ? image(p, true, n, nullptr) : NVRTC_ERROR_INVALID_INPUT; }
EXPORT int nvrtcGetCUBIN(Prog* p, char* c) { return c ? image(p, true, nullptr, c) : NVRTC_ERROR_INVALID_INPUT; }

// ---- control, for tests ----

// warped_standin_set_order sets the order in which later launches run their threads:
// "forward" (or ""), "reverse", "shuffle" or "shuffle:SEED" (see Order). It returns 0, or
// -1 for a bad spec.
EXPORT int warped_standin_set_order(const char* spec) {
    Order o;
    if (!parseOrder(spec, &o)) {
        return -1;
    }
    std::lock_guard<std::mutex> l(mu);
    order = o;
    orderSet = true;
    return 0;
}

// warped_standin_set_faults replaces the injected faults with spec (see the top of this
// file; "" clears them) and revives a lost context. It returns 0, or -1 for a bad spec.
EXPORT int warped_standin_set_faults(const char* spec) {
    Faults f;
    std::string bad;
    if (!parseFaults(spec, &f, &bad)) {
        return -1;
    }
    std::lock_guard<std::mutex> l(mu);
    faults = f;
    if (primary != nullptr) {
        primary->lost = false;
    }
    return 0;
}

// warped_standin_count returns a count: "allocs", "host_allocs", "streams", "modules",
// "events" (live objects), "context_refs" (primary context retains), "launches" (kernels run),
// "compiles" (compiler runs), "cache_hits" (compiles answered from the cache); -1 for an
// unknown name.
EXPORT long long warped_standin_count(const char* what) {
    std::lock_guard<std::mutex> l(mu);
    std::string w = what ? what : "";
    if (w == "allocs") return (long long)allocs.size();
    if (w == "host_allocs") return (long long)hostAllocs.size();
    if (w == "streams") return (long long)streams.size();
    if (w == "modules") return (long long)modules.size();
    if (w == "events") return (long long)events.size();
    if (w == "context_refs") return primary ? primary->refs : 0;
    if (w == "launches") return launches.load();
    if (w == "compiles") return compiles.load();
    if (w == "cache_hits") return cacheHits.load();
    return -1;
}
