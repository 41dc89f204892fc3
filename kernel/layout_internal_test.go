package kernel

import (
	"testing"
	"unsafe"
)

// TestLPRecordLayout keeps the time-warp LP record as its comment says: whole cache lines,
// with every field an event touches in the first four.
func TestLPRecordLayout(t *testing.T) {
	var r twLP
	if n := unsafe.Sizeof(r); n%64 != 0 {
		t.Errorf("twLP is %d bytes, not a whole number of 64-byte cache lines: adjust its padding", n)
	}
	if end := unsafe.Offsetof(r.states) + unsafe.Sizeof(r.states); end > 256 {
		t.Errorf("twLP's hot fields end at byte %d, past its fourth cache line", end)
	}
}

// TestHistEntryLayout keeps the partitioned engine's history log entry to two cache lines.
func TestHistEntryLayout(t *testing.T) {
	if n := unsafe.Sizeof(histEntry{}); n > 128 {
		t.Errorf("histEntry is %d bytes, more than two 64-byte cache lines", n)
	}
}

// TestPartLPLayout keeps the partitioned engine's LP record to one cache line.
func TestPartLPLayout(t *testing.T) {
	if n := unsafe.Sizeof(partLP{}); n > 64 {
		t.Errorf("partLP is %d bytes, more than one 64-byte cache line", n)
	}
}
