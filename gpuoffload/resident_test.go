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
