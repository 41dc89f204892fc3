// Package spintest holds a Go processor without yielding it, for the tests of waits by
// spinning (package spin): the goroutine that calls Hold keeps its processor in a raw read,
// as the collector's dedicated mark worker keeps one, until Release.
package spintest

import (
	"syscall"
	"testing"
	"unsafe"
)

// Holder is a pipe whose read end Hold blocks in.
type Holder struct {
	fds [2]int
}

// New returns a holder whose pipe the test closes at its end.
func New(t testing.TB) *Holder {
	h := &Holder{}
	if err := syscall.Pipe(h.fds[:]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Close(h.fds[0])
		syscall.Close(h.fds[1])
	})
	return h
}

// Hold blocks the calling goroutine, and its processor with it, until Release: a raw read
// does not tell the Go scheduler, so nothing hands the processor to another thread, and
// what waits on its local run queue stays there.
func (h *Holder) Hold() {
	var b [1]byte
	for {
		_, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(h.fds[0]), uintptr(unsafe.Pointer(&b[0])), 1)
		if errno != syscall.EINTR {
			return
		}
	}
}

// Release ends a Hold (or the next one); any goroutine may call it, more than once.
func (h *Holder) Release() { _, _ = syscall.Write(h.fds[1], []byte{1}) }
