package meminfo

import (
	"os"
	"testing"
)

// TestBytes reads MemTotal where /proc/meminfo exists (at least a MiB, in bytes), and 0
// for a line that no kernel writes.
func TestBytes(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo on this machine")
	}
	if got := Bytes("MemTotal:"); got < 1<<20 {
		t.Fatalf("MemTotal %d bytes, want at least a MiB", got)
	}
	if got := Bytes("NoSuchLine:"); got != 0 {
		t.Fatalf("a missing line read %d, want 0", got)
	}
}
