package app

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOwnModuleExample runs the tests of examples/queues, a model in a module of its own
// (its go.mod replaces this repository with ../..) built on package app alone: its run, its
// report and its study commit the digests of the same model run by the kernel directly.
// scripts/mpi-test.sh runs it under mpirun.
func TestOwnModuleExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	goTool, err := exec.LookPath("go") // go test puts its own toolchain first on PATH
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	cmd := exec.Command(goTool, "test", "-count=1", "./...")
	cmd.Dir = filepath.Join("..", "examples", "queues")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in %s: %v\n%s", cmd.Dir, err, out)
	}
}
