package spinlock

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpedgo/warped/internal/spin/spintest"
)

// TestTicketWaiterLetsQueuedHolderRun is the ticket lock's case of the stall that
// spin.Pause prevents: the goroutine that will unlock waits on the local queue of a
// processor that something holds without yielding it (here a raw read, as the collector's
// mark worker holds one), and the waiter spins on the other processor. Yielding through
// the Go scheduler alone, the waiter never lets its processor take the queued goroutine,
// and the lock stays held as long as the processor does. The holder's processor is
// released by the waiter once it has the lock, or else by a watchdog (whose timer the
// waiter's processor runs), and the test fails then.
func TestTicketWaiterLetsQueuedHolderRun(t *testing.T) {
	const starvedAfter = 20 * time.Second
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	hold := spintest.New(t)
	var l Ticket
	l.Lock()
	var waiting, starved atomic.Bool
	got := make(chan struct{})
	go func() { // the waiter, on the other processor
		watchdog := time.AfterFunc(starvedAfter, func() { starved.Store(true); hold.Release() })
		defer watchdog.Stop()
		waiting.Store(true)
		l.Lock() // taken at all is what the test waits for: nothing to do under it
		l.Unlock()
		hold.Release()
		close(got)
	}()
	for !waiting.Load() { // this goroutine keeps its processor meanwhile
	}
	// The unlocker goes to this processor's queue, which Hold keeps.
	go l.Unlock()
	hold.Hold()
	<-got
	if starved.Load() {
		t.Fatalf("the waiter did not get the lock in %v: it starved the goroutine that would unlock", starvedAfter)
	}
}
