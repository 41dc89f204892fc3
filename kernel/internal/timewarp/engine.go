package timewarp

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/ring"
	"github.com/warpedgo/warped/outputmgr"
	"github.com/warpedgo/warped/statemgr"
)

// The engine. LPs are partitioned among schedule queues (type queue). With one queue per
// worker (the default), an LP is only ever run by one worker, so the worker owns its
// events outright, the way the sequential dispatcher does:
//
//   - Each worker's pending events, of all its LPs, are in one schedule queue (pending,
//     an [ltsf.Events] of the kind QueueType names: by default a calendar queue,
//     [eventset.Calendar], of the events by value), taken least first. An event whose key
//     is below the key of its LP's last processed event is a straggler: the LP is rolled
//     back and the event put back, and the worker takes the least event again.
//   - What a worker processes goes to its own history log, appended in processing order:
//     the event by value, the index of the LP's previous entry (each LP's entries are
//     chained, newest first, for rollback), the range of its outputs in the worker's output
//     log, and, with reverse computation, its generator's draw count. Fossil collection
//     drops entries from the log's head while they are below the commit horizon (GVT, to
//     the key in one process: see horizon; with periodic state saving it keeps what coast
//     forward may need beside the log, see below), so both logs are written and read
//     sequentially; a log that reaches its bound is compacted (compact), since a
//     rollback can leave an entry above the horizon at its head.
//   - Events for another worker's LPs are buffered per destination and handed over every
//     flushEvents events, under the destination's inbound lock (LockType); a
//     worker drains its inbound before it takes an event, before it reports to a GVT round,
//     and when idle. Anti-messages for the worker's own LPs wait in a list handled before
//     the next event; an anti-message whose twin was processed rolls its LP back (dropping
//     the twin), and one whose twin is pending marks it cancelled, to be dropped when taken
//     (see cancelled, which says why it is not searched for in its calendar bucket).
//     Per-pair order keeps an anti-message behind its positive twin, and calendar stamps
//     tell the twin from a re-send with the same key that arrives after the anti-message.
//   - GVT is Fujimoto's algorithm (package gvt): a worker drains its inbound and
//     flushes its buffers before it reports, so an event in transit is covered either by its
//     sender's report (made since its last report) or by its receiver's queue.
//   - In a run in one process, each round also yields a commit horizon (see horizon): the
//     least key, not only time, of the events that are pending or handed over, so that fossil
//     collection commits the events at GVT's time that sort below it. A model with many
//     events at one time (PCS: thousands per integer time) otherwise keeps them all in the
//     logs until time moves on.
//
// With periodic state saving, every N-th event of an LP (N the period) keeps a copy of the
// LP's state after it in its log entry. A rollback restores the newest copy before the
// straggler and coasts forward over the LP's entries after it. Fossil collection never
// waits for an LP: when it drops an entry with a copy, that copy becomes the LP's base
// state (timeWarpDispatcher.base), and when it drops one without, whose LP has no newer
// copy before GVT's time, the event moves to the LP's spill list (timeWarpDispatcher.spill),
// from which a rollback that reaches back past the log coasts forward after restoring the
// base. So the log holds what lies above the horizon and no more, whatever the period.
//
// Lazy cancellation: a rollback holds the outputs of the undone events (but the twin's that
// an anti-message drops) in the LP's [outputmgr.Lazy] instead of sending their
// anti-messages (holdOutputs; the output log, an [outputmgr.Log], keeps each send's
// contents beside it for the comparison). A send while processing an event consumes an
// identical held output of the same cause (suppressed: the original is still live) or
// clashes with a held output of the same key and receiver (its anti-message goes first; a
// re-send to the worker's own LPs then waits behind it in antis, so that the calendar
// stamps tell the cancelled twin from it). A worker takes its events in key order, so a
// held output whose cause sorts below its least pending event will not be regenerated:
// before each event and each GVT report, expireHeld sends the anti-messages of those. Every
// other held output has its cause pending, at or below its receive time, so the GVT and
// safety reports cover its anti-message.
//
// CheckRollbacks keeps the digests of the LP's state and sends after each logged event in a
// ring beside the history log (queue.checks), and per LP the digest of the state
// before its oldest logged event and of its base saved state (rollbackCheck). A rollback checks
// the restored state, each coast-forward event and the state it ends in against them.
//
// Batched event handling (Offload): see processBatch in offload.go. Fewer schedule queues than
// workers: see group.go.

// lpState is the engine's per-LP record, owned by the LP's worker. It is kept
// to one cache line (64 bytes), since every event touches its LP's record; the LPs' base
// states and spill lists are beside, in timeWarpDispatcher.base and spill.
type lpState struct {
	// last is the absolute index, in the worker's history log, of the LP's newest
	// logged event still there (below the log's base: none), and lastKey the key of its
	// newest logged event (the zero key when none, which no event sorts below). Safe
	// events are not logged (see process).
	last    int64
	lastKey event.Key
	// Periodic state saving only: anchor is the absolute index of the LP's newest log
	// entry that holds a saved state (below the log's base: none, the base state is the
	// newest), and anchorTime its receive time; count is the number of events the LP
	// processed since that state.
	anchor     int64
	anchorTime Time
	count      uint32
	// cancels lists the LP's pending events that an anti-message cancelled and that still
	// wait in the calendar: 1 + the index of the first in its worker's queue.cancels,
	// or 0 for none, in its low 30 bits (firstCancel). Its top bit (heldBit) says whether
	// the LP has an event in a worker's batch (batched offload's, or a group's: held),
	// which the taking of an event checks: here, on the line the take reads anyway, rather
	// than in an array of flags of its own, whose lines the workers of a group would write
	// in turn, each take then missing on a line the other core wrote (docs/PERFORMANCE.md).
	// The next bit (seenBit) marks the LP while a group's bulk take looks for LPs it took
	// two events of (takeBuckets).
	cancels uint32
}

// heldBit and seenBit are the bits of lpState.cancels that say the LP is held, and seen by
// a bulk take (see lpState.cancels).
const (
	heldBit = 1 << 31
	seenBit = 1 << 30
)

// firstCancel returns 1 + the index of the first of the LP's cancelled events in its
// worker's queue.cancels, or 0 for none.
func (x *lpState) firstCancel() uint32 { return x.cancels &^ (heldBit | seenBit) }

// held reports whether the LP has an event in a worker's batch (processBatch's, or a
// group's: takeGroup), owned by that worker until the batch is committed. Read and
// written by the LP's worker, or in a group under its lock.
func (x *lpState) held() bool { return x.cancels&heldBit != 0 }

// setHeld marks the LP held or not (see held).
func (x *lpState) setHeld(h bool) {
	if h {
		x.cancels |= heldBit
	} else {
		x.cancels &^= heldBit
	}
}

// rollbackCheck is what CheckRollbacks keeps per LP in the engine, owned by the
// LP's worker: base[id] is the digest of LP id's state after its newest event that is not
// in the history log (committed or safe; after Init when none), saved[id] that of its base
// saved state (timeWarpDispatcher.base, periodic state saving), snap[id] its scratch
// snapshot. safeAt[id] is the absolute log index of the LP's newest logged entry when it
// last processed a safe event (reverse computation), or -1: a safe event after an entry
// that is still logged makes base, not that entry's digest, the state after it. The digests
// of the logged events are in queue.checks.
type rollbackCheck struct {
	base, saved []uint64
	safeAt      []int64
	snap        []any
}

// queue is a schedule queue with what the engine keeps beside it: its LPs' pending events,
// history and output logs, anti-message list and inbound. One worker owns it, or a group
// of workers shares it under mu (group.go).
type queue struct {
	// Owned by the worker:
	pend           pending             // its LPs' pending events (pending.go)
	hist           statemgr.History    // the events processed and not committed, and the pool of saved states
	outs           outputmgr.Log       // their sends (with their contents with lazy cancellation)
	checks         ring.Ring[twDigest] // CheckRollbacks only: beside hist, index for index
	holding        []LPID              // lazy cancellation: the LPs that may hold outputs
	heldMin        event.Key           // a key at or below the cause of every held output
	holdRefs       []holdRef           // rollback scratch (lazy cancellation)
	antiBuf        []event.Event       // expiry scratch (lazy cancellation)
	antis          []event.Event       // anti-messages for the worker's LPs (and lazy re-sends behind them), handled before the next event
	cancels        []cancelled         // pending events cancelled by their anti-messages, listed per LP (lpState.cancels)
	cancelFree     uint32              // 1 + the index of the first unused entry of cancels (chained by next), or 0
	outbox         [][]event.Event     // events for each other worker, handed over after each event
	boxed          bool                // some outbox holds events
	fossilKey      event.Key           // the commit horizon of the last fossil collection
	keyMin         event.Key           // least key this worker handed to another since its last report (horizon)
	handed         [2]event.Key        // keyMin at the worker's report in round handedRound[i] (i its parity)
	handedRound    [2]uint64
	safeBound      event.Key // an event that sorts below it is safe (see updateSafe)
	safeHigh       event.Key // the key of the last safe event processed
	horizonSeen    uint64    // the round of the last horizon read
	maxCommitted   Time      // the latest receive time among the committed events dropped
	undone, coasts []int64   // rollback scratch
	ahead          int       // events taken since a GVT round last ended (see aheadFirst)
	aheadMax       int       // the ahead bound (see aheadFirst)
	aheadMean      int       // mean events taken in a round that ended before the bound
	th             throttle  // the window beyond GVT (throttle.go)
	gvtMask        uint64    // events between the GVT rounds the worker starts (roundEvents), less 1
	roundsSeen     uint64    // GVT rounds ended when ahead was last reset
	compactedAt    uint64    // stats.processed at the last compaction (see compact)
	compactEvery   int       // events between compactions when more than the least (see compactShare)
	compactions    int       // number of compactions, for tests
	compactPeak    int       // the longest log compacted, for tests
	atGVT          int       // events committed at the horizon's time, for tests

	// mu guards the whole queue when a group of workers shares it (group.go), or is nil.
	mu sync.Locker
	// members are the workers of the group that shares the queue (group.go), or nil;
	// groupSafe is set where their batches may hold safe events (see groupBound).
	members   []*worker
	groupSafe bool
	// inMu guards in, the events other workers and the manager handed over; inN is its
	// length, read without the lock to skip it when empty.
	inMu sync.Locker
	in   []event.Event
	inN  atomic.Int32
	// changes is bumped after events are handed over to the queue (handOver,
	// flushOutboxes: after inN is stored, so that a worker that sees the bump sees them),
	// and after every change that all workers must see before their next
	// event (timeWarpDispatcher.changed: a GVT round started or ended, GVT set, a commit
	// horizon published, the run's end). A worker reads it before it looks at those
	// (housekeep), then takes events without looking again while it stays the same
	// (stretch): one word for what changes every few hundred events. Written by anyone,
	// atomically.
	changes atomic.Uint64
	spare   []event.Event // owned by the worker: the drained slice, for reuse
	// workers are the workers that run the queue (one, or a group's members), woken when
	// events are handed over to it (park.go); set before the run.
	workers []*worker
	// commits counts a group's commits (written under mu, read without it by members
	// deciding whether to park; see park.go).
	commits atomic.Uint64
	// work is set, when the worker goes idle, to whether it holds events below the end
	// time (the manager's passivity check across processes reads it).
	work atomic.Bool
}

// gvtEvents is the number of events a worker of the engine processes
// between GVT rounds it starts itself in a run in one process. The history log holds what
// lies between GVT and the workers' clocks, so frequent rounds keep it in the caches (a
// round costs each worker one report); with rounds thousands of events apart, writing the
// log misses the caches. Each round also refreshes the workers' safe bounds (updateSafe),
// so the more frequent the rounds, the more events are safe (committed unlogged); 256
// events measured faster than 512 and 2048 (docs/PERFORMANCE.md).
const gvtEvents = 256 // a power of two, as is slowGVTEvents

// slowGVTEvents is gvtEvents where there are no safe bounds: with periodic state
// saving, and across processes, where a round is a lap of Mattern's token (a worker asks
// rank 0's manager for one).
const slowGVTEvents = 2048

// crowdedGVTEvents is gvtEvents where the workers outnumber the processors (hosted,
// host.go). Whichever worker reaches its count first starts a round, so rounds come about
// every gvtEvents events of all workers together, whatever their number, and each round
// costs one report per worker: with 16 workers on 2 processors, a report every 20 events.
// Half as many rounds there measured up to 13% faster (medians of paired rounds, PHOLD and
// PCS, 3 to 16 workers on 2 cores: mostly +4 – 8%, one set of PCS with 16 workers -2%); a
// quarter as many lost the safe events that the rounds' bounds allow (docs/PERFORMANCE.md,
// "Session 31").
const crowdedGVTEvents = 2 * gvtEvents

// roundEvents returns the number of events between the GVT rounds a worker starts, with
// procs processors: gvtEvents, slowGVTEvents or crowdedGVTEvents.
func (d *timeWarpDispatcher) roundEvents(procs int) int {
	switch {
	case d.dist != nil || !d.reverse || d.grouped():
		return slowGVTEvents
	case d.cfg.Schedulers > procs:
		return crowdedGVTEvents
	}
	return gvtEvents
}

// The ahead bound: after taking aheadMax events without seeing a GVT round end, a worker
// takes only events at GVT until one does. A round needs every worker's report, so while
// the workers run side by side rounds end every few hundred or thousand events and the
// bound is not reached; when one is descheduled (a busy machine) or its rank is (more
// ranks than cores), the others would otherwise run on alone and lose most of that work to
// rollbacks, and their history logs would grow with it. The count restarts when a round
// ends, not when GVT advances: a model with many events at one time (PCS's times are
// integers) keeps GVT at that time for thousands of events while both workers run, and
// counting from its advances would keep PCS's workers waiting at the bound.
//
// The bound follows the rounds (queue.followRounds): aheadRounds times the running mean of
// the events the worker took in the rounds that ended before it reached the bound, within
// [aheadLeast, the history log's bound]. So it holds a worker to a few rounds' worth of its
// own pace, whatever that pace is: a few thousand events where rounds come every 256 (one
// process, reverse computation), more across processes, where a round is a lap of
// Mattern's token. It starts at aheadFirst. It can rise only through rounds that end
// below it, by at most aheadRounds times each time it settles. Four rounds' worth held PCS's
// two workers back on an idle machine (6% slower); eight are neutral there and keep most
// of the gain with more ranks than cores (docs/PERFORMANCE.md). Beside it, a window in virtual time that
// follows the worker's own rollbacks bounds how far beyond GVT it goes (throttle.go), and
// the log's bound bounds its memory (logMaxDefault).
const (
	aheadFirst  = 4096
	aheadRounds = 8
	aheadLeast  = 512
)

// logMaxDefault bounds a worker's run ahead of GVT by the length of its history log: with that
// many entries (processed events above GVT, and rolled-back ones not yet collected), it
// takes only events at GVT until fossil collection makes room. The ahead bound alone does
// not bound the log, because GVT may advance by little while the worker runs far ahead of
// it (the other worker starved of its core, as when test packages share the machine). It
// is never reached when the workers keep pace: the log then holds a fraction of it.
//
// Events at GVT are still taken at the bound, since they are what advances GVT. Fossil
// collection alone would then let the log grow: it drops only the log's head, and after a
// rollback the head may be an entry above GVT with committed and rolled-back entries behind
// it (as seen under CI's load). So a full log is compacted (compact) every
// logMaxDefault/compactShare events, which holds it to about logMaxDefault +
// logMaxDefault/compactShare entries: the ring stays at 16384 slots. Events at GVT itself
// are the exception: nothing at GVT can be dropped, so a model with many events at one time
// (PCS's times are integers) fills the log past the bound with them; compaction then backs
// off (see compactShare).
const logMaxDefault = 1<<14 - 1024

// compactShare sets how often a full history log is compacted: every logMaxDefault/compactShare
// events processed, an amortized cost of compactShare entry moves per event at most, paid
// only while the log is full. A compaction that drops less than a compactShare-th of the
// log doubles the interval before the next one (up to logMaxDefault events), so that a log
// full of entries that cannot be dropped yet (PCS's events at GVT) is not scanned again
// and again.
const compactShare = 16

// flushEvents is the number of events a worker of the engine takes between two
// hand-overs of the events it buffered for other workers (it also hands them over before
// it reports to a GVT round and when it goes idle). Each hand-over takes the destination's
// lock, whose cache line then crosses between cores; a batch delays an event by at most
// that many events of its sender, far less than the lookahead of typical models. Handing
// over every 32 events was faster than after every event; since the workers of one host
// hand over directly (beside), every 128 is faster again: PHOLD +5% with 2 workers and
// +4 – 5% with 16, the zero-lookahead PHOLD +4 – 8%, PCS unchanged (docs/PERFORMANCE.md,
// "Hand-overs every 128 events").
const flushEvents = 128

// histMin is the initial size of the CheckRollbacks digests beside the history log (a
// power of two, that of [statemgr.History]).
const histMin = 1024

// initQueues sets up the engine: sched[j] is the worker of LP d.local[j].
func (d *timeWarpDispatcher) initQueues(sched []int, lockType string) error {
	n := len(d.sim.LPs)
	d.owner = make([]int32, n)
	d.lps = make([]lpState, n)
	d.logMax = logMaxDefault
	if !d.reverse {
		d.period = uint32(d.cfg.StateSavingPeriod)
		d.base = make([]*statemgr.Saved, n)
		d.spill = make([][]event.Event, n)
	}
	if d.check {
		d.ck = rollbackCheck{base: make([]uint64, n), saved: make([]uint64, n), safeAt: make([]int64, n), snap: make([]any, n)}
		for i := range d.ck.safeAt {
			d.ck.safeAt[i] = -1
		}
	}
	if d.lazy {
		d.lazies, d.listed = make([]*outputmgr.Lazy, n), make([]bool, n)
	}
	for j, id := range d.local {
		d.owner[id] = int32(sched[j])
		d.lps[id].last, d.lps[id].anchor = -1, -1
		if d.lazy {
			d.lazies[id] = outputmgr.NewLazy()
		}
	}
	// Worker i runs queue i modulo their number, with the others of its group when there
	// are fewer queues than workers (group.go).
	d.queues = make([]*queue, d.cfg.Schedulers)
	gvtMask := uint64(d.roundEvents(runtime.GOMAXPROCS(0))) - 1
	for i := range d.queues {
		l, err := d.newLock(lockType)
		if err != nil {
			return err
		}
		q := &queue{inMu: l, outbox: make([][]event.Event, len(d.queues)), keyMin: maxKey(),
			heldMin: maxKey(), gvtMask: gvtMask, th: newThrottle(),
			aheadMax: aheadFirst, aheadMean: aheadFirst / aheadRounds}
		if err := q.pend.use(d.cfg.QueueType, n); err != nil {
			return err
		}
		if d.grouped() {
			if q.mu, err = d.newLock(lockType); err != nil {
				return err
			}
			q.safeBound = event.Key{RecvTime: math.Inf(-1)} // safe only below a batch's groupBound, at its commit (group.go)
			q.groupSafe = len(d.queues) == 1 && d.dist == nil && d.reverse && d.sim.Lookahead > 0 && !d.hooks
		}
		d.queues[i] = q
	}
	for _, w := range d.workers {
		switch { // with CheckRollbacks, worker.Send digests each send, then calls these
		case d.check:
		case d.lazy:
			w.frame().Out = (*lazySink)(w)
		default:
			w.frame().Out = (*sink)(w)
		}
		w.g = w.id % len(d.queues)
		w.q = d.queues[w.g]
		w.q.workers = append(w.q.workers, w)
		if d.grouped() {
			w.extra, w.grp = true, true
			w.q.members = append(w.q.members, w)
			w.stage.min = maxKey()
		}
		w.direct = !w.grp && !w.perEvent // see beside
	}
	if d.dist == nil && !d.grouped() {
		d.hz = newHorizon(len(d.workers))
	}
	return nil
}

// initEach runs the LPs' Init in parallel, each worker its own LPs (a model with many
// initial events, such as PCS, spends a noticeable part of the run there). Initial
// events for a worker's own LPs go into its calendar; those for another worker's LPs are
// handed over to its inbound and moved into its calendar once every worker is done.
func (d *timeWarpDispatcher) initEach(ctx context.Context) error {
	mine := make([][]LPID, len(d.queues))
	for _, id := range d.local {
		o := d.owner[id]
		mine[o] = append(mine[o], id)
	}
	errs := make([]error, len(d.queues))
	var wg sync.WaitGroup
	for i := range d.queues {
		w := d.workers[i] // the first worker of queue i
		wg.Go(func() { errs[i] = d.initSome(ctx, w, mine[i]) })
	}
	wg.Wait()
	for _, q := range d.queues {
		for i := range q.in {
			q.pend.Push(&q.in[i])
		}
		clear(q.in)
		q.in = q.in[:0]
		q.inN.Store(0)
	}
	for _, err := range errs {
		if err != nil {
			return err // the first worker's: one error, on one line
		}
	}
	return nil
}

// finalTime is the latest receive time among the events processed and not rolled back.
func (d *timeWarpDispatcher) finalTime() Time {
	var t Time
	for _, q := range d.queues {
		t = math.Max(t, math.Max(q.maxCommitted, q.safeHigh.RecvTime))
		for i := range q.hist.Len() {
			if h := q.hist.Nth(i); !h.Dead {
				t = math.Max(t, h.Ev.RecvTime)
			}
		}
	}
	return t
}

// localWork reports whether a worker of the engine holds events below the
// end time or has events handed over to it (for the manager's passivity check; every
// worker is passive when it is called).
func (d *timeWarpDispatcher) localWork() bool {
	for _, q := range d.queues {
		if q.inN.Load() > 0 || q.work.Load() {
			return true
		}
	}
	return false
}
