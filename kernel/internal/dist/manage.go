package dist

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/internal/spin"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/osthread"
)

// Manage is the manager goroutine's loop, on the goroutine that called Run: it returns
// when the run is over or failed (e's Stopped).
func (m *Driver) Manage(ctx context.Context, start time.Time, e Engine) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m.e = e
	s := m.sim
	m.lastGVT, m.lastFlush = start, start
	lastProgress := start
	var idleSince time.Time // when the manager's turns began to find nothing to do
	var idleTurns spin.Wait // its turns since then
	clk := e.Phases()       // engine sampling's time split: nil when off
	// The back-off's ways to give the core away (see backOff): through the Go scheduler,
	// or, for a manager that runs workers itself on a thread of its own, the thread's.
	yield, sleep := runtime.Gosched, time.Sleep
	var tl turns // turn.go: measured only on a thread of the manager's own
	if tb, ok := m.tr.(comm.ThreadBound); ok && tb.ThreadBound() && e.Hosting() {
		yield, sleep = osthread.Yield, osthread.Sleep
		tl.start(start)
		tl.crowded = m.crowded
	}
	for !e.Stopped() {
		if clk != nil {
			clk.Comm()
		}
		busy := m.receive()
		if !busy && tl.crowded && tl.contended {
			osthread.Yield() // turn.go: where the MPI library would have, but outside cgo
		}
		if m.drain() {
			busy = true
		}
		now := time.Now()
		if m.workers.AllPassive() || now.Sub(m.lastFlush) >= flushEvery {
			m.flush()
			m.lastFlush = now
		}
		if m.rs != nil {
			m.promise(now) // safe.go
		}
		if clk != nil {
			clk.GVT()
		}
		switch {
		case m.sync:
			m.stepSync(now)
		case m.tq != nil:
			m.stepTQ(now)
			m.stepTermination()
		default:
			m.stepGVT(now)
			m.stepTermination()
		}
		if ctx.Err() != nil {
			e.Fail(context.Cause(ctx))
		}
		if s.Cfg.Progress != nil && m.rank == 0 && now.Sub(lastProgress) >= s.Cfg.ProgressInterval {
			lastProgress = now
			s.Cfg.Progress(core.Progress{Now: m.gvt.GVT(), EndTime: m.end, EventsProcessed: e.ProcessedSoFar(), Elapsed: now.Sub(start)})
		}
		e.Tick(now)
		if clk != nil {
			clk.Idle() // the workers' turn, when hosting, is in their own time split
		}
		if e.Work(tl.events(now)) {
			busy = true
		}
		if busy {
			idleSince, idleTurns = time.Time{}, spin.Wait{}
			if tl.crowded && tl.contended && e.Ahead() {
				osthread.Yield() // turn.go: the core to a rank beside it that holds GVT back
			}
			continue
		}
		if idleSince.IsZero() {
			idleSince = now
		}
		m.backOff(now.Sub(idleSince), &idleTurns, yield, sleep)
	}
	err := e.Err()
	if err != nil && !m.peerFailed && m.sync {
		// The others meet this rank only in all-gathers: tell them there.
		b, _ := comm.EncodeSyncReading(&comm.SyncReading{Err: fmt.Sprintf("rank %d: %v", m.rank, err)})
		_, _ = m.tr.AllGather(b)
	} else if err != nil && !m.peerFailed {
		// Tell the others why this rank stops, so that they stop too and show it.
		msg := m.codec.AppendTerminate(nil, &comm.Terminate{Err: fmt.Sprintf("rank %d: %v", m.rank, err)})
		for r := range m.size {
			if r != m.rank {
				_ = m.send(r, msg)
			}
		}
	}
}

// Back-off when the manager's turn found nothing to do for idle: it gives its core to the
// workers, and only once it has found nothing for spinFor, and GVT does not wait on it
// (urgent), it sleeps, longer the longer it has been idle, up to 500 µs. Remote events
// come every few microseconds while the ranks run: a manager that slept after a few idle
// turns let them wait, and the ranks with nothing to do waited with them. One that GVT
// waits on keeps spinning past spinFor, pausing now and then (spin.Pause: a goroutine
// that only yields through the Go scheduler can leave the one it waits for unrun).
const spinFor = 2 * time.Millisecond

// nap is the back-off's sleep after idle.
func nap(idle time.Duration) time.Duration {
	return min(max(idle/16, 10*time.Microsecond), 500*time.Microsecond)
}

// backOff is the manager's back-off after its turns found nothing to do for idle (turns
// counts them): it yields, pausing now and then past spinFor, and sleeps (nap) only past
// spinFor while GVT does not wait on it. A manager with a goroutine of its own, or one not
// locked to its thread (the ranks of a loopback run share one process's processors),
// yields and sleeps through the Go scheduler, so that the other goroutines get its
// processor; one that runs workers itself (Engine.Hosting) on a thread of its own
// (comm.ThreadBound: MPI's) yields and sleeps the thread itself, since through the Go
// scheduler a locked thread would hand its processor to another thread and back each
// time.
func (m *Driver) backOff(idle time.Duration, turns *spin.Wait, yield func(), sleep func(time.Duration)) {
	if idle < spinFor || m.urgent() {
		if turns.Turn(spinFor) {
			sleep(spin.Pause)
		} else {
			yield()
		}
		return
	}
	sleep(nap(idle))
}

// fail ends the run with err on this rank and tells the others.
func (m *Driver) fail(err error) { m.e.Fail(err) }

// failReasonWait bounds how long a rank whose transport failed waits for the message that
// tells why another rank left.
const failReasonWait = 500 * time.Millisecond

// failComm ends the run after the transport failed with err. A transport usually fails
// because another rank failed and left, so the messages still waiting are searched for
// that rank's reason, which is the error to show.
// The reason may still be on its way (a transport may deliver it later than the failed
// rank's departure shows), so this waits for it up to failReasonWait.
func (m *Driver) failComm(err error) {
	deadline := time.Now().Add(failReasonWait)
	for range 1 << 20 {
		_, msg, ok, perr := m.tr.Poll()
		if perr != nil {
			break
		}
		if !ok {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
			continue
		}
		if k, v, derr := m.codec.Decode(msg); derr == nil && k == comm.KindTerminate {
			if e := v.(*comm.Terminate).Err; e != "" {
				m.peerFailed = true
				m.e.Fail(&core.PeerError{Msg: e})
				return
			}
		}
	}
	m.e.Fail(err)
}
