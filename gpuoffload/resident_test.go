//go:build linux

package gpuoffload

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// residentSource adds v to each of n words.
const residentSource = `
extern "C" __global__ void warped_test_add(unsigned int* p, unsigned int v, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}
`

// TestResident runs the device-resident API on the stand-in (or a GPU): memory set and
// copied, kernels launched one by one and as a sequence, and a captured graph whose
// replay repeats the launches with the arguments they had when captured.
func TestResident(t *testing.T) {
	needStandin(t)
	r, err := OpenResident(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Compile("resident_test.cu", Header()+residentSource, "warped_test_add"))

	const n = 1000
	p, err := r.Alloc(4 * n)
	require.NoError(t, err)
	require.NoError(t, r.Fill32(p, 7, n))
	v, count := uint32(1), uint32(n)
	args := []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&count)}
	require.NoError(t, r.Launch("warped_test_add", n, args...))
	require.NoError(t, r.LaunchAll([]Call{{Kernel: "warped_test_add", Threads: n, Args: args}}))
	got := make([]uint32, n)
	require.NoError(t, r.Download(unsafe.Pointer(&got[0]), p, 4*n))
	for i := range got {
		require.Equal(t, uint32(9), got[i], "word %d after fill 7 and two adds of 1", i)
	}

	require.True(t, r.Graphs(), "the stand-in has CUDA graphs")
	v = 10
	g, err := r.Capture([]Call{{Kernel: "warped_test_add", Threads: n, Args: args},
		{Kernel: "warped_test_add", Threads: n, Args: args}})
	require.NoError(t, err)
	v = 1000 // a graph keeps the values it captured
	require.NoError(t, r.Replay(g))
	require.NoError(t, r.Replay(g))
	require.NoError(t, r.Download(unsafe.Pointer(&got[0]), p, 4*n))
	require.Equal(t, uint32(9+4*10), got[n-1])

	host := make([]uint32, n)
	for i := range host {
		host[i] = uint32(i)
	}
	require.NoError(t, r.Upload(p, unsafe.Pointer(&host[0]), 4*n))
	require.NoError(t, r.Download(unsafe.Pointer(&got[0]), p, 4*n))
	require.Equal(t, host, got)
	require.Error(t, r.Launch("no_such_kernel", 1), "a kernel that was not compiled")
}

// TestResidentAsync checks the asynchronous side: copies to and from pinned host memory
// that do not wait, and events that wait for the work before their record and no more
// (the stand-in leaves the work after it queued, as a busy GPU would).
func TestResidentAsync(t *testing.T) {
	lib := needStandin(t)
	r, err := OpenResident(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Compile("resident_test.cu", Header()+residentSource, "warped_test_add"))

	const n = 64
	p, err := r.Alloc(4 * n)
	require.NoError(t, err)
	require.NoError(t, r.Fill32(p, 0, n))
	host, err := r.AllocHost(3 * 4 * n) // three blocks of n words: upload, first and second download
	require.NoError(t, err)
	words := unsafe.Slice((*uint32)(host), 3*n)
	require.Equal(t, make([]uint32, 3*n), words, "pinned memory starts zeroed")
	for i := range n {
		words[i] = uint32(i)
	}
	first, second := unsafe.Pointer(&words[n]), unsafe.Pointer(&words[2*n])
	e1, err := r.NewEvent()
	require.NoError(t, err)
	e2, err := r.NewEvent()
	require.NoError(t, err)

	v, size := uint32(100), uint32(n)
	add := []Call{{Kernel: "warped_test_add", Threads: n,
		Args: []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&size)}}}
	require.NoError(t, r.UploadAsync(p, host, 4*n))
	require.NoError(t, r.LaunchAll(add))
	require.NoError(t, r.DownloadAsync(first, p, 4*n))
	require.NoError(t, r.Record(e1))
	launches := count(t, lib, "launches")
	require.NoError(t, r.LaunchAll(add))
	require.NoError(t, r.DownloadAsync(second, p, 4*n))
	require.NoError(t, r.Record(e2))

	require.NoError(t, r.Wait(e1))
	require.Equal(t, launches+1, count(t, lib, "launches"), "the wait ran the work before e1 and left the rest queued")
	for i := range n {
		require.Equal(t, uint32(i+100), words[n+i], "word %d after e1", i)
	}
	require.NoError(t, r.Wait(e2))
	require.NoError(t, r.Wait(e2), "waiting again for a passed event")
	for i := range n {
		require.Equal(t, uint32(i+200), words[2*n+i], "word %d after e2", i)
	}
	require.Equal(t, int64(2), count(t, lib, "events"))

	local := make([]uint32, n)
	require.ErrorContains(t, r.DownloadAsync(unsafe.Pointer(&local[0]), p, 4*n), "not pinned host memory",
		"Go memory could be gone when a lazy copy lands")
	require.ErrorContains(t, r.UploadAsync(p, unsafe.Add(host, 4*n), 3*4*n), "not pinned host memory", "past the end")
}

// TestResidentAsyncFaults checks that the asynchronous calls report the driver's
// failures: pinned memory refused, and a kernel that fails before an event's record,
// which the wait for the event reports.
func TestResidentAsyncFaults(t *testing.T) {
	lib := needStandin(t)
	r, err := OpenResident(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Compile("resident_test.cu", Header()+residentSource, "warped_test_add"))

	setFaults(t, lib, "hostalloc")
	_, err = r.AllocHost(64)
	require.ErrorContains(t, err, "pinned host memory")
	require.ErrorContains(t, err, "cuMemAllocHost_v2 failed: CUDA_ERROR_OUT_OF_MEMORY")

	setFaults(t, lib, "launch:warped_test_add")
	p, err := r.Alloc(4)
	require.NoError(t, err)
	v, one := uint32(1), uint32(1)
	e, err := r.NewEvent()
	require.NoError(t, err)
	require.NoError(t, r.Launch("warped_test_add", 1, unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&one)))
	require.NoError(t, r.Record(e))
	require.ErrorContains(t, r.Wait(e), "cuEventSynchronize failed: CUDA_ERROR_LAUNCH_FAILED")
}
