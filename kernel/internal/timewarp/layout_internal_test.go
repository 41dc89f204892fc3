package timewarp

import (
	"testing"
	"unsafe"

	"github.com/warpedgo/warped/event"
)

// TestPartLPLayout keeps the engine's LP record to one cache line.
func TestPartLPLayout(t *testing.T) {
	if n := unsafe.Sizeof(lpState{}); n > 64 {
		t.Errorf("lpState is %d bytes, more than one 64-byte cache line", n)
	}
}

// TestPartLPHeld: the held bit and the list of cancelled events share lpState.cancels
// without disturbing each other.
func TestPartLPHeld(t *testing.T) {
	var q queue
	var x lpState
	x.setHeld(true)
	q.cancel(&x, keyAt(1), 5)
	q.cancel(&x, keyAt(2), 6)
	if !x.held() || x.firstCancel() != 2 {
		t.Fatalf("after two cancels while held: held %v, first %d; want true, 2", x.held(), x.firstCancel())
	}
	x.setHeld(false)
	k := keyAt(2)
	if !q.dropCancelled(&x, &k, 6) || x.held() || x.firstCancel() != 1 {
		t.Fatalf("after dropping the second: held %v, first %d; want false, 1", x.held(), x.firstCancel())
	}
	x.setHeld(true)
	k = keyAt(1)
	if !q.dropCancelled(&x, &k, 5) || !x.held() || x.firstCancel() != 0 {
		t.Fatalf("after dropping both while held: held %v, first %d; want true, 0", x.held(), x.firstCancel())
	}
}

// keyAt returns the key of a positive event at time t.
func keyAt(t Time) event.Key { return event.Key{RecvTime: t, SeqSign: 1} }
