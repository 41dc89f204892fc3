package timewarp

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/warpedgo/warped/event"
)

// horizon is the engine's commit horizon in a run in one process: with each GVT
// round, the workers report, beside the least time, the least key ([event.KeyOf]) of the
// events they hold or handed over since their last report, and the worker that completes
// the round publishes the least of those keys. Fujimoto's argument holds for keys as for
// times (an event's sends, its rollback's re-sends and anti-messages all sort after it), so
// no event that sorts below the horizon can ever arrive again: fossil collection commits
// every logged event below it, while GVT, a time, lets it commit only those before GVT's
// time. Across processes Mattern's token carries times, and the horizon is GVT's time.
//
// A round's reports go to slots of its parity, each worker's on a cache line of its own,
// and so does its result: round r+2, which reuses them, cannot end before every worker has
// reported in it, and a worker reads round r's result only while it has not (housekeep):
// the result may be published late, after the worker reported in rounds r+1 and r+2.
type horizon struct {
	reports [2][]paddedKey
	keys    [2]event.Key
	// safety[parity][w] is worker w's other report in the round: a key below every event
	// its LPs may yet send to another worker's (see queue.updateSafe); others[parity][w]
	// is the least of the round's safety reports but worker w's.
	safety, others [2][]paddedKey
	// round is the last round whose result is in keys[round&1], or 0.
	round atomic.Uint64
}

// paddedKey is a key alone on its cache line.
type paddedKey struct {
	k event.Key
	_ [64 - unsafe.Sizeof(event.Key{})]byte
}

// newHorizon returns the horizon of the given number of workers.
func newHorizon(workers int) *horizon {
	return &horizon{
		reports: [2][]paddedKey{make([]paddedKey, workers), make([]paddedKey, workers)},
		safety:  [2][]paddedKey{make([]paddedKey, workers), make([]paddedKey, workers)},
		others:  [2][]paddedKey{make([]paddedKey, workers), make([]paddedKey, workers)},
	}
}

// publish computes and publishes round r's horizon, once every worker has reported in it.
func (h *horizon) publish(r uint64) {
	// s is the least safety report, at index at; s2 the least of the others.
	s, s2, at := maxKey(), maxKey(), -1
	for i := range h.safety[r&1] {
		switch x := &h.safety[r&1][i].k; {
		case event.KeyLess(x, &s):
			s2, s, at = s, *x, i
		case event.KeyLess(x, &s2):
			s2 = *x
		}
	}
	for i := range h.others[r&1] {
		if i == at {
			h.others[r&1][i].k = s2
		} else {
			h.others[r&1][i].k = s
		}
	}
	k := h.reports[r&1][0].k
	for i := range h.reports[r&1] {
		if x := &h.reports[r&1][i].k; event.KeyLess(x, &k) {
			k = *x
		}
	}
	if prev := h.round.Load(); prev != 0 && event.KeyLess(&k, &h.keys[prev&1]) {
		panic(fmt.Sprintf("kernel: the commit horizon would go down from %+v to %+v", h.keys[prev&1], k))
	}
	h.keys[r&1] = k
	h.round.Store(r)
}

// maxKey is a key above every event's.
func maxKey() event.Key {
	return event.Key{RecvTime: math.Inf(1), SendTime: math.Inf(1), Depth: math.MaxUint32,
		Sender: math.MaxUint32, SeqSign: math.MaxUint64}
}

// updateSafe sets the worker's safe bound (safeBound) from round r's reports, in a run in
// one process with reverse computation: a key below which no event can arrive at this
// worker any more, so that an event the worker takes below it can never be rolled back, and
// is committed as it is processed, without a history entry or outputs to log.
//
// It is the horizon's argument without the worker's own pending events. Those are taken in
// key order, and what they cause comes back to the worker only through other workers, so
// an event that may still arrive here is one another worker may send: below it, the least
// of
//   - the other workers' safety reports in round r: each the least of its pending events'
//     keys, and the keys it handed to other workers since its previous report (those may
//     not have been in their receivers' reports);
//   - the keys this worker handed to other workers since its report in round r-1 (those
//     may have reached their receivers after their reports in round r), before and after
//     this call (lowerSafe).
//
// With a lookahead L (kernel.Lookahead), an event that a pending event at time t causes
// at another LP is at or after t+L, so the pending events' part of a safety report is the
// least key at time t+L, and so is that of an event this worker handed over at time t.
//
// The round's result may be read late: its last reporter publishes it after the round ended,
// and meanwhile the next round may start, and this worker report in it and in the round
// after (same parity as r), overwriting what it handed over before round r. It then skips
// round r (before reading its slots, which that later round reuses): its bound stays the
// one of an earlier round, which still holds (no event can arrive below a bound once it is
// one; lowerSafe has lowered it for this worker's own hand-overs since).
func (q *queue) updateSafe(h *horizon, r uint64, id int, la Time) {
	switch hr := q.handedRound[r&1]; {
	case hr > r:
		return
	case hr < r:
		panic(fmt.Sprintf("kernel: round %d ended without the report of worker %d", r, id))
	}
	b := h.others[r&1][id].k
	own := q.keyMin
	if event.KeyLess(&q.handed[r&1], &own) {
		own = q.handed[r&1]
	}
	if n := (r + 1) & 1; q.handedRound[n] == r+1 && event.KeyLess(&q.handed[n], &own) {
		own = q.handed[n]
	}
	own = caused(own, la)
	if event.KeyLess(&own, &b) {
		b = own
	}
	q.safeBound = b
}

// caused returns a key below every event that an event with key k causes at another LP,
// given the lookahead la: the least key at time k.RecvTime + la, or k itself without a
// lookahead.
func caused(k event.Key, la Time) event.Key {
	if la > 0 {
		return event.Key{RecvTime: k.RecvTime + la}
	}
	return k
}

// lowerSafe lowers the safe bound to caused(e's key, la) for event e, handed to another
// worker, without building the key (see updateSafe; la is the lookahead).
func (q *queue) lowerSafe(e *event.Event, la Time) {
	if la > 0 {
		if t := e.RecvTime + la; t <= q.safeBound.RecvTime {
			q.safeBound = event.Key{RecvTime: t}
		}
	} else if event.Before(e, &q.safeBound) {
		q.safeBound.Set(e)
	}
}

// report reports to running GVT round r, which the worker has not reported in yet: it hands
// over its buffered events and takes in what was handed to it first (see engine.go's
// comment on GVT).
func (w *worker) report(r uint64) {
	d, q := w.d, w.q
	w.takeInbound()
	if d.lazy {
		w.settleHeld()
	}
	// Last, as the rollbacks of what came in may have sent anti-messages to other workers:
	// everything this worker made visible since its last report is then either in the
	// report (handed over, counted in the tracker and keyMin) or in its own calendar.
	if q.boxed {
		w.flushOutboxes()
	}
	head := math.Inf(1)
	if d.hz == nil {
		if t, ok := q.pend.Min(); ok {
			head = t
		}
		if len(q.antis) > 0 { // a group's entries that wait for their LPs
			head = q.antisMin(head)
		}
	} else {
		k := maxKey()
		if mk, ok := q.pend.MinKey(); ok {
			head, k = mk.RecvTime, mk
		}
		s := caused(k, d.sim.Lookahead) // the safety report: see updateSafe
		if event.KeyLess(&q.keyMin, &k) {
			k = q.keyMin
		}
		if event.KeyLess(&q.keyMin, &s) {
			s = q.keyMin
		}
		d.hz.reports[r&1][w.id].k = k
		d.hz.safety[r&1][w.id].k = s
		q.handed[r&1], q.handedRound[r&1] = q.keyMin, r
		q.keyMin = maxKey()
	}
	if w.cell != nil {
		w.publish() // engine sampling (sample.go)
	}
	g, ok := d.gvt.Report(r, w.tracker.Take(r, head))
	if ok && d.hz != nil {
		d.hz.publish(r)
		d.changed()
	}
	if ok && g >= d.end && d.dist == nil {
		d.stop()
	}
}
