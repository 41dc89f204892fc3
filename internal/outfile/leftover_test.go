package outfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLeftovers: the temporary files of an output that an ended process of this host left
// are found (not those of a live process, of this one, of another host or of another
// output), and KeepAside puts one beside the output without replacing anything.
func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run.csv")
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	name := func(output, host string, pid int) string {
		return filepath.Join(dir, "."+output+".tmp-"+host+"-"+strconv.Itoa(pid)+"-12345")
	}
	host := hostTag()
	files := map[string]bool{ // the path: whether it is a leftover of run.csv
		name("run.csv", host, dead.Process.Pid):   true,
		name("run.csv", host, os.Getpid()):        false, // this process's own
		name("run.csv", host, os.Getppid()):       false, // alive
		name("run.csv", "elsewhere", 1<<22+17):    false, // another host's
		name("other.csv", host, dead.Process.Pid): false,
	}
	for p := range files {
		require.NoError(t, os.WriteFile(p, []byte("wall_seconds\n1\n"), 0o600))
	}
	// A file of this process, made by Create: not a leftover while it lives.
	f, err := Create(out)
	require.NoError(t, err)
	defer f.Abort()

	got, err := Leftovers(out)
	require.NoError(t, err)
	require.Equal(t, []string{name("run.csv", host, dead.Process.Pid)}, got)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.partial.csv"), []byte("taken"), 0o644))
	kept, err := KeepAside(got[0], out)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "run.partial-2.csv"), kept)
	data, err := os.ReadFile(kept)
	require.NoError(t, err)
	require.Equal(t, "wall_seconds\n1\n", string(data))
	_, err = os.Stat(got[0])
	require.True(t, os.IsNotExist(err), "the leftover's hidden name is gone")
	left, err := Leftovers(out)
	require.NoError(t, err)
	require.Empty(t, left)
}
