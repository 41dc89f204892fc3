//go:build linux

package standin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScript builds the stand-in with scripts/cuda-standin.sh (which must agree with
// Build) and checks the library it prints: it loads, counts and rejects bad fault lists.
func TestScript(t *testing.T) {
	if _, err := findCXX(""); err != nil {
		t.Skipf("no C++ compiler: %v", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	out, err := exec.Command(bash, "../../scripts/cuda-standin.sh", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	lib := strings.TrimSpace(string(out))
	require.Equal(t, filepath.Join(dir, LibraryName), lib)
	for _, f := range []string{"host_prelude.h", "standin_launch.h"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, "the headers lie beside the library")
	}
	n, err := Count(lib, "launches")
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = Count(lib, "bogus")
	require.ErrorContains(t, err, `no count "bogus"`)
	require.NoError(t, SetFaults(lib, "alloc,hostalloc,compile:x,launch,context,ptxversion"))
	require.NoError(t, SetFaults(lib, ""))
	require.ErrorContains(t, SetFaults(lib, "alloc:x"), "bad fault list")
	require.ErrorContains(t, SetFaults(filepath.Join(dir, "missing.so"), ""), "loading")

	_, err = Build(dir, "no-such-compiler-here")
	require.ErrorContains(t, err, `cannot find the C++ compiler "no-such-compiler-here"`)
}
