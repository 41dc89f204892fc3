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
