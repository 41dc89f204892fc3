package timewarp

import (
	"testing"
	"unsafe"
)

// TestPartLPLayout keeps the partitioned engine's LP record to one cache line.
func TestPartLPLayout(t *testing.T) {
	if n := unsafe.Sizeof(partLP{}); n > 64 {
		t.Errorf("partLP is %d bytes, more than one 64-byte cache line", n)
	}
}
