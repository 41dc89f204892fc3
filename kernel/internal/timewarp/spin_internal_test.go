package timewarp

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpedgo/warped/internal/spin/spintest"
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
			hold := spintest.New(t)
			var spinning, ran atomic.Bool
			spun := make(chan struct{})
			go func() { // the spinner, on the other processor
				defer close(spun)
				start := time.Now()
				spinning.Store(true)
				for !ran.Load() {
					c.spin()
					if time.Since(start) > starvedAfter {
						hold.Release()
						return
					}
				}
			}()
			for !spinning.Load() { // this goroutine keeps its processor meanwhile
			}
			// The waiting goroutine goes to this processor's queue, which Hold keeps.
			go func() {
				ran.Store(true)
				hold.Release()
			}()
			hold.Hold()
			ranFirst := ran.Load()
			<-spun
			if !ranFirst {
				t.Fatalf("the goroutine queued on the held processor did not run in %v: the spinner starved it", starvedAfter)
			}
		})
	}
}
