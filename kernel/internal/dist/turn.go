package dist

import (
	"time"

	"github.com/warpedgo/warped/kernel/internal/osthread"
)

// Turn lengths: how many events the workers the manager runs itself (Engine.Hosting) take
// between two turns of its loop, in which it receives what other ranks sent. A rank with
// a core of its own takes turnEvents: a few tens of microseconds of events, short enough
// for the messages that arrive meanwhile, long enough for the loop's turn to cost little.
// A rank whose thread waits for its core (more ranks than cores, or other processes on
// them) takes contendedEvents: while it is off its core the others run on without its
// messages, and what it then receives late rolls them back, so it polls the network four
// times as often while it runs (and Open MPI, with more ranks than cores, yields the core
// to a rank beside it when a poll finds nothing). With 4 and 8 ranks on 2 cores the short
// turns raised the efficiency from 72% to 85 – 90% and from 48% to 70 – 75%; with 2
// ranks on 2 cores, where the long turns stay, they cost up to 15% (docs/PERFORMANCE.md).
//
// Where the launcher started more ranks on the node than it has CPUs (crowded), a
// contended rank that is ahead (its workers hold no event near GVT) also yields its core
// after each busy turn, so that a rank beside it on that core, perhaps the one that holds
// GVT back, runs sooner: at -np 8 on 2 cores the efficiency rose from 70% to 77 – 79% and
// the rate by 15 – 65%. Where the ranks have a core each, what waits beside a contended
// rank is another program, and yielding to it cost -np 2 a quarter of its rate
// (docs/PERFORMANCE.md).
//
// A contended rank on a crowded node also yields its core after a receive that found
// nothing. Open MPI does so itself there, inside its calls (mpi_yield_when_idle, which it
// turns on where a node runs more ranks than it has slots; up to twice a poll); the
// transport turns that off (comm.NewMPI), since a yield inside a cgo call lets the Go
// runtime hand the thread's processor to another thread that the rank must then take it
// back from: the same yields made by the manager raised the rate at -np 4 and -np 8 by
// 10% (docs/PERFORMANCE.md, "Session 32").
//
// The manager measures its own thread's wait for a processor (the kernel's run delay) as a
// share of each contendWindow; above contendedShare it takes the short turns until a
// window below contendedShare/2. Only a manager that runs on a thread of its own (MPI's,
// comm.ThreadBound) can measure its thread; the others keep the long turns.
const (
	turnEvents      = 256
	contendedEvents = 64
	contendWindow   = 100 * time.Millisecond
	contendedShare  = 0.2
)

// turns chooses the turn length of a manager that runs workers on a thread of its own.
type turns struct {
	delay     func() time.Duration // the thread's run delay so far (osthread.RunDelay; tests give theirs)
	waits     osthread.Waits       // the thread's waits, window by window (off where they cannot be read)
	crowded   bool                 // more ranks on this node than CPUs (comm.Crowded)
	contended bool                 // the last window's share was above contendedShare (with hysteresis)
}

// start begins measuring the calling thread (locked to the manager's goroutine) at now.
func (t *turns) start(now time.Time) {
	if t.delay == nil {
		t.delay = osthread.RunDelay
	}
	t.waits.Start(t.delay, now)
}

// events returns the turn length at now.
func (t *turns) events(now time.Time) int {
	if share, ok := t.waits.Share(now, contendWindow, 1); ok {
		switch {
		case share > contendedShare:
			t.contended = true
		case share < contendedShare/2:
			t.contended = false
		}
	}
	if t.contended {
		return contendedEvents
	}
	return turnEvents
}
