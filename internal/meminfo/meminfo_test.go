package meminfo

import (
	"os"
	"runtime"
	"runtime/debug"
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

// TestResident reads this process's resident memory where /proc/self/statm exists: at
// least the heap this test holds.
func TestResident(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc/self/statm on this machine")
	}
	hold := make([]byte, 8<<20)
	for i := range hold {
		hold[i] = 1 // touched, so resident
	}
	if got := Resident(); got < uint64(len(hold)) {
		t.Fatalf("resident %d bytes, want at least the %d this test holds", got, len(hold))
	}
	if v, r := Virtual(), Resident(); v < r {
		t.Fatalf("address space %d bytes, below the resident %d", v, r)
	}
	runtime.KeepAlive(hold)
}

// BenchmarkResident measures one read of the resident memory: what a sampler pays per set
// of rows.
func BenchmarkResident(b *testing.B) {
	for b.Loop() {
		Resident()
	}
}

// TestResetPeak checks that the peak resident size falls back to the resident size after a
// large allocation is given back, where Linux allows the reset. (Relative figures: under the
// race detector the resident size keeps the allocation's shadow memory.)
func TestResetPeak(t *testing.T) {
	big := make([]byte, 256<<20)
	for i := range big {
		big[i] = 1
	}
	before := Peak()
	if before < 256<<20 {
		t.Skip("VmHWM is not readable here")
	}
	big = nil
	debug.FreeOSMemory()
	if !ResetPeak() {
		t.Skip("/proc/self/clear_refs is not writable here")
	}
	after, now := Peak(), Resident()
	if after+128<<20 > before || after > now+32<<20 {
		t.Fatalf("peak %d bytes before, %d after ResetPeak, resident %d: want it down to the resident size", before, after, now)
	}
}
