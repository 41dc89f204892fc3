package timewarp

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/prefetch"
	"github.com/warpedgo/warped/spinlock"
)

// Shared schedule queues (fewer schedule queues than workers): a group of workers shares
// one queue of the engine, its calendar (the group's LTSF queue), history and
// output logs, inbound and anti-message list, under the queue's lock (queue.mu, a
// ticket spinlock or a mutex: LockType). Everything the engine does, rollback,
// coast forward, cancellation (aggressive or lazy), fossil collection, compaction, the
// rollback check, is its code, run by whichever worker of the group holds the lock; only
// the taking and handling of events differs.
//
// A worker takes, under the lock, a batch of up to groupBatch or groupSafeBatch (or the
// offload's batch size, when larger) of the least pending events of distinct LPs that no
// other worker of the group holds (lpState.held marks those; where the group commits
// unlogged, whole calendar buckets at a time, unsorted: takeBuckets), handles them
// without the lock (with batched offload, those with a batch kernel on the backend:
// stageBatches), its sends and generator draws kept aside (stager), and commits them
// under the lock in the order taken: each goes through process as an event handled by
// Handle would, its results replayed (the sends to the queue's sink, the generator as it
// was after Handle), so that logging, state saving, outputs and digests are the
// engine's. Committing and taking the next batch share one critical section,
// so a worker takes the lock about twice per batch, not per event. The LPs of a batch are
// handled out of key order (and another worker's batch may hold an LP's straggler's
// sender), so the engine's safe bound does not hold: an event is safe only
// below groupBound's, and every other event is logged; a straggler that a commit sends
// below a held LP's event rolls it back once it is committed. An event taken for an LP
// another worker holds is set aside and put back after the take; an anti-message (or a
// lazy re-send behind it) for such an LP waits in the anti-message list until the LP is
// released (handleAntis).
//
// GVT: every worker reports to Fujimoto's rounds itself, under the lock and holding no
// batch (it commits its batch first), with the queue's calendar and waiting anti-messages
// as its queue. A held event was in the calendar when its taker reported, or was put there
// later by a worker whose tracker counts it, so Fujimoto's argument holds as for one
// shared queue. The commit horizon's keys need every worker's pushes into its own calendar
// in its report, which the engine does not track (its own calendar is its
// own), so a group fossil collects below GVT's time, as across processes.

// groupBatch is the number of events a worker of a group takes under its group's lock at
// once, and groupSafeBatch the number where the group commits events unlogged
// (queue.groupSafe). Larger batches hand the lock over less often, but set more
// events aside (their LPs are held): 128 is faster than 32 where nearly every event is
// safe (PHOLD), slower where none is (PCS) (docs/PERFORMANCE.md).
const (
	groupBatch     = 32
	groupSafeBatch = 128
)

// newLock returns a new lock of the given kind (LockType) for a queue's inbound or a
// shared queue: a mutex that polls before it parks while every worker can have a
// processor, one that parks at once where they outnumber GOMAXPROCS (see
// [spinlock.Mutex]). A group's worker holds its queue's lock for a whole batch's commit
// and take, some microseconds; a worker holds an inbound's for an append. On an idle
// machine the ticket lock and the mutex are alike; on a loaded one, or as the inbound
// lock with more workers than cores, the mutex is much faster: a FIFO hand-over waits for
// a waiter whose thread the operating system has descheduled (or, with more workers than
// GOMAXPROCS, whose goroutine is not running), while the mutex lets whoever runs take it.
// ([sync.Mutex] alone, which parks its waiter at once and wakes it at every hand-over, is
// slower than both as a shared queue's lock.) The figures: docs/PERFORMANCE.md.
func (d *timeWarpDispatcher) newLock(kind string) (sync.Locker, error) {
	if kind == spinlock.KindMutex {
		return spinlock.NewMutex(d.cfg.Workers <= runtime.GOMAXPROCS(0)), nil
	}
	return spinlock.New(kind)
}

// grouped reports whether workers share schedule queues (group.go).
func (d *timeWarpDispatcher) grouped() bool { return d.cfg.Schedulers < d.cfg.Workers }

// groupLoop is a worker goroutine of a group (see the comment at the top of group.go).
func (w *worker) groupLoop() {
	d, q := w.d, w.q
	locked := false
	defer func() {
		if locked { // a model panic while the lock was held (coast forward, Reverse)
			q.mu.Unlock()
		}
	}()
	for !d.done.Load() {
		w.mark(phaseIdle) // waiting for the lock counts as idle (engine sampling's time split)
		q.mu.Lock()
		w.mark(phaseProcess)
		locked = true
		committed := len(w.stage.held) > 0
		if committed {
			if !w.commitStaged() {
				locked = false
				q.mu.Unlock()
				d.fail(w.frame().Err)
				return
			}
			q.commits.Add(1) // members waiting on this batch's LPs or events may go on
		}
		w.seenCommits = q.commits.Load()
		g := w.housekeep()
		w.stage.take, w.stage.size = groupBatch, 0
		if q.groupSafe {
			w.stage.take = groupSafeBatch
		}
		if o := w.off; o != nil {
			o.tick(w)
			if w.stage.size = o.size(d); w.stage.size > w.stage.take {
				w.stage.take = w.stage.size
			}
		}
		if !w.takeGroup(g) {
			t, ok := q.pend.Min()
			lim := d.limit()
			w.mark(phaseIdle)
			w.goIdle(ok && t < d.end)
			locked = false
			q.mu.Unlock()
			if committed {
				q.wakeQueue()
			}
			w.idleTurn(ok && t < lim)
			w.mark(phaseProcess)
			continue
		}
		w.busy()
		if q.boxed {
			w.flushOutboxes()
		}
		locked = false
		q.mu.Unlock()
		if committed {
			q.wakeQueue()
		}
		w.handleStaged()
	}
}

// takeGroup takes the worker's next batch (under the group's lock): up to stage.take of
// the least pending events, as a host would take them, of LPs that no worker holds. An
// event of a held LP is set aside and put back afterwards; a straggler is rolled back
// (straggler) and ends the batch. It reports whether it took any.
func (w *worker) takeGroup(g Time) bool {
	d, q, st := w.d, w.q, &w.stage
	lim := d.limit()
	ordered := !q.groupSafe || d.lazy || w.takeBuckets(lim, g)
	for tries := 0; ordered && tries < 4*st.take && len(st.held) < st.take; tries++ {
		// tries, not len(st.held): after an event popped and dropped (cancelled) or set
		// aside, the calendar's least event is not the one housekeep's expireHeld saw,
		// so lazy cancellation's rule applies (nextTake) even before the first held one.
		ev, stop := w.nextTake(lim, g, tries)
		if stop {
			break
		}
		if ev == nil {
			continue // cancelled, and dropped
		}
		w.prefetchTake()
		id := ev.Receiver
		x := &d.lps[id]
		if x.held() || w.senderWaits(id) {
			st.aside = append(st.aside, *ev)
			continue
		}
		if w.admit(x, id, ev) {
			break // a straggler
		}
	}
	for i := range st.aside {
		q.pend.Push(&st.aside[i])
	}
	clear(st.aside)
	st.aside = st.aside[:0]
	if len(st.held) == 0 {
		return false
	}
	st.min = event.KeyOf(&st.held[0].ev)
	for i := 1; i < len(st.held); i++ { // a bulk take's batch is in no order
		if event.Before(&st.held[i].ev, &st.min) {
			st.min = event.KeyOf(&st.held[i].ev)
		}
	}
	if q.groupSafe {
		st.safe = w.groupBound()
	}
	return true
}

// admit adds ev, an event just taken for LP id (record x), which no worker holds, to the
// worker's batch; or, when it sorts before the LP's last logged event, rolls the LP back
// and puts ev back (straggler), and reports true: the take ends there.
func (w *worker) admit(x *lpState, id LPID, ev *event.Event) bool {
	if len(w.stage.held) == 0 {
		w.setIdle(false)
	}
	w.q.ahead++
	if event.Before(ev, &x.lastKey) {
		w.straggler(x, id, ev)
		return true
	}
	w.hold(x, ev)
	return false
}

// hold adds ev, an event taken for LP record x, to the worker's batch, and marks the LP held.
func (w *worker) hold(x *lpState, ev *event.Event) {
	st := &w.stage
	x.setHeld(true)
	// Not append(…, staged{ev: *ev}): that builds the element on the stack and copies it,
	// for every event taken. handleStaged sets the generators and sends.
	n := len(st.held)
	if n < cap(st.held) {
		st.held = st.held[:n+1]
	} else {
		st.held = append(st.held, staged{})
	}
	h := &st.held[n]
	h.ev = *ev
	h.from, h.to, h.oh = 0, 0, 0 // no sends, should handleStaged stop before it
}

// bucketMost is the most events of one calendar bucket that takeBuckets takes at once; a
// bucket with more (a model with many events at one time) is taken in order.
const bucketMost = 1024

// takeBuckets is takeGroup's take where the group commits unlogged and cancels
// aggressively: whole calendar buckets at a time, unsorted
// ([eventset.Calendar.TakeBucket]), as a batch is handled and committed out of key order
// anyway; the bucket sort that Pop's take costs is a large share of the group's time under
// its lock (docs/PERFORMANCE.md). Each event goes through what takeGroup checks event by
// event, the end (or window) and the ahead bound included (an event past them is put back),
// so the batch is what the ordered take could have taken, with one more rule: of an LP the
// batch holds only its least pending event, as the ordered take would (a later one is set
// aside). Without it a later event of an LP could be committed unlogged before an earlier
// one is processed. A bucket that holds two events of one LP is therefore sorted first
// (rare: seenBit finds it). A straggler ends the take, the rest of its bucket put back. It
// reports whether the calendar gave it nothing (TakeBucket declined: takeGroup then takes
// in order).
func (w *worker) takeBuckets(lim, g Time) bool {
	d, q, st := w.d, w.q, &w.stage
	for first := true; len(st.held) < st.take; first = false {
		until := lim // past the ahead bound, only events up to GVT (pastLimit)
		if w.aheadFull() {
			until = min(lim, g)
		}
		st.bulk, st.stamps = q.pend.TakeBucket(st.bulk[:0], st.stamps[:0], bucketMost, until)
		if len(st.bulk) == 0 {
			return first
		}
		if w.twice() {
			w.sortBulk()
		}
		stop := false
		for i := range st.bulk { // twice has read every LP record: no prefetching
			ev := &st.bulk[i]
			id := ev.Receiver
			x := &d.lps[id]
			// First: put back, a cancelled event would take a stamp after its
			// cancellation's (as in nextTake).
			if x.firstCancel() != 0 {
				if k := event.KeyOf(ev); q.dropCancelled(x, &k, st.stamps[i]) {
					continue
				}
			}
			if stop || w.pastLimit(ev.RecvTime, lim, g) || x.held() || w.senderWaits(id) {
				st.aside = append(st.aside, *ev)
				continue
			}
			stop = w.admit(x, id, ev)
		}
		if stop {
			return false
		}
	}
	return false
}

// twice reports whether the bulk just taken holds two events of one LP (seenBit marks the
// LPs as it goes, and is cleared again).
func (w *worker) twice() bool {
	d, st := w.d, &w.stage
	dup := false
	for i := range st.bulk {
		x := &d.lps[st.bulk[i].Receiver]
		if x.cancels&seenBit != 0 {
			dup = true
		}
		x.cancels |= seenBit
	}
	for i := range st.bulk {
		d.lps[st.bulk[i].Receiver].cancels &^= seenBit
	}
	return dup
}

// sortBulk sorts the bulk just taken, with its stamps, by key.
func (w *worker) sortBulk() {
	st := &w.stage
	idx := st.order[:0]
	for i := range st.bulk {
		idx = append(idx, int32(i))
	}
	slices.SortFunc(idx, func(a, b int32) int { return event.Compare(&st.bulk[a], &st.bulk[b]) })
	evs, stamps := st.sortEvs[:0], st.sortStamps[:0]
	for _, i := range idx {
		evs, stamps = append(evs, st.bulk[i]), append(stamps, st.stamps[i])
	}
	st.bulk, st.sortEvs = evs, st.bulk
	st.stamps, st.sortStamps = stamps, st.stamps
	st.order = idx
}

// prefetchTake asks the processor for what takeGroup touches next, so that the misses
// overlap the takes before: the calendar record of the event takeAhead places on, and the
// lpState record of the one half as far (its record asked for that many takes before). A
// miss costs several takes, and would be paid under the group's lock.
func (w *worker) prefetchTake() {
	q := w.q
	q.pend.cal.PrefetchUpcoming(takeAhead) // the hints: see pending
	if id, ok := q.pend.cal.Upcoming(takeAhead / 2); ok {
		prefetch.Line(unsafe.Pointer(&w.d.lps[id]))
	}
}

// takeAhead is how many events ahead of the take prefetchTake asks for calendar records.
const takeAhead = 8

// groupBound returns the safe bound of the batch the worker just took (under the group's
// lock): caused(m, lookahead), m the least key of every event of the group not committed
// yet, the batches held (the members' first events, taken in key order), the calendar's
// and the anti-message list's. Every event that arrives at the group's LPs from now on is
// caused by one of these, or by an event they cause, so it is at or above the bound; so
// is every rollback and anti-message. m never decreases, so neither do the bounds. An
// event of the batch below the bound is therefore committed unlogged when the batch is
// committed, as the engine commits one below its safe bound (process).
// Only where the group is the process's one queue (nothing arrives from other queues or
// processes), with reverse computation and a lookahead (q.groupSafe).
func (w *worker) groupBound() event.Key {
	q := w.q
	m := w.stage.min
	for _, o := range q.members {
		if event.KeyLess(&o.stage.min, &m) {
			m = o.stage.min
		}
	}
	if k, ok := q.pend.MinKey(); ok && event.KeyLess(&k, &m) {
		m = k
	}
	for i := range q.antis {
		if event.Before(&q.antis[i], &m) {
			m = event.KeyOf(&q.antis[i])
		}
	}
	if len(q.holding) > 0 && event.KeyLess(&q.heldMin, &m) {
		m = q.heldMin // lazy cancellation: held outputs may yet be cancelled
	}
	return caused(m, w.d.sim.Lookahead)
}

// waiting reports whether a group's anti-message list entry a must wait (handleAntis): its
// LP is held by a worker of the group, or an earlier entry for its LP waits.
func (w *worker) waiting(a *event.Event) bool {
	if w.d.lps[a.Receiver].held() {
		return true
	}
	for i := range w.stage.keep {
		if w.stage.keep[i].Receiver == a.Receiver {
			return true
		}
	}
	return false
}

// senderWaits reports whether an anti-message that LP id sent waits in the group's
// anti-message list (handleAntis). LP id's events are not taken meanwhile: processed, they
// could send a re-send of its twin's key, which would be pending when the anti-message is
// handled, and be cancelled in the twin's place (see cancelled); outside a group, an
// anti-message is handled before the next event.
func (w *worker) senderWaits(id LPID) bool {
	q := w.q
	for i := range q.antis {
		if q.antis[i].Sender == id && q.antis[i].Anti {
			return true
		}
	}
	return false
}

// antisMin lowers head to the least receive time among the entries of the anti-message
// list (a group's entries that wait for their LPs; GVT reports cover them).
func (q *queue) antisMin(head Time) Time {
	for i := range q.antis {
		head = math.Min(head, q.antis[i].RecvTime)
	}
	return head
}

// handleAntisGroup is handleAntis for a worker of a group: an entry whose LP another
// worker holds, and every later entry for that LP, stays in the list, in order, until the
// LP is released.
func (w *worker) handleAntisGroup() {
	q, st := w.q, &w.stage
	for i := 0; i < len(q.antis); i++ {
		a := q.antis[i]
		switch {
		case w.waiting(&a):
			st.keep = append(st.keep, a)
		case a.Anti:
			w.handleAnti(&a)
		default:
			q.pend.Push(&a) // a lazy re-send behind the anti-message of what it replaces
		}
	}
	clear(q.antis)
	q.antis = append(q.antis[:0], st.keep...)
	clear(st.keep)
	st.keep = st.keep[:0]
}
