package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDevicesCommand(t *testing.T) {
	code, out, errOut := warped("devices")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "cpu: ")
	require.Contains(t, out, "cuda")
	require.Regexp(t, `cpu: .*\[available\]`, out)
	require.Contains(t, out, "Compiled CUDA kernels are")

	t.Setenv("WARPED_CUDA_CACHE", t.TempDir())
	code, out, errOut = warped("devices")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Compiled CUDA kernels are cached in "+os.Getenv("WARPED_CUDA_CACHE")+" (")
	t.Setenv("WARPED_CUDA_CACHE", "off")
	code, out, errOut = warped("devices")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Compiled CUDA kernels are not cached")

	dir := t.TempDir()
	code, out, errOut = warped("devices", "--write-kernels", dir)
	require.Equal(t, 0, code, errOut)
	for _, f := range []string{"xorwow.cu", "phold.cu"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Contains(t, string(b), "WarpedBatch")
	}
	require.Contains(t, out, "--fmad=false")

	code, _, errOut = warped("devices", "--bogus")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "warped devices:")
	code, _, errOut = warped("devices", "extra")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "unexpected argument")
	code, out, _ = warped("devices", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Usage: warped devices")
}
