package kernel

import (
	"testing"
	"unsafe"
)

// TestHistEntryLayout keeps the partitioned engine's history log entry to two cache lines.
func TestHistEntryLayout(t *testing.T) {
	var h histEntry
	if n := unsafe.Sizeof(h); n > 128 {
		t.Errorf("histEntry is %d bytes, more than two 64-byte cache lines", n)
	}
	// What fossil collection reads of an entry is in its first line (see histEntry).
	for name, end := range map[string]uintptr{
		"outTo":       unsafe.Offsetof(h.outTo) + 8,
		"dead":        unsafe.Offsetof(h.dead) + 1,
		"ev.RecvTime": unsafe.Offsetof(h.ev) + unsafe.Offsetof(h.ev.RecvTime) + 8,
		"ev.SendTime": unsafe.Offsetof(h.ev) + unsafe.Offsetof(h.ev.SendTime) + 8,
		"ev.Payload":  unsafe.Offsetof(h.ev) + unsafe.Offsetof(h.ev.Payload) + unsafe.Sizeof(h.ev.Payload),
	} {
		if end > 64 {
			t.Errorf("histEntry.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}

// TestPartLPLayout keeps the partitioned engine's LP record to one cache line.
func TestPartLPLayout(t *testing.T) {
	if n := unsafe.Sizeof(partLP{}); n > 64 {
		t.Errorf("partLP is %d bytes, more than one 64-byte cache line", n)
	}
}
