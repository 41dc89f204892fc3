// Package gpuoffload runs batched work of the warped kernel on a GPU or on all CPU cores:
// XORWOW advance and reversal over many generators at once (reverse computation of many
// rolled-back LPs), and batch event handlers over ready events of distinct LPs.
//
// # Backends
//
// A [Backend] is one of:
//
//   - the CPU backend ([NewCPU]): each kernel's Go twin and package rng's Advance/Rewind,
//     with the elements split among goroutines. Always available.
//   - the CUDA backend ([NewCUDA]): loads the NVIDIA driver API (libcuda.so.1) at run time
//     with purego, so building needs neither cgo nor CUDA; compiles every kernel with NVRTC
//     (libnvrtc.so, found by name, by the driver's major version, under /usr/local/cuda*,
//     or at $WARPED_NVRTC) at its first use, for the device's compute capability
//     (--gpu-architecture=compute_XY --fmad=false), and loads the PTX with
//     cuModuleLoadDataEx (falling back to a CUBIN when the driver is older than NVRTC).
//     Compiled images are cached on disk (under os.UserCacheDir's warped/cuda, or the
//     directory $WARPED_CUDA_CACHE names; "off" turns the cache off), so a kernel is
//     compiled once per machine, not once per run.
//     Every driver and NVRTC call is checked: a failure is a [*CUDAError] or [*NVRTCError]
//     naming the call and the CUresult (or NVRTC message and compile log); running out of
//     device memory matches [ErrOutOfMemory]; a missing symbol (old driver) is an error,
//     never a panic. The environment variable WARPED_CUDA_LIBRARY, when set, names the
//     driver library to load instead of libcuda.so.1, and is also the first NVRTC library
//     tried unless WARPED_NVRTC is set: it points the backend at the CUDA stand-in of
//     package gpuoffload/standin, a host-side driver and NVRTC for tests (built by
//     scripts/cuda-standin.sh). Unset, nothing changes.
//   - the host-C++ backend ([NewHostCXX]): compiles the same CUDA source as host C++ with
//     the system compiler (-ffp-contract=off) and runs it thread by thread. It is for
//     tests: it checks the CUDA text of a kernel against its Go twin on a machine
//     without a GPU.
//
// [Open] maps the --gpu flag to a backend: off (none), on (CUDA or an error), auto (CUDA
// if it opens, else none with a one-line reason to print once) and cpu. [Devices] lists
// the CPU and each CUDA device, with why one is unavailable; `warped devices` prints it.
//
// Results are never different because of the backend. Kernels use only integer
// arithmetic and IEEE-754 double +, -, *, / (correctly rounded everywhere), with fused
// multiply-add forbidden on every side (--fmad=false for NVRTC, -ffp-contract=off for C++,
// explicit rounding in package rng's Go code), and package rng's own logarithm
// (warped_log is rng.Log operation for operation) instead of a library one. The tests
// compare every backend with the Go code bit for bit.
//
// # Batches
//
// A [Batch] holds N events of N distinct LPs as structure-of-arrays buffers: the LP id,
// the receive time, the payload words, the LP's generator (D and V[0..4], each an array
// of N), the LP's state words (Kernel.StateWords per LP) and fixed output slots
// (Kernel.OutSlots per event: destination, time, payload) with a count and an overflow
// flag per element; an element that overflows is redone on the CPU by the caller. The
// CUDA side sees the same arrays through the WarpedBatch struct of kernels/warped.cuh.
// [Batch.Reset] reuses the buffers, so a steady stream of batches allocates nothing.
//
// A [Kernel] is a model's batch handler for one event kind: CUDA C source with an
// extern "C" __global__ entry point taking a WarpedBatch, a Go twin with identical
// results, and constants (Params). Up to [MaxInFlight] (two) batches for each lane
// ([Options].Lanes: the goroutines that submit, one per time-warp worker) may be in flight
// on a backend ([Backend.Submit], [Pending.Wait]): on CUDA each has its own stream, device
// buffer and pinned staging buffer, so one batch's transfers and execution overlap the
// other's, and the workers of a process never wait for each other's slots. Rollback, cancellation and GVT stay on the CPU: a batch only computes what
// the model's Handle would have, and the caller commits it through the normal time-warp
// bookkeeping.
//
// # Batch size
//
// A [Tuner] chooses one worker's batch size while a run proceeds: a hill climb over powers
// of two from 1 to 4096 on the net event rate measured over short windows, and, in the
// auto mode, whether batching pays at all (the kernel's --gpu auto).
//
// # Inspecting and checking the kernels
//
// The CUDA sources are kernels/warped.cuh (the batch layout, XORWOW, rng's arithmetic)
// and kernels/xorwow.cu (the built-in kernels), embedded in the package; a model's kernel
// source lives with the model (models/phold/batch.go, models/pcs/batch.go). [Source] and
// [BuiltinSource] return the exact text compiled, and
//
//	warped devices --write-kernels DIR
//
// writes it out, to read or to compile by hand with the same options:
//
//	nvcc -ptx --gpu-architecture=compute_90 --fmad=false DIR/phold.cu
//
// Nothing is generated at build time; editing a .cu file and rebuilding is enough. The
// tests of this package and of models/phold run every kernel on the CPU, host-C++ and
// CUDA backends. Without an NVIDIA driver, this package's tests (and cmd/warped's) build
// the CUDA stand-in (package gpuoffload/standin) with the system C++ compiler and run the
// CUDA backend, unchanged, against it: every driver and NVRTC call, the argument layouts,
// the streams and the error paths (with injected faults: a failing allocation, a kernel
// that does not compile, a failed launch, a lost context). They skip, saying why, only
// without a C++ compiler; models/phold's CUDA cases run on the stand-in when
// WARPED_CUDA_LIBRARY is set:
//
//	WARPED_CUDA_LIBRARY=$(scripts/cuda-standin.sh) go test ./models/phold
//
// On a GPU machine, build the tests there or copy a test binary:
//
//	CGO_ENABLED=0 go test -c -o gpuoffload.test ./gpuoffload
//	./gpuoffload.test -test.v -test.run . -test.bench XORWOW -test.benchtime 5x
package gpuoffload
