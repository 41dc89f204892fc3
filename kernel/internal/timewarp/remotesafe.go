package timewarp

import (
	"math"

	"github.com/warpedgo/warped/event"
)

// Safe events across processes: the worker's part. The manager's part, and the argument,
// are in package dist (safe.go): [dist.RemoteSafe].

// remoteLowEvery is the number of events, and of housekeeps, after which a worker takes a
// snapshot again though its safe bound did not change; it is also the longest stretch a
// worker with safe events across processes takes (stretchMax), so that a snapshot is at
// most that many events old.
const remoteLowEvery = 32

// safeWorker is the worker's own part of safe events across processes: the bound it last
// read, the housekeeps since its last snapshot and its processed count then, and the
// snapshot it takes (the events taken in from each rank, and the rank's bound on each
// rank then).
type safeWorker struct {
	seen  Time
	turns uint32
	at    uint64
	n     []uint64
	b     []Time
}

// remoteSafe is the worker's part of safe events across processes, called by housekeep
// before the worker takes events: when the remote bound rose, it takes in what arrived
// before it and raises its safe bound to it; then, and once remoteLowEvery events or
// housekeeps passed, it takes a snapshot ([dist.RemoteSafe.Publish]) for the manager's
// promises.
//
// The worker need not housekeep before every event for the bound: the manager bumps its
// queue's changes after it raised the bound ([dist.Engine.SafeRose]), which ends the
// stretch; until then the worker's safe bound is one that held (what arrives after a
// bound was stored is at or after it).
func (w *worker) remoteSafe() {
	rs := w.d.dist.Safe()
	if rs == nil {
		return
	}
	q, sw := w.q, &w.d.safeW
	b := rs.Bound()
	if b != sw.seen {
		sw.seen = b
		// Everything that can still arrive is at or after b once the inbound is drained.
		w.takeInbound()
		// The worker is its process's only one (dist.New's safe): nothing else can arrive.
		if k := (event.Key{RecvTime: b}); event.KeyLess(&q.safeBound, &k) {
			q.safeBound = k
		}
	} else if sw.turns++; sw.turns < remoteLowEvery && w.stats.processed-sw.at < remoteLowEvery {
		return
	}
	sw.turns, sw.at = 0, w.stats.processed
	// The bounds, then the counts, then the inbound: every event counted, and every one
	// that arrived before a bound read, is then in the calendar or processed.
	if sw.b == nil {
		sw.b, sw.n = make([]Time, rs.Ranks()), make([]uint64, rs.Ranks())
	}
	rs.ReadBounds(sw.b)
	rs.ReadHanded(sw.n)
	w.takeInbound()
	low := math.Inf(1)
	if t, ok := q.pend.Min(); ok {
		low = t
	}
	if w.d.lazy {
		low = min(low, q.heldMin.RecvTime)
	}
	rs.Publish(low, sw.n, sw.b)
}
