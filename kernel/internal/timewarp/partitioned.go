package timewarp

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/internal/prefetch"
	"github.com/warpedgo/warped/internal/ring"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/outputmgr"
	"github.com/warpedgo/warped/rng"
	"github.com/warpedgo/warped/spinlock"
	"github.com/warpedgo/warped/statemgr"
)

// The engine (QueueType "calendar").
//
// An earlier shared-queue engine kept, for every LP, an input heap, a history, an
// output queue and a state queue, and scheduled LPs (one entry each) in LTSF queues that
// any worker could take from. Between two events of one LP every other LP of the process
// was visited, so all of that per-LP memory was cold whenever it was touched: on PHOLD
// with 16384 LPs that was about 19 last-level cache misses per event, which bounded that
// engine to a fraction of the sequential dispatcher's speed (docs/PERFORMANCE.md).
//
// With one schedule queue per worker (the default), an LP is only ever run by one worker,
// so the engine can own its events outright, the way the sequential dispatcher does:
//
//   - Each worker's pending events, of all its LPs, are in one calendar queue
//     (eventset.Calendar) by value, taken least first. An event whose key is below the key
//     of its LP's last processed event is a straggler: the LP is rolled back and the event
//     put back, and the worker takes the least event again.
//   - What a worker processes goes to its own history log, appended in processing order:
//     the event by value, the index of the LP's previous entry (each LP's entries are
//     chained, newest first, for rollback), the range of its outputs in the worker's output
//     log, and, with reverse computation, its generator's draw count. Fossil collection
//     drops entries from the log's head while they are below the commit horizon (GVT, to
//     the key in one process: see horizon; with periodic state saving it keeps what coast
//     forward may need beside the log, see below), so both logs are written and read
//     sequentially; a log that reaches its bound is compacted (compactPart), since a
//     rollback can leave an entry above the horizon at its head.
//   - Events for another worker's LPs are buffered per destination and handed over every
//     flushEvents events, under the destination's inbound lock (LockType); a
//     worker drains its inbound before it takes an event, before it reports to a GVT round,
//     and when idle. Anti-messages for the worker's own LPs wait in a list handled before
//     the next event; an anti-message whose twin was processed rolls its LP back (dropping
//     the twin), and one whose twin is pending marks it cancelled, to be dropped when taken
//     (see cancelled; Calendar.Cancel, which searches the twin's bucket, cost PCS 6%).
//     Per-pair order keeps an anti-message behind its positive twin, and calendar stamps
//     tell the twin from a re-send with the same key that arrives after the anti-message.
//   - GVT is Fujimoto's algorithm as in the shared engine: a worker drains its inbound and
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
// an anti-message drops) in the LP's outputmgr.Lazy instead of sending their anti-messages
// (holdOutputs; the output log, an outputmgr.Log, keeps each send's contents beside it for
// the comparison). A send while processing an event consumes an identical held output of the
// same cause (suppressed: the original is still live) or clashes with a held output of the
// same key and receiver (its anti-message goes first; a re-send to the worker's own LPs then
// waits behind it in antis, so that the calendar stamps tell the cancelled twin from it). A
// worker takes its events in key order, so a held output whose cause sorts below its least
// pending event will not be regenerated: before each event and each GVT report, expireHeld
// sends the anti-messages of those. Every other held output has its cause pending, at or
// below its receive time, so the GVT and safety reports cover its anti-message.
//
// CheckRollbacks keeps the digests of the LP's state and sends after each logged event in a
// ring beside the history log (partWorker.checks), and per LP the digest of the state
// before its oldest logged event and of its base saved state (partCheck). A rollback checks
// the restored state, each coast-forward event and the state it ends in against them.
//
// Batched event handling (Offload): see batchPart in offload.go. Fewer schedule queues than
// workers: see group.go.

// holdRef locates an output that a rollback holds (lazy cancellation): the cause's entry
// and the output's absolute index in the output log.
type holdRef struct {
	entry, out int64
}

// partLP is the partitioned engine's per-LP record, owned by the LP's worker. It is kept
// to one cache line (64 bytes), since every event touches its LP's record; the LPs' base
// states and spill lists are beside, in timeWarpDispatcher.base and spill.
type partLP struct {
	// last is the absolute index, in the worker's history log, of the LP's newest
	// logged event still there (below the log's base: none), and lastKey the key of its
	// newest logged event (the zero key when none, which no event sorts below). Safe
	// events are not logged (see processPart).
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
	// wait in the calendar: 1 + the index of the first in its worker's partWorker.cancels,
	// or 0 for none, in its low 30 bits (firstCancel). Its top bit (heldBit) says whether
	// the LP has an event in a worker's batch (batched offload's, or a group's: held),
	// which the taking of an event checks: here, on the line the take reads anyway, rather
	// than in an array of flags of its own, whose lines the workers of a group wrote in
	// turn (10% of PHOLD's run with two workers on one queue went to those misses). The
	// next bit (seenBit) marks the LP while a group's bulk take looks for LPs it took two
	// events of (takeBuckets).
	cancels uint32
}

// heldBit and seenBit are the bits of partLP.cancels that say the LP is held, and seen by
// a bulk take (see partLP.cancels).
const (
	heldBit = 1 << 31
	seenBit = 1 << 30
)

// firstCancel returns 1 + the index of the first of the LP's cancelled events in its
// worker's partWorker.cancels, or 0 for none.
func (x *partLP) firstCancel() uint32 { return x.cancels &^ (heldBit | seenBit) }

// held reports whether the LP has an event in a worker's batch (batchPart's, or a
// group's: takeGroup), owned by that worker until the batch is committed. Read and
// written by the LP's worker, or in a group under its lock.
func (x *partLP) held() bool { return x.cancels&heldBit != 0 }

// setHeld marks the LP held or not (see held).
func (x *partLP) setHeld(h bool) {
	if h {
		x.cancels |= heldBit
	} else {
		x.cancels &^= heldBit
	}
}

// cancelled is a pending event cancelled by its anti-message, in its LP's list
// (partLP.cancels): its key, and the calendar's stamp when the anti-message came. The event stays in the calendar until it
// is taken, and is then dropped instead of processed. Removing it at once would mean
// searching its calendar bucket, which in a model with many events at one time holds
// thousands (PCS: 6% of a two-worker run went to those scans). Until it is taken it still
// counts as pending for GVT and the commit horizon, which is only conservative.
//
// The sender's re-execution often sends an event with the same key again (its sequence
// number was rewound), perhaps with other contents, and it may arrive before the cancelled
// one is taken: only an event pushed before the anti-message came (per-pair order puts
// its twin there) is the one cancelled, which the stamps tell.
type cancelled struct {
	k      event.Key
	before uint64 // Calendar.Stamp() when the anti-message came
	next   uint32 // 1 + the index of the LP's next entry (or the next unused one), or 0
}

// partCheck is what CheckRollbacks keeps per LP in the partitioned engine, owned by the
// LP's worker: base[id] is the digest of LP id's state after its newest event that is not
// in the history log (committed or safe; after Init when none), saved[id] that of its base
// saved state (timeWarpDispatcher.base, periodic state saving), snap[id] its scratch
// snapshot. safeAt[id] is the absolute log index of the LP's newest logged entry when it
// last processed a safe event (reverse computation), or -1: a safe event after an entry
// that is still logged makes base, not that entry's digest, the state after it. The digests
// of the logged events are in partWorker.checks.
type partCheck struct {
	base, saved []uint64
	safeAt      []int64
	snap        []any
}

// partWorker is a worker's own part of the partitioned engine.
type partWorker struct {
	// Owned by the worker:
	cal            eventset.Calendar
	hist           statemgr.History    // the events processed and not committed, and the pool of saved states
	outs           outputmgr.Log       // their sends (with their contents with lazy cancellation)
	checks         ring.Ring[twDigest] // CheckRollbacks only: beside hist, index for index
	holding        []LPID              // lazy cancellation: the LPs that may hold outputs
	heldMin        event.Key           // a key at or below the cause of every held output
	holdRefs       []holdRef           // rollback scratch (lazy cancellation)
	antiBuf        []event.Event       // expiry scratch (lazy cancellation)
	antis          []event.Event       // anti-messages for the worker's LPs (and lazy re-sends behind them), handled before the next event
	cancels        []cancelled         // pending events cancelled by their anti-messages, listed per LP (partLP.cancels)
	cancelFree     uint32              // 1 + the index of the first unused entry of cancels (chained by next), or 0
	outbox         [][]event.Event     // events for each other worker, handed over after each event
	boxed          bool                // some outbox holds events
	fossilKey      event.Key           // the commit horizon of the last fossil collection
	keyMin         event.Key           // least key this worker handed to another since its last report (horizon)
	handed         [2]event.Key        // keyMin at the worker's report in round handedRound[i] (i its parity)
	handedRound    [2]uint64
	safeBound      event.Key // an event that sorts below it is safe (see updateSafe)
	safeHigh       event.Key // the key of the last safe event processed
	wasSafe        bool      // the last event processed was safe
	horizonSeen    uint64    // the round of the last horizon read
	maxCommitted   Time      // the latest receive time among the committed events dropped
	undone, coasts []int64   // rollback scratch
	ahead          int       // events taken since a GVT round last ended (see partAheadEvents)
	idleTurns      int       // idle turns in a row (see idleSpin)
	gvtMask        uint64    // events between the GVT rounds the worker starts (partGVTEvents), less 1
	roundsSeen     uint64    // GVT rounds ended when ahead was last reset
	compactedAt    uint64    // stats.processed at the last compaction (see compactPart)
	compactEvery   int       // events between compactions when more than the least (see compactShare)
	compactions    int       // number of compactions, for tests
	compactPeak    int       // the longest log compacted, for tests
	atGVT          int       // events committed at the horizon's time, for tests

	// mu guards the whole part when a group of workers shares it (group.go), or is nil.
	mu sync.Locker
	// members are the workers of the group that shares the part (group.go), or nil;
	// groupSafe is set where their batches may hold safe events (see groupBound).
	members   []*worker
	groupSafe bool
	// inMu guards in, the events other workers and the manager handed over; inN is its
	// length, read without the lock to skip it when empty.
	inMu  sync.Locker
	in    []event.Event
	inN   atomic.Int32
	spare []event.Event // owned by the worker: the drained slice, for reuse
	// work is set, when the worker goes idle, to whether it holds events below the end
	// time (the manager's passivity check across processes reads it).
	work atomic.Bool
}

// horizon is the partitioned engine's commit horizon in a run in one process: with each GVT
// round, the workers report, beside the least time, the least key (event.KeyOf) of the
// events they hold or handed over since their last report, and the worker that completes
// the round publishes the least of those keys. Fujimoto's argument holds for keys as for
// times (an event's sends, its rollback's re-sends and anti-messages all sort after it), so
// no event that sorts below the horizon can ever arrive again: fossil collection commits
// every logged event below it, while GVT, a time, lets it commit only those before GVT's
// time. Across processes Mattern's token carries times, and the horizon is GVT's time.
//
// A round's reports go to slots of its parity, each worker's on a cache line of its own,
// and so does its result: round r+2, which reuses them, cannot end before every worker has
// reported in round r+1, after it read round r's result and wrote its report.
type horizon struct {
	reports [2][]paddedKey
	keys    [2]event.Key
	// safety[parity][w] is worker w's other report in the round: a key below every event
	// its LPs may yet send to another worker's (see partWorker.updateSafe); others[parity][w]
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

// partGVTEvents is the number of events a worker of the partitioned engine processes
// between GVT rounds it starts itself in a run in one process. The history log holds what
// lies between GVT and the workers' clocks, so frequent rounds keep it in the caches (a
// round costs each worker one report); 8192, the shared engine's, left a quarter of the
// run in cache misses writing the log. Each round also refreshes the workers' safe bounds
// (updateSafe): rounds every 2048 events left 13% of PHOLD's events safe, every 512 37%
// (without its lookahead), and every 256 events ran 3% faster than every 512.
const partGVTEvents = 256 // a power of two, as is partSlowGVTEvents

// partSlowGVTEvents is partGVTEvents where there are no safe bounds: with periodic state
// saving, and across processes, where a round is a lap of Mattern's token (a worker asks
// rank 0's manager for one).
const partSlowGVTEvents = 2048

// partAheadEvents bounds how far a worker runs ahead of the others: after taking that many
// events without seeing a GVT round end, it takes only events at GVT until one does. A
// round needs every worker's report, so while the workers run side by side rounds end
// every few thousand events and the bound is never reached; when one is descheduled (more
// goroutines than cores, or a busy machine), the others would otherwise run on alone and
// lose most of that work to rollbacks (measured: efficiency down to 39% and 1.5 GiB of
// history on PHOLD on a loaded 2-core machine). The count restarts when a round ends, not
// when GVT advances: a model with many events at one time (PCS's times are integers)
// keeps GVT at that time for thousands of events while both workers run, and counting
// from its advances left PCS's workers waiting 15% of the run.
// Across processes GVT rounds follow Mattern's token, once per GVT period, not the work
// done, so the bound caps each worker at that many events per round there; it is kept,
// because without it ranks that share cores run far ahead of each other: on mpirun -np 2
// on 2 cores, a bound of 32768 took PHOLD from 3.5 to 0.9 M events/s (58% efficiency,
// GVT rounds 40 ms apart as the managers lost their cores to the workers).
const partAheadEvents = 4096

// partLogMax bounds a worker's run ahead of GVT by the length of its history log: with that
// many entries (processed events above GVT, and rolled-back ones not yet collected), it
// takes only events at GVT until fossil collection makes room. partAheadEvents alone does
// not bound the log, because GVT may advance by little while the worker runs far ahead of
// it (the other worker starved of its core, as when test packages share the machine). It
// is never reached when the workers keep pace: PHOLD's log holds about 3000 entries on
// average.
//
// Events at GVT are still taken at the bound, since they are what advances GVT. Fossil
// collection alone would then let the log grow: it drops only the log's head, and after a
// rollback the head may be an entry above GVT with committed and rolled-back entries behind
// it (seen under CI's load: 65536 slots and a 57 MiB peak against 22 MiB). So a full log is
// compacted (compactPart) every partLogMax/compactShare events, which holds it to about
// partLogMax + partLogMax/compactShare entries: the ring stays at 16384 slots. Events at GVT
// itself are the exception: nothing at GVT can be dropped, so a model with many events at
// one time (PCS's times are integers) fills the log past the bound with them; compaction
// then backs off (see compactShare).
const partLogMax = 1<<14 - 1024

// compactShare sets how often a full history log is compacted: every partLogMax/compactShare
// events processed, an amortized cost of compactShare entry moves per event at most, paid
// only while the log is full. A compaction that drops less than a compactShare-th of the
// log doubles the interval before the next one (up to partLogMax events), so that a log
// full of entries that cannot be dropped yet is not scanned again and again (PCS: 5% of a
// run).
const compactShare = 16

// idleSpin is the number of idle turns in a row after which a worker of the partitioned
// engine gives its thread's core away (sched_yield) at each turn, besides runtime.Gosched.
// A worker waits mostly at the ahead bound (partAheadEvents), for a GVT round that needs
// another worker's report; on a loaded machine that worker's thread is often off its core,
// and spinning on Gosched keeps the core from it (55-60% of a loaded 2-worker run's CPU
// samples were in that spin). Yielding on every idle turn cost a model with short waits
// (the epidemic) 7%; after 64 turns, interleaved rounds under load measured 1.15 to 1.86
// times the rate without (docs/PERFORMANCE.md).
const idleSpin = 64

// flushEvents is the number of events a worker of the partitioned engine takes between two
// hand-overs of the events it buffered for other workers (it also hands them over before
// it reports to a GVT round and when it goes idle). Each hand-over takes the destination's
// lock, whose cache line then crosses between cores; a batch delays an event by a few dozen
// events of its sender, far less than the lookahead of typical models. Measured on PHOLD
// with 2 workers, medians of 7 interleaved runs: 3.79 M events/s handing over after every
// event, 4.39 every 32 events; 128 was no better than 32.
const flushEvents = 32

// histMin is the initial size of the CheckRollbacks digests beside the history log (a
// power of two, that of statemgr.History).
const histMin = 1024

// initPartitioned sets up the partitioned engine: sched[j] is the worker of LP d.local[j].
func (d *timeWarpDispatcher) initPartitioned(sched []int, lockType, groupLockType string) error {
	n := len(d.sim.LPs)
	d.owner = make([]int32, n)
	d.plp = make([]partLP, n)
	d.logMax = partLogMax
	if !d.reverse {
		d.period = uint32(d.cfg.StateSavingPeriod)
		d.base = make([]*statemgr.Saved, n)
		d.spill = make([][]event.Event, n)
	}
	if d.check {
		d.ck = partCheck{base: make([]uint64, n), saved: make([]uint64, n), safeAt: make([]int64, n), snap: make([]any, n)}
		for i := range d.ck.safeAt {
			d.ck.safeAt[i] = -1
		}
	}
	if d.lazy {
		d.plazy, d.listed = make([]*outputmgr.Lazy, n), make([]bool, n)
	}
	for j, id := range d.local {
		d.owner[id] = int32(sched[j])
		d.plp[id].last, d.plp[id].anchor = -1, -1
		if d.lazy {
			d.plazy[id] = outputmgr.NewLazy()
		}
	}
	// One part (calendar, logs, inbound) per schedule queue; worker i runs part i modulo
	// their number, with the others of its group when fewer parts than workers (group.go).
	d.parts = make([]*partWorker, d.cfg.Schedulers)
	for i := range d.parts {
		l, err := spinlock.New(lockType)
		if err != nil {
			return err
		}
		p := &partWorker{inMu: l, outbox: make([][]event.Event, len(d.parts)), keyMin: maxKey(),
			heldMin: maxKey(), gvtMask: partGVTEvents - 1}
		if d.dist != nil || !d.reverse || d.grouped() {
			p.gvtMask = partSlowGVTEvents - 1
		}
		if d.grouped() {
			if p.mu, err = d.newGroupLock(groupLockType); err != nil {
				return err
			}
			p.safeBound = event.Key{RecvTime: math.Inf(-1)} // safe only below a batch's groupBound, at its commit (group.go)
			p.groupSafe = len(d.parts) == 1 && d.dist == nil && d.reverse && d.sim.Lookahead > 0
		}
		d.parts[i] = p
	}
	for _, w := range d.workers {
		switch { // with CheckRollbacks, worker.send digests each send, then calls these
		case d.check:
		case d.lazy:
			w.frame().Out = (*lazySink)(w)
		default:
			w.frame().Out = (*partSink)(w)
		}
		w.g = w.id % len(d.parts)
		w.p = d.parts[w.g]
		if d.grouped() {
			w.extra, w.grp = true, true
			w.p.members = append(w.p.members, w)
			w.stage.min = maxKey()
		}
	}
	if d.dist == nil && !d.grouped() {
		d.hz = newHorizon(len(d.workers))
	}
	return nil
}

// initPart runs the LPs' Init in parallel, each worker its own LPs (a model with many
// initial events spends a noticeable part of the run there: a tenth of PCS's). Initial
// events for a worker's own LPs go into its calendar; those for another worker's LPs are
// handed over to its inbound and moved into its calendar once every worker is done.
func (d *timeWarpDispatcher) initPart() error {
	mine := make([][]LPID, len(d.parts))
	for _, id := range d.local {
		o := d.owner[id]
		mine[o] = append(mine[o], id)
	}
	errs := make([]error, len(d.parts))
	var wg sync.WaitGroup
	for i := range d.parts {
		w := d.workers[i] // the first worker of part i
		wg.Go(func() { errs[i] = d.initSome(w, mine[i]) })
	}
	wg.Wait()
	for _, p := range d.parts {
		for i := range p.in {
			p.cal.Push(&p.in[i])
		}
		clear(p.in)
		p.in = p.in[:0]
		p.inN.Store(0)
	}
	for _, err := range errs {
		if err != nil {
			return err // the first worker's: one error, on one line
		}
	}
	return nil
}

// housekeep does what a worker of the partitioned engine does before it takes events: it
// takes in what other workers handed over, handles anti-messages, settles held outputs,
// reports to a running GVT round, collects fossils below the commit horizon and compacts a
// full log. It returns GVT. (A worker of a group calls it under its group's lock.)
func (w *worker) housekeep() Time {
	d, p := w.d, w.p
	if p.inN.Load() > 0 {
		w.mark(phaseComm)
		w.drainInbound()
		w.mark(phaseProcess)
	}
	if len(p.antis) > 0 {
		w.mark(phaseComm)
		w.handleAntis()
		w.mark(phaseProcess)
	}
	if d.dist != nil && d.dist.Safe() != nil {
		w.remoteSafe() // remotesafe.go
	}
	if w.extra && d.lazy {
		w.settleHeld()
	}
	if r := d.gvt.Round(); w.tracker.Due(r) {
		w.mark(phaseGVT)
		w.reportPart(r)
		w.mark(phaseProcess)
	}
	g := d.gvt.GVT()
	if d.hz == nil {
		if g > p.fossilKey.RecvTime {
			w.mark(phaseGVT)
			w.fossilPart(event.Key{RecvTime: g}) // below every event at g
			w.mark(phaseProcess)
		}
	} else if r := d.hz.round.Load(); r != p.horizonSeen {
		// Every round publishes a horizon, which is at least its GVT; GVT may come from
		// a round whose horizon is not out yet.
		w.mark(phaseGVT)
		p.horizonSeen = r
		hk := d.hz.keys[r&1]
		if hk.RecvTime < g {
			hk = event.Key{RecvTime: g}
		}
		if event.KeyLess(&p.fossilKey, &hk) {
			w.fossilPart(hk)
		}
		if d.reverse {
			p.updateSafe(d.hz, r, w.id, d.sim.Lookahead)
		}
		w.mark(phaseProcess)
	}
	if r := d.gvt.Rounds(); r != p.roundsSeen {
		p.roundsSeen, p.ahead = r, 0
	}
	if p.hist.Len() >= d.logMax {
		every := max(p.compactEvery, d.logMax/compactShare)
		if n := w.stats.processed; n-p.compactedAt >= uint64(every) {
			w.mark(phaseGVT)
			p.compactedAt = n
			before := p.hist.Len()
			w.compactPart(p.fossilKey)
			if before-p.hist.Len() < before/compactShare {
				p.compactEvery = min(2*every, d.logMax)
			} else {
				p.compactEvery = 0
			}
			w.mark(phaseProcess)
		}
	}
	return g
}

// partLoop is a worker goroutine of the partitioned engine (a part of its own; a worker of
// a group runs groupLoop).
func (w *worker) partLoop() {
	d, p := w.d, w.p
	for !d.done.Load() {
		g := w.housekeep()
		t, ok := p.cal.Min()
		if !ok || w.pastLimit(t, d.limit(), g) {
			w.mark(phaseIdle)
			w.goIdle(ok && t < d.end)
			d.idleRound()
			if p.idleTurns++; d.dist != nil || p.idleTurns > idleSpin {
				// Across processes, ranks may share cores: give the core up to the
				// thread, perhaps this rank's manager, that brings the next GVT. In
				// one process, a worker that keeps waiting most likely waits for
				// another whose thread lost its core (see idleSpin).
				yieldThread()
			}
			runtime.Gosched()
			w.mark(phaseProcess)
			continue
		}
		p.idleTurns = 0
		w.setIdle(false)
		if o := w.off; w.extra && o != nil {
			o.tick(w)
			if size := o.size(d); size > 0 {
				if !w.batchPart(size, g) {
					return
				}
				if p.boxed {
					w.flushOutboxes()
				}
				continue
			}
		}
		// The calendar's own copy, valid until the next Pop: copying it out right after Pop
		// wrote it field by field stalled on store forwarding (1-2% of a run).
		ev := p.cal.Pop()
		p.ahead++
		w.prefetchPart()
		w.step(ev)
		if p.boxed && p.ahead%flushEvents == 0 {
			w.mark(phaseComm)
			w.flushOutboxes()
			w.mark(phaseProcess)
		}
		if w.frame().Err != nil {
			d.fail(w.frame().Err)
			return
		}
	}
}

// prefetchPart asks the processor for what the worker will touch after the event it just
// took, so that the cache misses overlap that event's handling: what prefetchNext asks for
// (the coming events' calendar records, LP records and model state), the partLP record of
// the LP whose records it asks for, and the history log slot the next entry goes to,
// unless the event before was safe (the next one most likely is too, and is not logged).
func (w *worker) prefetchPart() {
	d, p := w.d, w.p
	if id, ok := core.PrefetchNext(&p.cal, d.sim.LPs); ok {
		prefetch.Line(unsafe.Pointer(&d.plp[id]))
	}
	if h := p.hist.Spare(); h != nil && !p.wasSafe { // two lines (see statemgr.Entry)
		prefetch.Line(unsafe.Pointer(h))
		prefetch.Line(unsafe.Pointer(&h.Saved))
	}
}

// pastLimit reports whether an event at time t is past what the worker may take now: at
// or past lim (the end time, or the optimism window's limit), or past GVT g while the
// worker is ahead (aheadFull).
func (w *worker) pastLimit(t, lim, g Time) bool { return t >= lim || t > g && w.aheadFull() }

// aheadFull reports whether the worker has taken partAheadEvents since the last GVT
// round, or its history log is full: it then takes no event past GVT.
func (w *worker) aheadFull() bool {
	return w.p.ahead >= partAheadEvents || w.p.hist.Len() >= w.d.logMax
}

// goIdle hands over the buffered events and marks the worker idle; work says whether it
// holds events below the end time (beyond the optimism window).
func (w *worker) goIdle(work bool) {
	if w.p.boxed {
		w.flushOutboxes()
	}
	w.p.work.Store(work)
	w.setIdle(true)
}

// step processes ev, the least pending event of the worker, or, when it is a straggler,
// rolls its LP back and puts it back.
func (w *worker) step(ev *event.Event) {
	d := w.d
	id := ev.Receiver
	x := &d.plp[id]
	if x.firstCancel() != 0 {
		if k := event.KeyOf(ev); w.p.dropCancelled(x, &k, w.p.cal.PoppedStamp()) {
			return
		}
	}
	if event.Before(ev, &x.lastKey) {
		w.straggler(x, id, ev)
		return
	}
	w.processPart(x, id, ev)
}

// straggler rolls LP id (record x) back for ev, an event just taken that sorts before the
// LP's last logged one, and puts ev back.
func (w *worker) straggler(x *partLP, id LPID, ev *event.Event) {
	w.stats.primary++
	// The rollback puts events back and may send anti-messages to this worker's LPs:
	// those go first, then the least event is taken again. (When the rollback check
	// fails, the run ends.)
	w.partRollback(x, id, event.KeyOf(ev), false)
	w.p.cal.Push(ev)
}

// cancel records that the pending event with key k of LP record x was cancelled, as of
// calendar stamp before.
func (p *partWorker) cancel(x *partLP, k event.Key, before uint64) {
	var i uint32
	if p.cancelFree != 0 {
		i = p.cancelFree - 1
		p.cancelFree = p.cancels[i].next
	} else {
		i = uint32(len(p.cancels))
		if i+1 >= seenBit {
			panic("timewarp: more than 2^30 cancelled events wait at once")
		}
		p.cancels = append(p.cancels, cancelled{})
	}
	p.cancels[i] = cancelled{k: k, before: before, next: x.firstCancel()}
	x.cancels = x.cancels&(heldBit|seenBit) | (i + 1)
}

// dropCancelled reports whether the event with key k and calendar stamp stamp just taken
// for LP record x was cancelled by its anti-message, and forgets the cancellation if so.
// Several cancellations may name its key (the event was re-sent and cancelled again): its
// own is the earliest that came after it was pushed.
func (p *partWorker) dropCancelled(x *partLP, k *event.Key, stamp uint64) bool {
	var best, bestPrev, prev uint32 // 1-based; 0: none
	for i := x.firstCancel(); i != 0; i = p.cancels[i-1].next {
		c := &p.cancels[i-1]
		if c.k == *k && stamp <= c.before && (best == 0 || c.before < p.cancels[best-1].before) {
			best, bestPrev = i, prev
		}
		prev = i
	}
	if best == 0 {
		return false
	}
	next := p.cancels[best-1].next
	if bestPrev == 0 {
		x.cancels = x.cancels&(heldBit|seenBit) | next
	} else {
		p.cancels[bestPrev-1].next = next
	}
	p.cancels[best-1] = cancelled{next: p.cancelFree}
	p.cancelFree = best
	return true
}

// processPart runs the handler of event ev on LP id: a safe event is committed at once,
// any other logged (processLogged).
//
// While batchPart commits a batch, its element w.batchAt of w.batch (ev handled by the LP's
// batch kernel, see offload.go) takes the place of the model's Handle; everything else is
// the same.
func (w *worker) processPart(x *partLP, id LPID, ev *event.Event) {
	d, p := w.d, w.p
	r := &d.sim.LPs[id]
	f := w.frame() // not core.Enter, which costs PHOLD 2 instructions an event more
	f.Now, f.Depth, f.Self, f.LP = ev.RecvTime, ev.Depth, id, r
	if d.perSend {
		w.cause = event.KeyOf(ev) // lazy cancellation: the cause of the sends to come
		w.sendBytes = w.sendBytes[:0]
	}
	if event.Before(ev, &p.safeBound) {
		// Safe (reverse computation only: see updateSafe): committed as it is processed.
		// The LP's record is left as it was (its last and lastKey are of its last logged
		// event), which keeps its line clean; safeHigh stands for every safe event, as
		// nothing may arrive below it (drainInbound checks), and it is the latest safe
		// event, as they are taken in order (finalTimePart).
		w.unlogged = true
		if w.batch == nil { // see processLogged
			r.Model.Handle(&w.ctx, ev)
		} else {
			w.applyBatched(r, w.batch, w.batchAt)
		}
		w.unlogged = false
		p.safeHigh.Set(ev) // not KeyOf: see event.Key.Set
		w.stats.safe++
		p.wasSafe = true
		if d.check {
			d.ck.base[id], d.ck.safeAt[id] = w.stateDigest(&d.ck.snap[id], r), x.last
		}
	} else {
		w.processLogged(x, r, ev)
		p.wasSafe = false
	}
	if w.stats.processed++; w.stats.processed&p.gvtMask == 0 {
		w.roundDue()
	}
}

// processLogged runs the handler of event ev on LP record r (partLP x) and logs it.
func (w *worker) processLogged(x *partLP, r *core.LPRecord, ev *event.Event) {
	d, p := w.d, w.p
	d0 := r.RNG.D // the Weyl counter alone counts the draws (rng.Draws)
	outFrom := p.outs.Next()
	// The handler: the model's Handle, or, while batchPart commits a batch, the results of
	// the batch's element (see applyBatched). Written out, here and for a safe event in
	// processPart: as a function it was not inlined (17 instructions an event).
	if w.batch == nil {
		r.Model.Handle(&w.ctx, ev)
	} else {
		w.applyBatched(r, w.batch, w.batchAt)
	}
	// Field by field: a composite literal is built on the stack and then copied.
	h := p.hist.Push()
	h.Ev = *ev
	h.Prev, h.OutFrom, h.OutTo = x.last, outFrom, p.outs.Next()
	h.Saved, h.Dead = nil, false
	x.last = p.hist.Next() - 1
	x.lastKey.Set(ev) // not KeyOf: see event.Key.Set
	if d.reverse {
		h.Draws = rng.Draws(rng.XORWOW{D: d0}, rng.XORWOW{D: r.RNG.D})
	} else if x.count++; x.count >= d.period {
		x.count = 0
		h.Saved = p.save(r)
		x.anchor, x.anchorTime = x.last, ev.RecvTime
	}
	if d.check {
		*p.checks.Push(histMin) = w.eventDigest(&d.ck.snap[ev.Receiver], r)
	}
}

// roundDue starts the GVT round that processPart found due (every gvtMask+1 events).
func (w *worker) roundDue() {
	w.shown.Store(w.stats.processed)
	w.d.startGVT()
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
// With a lookahead L (see Lookahead), an event that a pending event at time t causes at
// another LP is at or after t+L, so the pending events' part of a safety report is the
// least key at time t+L, and so is that of an event this worker handed over at time t.
//
// The round's result may be read late: its last reporter publishes it after the round ended,
// and meanwhile the next round may start, and this worker report in it and in the round
// after (same parity as r), overwriting what it handed over before round r. It then skips
// round r (before reading its slots, which that later round reuses): its bound stays the
// one of an earlier round, which still holds (no event can arrive below a bound once it is
// one; lowerSafe has lowered it for this worker's own hand-overs since).
func (p *partWorker) updateSafe(h *horizon, r uint64, id int, la Time) {
	switch hr := p.handedRound[r&1]; {
	case hr > r:
		return
	case hr < r:
		panic(fmt.Sprintf("kernel: round %d ended without the report of worker %d", r, id))
	}
	b := h.others[r&1][id].k
	own := p.keyMin
	if event.KeyLess(&p.handed[r&1], &own) {
		own = p.handed[r&1]
	}
	if n := (r + 1) & 1; p.handedRound[n] == r+1 && event.KeyLess(&p.handed[n], &own) {
		own = p.handed[n]
	}
	own = caused(own, la)
	if event.KeyLess(&own, &b) {
		b = own
	}
	p.safeBound = b
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
func (p *partWorker) lowerSafe(e *event.Event, la Time) {
	if la > 0 {
		if t := e.RecvTime + la; t <= p.safeBound.RecvTime {
			p.safeBound = event.Key{RecvTime: t}
		}
	} else if event.Before(e, &p.safeBound) {
		p.safeBound.Set(e)
	}
}

// save returns a copy of the state of LP record r, reusing a discarded one.
func (p *partWorker) save(r *core.LPRecord) *statemgr.Saved {
	s := p.hist.NewSaved()
	s.Model = r.Model.Snapshot(s.Model)
	s.Core = coreOf(r)
	return s
}

// partSink is a worker of the partitioned engine as the sink of its Context (initPartitioned
// sets it): its send is the engine's, without worker.send's dispatch, a call that passed
// a send's eleven words of arguments on once more (30 instructions an event).
type partSink worker

// Send is the partitioned engine's sink (see worker.Send).
func (s *partSink) Send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	w := (*worker)(s)
	if w.coasting {
		return
	}
	d := w.d
	if !w.initSend {
		if !w.unlogged {
			o := w.p.outs.Push() // field by field: see processPart
			o.RecvTime, o.SendTime, o.Seq, o.Depth, o.Sender, o.Receiver = at, now, seq, depth, from, to
		}
		if to == from || int(d.owner[to]) == w.g && (d.dist == nil || d.dist.IsLocal(to)) {
			// The common case, into the worker's own calendar, without building the
			// event first (deliverPart's case for it). A send to self needs no lookup:
			// the owner table's line is cold more often than not (the load was 4% of a
			// PHOLD run, where three sends in four go to self).
			w.tracker.Made(at)
			w.p.cal.PushSend(at, now, seq, depth, from, to, ws, payload)
			return
		}
	}
	e := event.Event{RecvTime: at, SendTime: now, Seq: seq, Payload: payload, Words: ws,
		Depth: depth, Sender: from, Receiver: to}
	d.deliverPart(w, &e)
}

// logOut appends a send of the event being processed to the output log, as partSink's send
// does (written out there: it is not inlined).
func (p *partWorker) logOut(at, now Time, seq uint64, depth uint32, from, to LPID) {
	o := p.outs.Push()
	o.RecvTime, o.SendTime, o.Seq, o.Depth, o.Sender, o.Receiver = at, now, seq, depth, from, to
}

// lazySink is a worker of the partitioned engine as the sink of its Context with lazy
// cancellation (initPartitioned sets it; with CheckRollbacks, worker.send calls it): it
// keeps each logged send's contents beside its output log entry, and, when the sender holds
// outputs, sends the anti-messages of those the send clashes with and suppresses a send
// identical to a held one, before partSink's send.
type lazySink worker

// Send is the lazy cancellation's sink (see lazySink).
func (s *lazySink) Send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	w := (*worker)(s)
	if !w.coasting && !w.initSend {
		if !w.unlogged {
			od := w.p.outs.PushContents()
			od.Words, od.Payload = ws, payload
		}
		if w.d.plazy[from].Len() > 0 && w.lazyHandled(to, from, depth, seq, at, now, ws, payload) {
			if !w.unlogged { // logged as partSink's send would have
				w.p.logOut(at, now, seq, depth, from, to)
			}
			return
		}
	}
	(*partSink)(w).Send(to, from, depth, seq, at, now, ws, payload)
}

// lazyHandled takes lazy cancellation's decision on a send by an LP that holds outputs: it
// sends the anti-messages of the held outputs the send clashes with, and reports whether
// the send is taken care of: suppressed, or waiting behind those anti-messages.
func (w *worker) lazyHandled(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) bool {
	d := w.d
	e := event.Event{RecvTime: at, SendTime: now, Seq: seq, Payload: payload, Words: ws,
		Depth: depth, Sender: from, Receiver: to}
	suppress, clashed := w.regenerated(&e)
	if suppress {
		return true
	}
	if clashed && int(d.owner[to]) == w.g && (d.dist == nil || d.dist.IsLocal(to)) {
		// Behind the anti-messages of the held outputs it clashes with, which wait in
		// antis: pushed now, it would take an earlier calendar stamp than their
		// cancellations (see cancelled), and could be dropped in their place.
		w.tracker.Made(at)
		w.p.queue(&e)
		return true
	}
	return false
}

// regenerated is lazy cancellation's decision on event e, sent while processing the event
// with key w.cause by an LP that holds outputs: it sends the anti-messages of the held
// outputs that e clashes with (clashed), and reports whether e is to be suppressed (an
// identical held output of the same cause is still live at the receiver; see
// outputmgr.Lazy.Regenerated).
func (w *worker) regenerated(e *event.Event) (suppress, clashed bool) {
	w.cancels, suppress = w.d.plazy[e.Sender].Regenerated(w.cause, e, w.cancels[:0])
	clashed = len(w.cancels) > 0
	w.sendAntisPart(w.cancels)
	if suppress {
		w.stats.suppressed++
	}
	return suppress, clashed
}

// sendAntisPart sends the anti-message of each event of es (copies of positive events as
// they were sent) and clears es.
func (w *worker) sendAntisPart(es []event.Event) {
	for j := range es {
		es[j].Anti, es[j].Payload = true, nil
		w.stats.antiSent++
		w.d.deliverPart(w, &es[j])
		es[j] = event.Event{}
	}
}

// deliverPart makes event e (copied) visible to its receiver's worker: into the calendar
// before the run, or for the sender's own LPs (anti-messages into the list handled before
// the next event); into the outbox for another worker's LPs (the manager, which has no
// outbox, hands over at once); to the manager for another process's LPs.
func (d *timeWarpDispatcher) deliverPart(w *worker, e *event.Event) {
	w.tracker.Made(e.RecvTime)
	if d.dist != nil && !d.dist.IsLocal(e.Receiver) {
		pe := w.pool.Get()
		*pe = *e
		d.dist.Post(pe)
		return
	}
	// The receiver's worker by index: reading its record would miss the cache, as its
	// owner writes the line on every event.
	o := int(d.owner[e.Receiver])
	switch {
	case w.p == nil: // the manager
		d.parts[o].handOver(e)
	case o == w.g && w.initSend:
		w.p.cal.Push(e)
	case w.initSend:
		d.parts[o].handOver(e) // initPart runs the parts' Inits in parallel
	case o == w.g:
		if e.Anti {
			w.p.queue(e)
		} else {
			w.p.cal.Push(e)
		}
	default:
		w.p.outbox[o] = append(w.p.outbox[o], *e)
		w.p.boxed = true
		if event.Before(e, &w.p.keyMin) { // see horizon
			w.p.keyMin.Set(e)
		}
		w.p.lowerSafe(e, d.sim.Lookahead)
	}
}

// handOver appends e to the worker's inbound.
func (p *partWorker) handOver(e *event.Event) {
	p.inMu.Lock()
	p.in = append(p.in, *e)
	p.inN.Store(int32(len(p.in)))
	p.inMu.Unlock()
}

// flushOutboxes hands every buffered event over to its worker.
func (w *worker) flushOutboxes() {
	p := w.p
	for i, box := range p.outbox {
		if len(box) == 0 {
			continue
		}
		o := w.d.parts[i]
		o.inMu.Lock()
		o.in = append(o.in, box...)
		o.inN.Store(int32(len(o.in)))
		o.inMu.Unlock()
		clear(box)
		p.outbox[i] = box[:0]
	}
	p.boxed = false
}

// drainInbound takes the events handed over to the worker: positive events into the
// calendar, anti-messages handled at once, in arrival order. The worker becomes active
// under the inbound lock when there is anything, so that a manager checking for passivity
// cannot miss work in the hands of a worker it counted as passive.
func (w *worker) drainInbound() {
	p := w.p
	p.inMu.Lock()
	in := p.in
	if len(in) > 0 {
		// Active before inN reads 0: the manager's passivity check reads inN without the
		// lock, then the wake count (see distributed.passive); the other order let it see
		// neither the events nor the wake, and end the run while they were in hand.
		w.setIdle(false)
	}
	p.in = p.spare[:0]
	p.inN.Store(0)
	p.inMu.Unlock()
	for i := range in {
		if committed(&in[i], &p.fossilKey) || event.Before(&in[i], &p.safeHigh) {
			// The horizon or the safe bound was not a lower bound: a protocol bug, which
			// the tests would catch.
			panic(fmt.Sprintf("kernel: event %+v arrived below the commit horizon %+v or a safe event %+v",
				in[i], p.fossilKey, p.safeHigh))
		}
		switch {
		case w.grp && (in[i].Anti || len(p.antis) > 0):
			// Through the anti-message list, in order: its LP may be held by another
			// worker of the group (see handleAntis).
			p.queue(&in[i])
		case in[i].Anti:
			w.handleAnti(&in[i])
		default:
			p.cal.Push(&in[i])
		}
	}
	clear(in)
	p.spare = in[:0]
}

// handleAntis handles the anti-messages for the worker's own LPs, including those that
// handling them sends.
func (w *worker) handleAntis() {
	p := w.p
	if w.grp {
		w.handleAntisGroup()
		return
	}
	for i := 0; i < len(p.antis); i++ {
		a := p.antis[i]
		if a.Anti {
			w.handleAnti(&a)
		} else {
			p.cal.Push(&a) // a lazy re-send behind the anti-message of what it replaces
		}
	}
	clear(p.antis)
	p.antis = p.antis[:0]
}

// queue appends e to the anti-message list (antis).
func (p *partWorker) queue(e *event.Event) { p.antis = append(p.antis, *e) }

// handleAnti handles anti-message a for one of the worker's LPs: when its twin was
// processed, the LP rolls back to the twin, which is dropped; otherwise the twin is
// pending, and is cancelled.
func (w *worker) handleAnti(a *event.Event) {
	p := w.p
	id := a.Receiver
	x := &w.d.plp[id]
	twin := twinKey(event.KeyOf(a))
	if !event.KeyLess(&x.lastKey, &twin) {
		for i := x.last; p.hist.Holds(i); {
			h := p.hist.At(i)
			hk := event.KeyOf(&h.Ev)
			if event.KeyLess(&hk, &twin) {
				break
			}
			if hk == twin {
				w.stats.secondary++
				w.partRollback(x, id, twin, true) // false: the run failed, and ends
				return
			}
			i = h.Prev
		}
	}
	// The twin is pending: it is dropped when taken (see cancelled). Per-pair order puts
	// it ahead of its anti-message, so it is in the calendar already.
	if !event.KeyLess(&p.safeHigh, &twin) {
		panic(fmt.Sprintf("kernel: an anti-message for LP %d came for %+v, at or below a safe event %+v", id, twin, p.safeHigh))
	}
	p.cancel(x, twin, p.cal.Stamp())
	w.stats.annihil++
}

// partRollback undoes every processed event of LP id (record x) with key >= k: reverses
// them (reverse computation) or restores the latest saved state before k and coasts
// forward, puts them back into the calendar (dropping the one with key k when dropTwin: the
// twin of an anti-message), and cancels their outputs: sends their anti-messages, or, with
// lazy cancellation, holds them (see holdOutputs) but for the dropped twin's. It returns
// false when CheckRollbacks found the restored or re-executed state different and failed
// the run.
func (w *worker) partRollback(x *partLP, id LPID, k event.Key, dropTwin bool) bool {
	d, p := w.d, w.p
	if event.KeyLess(&k, &p.fossilKey) || !event.KeyLess(&p.safeHigh, &k) {
		panic(fmt.Sprintf("kernel: LP %d rolls back to %+v, below the commit horizon %+v or a safe event %+v",
			id, k, p.fossilKey, p.safeHigh))
	}
	r := &d.sim.LPs[id]
	d.sim.UndoSeries(id, &k) // core's series.go
	u := p.undone[:0]
	i := x.last
	for p.hist.Holds(i) {
		h := p.hist.At(i)
		hk := event.KeyOf(&h.Ev)
		if event.KeyLess(&hk, &k) {
			break
		}
		u = append(u, i)
		i = h.Prev
	}
	p.undone = u
	if d.reverse {
		rev := r.Model.(core.Reverser)
		for _, j := range u { // newest first
			h := p.hist.At(j)
			core.Enter(&w.ctx, h.Ev.RecvTime, h.Ev.Depth, id, r)
			reverseEvent(&w.ctx, rev, &h.Ev, twUndo{draws: h.Draws, seq: r.Seq - uint64(h.OutTo-h.OutFrom)})
		}
	}
	held := false
	for _, j := range u {
		h := p.hist.At(j)
		h.Dead = true
		if h.Saved != nil {
			p.hist.Free(h.Saved)
			h.Saved = nil
		}
		w.stats.rolledBack++
		twin := dropTwin && event.KeyOf(&h.Ev) == k
		if twin {
			w.stats.annihil++
		} else {
			p.cal.Push(&h.Ev)
			w.tracker.Made(h.Ev.RecvTime)
		}
		if d.lazy && !twin {
			held = held || h.OutTo > h.OutFrom
		} else {
			for o := h.OutFrom; o < h.OutTo; o++ {
				anti := p.outs.At(o).Anti()
				w.stats.antiSent++
				d.deliverPart(w, &anti)
			}
		}
		h.Ev.Payload = nil
	}
	if held {
		w.holdOutputs(id, k, u, dropTwin)
	}
	x.last, x.lastKey = i, event.Key{}
	if p.hist.Holds(i) {
		x.lastKey = event.KeyOf(&p.hist.At(i).Ev)
	}
	if d.reverse {
		if d.check && !w.checkRestored(id, r, i) {
			d.fail(d.reverseError(id, k))
			return false
		}
		return true
	}
	// Restore the newest saved state before k: from the LP's newest remaining entry that
	// holds one, else the base state; then coast forward, oldest first and without
	// sending, over the LP's events after it (after the base: its spill list first).
	c := p.coasts[:0]
	var from *statemgr.Saved
	j := i
	for p.hist.Holds(j) {
		h := p.hist.At(j)
		if h.Saved != nil {
			from = h.Saved
			break
		}
		c = append(c, j)
		j = h.Prev
	}
	p.coasts = c
	fromBase := from == nil
	if fromBase {
		from = d.base[id]
		x.anchor = -1
	} else {
		x.anchor, x.anchorTime = j, p.hist.At(j).Ev.RecvTime
	}
	r.Model.Restore(from.Model)
	setCore(r, from.Core)
	if d.check {
		want, at := d.ck.saved[id], "its newest committed saved state"
		if !fromBase {
			want = p.checks.At(int(j - p.hist.Base())).state
			e := &p.hist.At(j).Ev
			at = fmt.Sprintf("the state saved after its event at time %v (from LP %d, sequence %d)",
				e.RecvTime, e.Sender, e.Seq)
		}
		if w.stateDigest(&d.ck.snap[id], r) != want {
			d.fail(d.restoreErrorAt(id, at))
			return false
		}
	}
	x.count = 0
	w.coasting = true
	defer func() { w.coasting = false }()
	if fromBase {
		sp := d.spill[id]
		for n := range sp {
			w.coast(x, id, r, &sp[n])
		}
	}
	for n := len(c) - 1; n >= 0; n-- {
		e := &p.hist.At(c[n]).Ev
		w.sendBytes = w.sendBytes[:0]
		w.coast(x, id, r, e)
		if d.check && w.eventDigest(&d.ck.snap[id], r) != *p.checks.At(int(c[n] - p.hist.Base())) {
			d.fail(d.reexecError(id, e))
			return false
		}
	}
	if d.check && len(c) == 0 && !w.checkRestored(id, r, i) {
		d.fail(d.restoreErrorAt(id, "its newest committed saved state and re-executing the committed events after it"))
		return false
	}
	return true
}

// checkRestored reports whether LP id (record r) is in the state recorded after its log
// entry i, or, when i is below the log, after its newest event no longer logged
// (CheckRollbacks).
func (w *worker) checkRestored(id LPID, r *core.LPRecord, i int64) bool {
	d, p := w.d, w.p
	want := d.ck.base[id]
	if p.hist.Holds(i) && d.ck.safeAt[id] < i {
		want = p.checks.At(int(i - p.hist.Base())).state
	}
	return w.stateDigest(&d.ck.snap[id], r) == want
}

// holdOutputs is lazy cancellation's part of a rollback of LP id to key k: it holds the
// outputs of the undone log entries u (newest first; but the dropped twin's, when dropTwin,
// whose anti-messages went out) in the LP's holder, in cause order, and lists the LP as
// holding. Each held output's cause is then pending in the worker's calendar; expireHeld
// cancels it once that is no longer so and it was not regenerated.
func (w *worker) holdOutputs(id LPID, k event.Key, u []int64, dropTwin bool) {
	d, p := w.d, w.p
	refs := p.holdRefs[:0]
	for n := len(u) - 1; n >= 0; n-- {
		h := p.hist.At(u[n])
		if dropTwin && event.KeyOf(&h.Ev) == k {
			continue
		}
		for o := h.OutFrom; o < h.OutTo; o++ {
			refs = append(refs, holdRef{entry: u[n], out: o})
		}
	}
	p.holdRefs = refs
	var ev event.Event
	d.plazy[id].Hold(len(refs), func(j int) (event.Key, *event.Event) {
		ref := refs[j]
		ev = p.outs.Event(ref.out)
		return event.KeyOf(&p.hist.At(ref.entry).Ev), &ev
	})
	if !d.listed[id] {
		d.listed[id] = true
		p.holding = append(p.holding, id)
	}
	if event.KeyLess(&k, &p.heldMin) {
		p.heldMin = k
	}
}

// settleHeld expires the held outputs whose causes are no longer pending (expireHeld) and
// handles the anti-messages that this sends to the worker's own LPs, until none is left.
func (w *worker) settleHeld() {
	for {
		n := len(w.p.antis) // entries of a group's list that wait for their LPs (handleAntis)
		w.expireHeld()
		if len(w.p.antis) == n {
			return
		}
		w.handleAntis()
	}
}

// expireHeld cancels the held outputs (lazy cancellation) whose cause sorts below every
// pending event of the worker, or all of them when nothing is pending: the worker takes its
// events in key order, so such a cause was processed again without regenerating them, or
// was cancelled, and will not be processed before a rollback puts it back. Every other held
// output has its cause pending, at or below its receive time, so the worker's GVT and safety
// reports cover its anti-message; the worker calls expireHeld before it reports.
func (w *worker) expireHeld() {
	d, p := w.d, w.p
	if len(p.holding) == 0 {
		return
	}
	mk, ok := p.cal.MinKey()
	if ok && !event.KeyLess(&p.heldMin, &mk) {
		return
	}
	p.heldMin = maxKey()
	kept := p.holding[:0]
	for _, id := range p.holding {
		lz := d.plazy[id]
		if w.grp && d.plp[id].held() {
			// Another worker of the group may be handling the cause: its commit decides
			// (expired now, a regenerated send with other contents could overtake the
			// anti-message, which waits for its receiver: see senderWaits).
			kept = append(kept, id)
			if c, live := lz.Oldest(); live && event.KeyLess(&c, &p.heldMin) {
				p.heldMin = c
			}
			continue
		}
		if ok {
			p.antiBuf = lz.Expire(mk, p.antiBuf[:0])
		} else {
			p.antiBuf = lz.Drain(p.antiBuf[:0])
		}
		w.sendAntisPart(p.antiBuf)
		if c, live := lz.Oldest(); live {
			kept = append(kept, id)
			if event.KeyLess(&c, &p.heldMin) {
				p.heldMin = c
			}
		} else {
			d.listed[id] = false
		}
	}
	clear(p.holding[len(kept):])
	p.holding = kept
}

// coast re-executes event ev of LP id (record x, LP record r) during coast forward. It
// saves no state: the events coast forward re-executes are fewer than the period since the
// state it started from, so the next save comes with the next event processed anew.
func (w *worker) coast(x *partLP, id LPID, r *core.LPRecord, ev *event.Event) {
	core.Enter(&w.ctx, ev.RecvTime, ev.Depth, id, r)
	r.Model.Handle(&w.ctx, ev)
	x.count++
	w.stats.coastForward++
}

// reportPart reports to running GVT round r, which the worker has not reported in yet: it hands over its
// buffered events and takes in what was handed to it first (see the package comment).
func (w *worker) reportPart(r uint64) {
	d, p := w.d, w.p
	if p.inN.Load() > 0 {
		w.drainInbound()
	}
	if len(p.antis) > 0 {
		w.handleAntis()
	}
	if d.lazy {
		w.settleHeld()
	}
	// Last, as the rollbacks of what came in may have sent anti-messages to other workers:
	// everything this worker made visible since its last report is then either in the
	// report (handed over, counted in the tracker and keyMin) or in its own calendar.
	if p.boxed {
		w.flushOutboxes()
	}
	head := math.Inf(1)
	if d.hz == nil {
		if t, ok := p.cal.Min(); ok {
			head = t
		}
		if len(p.antis) > 0 { // a group's entries that wait for their LPs
			head = p.antisMin(head)
		}
	} else {
		k := maxKey()
		if mk, ok := p.cal.MinKey(); ok {
			head, k = mk.RecvTime, mk
		}
		s := caused(k, d.sim.Lookahead) // the safety report: see updateSafe
		if event.KeyLess(&p.keyMin, &k) {
			k = p.keyMin
		}
		if event.KeyLess(&p.keyMin, &s) {
			s = p.keyMin
		}
		d.hz.reports[r&1][w.id].k = k
		d.hz.safety[r&1][w.id].k = s
		p.handed[r&1], p.handedRound[r&1] = p.keyMin, r
		p.keyMin = maxKey()
	}
	if w.cell != nil {
		w.publish() // engine sampling (sample.go)
	}
	g, ok := d.gvt.Report(r, w.tracker.Take(r, head))
	if ok && d.hz != nil {
		d.hz.publish(r)
	}
	if ok && g >= d.end && d.dist == nil {
		d.done.Store(true)
	}
}

// fossilPart drops the history log's head below the commit horizon hk (see horizon; GVT's
// time across processes), rolled-back entries and committed ones alike (see commitPart),
// with their outputs.
func (w *worker) fossilPart(hk event.Key) {
	p := w.p
	p.fossilKey = hk
	n, outTo := 0, p.outs.Base()
	for n < p.hist.Len() {
		h := p.hist.Nth(n)
		if !h.Dead {
			if !committed(&h.Ev, &hk) {
				break
			}
			if !w.d.reverse {
				w.prefetchCommit(n)
			}
			if h.Ev.RecvTime == hk.RecvTime {
				p.atGVT++
			}
			w.commitPart(h, p.hist.Base()+int64(n), hk.RecvTime)
		}
		outTo = h.OutTo
		n++
	}
	if n == 0 {
		return
	}
	p.hist.DropFront(n)
	if w.d.check {
		p.checks.DropFront(n)
	}
	p.outs.DropTo(outTo)
}

// committed reports whether event e sorts below the commit horizon hk.
func committed(e *event.Event, hk *event.Key) bool { return event.Before(e, hk) }

// prefetchCommit asks, while fossil collection commits log entry n, for what committing
// the entries after it will touch with periodic state saving (their LPs' records and spill
// lists are at random), in two stages: the LP records of entry n+8, and the spill slot of
// entry n+4 (whose list header the stage before asked for).
func (w *worker) prefetchCommit(n int) {
	d, p := w.d, w.p
	if n+8 < p.hist.Len() {
		id := p.hist.Nth(n + 8).Ev.Receiver
		prefetch.Line(unsafe.Pointer(&d.spill[id]))
		prefetch.Line(unsafe.Pointer(&d.plp[id]))
	}
	if n+4 < p.hist.Len() {
		sp := d.spill[p.hist.Nth(n+4).Ev.Receiver]
		if len(sp) < cap(sp) {
			prefetch.Line(unsafe.Pointer(&sp[:len(sp)+1][len(sp)]))
		}
	}
}

// commitPart does what dropping history entry h (absolute index i), a committed event
// below the commit horizon at time g, requires: with periodic state saving, its saved state
// becomes its LP's base state, or its event moves to the LP's spill list when a rollback
// could still need it for coast forward (the LP has no newer saved state before g; a newer
// one at g may be committed too, and then replaces the spill as it is dropped). An LP's
// entries are dropped oldest first.
func (w *worker) commitPart(h *statemgr.Entry, i int64, g Time) {
	d, p := w.d, w.p
	if d.check {
		if id := h.Ev.Receiver; d.ck.safeAt[id] < i {
			d.ck.base[id] = p.checks.At(int(i - p.hist.Base())).state
			if h.Saved != nil {
				d.ck.saved[id] = d.ck.base[id]
			}
		}
	}
	if !d.reverse {
		id := h.Ev.Receiver
		switch {
		case h.Saved != nil:
			if old := d.base[id]; old != nil {
				p.hist.Free(old)
			}
			d.base[id], h.Saved = h.Saved, nil
			clear(d.spill[id])
			d.spill[id] = d.spill[id][:0]
		case !(d.plp[id].anchor > i && d.plp[id].anchorTime < g):
			d.spill[id] = append(d.spill[id], h.Ev)
		}
	}
	if h.Ev.RecvTime > p.maxCommitted { // times are never NaN: no need for math.Max
		p.maxCommitted = h.Ev.RecvTime
	}
	if h.Ev.Payload != nil { // a store to every entry would dirty its line again
		h.Ev.Payload = nil
	}
}

// compactPart drops from anywhere in the history log what fossil collection drops from its
// head only: rolled-back entries and committed ones (below the commit horizon hk, as of the
// last fossil collection), with their outputs (statemgr.History.Compact and
// outputmgr.Log.Keep do the moving and renumbering): an index that still refers to a
// dropped entry (an LP's last or anchor entry, committed) is then below the log's base,
// which every walk along an LP's entries reads as none, as it does after fossil collection. An LP's
// committed entries all precede its entries above the horizon in the log, so they are
// dropped oldest first, as commitPart requires.
func (w *worker) compactPart(hk event.Key) {
	d, p := w.d, w.p
	n := p.hist.Len()
	oldBase, newBase := p.hist.Base(), p.hist.Next()
	p.compactions++
	p.compactPeak = max(p.compactPeak, n)
	p.outs.BeginCompact()
	p.hist.Compact(func(i int64, h *statemgr.Entry) bool {
		if h.Dead || committed(&h.Ev, &hk) {
			if !h.Dead {
				w.commitPart(h, i, hk.RecvTime)
			}
			return true
		}
		return false
	}, func(h *statemgr.Entry, old, to int64) {
		h.OutFrom, h.OutTo = p.outs.Keep(h.OutFrom, h.OutTo)
		x := &d.plp[h.Ev.Receiver]
		if x.last == old {
			x.last = to
		}
		if x.anchor == old {
			x.anchor = to
		}
		if d.check {
			if d.ck.safeAt[h.Ev.Receiver] == old {
				d.ck.safeAt[h.Ev.Receiver] = to
			}
			*p.checks.At(int(to - newBase)) = *p.checks.At(int(old - oldBase))
		}
	})
	p.outs.EndCompact()
	if d.check {
		p.checks.Truncate(p.hist.Len())
	}
}

// finalTimePart is the latest receive time among the events processed and not rolled back.
func (d *timeWarpDispatcher) finalTimePart() Time {
	var t Time
	for _, p := range d.parts {
		t = math.Max(t, math.Max(p.maxCommitted, p.safeHigh.RecvTime))
		for i := range p.hist.Len() {
			if h := p.hist.Nth(i); !h.Dead {
				t = math.Max(t, h.Ev.RecvTime)
			}
		}
	}
	return t
}

// localWorkPart reports whether a worker of the partitioned engine holds events below the
// end time or has events handed over to it (for the manager's passivity check; every
// worker is passive when it is called).
func (d *timeWarpDispatcher) localWorkPart() bool {
	for _, p := range d.parts {
		if p.inN.Load() > 0 || p.work.Load() {
			return true
		}
	}
	return false
}
