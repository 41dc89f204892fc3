// Package standin builds and controls a host-side stand-in for the CUDA driver API and
// NVRTC, so that package gpuoffload's CUDA backend runs, unchanged, in every test run on
// a machine without a GPU.
//
// The stand-in is a small C++ library (csrc/cuda_standin.cpp) exporting exactly the
// driver-API and NVRTC functions that gpuoffload binds, with their signatures and
// CUresult/nvrtcResult codes. Device memory is host memory; streams run in order (the
// work queued on a stream runs when it is synchronized); "compiling" a kernel builds its
// CUDA C source as host C++ with the system compiler and the host-C++ backend's prelude
// (csrc/host_prelude.h, which gpuoffload's NewHostCXX uses too), and cuLaunchKernel runs
// it over the grid, thread by thread. It checks what a real driver would reject: a call
// without a current context on the calling thread, a copy outside an allocation, an
// unknown stream, module or function. The header of csrc/cuda_standin.cpp lists the
// details.
//
// [Build] compiles it into a directory (scripts/cuda-standin.sh does the same from the
// shell); pointing gpuoffload at it is one environment variable:
//
//	WARPED_CUDA_LIBRARY=/path/libwarped-cuda-standin.so warped devices
//
// Faults are injected by [SetFaults] (in the process that loaded the library) or by the
// environment variable [FaultsEnv], read when the driver initializes: alloc,
// hostalloc, compile[:NAME], launch[:NAME], context and ptxversion (see [SetFaults]).
//
// A launch runs its threads one at a time, in order unless [SetOrder] (or [OrderEnv], read
// when the driver initializes) says "reverse" or "shuffle[:SEED]": a GPU runs them at
// once, in no order, so a kernel whose results change with the order is racy there, and
// the stand-in in order would hide it. [ThreadOrder] sets an order for the rest of a test.
//
// Like gpuoffload's CUDA backend, it is built for Linux only.
package standin
