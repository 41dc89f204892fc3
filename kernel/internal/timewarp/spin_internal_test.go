package timewarp

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestSpinnerLetsQueuedGoroutineRun reproduces the stall that spin.Pause prevents: one
// goroutine holds a processor without yielding it (here blocked in a raw read, as a
// dedicated GC mark worker holds one to the end of the mark phase), a goroutine waits on
// that processor's local run queue (started just before), and the other processor spins,
// waiting for that goroutine to run. With Gosched alone the spinner never lets its
// processor look at the other's queue and the wait lasts as long as the holder holds on;
// the spinner's pauses let its processor steal the waiting goroutine. The holder is
// released by the waiting goroutine once it runs, or else by the spinner itself after
// starvedAfter (a Go timer would not do: the held processor's timers do not run either),
// and the test fails then.
func TestSpinnerLetsQueuedGoroutineRun(t *testing.T) {
	const starvedAfter = 20 * time.Second
	d := &timeWarpDispatcher{parkAfter: time.Millisecond}
	for _, c := range []struct {
		name string
		spin func() // one turn of the wait
	}{
		{"worker at the ahead bound", func() func() {
			w := &worker{d: d}
			return func() { w.spinOrPark(false) }
		}()},
		{"host waiting to claim a worker", func() func() {
			h := &host{d: d, want: []*worker{{d: d}}}
			return func() { h.idle() }
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			var fds [2]int
			if err := syscall.Pipe(fds[:]); err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fds[0])
			defer syscall.Close(fds[1])
			release := func() { _, _ = syscall.Write(fds[1], []byte{1}) }

			var spinning, ran atomic.Bool
			spun := make(chan struct{})
			go func() { // the spinner, on the other processor
				defer close(spun)
				start := time.Now()
				spinning.Store(true)
				for !ran.Load() {
					c.spin()
					if time.Since(start) > starvedAfter {
						release()
						return
					}
				}
			}()
			for !spinning.Load() { // this goroutine keeps its processor meanwhile
			}
			// The waiting goroutine goes to this processor's queue, and the raw read holds
			// the processor (no entersyscall: nothing hands it to another thread).
			go func() {
				ran.Store(true)
				release()
			}()
			var b [1]byte
			for {
				_, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fds[0]), uintptr(unsafe.Pointer(&b[0])), 1)
				if errno != syscall.EINTR {
					break
				}
			}
			ranFirst := ran.Load()
			<-spun
			if !ranFirst {
				t.Fatalf("the goroutine queued on the held processor did not run in %v: the spinner starved it", starvedAfter)
			}
		})
	}
}
