// Launch loop of the CUDA stand-in (package gpuoffload/standin), put after a kernel's
// source by the stand-in's nvrtcCompileProgram, with one pair of entry points per
// __global__ function NAME:
//
//   warped_standin_argc_NAME(sizes)           the parameter count, and each one's size
//   warped_standin_run_NAME(dims, params)     every thread of the grid, in order
//
// dims is gridDim.xyz then blockDim.xyz; params[i] points to parameter i's value, as
// cuLaunchKernel's kernelParams do. The types come from the kernel's own signature.
#include <stddef.h>
#include <type_traits>
#include <utility>

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
    for (unsigned int bz = 0; bz < d[2]; bz++)
    for (unsigned int by = 0; by < d[1]; by++)
    for (unsigned int bx = 0; bx < d[0]; bx++)
    for (unsigned int tz = 0; tz < d[5]; tz++)
    for (unsigned int ty = 0; ty < d[4]; ty++)
    for (unsigned int tx = 0; tx < d[3]; tx++) {
        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
        threadIdx.x = tx; threadIdx.y = ty; threadIdx.z = tz;
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
