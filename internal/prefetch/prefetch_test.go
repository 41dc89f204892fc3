package prefetch

import (
	"testing"
	"unsafe"
)

// TestLineIsOnlyAHint: prefetching never faults and changes nothing, whatever the address.
func TestLineIsOnlyAHint(t *testing.T) {
	x := [4]uint64{1, 2, 3, 4}
	Line(unsafe.Pointer(&x[2]))
	Line(nil)
	Lines(unsafe.Pointer(&x[0]), unsafe.Pointer(&x[3]))
	Lines(nil, unsafe.Pointer(&x[1]))
	Lines3(unsafe.Pointer(&x[0]), nil, unsafe.Pointer(&x[3]))
	if x != [4]uint64{1, 2, 3, 4} {
		t.Fatalf("prefetching changed memory: %v", x)
	}
}
