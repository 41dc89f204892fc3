// Launch loop of the CUDA stand-in (package gpuoffload/standin), put after a kernel's
// source by the stand-in's nvrtcCompileProgram, with one pair of entry points per
// __global__ function NAME:
//
//   warped_standin_argc_NAME(sizes)           the parameter count, and each one's size
//   warped_standin_run_NAME(dims, params)     every thread of the grid, one at a time
//
// dims is gridDim.xyz, blockDim.xyz, then the order of the threads (0 in order, 1 reversed,
// 2 shuffled) and the shuffle's seed; params[i] points to parameter i's value, as
// cuLaunchKernel's kernelParams do. The types come from the kernel's own signature.
//
// A GPU runs a launch's threads at once, in no order, so a kernel whose result depends on
// the order (a thread reads what another writes in the same launch, other than through
// atomics whose order nothing depends on) is racy there. Run in order, the stand-in would
// hide that; reversed or shuffled, such a kernel gives other results than in order.
#include <stddef.h>
#include <type_traits>
#include <utility>
#include <vector>

template <typename T>
using warped_standin_value = typename std::remove_cv<typename std::remove_reference<T>::type>::type;

template <typename... A, size_t... I>
static inline void warped_standin_call(void (*f)(A...), void** p, std::index_sequence<I...>) {
    f(*static_cast<warped_standin_value<A>*>(p[I])...);
}

template <typename... A>
static inline int warped_standin_argc(void (*)(A...), size_t* sizes) {
    const size_t s[] = {sizeof(warped_standin_value<A>)..., 0};
    for (size_t i = 0; i < sizeof...(A); i++) {
        sizes[i] = s[i];
    }
    return (int)sizeof...(A);
}

template <typename... A>
static inline void warped_standin_grid(void (*f)(A...), const unsigned int* d, void** p) {
    gridDim.x = d[0]; gridDim.y = d[1]; gridDim.z = d[2];
    blockDim.x = d[3]; blockDim.y = d[4]; blockDim.z = d[5];
    const unsigned long long block = (unsigned long long)d[3] * d[4] * d[5];
    const unsigned long long n = block * d[0] * d[1] * d[2];
    std::vector<unsigned long long> perm;
    if (d[6] == 2) { // Fisher-Yates with xorshift64*, seeded by d[7]
        perm.resize(n);
        for (unsigned long long i = 0; i < n; i++) perm[i] = i;
        unsigned long long x = 0x9E3779B97F4A7C15ull ^ d[7];
        for (unsigned long long i = n; i > 1; i--) {
            x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
            unsigned long long j = (x * 0x2545F4914F6CDD1Dull) % i;
            unsigned long long t = perm[i - 1]; perm[i - 1] = perm[j]; perm[j] = t;
        }
    }
    for (unsigned long long k = 0; k < n; k++) {
        // i numbers the threads as nested loops would: blocks (x fastest), then threads.
        unsigned long long i = d[6] == 1 ? n - 1 - k : d[6] == 2 ? perm[k] : k;
        unsigned long long b = i / block, t = i % block;
        blockIdx.x = (unsigned int)(b % d[0]);
        blockIdx.y = (unsigned int)(b / d[0] % d[1]);
        blockIdx.z = (unsigned int)(b / d[0] / d[1]);
        threadIdx.x = (unsigned int)(t % d[3]);
        threadIdx.y = (unsigned int)(t / d[3] % d[4]);
        threadIdx.z = (unsigned int)(t / d[3] / d[4]);
        warped_standin_call(f, p, std::index_sequence_for<A...>{});
    }
}

#define WARPED_STANDIN_ENTRY(NAME)                                                        \
    extern "C" int warped_standin_argc_##NAME(size_t* sizes) {                            \
        return warped_standin_argc(NAME, sizes);                                           \
    }                                                                                      \
    extern "C" void warped_standin_run_##NAME(const unsigned int* dims, void** params) {  \
        warped_standin_grid(NAME, dims, params);                                           \
    }
