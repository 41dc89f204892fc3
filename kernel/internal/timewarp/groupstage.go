package timewarp

// A group worker's batch (see the comment at the top of group.go): the events it took,
// handled without the group's lock with their sends and generator draws kept aside, then
// committed under the lock in the order taken, their results replayed.

import (
	"math"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/rng"
)

// staged is an event a worker of a group has taken and handled without the lock, with
// what committing it needs: the LP's generator before and after Handle and the range of
// its sends in the worker's stager.
type staged struct {
	ev            event.Event
	before, after rng.XORWOW
	from, to      int32
	oh            int32 // with batched offload, 1 + its element in the worker's offSlot, or 0
	// scratch is what Handle left in its scratch words (replay hands them on).
	scratch event.Words
}

// stagedSend is a send kept aside while a worker of a group handles an event without the
// lock: the arguments of sink.Send but the sender and its time, which are the staged
// event's receiver and receive time.
type stagedSend struct {
	to      LPID
	depth   uint32
	seq     uint64
	at      Time
	words   Words
	payload any
}

// stager is a worker of a group as the sink of its Context while it handles its batch: it
// keeps the sends aside (worker.stage) for the commit.
type stager worker

// Send keeps a Send aside.
func (s *stager) Send(to, _ LPID, depth uint32, seq uint64, at, _ Time, ws Words, payload any) {
	s.stage.sends = append(s.stage.sends, stagedSend{to: to, depth: depth, seq: seq, at: at, words: ws,
		payload: payload})
}

// stage is a group worker's batch: the events taken, their sends, and scratch.
type stage struct {
	held  []staged
	sends []stagedSend
	aside []event.Event // events set aside during a take (their LPs are held elsewhere)
	// bulk and stamps are the events a bulk take took out of the calendar and their
	// stamps (takeBuckets); order, sortEvs and sortStamps are sortBulk's scratch.
	bulk, sortEvs      []event.Event
	stamps, sortStamps []uint64
	order              []int32
	keep               []event.Event // handleAntis' scratch: entries that wait for their LP
	// at is the element being committed; marker, a batch no backend runs, tells
	// applyBatched to replay it.
	at     int
	marker gpuoffload.Batch
	// size is the offload's batch size for the batch held (0: handled with Handle); take
	// is how many events the worker takes at most (groupBatch or groupSafeBatch, or size
	// when larger).
	size, take int
	// min is the key of the batch's first (least) event while the worker holds a batch,
	// else maxKey (written under the group's lock, read by the other members' takes);
	// safe is the batch's safe bound (groupBound), or below every key.
	min, safe event.Key
}

// handleStaged handles the worker's batch without the lock: each event's Handle runs with
// its sends kept aside, and its generator is noted before and after. With batched offload
// on (stage.size > 0), the events whose LPs have a batch kernel run on the backend first,
// also without the lock (stageBatches), and their results take Handle's place
// (applyBatched), as processBatch's do in a worker's own loop.
func (w *worker) handleStaged() {
	d, st := w.d, &w.stage
	st.sends = st.sends[:0]
	sink := w.frame().Out
	w.frame().Out = (*stager)(w)
	var sl *offSlot
	if st.size > 0 {
		sl = w.stageBatches()
	}
	for i := range st.held {
		h := &st.held[i]
		id := h.ev.Receiver
		r := &d.sim.LPs[id]
		core.Enter(&w.ctx, h.ev.RecvTime, h.ev.Depth, id, r)
		if d.perSend {
			w.cause = event.KeyOf(&h.ev) // for Record
		}
		h.before, h.from = r.RNG, int32(len(st.sends))
		var b *gpuoffload.Batch
		j := 0
		if h.oh > 0 {
			var good bool
			if b, j, good = w.result(sl, &sl.held[h.oh-1]); !good {
				break // the kernel broke its contract: the run failed
			}
		}
		if b != nil {
			w.applyBatched(r, b, j)
		} else {
			r.Model.Handle(&w.ctx, &h.ev)
		}
		h.scratch = event.Words{}
		if f := w.frame(); f.ScratchTouched {
			h.scratch, w.scratch, f.ScratchTouched = w.scratch, event.Words{}, false
		}
		h.after, h.to = r.RNG, int32(len(st.sends))
	}
	if sl != nil {
		clear(sl.held)
		sl.held, sl.n = sl.held[:0], 0
	}
	w.frame().Out = sink
}

// stageBatches runs the batch kernels of the worker's staged events (batched offload in a
// group, without the lock: their LPs are held): one batch per kernel, packed, run on the
// backend and waited for. Each staged event records its element (oh), or 0 to be handled
// with Handle (no kernel; or every one when the batches failed: with --gpu auto offload is
// then off, without it the run failed). It returns the slot that holds the batches.
func (w *worker) stageBatches() *offSlot {
	st, sl := &w.stage, &w.off.slot
	sl.held, sl.n = sl.held[:0], 0
	for i := range st.held {
		h := &st.held[i]
		kern, bt := w.batchKernel(h.ev.Receiver, &h.ev)
		if kern == nil {
			continue
		}
		sl.held = append(sl.held, offHeld{id: h.ev.Receiver, ev: &h.ev, k: event.KeyOf(&h.ev), bt: bt,
			g: int32(sl.group(kern))})
		h.oh = int32(len(sl.held))
	}
	ok := w.packSubmit(sl)
	for g := range sl.groups[:sl.n] {
		ok = w.wait(&sl.groups[g]) && ok
	}
	if !ok {
		for i := range st.held {
			st.held[i].oh = 0
		}
	}
	return sl
}

// commitStaged commits the worker's batch under the lock, in the order taken, through
// process (its handler replaying each event's results: see replay). It returns false
// when the run failed.
func (w *worker) commitStaged() bool {
	d, q, st := w.d, w.q, &w.stage
	hi := q.safeHigh
	if q.groupSafe {
		q.safeBound = st.safe // process commits the events below it unlogged
	}
	ok := true
	for i := range st.held {
		h := &st.held[i]
		id := h.ev.Receiver
		d.lps[id].setHeld(false)
		if !ok {
			continue
		}
		d.sim.LPs[id].RNG = h.before
		w.prefetchPushes(i)
		st.at = i
		w.batch = &st.marker
		w.process(&d.lps[id], id, &h.ev)
		w.batch = nil
		ok = w.frame().Err == nil
		if q.groupSafe {
			q.maxCommitted = max(q.maxCommitted, q.safeHigh.RecvTime) // a bulk take's batch is in no order
		}
	}
	clear(st.held)
	st.held = st.held[:0]
	clear(st.sends)
	st.sends = st.sends[:0]
	st.min = maxKey()
	if q.groupSafe {
		// process set safeHigh to each safe event in turn. Outside a group it stands
		// for every safe event: nothing arrives, is cancelled or rolls back below it,
		// which the engine checks. In a group that holds per LP only (a pending straggler
		// for one LP may sort below another LP's safe event: groupBound), so safeHigh
		// keeps its value and the safe events' times went to maxCommitted, which the
		// final time reads.
		q.safeHigh = hi
		q.safeBound = event.Key{RecvTime: math.Inf(-1)}
	}
	return ok
}

// prefetchPushes asks the processor, as the worker commits its batch's event i, for what
// the pushes of the sends of the events after it will write in the calendar: the bucket
// records of those of event i+commitAhead, and the record slots of those of event
// i+commitAhead/2 (their buckets' records asked for before), so that their misses
// overlap the commits before (without it the pushes, under the lock, mostly wait for those
// lines: PHOLD, 2 workers on one queue; docs/PERFORMANCE.md).
func (w *worker) prefetchPushes(i int) {
	st, cal := &w.stage, &w.q.pend.cal // the hints: see pending
	from, to := i+commitAhead, i+commitAhead+1
	if i == 0 { // and the first events', which no event before asked for
		from = 0
	}
	for j := from; j < min(to, len(st.held)); j++ {
		h := &st.held[j]
		for k := h.from; k < h.to; k++ {
			cal.PrefetchBucket(st.sends[k].at)
		}
	}
	if j := i + commitAhead/2; j < len(st.held) {
		h := &st.held[j]
		for k := h.from; k < h.to; k++ {
			cal.PrefetchPush(st.sends[k].at)
		}
	}
}

// commitAhead is how many events ahead of the commit prefetchPushes asks for the calendar's
// buckets.
const commitAhead = 8

// replay does what Handle did for the staged event being committed: it sets the LP's
// generator as Handle left it and sends its sends, in order, to the queue's sink.
func (w *worker) replay(r *core.LPRecord) {
	st := &w.stage
	h := &st.held[st.at]
	r.RNG = h.after
	if h.scratch != (event.Words{}) { // as Handle left them, for process to keep or drop
		w.scratch, w.frame().ScratchTouched = h.scratch, true
	}
	out, from, now := w.frame().Out, h.ev.Receiver, h.ev.RecvTime
	for j := h.from; j < h.to; j++ {
		s := &st.sends[j]
		out.Send(s.to, from, s.depth, s.seq, s.at, now, s.words, s.payload)
	}
}
