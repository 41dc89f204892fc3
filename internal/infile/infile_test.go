package infile

import (
	"errors"
	"os"
	"path/filepath"
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
