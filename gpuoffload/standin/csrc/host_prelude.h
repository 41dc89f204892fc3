// host-C++ prelude (package gpuoffload: NewHostCXX, and the CUDA stand-in of package
// gpuoffload/standin). It makes CUDA kernel source compile as host C++: the qualifiers
// vanish, the thread indices become globals set by the launch loop, and the bit-cast
// intrinsics are memcpy. It is put in front of the kernel source.
#include <string.h>
struct warped_host_dim3 { unsigned int x, y, z; };
static warped_host_dim3 blockIdx, blockDim, threadIdx, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
static inline long long __double_as_longlong(double x) { long long r; memcpy(&r, &x, sizeof r); return r; }
static inline double __longlong_as_double(long long x) { double r; memcpy(&r, &x, sizeof r); return r; }
// Atomics: the stand-in and the host-C++ backend run a grid's threads one after another,
// so CUDA's atomic read-modify-writes are plain ones here.
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
static inline unsigned int atomicSub(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = o - v; return o; }
static inline unsigned int atomicOr(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = o | v; return o; }
static inline unsigned int atomicMin(unsigned int* p, unsigned int v) { unsigned int o = *p; if (v < o) *p = v; return o; }
static inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; if (v < o) *p = v; return o; }
static inline unsigned int atomicCAS(unsigned int* p, unsigned int c, unsigned int v) { unsigned int o = *p; if (o == c) *p = v; return o; }
static inline unsigned int atomicExch(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
