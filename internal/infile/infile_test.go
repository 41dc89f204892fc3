package infile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadAtMost: a file up to the bound is read whole; one over it, or an endless device,
// is refused with ErrTooLarge.
func TestReadAtMost(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadAtMost(p, 5); err != nil || string(data) != "12345" {
		t.Fatalf("ReadAtMost(5 bytes, 5) = %q, %v", data, err)
	}
	if _, err := ReadAtMost(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAtMost(5 bytes, 4) = %v, want ErrTooLarge", err)
	}
	if _, err := ReadAtMost("/dev/zero", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAtMost(/dev/zero) = %v, want ErrTooLarge", err)
	}
}

// TestFIFOWithoutWriter: a FIFO that no process writes is read as empty at once, not
// waited on in open (where no signal reaches the process).
func TestFIFOWithoutWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	data, err := ReadAtMost(p, 1<<10)
	if err != nil || len(data) != 0 {
		t.Fatalf("ReadAtMost(FIFO without a writer) = %q, %v; want nothing, no error", data, err)
	}
}
