package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gvt"
	"github.com/warpedgo/warped/ltsf"
	"github.com/warpedgo/warped/outputmgr"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/rng"
	"github.com/warpedgo/warped/spinlock"
	"github.com/warpedgo/warped/statemgr"
	"github.com/warpedgo/warped/termination"
)

// The time-warp dispatcher (WARPED2's design inside one process).
//
// Every LP has an input heap of unprocessed events (eventset.Pending), guarded by the LP's
// mutex, and, while a worker owns it, a list of processed events, a state queue
// (statemgr) and an output queue (outputmgr). LPs are partitioned among schedule queues
// (ltsf), each guarded by a lock (ticket or mutex); a schedule queue holds at most one
// entry per LP, keyed by that LP's earliest unprocessed event, and only while no worker
// owns the LP. Lock order: an LP's mutex before a schedule queue's lock, never the reverse.
//
// A worker takes the least entry of its schedule queue, claims that LP (marks it busy,
// takes its least input event, which may be earlier than the entry if one arrived
// meanwhile), rolls the LP back if the event is a straggler or an anti-message whose twin
// was processed, processes it (saving state every StateSavingPeriod events and recording
// its outputs), then releases the LP: fossil-collects it below GVT and reschedules its
// next event. Sends go straight into the receiver's input (under its mutex); an
// anti-message that finds its twin there annihilates it.
//
// With reverse computation (StateSaving "reverse"), nothing is saved: processing an event
// records beside its key the number of draws its handler made from the LP's generator
// (rng.Draws) and the LP's send sequence number before it, and a rollback to k undoes the
// processed events with keys >= k from the newest down (see reverseEvent: rewind the
// generator, restore the sequence number, call the model's Reverse), leaving the LP exactly
// as it was before the first of them, so there is no coast forward. Fossil collection drops
// the processed events below GVT, which no rollback can reach. Everything else (returning
// events to the input, anti-messages, cancellation) is the same.
//
// GVT is Fujimoto's shared-memory algorithm (package gvt): each worker reports before
// taking an event; events a worker makes visible (sends, anti-messages, events put back by
// a rollback, reschedulings) count in its next report. The run ends when GVT reaches the
// end time (GVT is infinite when nothing is pending). A GVT round starts every GVTPeriod
// and as soon as every worker is idle.
//
// Cancellation is aggressive (a rollback sends the anti-messages of the undone events'
// outputs at once) or lazy (an outputmgr.Lazy per LP holds them, and re-execution decides;
// see the protocol in package outputmgr). Lazy cancellation, as implemented here:
//
//   - Rollback to k: lazy.HoldFrom(outputs, k) instead of sending anti-messages.
//   - Send while processing event c (not coasting, not Init): record the output, then
//     lazy.Regenerated(c, e): first the anti-messages of the returned clashes, then e itself
//     unless it is suppressed (its identical original is still live at the receiver).
//   - Before processing an event with key k: cancel lazy.Expire(k) (harmless, and it
//     settles at once the outputs whose cause was annihilated behind the LP's back).
//   - Release (see release): under the LP's mutex, cancel lazy.Expire(n) for the LP's least
//     pending key n, or lazy.Drain() when nothing is pending; the anti-messages go out with
//     the mutex released, and the check repeats (an anti-message to the LP itself, or a
//     concurrent annihilation, can change n) until nothing more expires; the LP is then
//     released and rescheduled under that same lock. So an unowned LP's held outputs all
//     have causes at or after its least pending event, whose schedule entry (at most their
//     receive times, since no event is sent into its cause's past) keeps GVT at or below
//     the times of their anti-messages.
//   - The one thing that raises an unowned LP's least pending event is an anti-message
//     annihilating it (deliver). If the LP holds outputs, the worker delivering the
//     anti-message claims the LP instead of rescheduling it, and releases it as above
//     once it has released its own LP (worker.claimed). Until then the anti-message's time,
//     which is at most the LP's pending events and held outputs, is in the worker's report.
//   - At the end nothing is held: an LP holding outputs has a pending event below the end
//     time (the cause of a held output is processed, so below the end), so GVT cannot
//     reach the end while it does (run checks this).
//
// CheckRollbacks keeps, for every processed event, a digest of the LP's state (model state,
// generator and sequence number) after it and one of the sends it made. After a rollback
// the restored state must match the digest recorded for it, and each coast-forward event
// must reproduce its recorded digests; otherwise the run fails naming the LP and the event.

// twLP is the time-warp dispatcher's per-LP record.
type twLP struct {
	mu sync.Mutex
	// Guarded by mu:
	input    eventset.Pending
	schedKey event.Key // the key it was queued with
	queued   bool      // an entry is in the LP's schedule queue
	busy     bool      // a worker owns the LP
	// holding (guarded by mu) is set when the LP was released holding outputs.
	holding bool

	sched int32 // index of the LP's schedule queue (set before the run)

	// Owned by the worker that owns the LP (busy), or by the run before it starts. The
	// queues are kept inline, beside the fields above, because every event touches them:
	// everything down to states fits in the record's first four cache lines.
	done      []twDone   // processed events in key order
	fossilGVT event.Time // the GVT of the last fossil collection
	// lazy holds rolled-back outputs (lazy cancellation only, else nil).
	lazy    *outputmgr.Lazy
	outputs outputmgr.Queue // the LP's sent events, by cause
	states  statemgr.Queue  // periodic state saving only, else unused

	// CheckRollbacks only, owned like done: checks[i] is the digest recorded after
	// done[i], base the state digest before done[0] (after Init, or after the last event
	// that fossil collection dropped), and checkSnap a scratch snapshot.
	checks    []twDigest
	base      uint64
	checkSnap any

	_ [40]byte // to 320 bytes, five cache lines: a record never straddles more lines
}

// twDone is one processed event of an LP: its key (kept inline, so searching the history
// touches no event record), the event, and, with reverse computation, how to restore the
// LP's generator and sequence number to what they were before it.
type twDone struct {
	k    event.Key
	ev   *event.Event
	undo twUndo
}

// twUndo is what reverse computation records for a processed event: the number of draws
// its handler made from the LP's generator and the LP's send sequence number before it.
type twUndo struct {
	draws uint32
	seq   uint64
}

// twDigest is what CheckRollbacks records for a processed event: a digest of the LP's
// state after it and one of the sends it made.
type twDigest struct {
	state, sends uint64
}

// schedQueue is one schedule queue and its lock.
type schedQueue struct {
	lock sync.Locker
	q    ltsf.Queue
}

// twStats are one worker's counters; the dispatcher adds them up at the end.
type twStats struct {
	processed, rolledBack, coastForward   uint64
	primary, secondary, antiSent, annihil uint64
	suppressed                            uint64 // lazy cancellation: regenerated sends not sent
	safe                                  uint64 // committed as processed (partitioned engine)
}

// worker is one worker goroutine's own state.
type worker struct {
	d       *timeWarpDispatcher
	id      int
	sq      *schedQueue
	ctx     Context
	pool    event.Pool
	tracker gvt.Tracker
	stats   twStats
	// cause is the key of the event being processed; coasting suppresses sends;
	// initSend marks sends from Init, which are not recorded as outputs.
	cause    event.Key
	coasting bool
	initSend bool
	// unlogged marks the partitioned engine's processing of a safe event (see
	// partWorker.safeBound), whose sends are not recorded as outputs.
	unlogged bool
	outBuf   []event.Event
	idle     bool
	// cancels receives the clashes of Regenerated (lazy cancellation).
	cancels []event.Event
	// claimed are LPs holding outputs whose least pending event this worker annihilated
	// while no worker owned them: it owns them now and releases them after its own LP
	// (see deliver).
	claimed []LPID
	// CheckRollbacks: the encoded sends of the event being handled, and scratch.
	sendBytes, stateBytes []byte
	// off is the worker's batched event handling (TimeWarpConfig.Offload; see offload.go),
	// or nil; batch and batchAt are the batch and element whose results the partitioned
	// engine applies in place of Handle (set while batchPart commits; batch is nil otherwise).
	off     *offloader
	batch   *gpuoffload.Batch
	batchAt int
	// extra is set when the partitioned engine's loop has more to do than take events: lazy
	// cancellation or offload (one test an event instead of two).
	extra bool
	// p is the worker's part of the partitioned engine (partitioned.go), or nil; g is its
	// index in timeWarpDispatcher.parts. grp is set when the part is shared by a group of
	// workers (group.go); sink is then the part's sink of the worker's Context, and stage
	// its batch.
	p     *partWorker
	g     int
	grp   bool
	sink  sink
	stage stage
	// shown is stats.processed as of the last GVT round the worker started, for progress
	// lines: the worker counts in a plain field, as an atomic add on every event would
	// wait for its pending stores each time.
	shown atomic.Uint64
	// cell is where the worker publishes its counters for engine sampling at each GVT
	// report (see sample.go), or nil when sampling is off.
	cell *sampleCell
}

// processedSoFar returns the number of events the workers have processed, as of their last
// GVT rounds (for progress lines).
func (d *timeWarpDispatcher) processedSoFar() uint64 {
	var n uint64
	for _, w := range d.workers {
		n += w.shown.Load()
	}
	return n
}

// timeWarpDispatcher runs the LPs optimistically on several workers.
type timeWarpDispatcher struct {
	sim     *Simulation
	cfg     TimeWarpConfig
	end     Time
	lps     []twLP
	queues  []schedQueue
	workers []*worker
	gvt     *gvt.Fujimoto
	passive *termination.Workers
	// gvtWanted is set by a worker every partGVTEvents events (the shared engine: every
	// gvtEvents) in a run across processes, where rounds follow Mattern's token: rank 0
	// then starts the next round without waiting for the GVT period (distributed.stepGVT).
	gvtWanted atomic.Bool
	done      atomic.Bool
	errOnce   sync.Once
	err       error
	// lazy is lazy cancellation; check is CheckRollbacks, with seed for its digests.
	lazy  bool
	check bool
	seed  maphash.Seed
	// reverse is reverse computation (StateSaving "reverse") instead of periodic state saving.
	reverse bool
	// fossilAt is the history length from which an LP is fossil collected: the
	// state-saving period with periodic state saving (collection keeps the events after
	// the latest state at or before GVT, up to a period of them, anyway), else 1. Waiting
	// for it spares the cache misses of reading the history's head every time GVT moves
	// (a sixth of the run on PHOLD); a larger threshold measured no faster and took more
	// memory.
	fossilAt int
	// suppressed counts the sends that lazy cancellation suppressed (set at the end).
	suppressed uint64
	// local lists the LPs this process runs (all of them in a run in one process).
	local []LPID
	// dist is the machinery of a run across processes, or nil.
	dist *distributed
	// offload is what the workers' offloaders share (see offload.go).
	offload offloadShared
	// plp are the LPs' records in the partitioned engine (partitioned.go; nil in the
	// shared-queue engine, which uses lps), and owner[id] is the worker that runs LP id.
	plp   []partLP
	owner []int32
	// parts are the partitioned engine's parts, one per schedule queue (owner indexes
	// them); worker i runs part i modulo their number (several workers share one when
	// there are fewer schedule queues than workers: group.go).
	parts []*partWorker
	// Periodic state saving in the partitioned engine: base[id] is LP id's newest saved
	// state that is no longer in a log entry, spill[id] its committed events after base that
	// coast forward may need (see fossilPart), period the state saving period.
	base   []*savedState
	spill  [][]event.Event
	period uint32
	// logMax is the partitioned engine's bound on a worker's history log, partLogMax (tests
	// set it lower to exercise compaction).
	logMax int
	// hz is the partitioned engine's commit horizon in a run in one process, or nil.
	hz *horizon
	// ck is the partitioned engine's CheckRollbacks record (check only).
	ck partCheck
	// plazy[id] holds LP id's rolled-back outputs in the partitioned engine (lazy
	// cancellation only; owned by the LP's worker), and listed[id] says whether LP id is in
	// its worker's holding list (partWorker.holding).
	plazy  []*outputmgr.Lazy
	listed []bool
	// perSend is set with lazy cancellation, CheckRollbacks or Config.RecordSeries (whose
	// Record reads the cause): the partitioned engine's workers note each event's key (the
	// cause of its sends) and digest its sends.
	perSend bool
	// batched[id] says whether LP id has an event in its worker's batch (the partitioned
	// engine with Offload; owned by the LP's worker).
	batched []bool
}

// Cancellation kinds accepted in TimeWarpConfig.Cancellation ("" is aggressive).
const (
	cancelAggressive = "aggressive"
	cancelLazy       = "lazy"
)

// checkCancellation reports an unknown cancellation kind.
func checkCancellation(kind string) error {
	switch kind {
	case "", cancelAggressive, cancelLazy:
		return nil
	}
	return fmt.Errorf("unknown time-warp cancellation %q (want aggressive or lazy)", kind)
}

func newTimeWarp(s *Simulation) (*timeWarpDispatcher, error) {
	cfg := s.cfg.TimeWarp.withDefaults()
	if err := checkCancellation(cfg.Cancellation); err != nil {
		return nil, err
	}
	part := cfg.QueueType == QueueCalendar
	d := &timeWarpDispatcher{sim: s, cfg: cfg, end: s.cfg.MaxSimTime,
		gvt: gvt.NewFujimoto(cfg.Workers), passive: termination.NewWorkers(cfg.Workers), lazy: cfg.Cancellation == cancelLazy,
		check: cfg.CheckRollbacks, seed: maphash.MakeSeed(), reverse: cfg.StateSaving == StateSavingReverse}
	d.perSend = d.lazy || d.check || s.series != nil
	d.fossilAt = 1
	if !d.reverse {
		d.fossilAt = cfg.StateSavingPeriod
	}
	if !part {
		d.lps, d.queues = make([]twLP, len(s.lps)), make([]schedQueue, cfg.Schedulers)
	}
	for i := range d.queues {
		q, err := ltsf.New(cfg.QueueType, len(s.lps))
		if err != nil {
			return nil, err
		}
		l, err := spinlock.New(cfg.LockType)
		if err != nil {
			return nil, err
		}
		d.queues[i] = schedQueue{lock: l, q: q}
	}
	parts := s.cfg.Partition
	if parts == nil {
		parts = partition.Blocks{}
	}
	if tr := s.cfg.Transport; tr != nil && tr.Size() > 1 {
		owner, err := partition.Check(parts, len(s.lps), tr.Size())
		if err != nil {
			return nil, fmt.Errorf("partition LPs among processes: %w", err)
		}
		d.dist = newDistributed(d, tr, owner)
		d.gvt = gvt.NewFujimotoLocal(cfg.Workers + 1) // the workers and the manager
		for i, r := range owner {
			if r == tr.Rank() {
				d.local = append(d.local, LPID(i))
			}
		}
	} else {
		d.local = make([]LPID, len(s.lps))
		for i := range d.local {
			d.local[i] = LPID(i)
		}
	}
	sched, err := partition.Check(parts, len(d.local), cfg.Schedulers)
	if err != nil {
		return nil, fmt.Errorf("partition LPs among schedule queues: %w", err)
	}
	if part {
		d.addWorkers()
		if err := d.initPartitioned(sched, cfg.LockType); err != nil {
			return nil, err
		}
		return d, nil
	}
	pend := make([]eventset.Pending, len(d.local))
	eventset.Carve(pend, 4)
	for j, id := range d.local {
		t := &d.lps[id]
		t.input = pend[j]
		t.sched = int32(sched[j])
		if !d.reverse {
			q, err := statemgr.NewQueue(cfg.StateSavingPeriod)
			if err != nil {
				return nil, err
			}
			t.states = *q
		} // else New checked that every LP implements Reverser
		if d.lazy {
			t.lazy = outputmgr.NewLazy()
		}
	}
	d.addWorkers()
	return d, nil
}

// addWorkers makes the workers (and the manager's, in a run across processes).
func (d *timeWarpDispatcher) addWorkers() {
	cfg, s := d.cfg, d.sim
	depot := new(event.Depot)
	for w := range cfg.Workers {
		wk := &worker{d: d, id: w, tracker: gvt.NewTracker()}
		if len(d.queues) > 0 {
			wk.sq = &d.queues[w%cfg.Schedulers]
		}
		wk.pool.Depot = depot
		wk.ctx = s.newContext(wk)
		wk.ctx.cause, wk.ctx.coasting = &wk.cause, &wk.coasting // for Record (series.go)
		if cfg.Offload != nil {
			wk.off = newOffloader(d) // offload.go
		}
		wk.extra = d.lazy || wk.off != nil
		d.workers = append(d.workers, wk)
	}
	if d.dist != nil {
		// The manager delivers the events that arrive from other processes as a worker
		// without a schedule queue of its own.
		mw := &worker{d: d, id: cfg.Workers, tracker: gvt.NewTracker()}
		mw.pool.Depot = depot
		mw.ctx = s.newContext(mw)
		d.dist.mw = mw
	}
}

// fail records the run's first error and stops the workers.
func (d *timeWarpDispatcher) fail(err error) {
	d.errOnce.Do(func() { d.err = err })
	d.done.Store(true)
}

// coreOf and setCore move an LP's kernel state to and from its saved form.
func coreOf(r *lpRecord) statemgr.Core { return statemgr.Core{RNG: r.rng, Seq: r.seq} }

func setCore(r *lpRecord, c statemgr.Core) { r.rng, r.seq = c.RNG, c.Seq }

func (d *timeWarpDispatcher) run(ctx context.Context) (st Stats, err error) {
	w0 := d.workers[0]
	// Init runs on worker 0's context before any worker starts.
	if err := d.initLPs(w0); err != nil {
		return st, err
	}
	made := 0
	if d.partitioned() {
		for _, p := range d.parts {
			made += p.cal.Len()
		}
	} else {
		for _, id := range d.local {
			made += d.lps[id].input.Len()
		}
	}
	if d.dist != nil {
		var err error
		if made, err = d.dist.agree(made); err != nil {
			return st, err
		}
	}
	if made == 0 {
		return st, errors.New("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}
	if !d.partitioned() {
		for _, id := range d.local {
			d.schedule(w0, &d.lps[id], id)
		}
	}
	if err := d.prepareOffload(); err != nil { // offload.go
		return st, err
	}

	start := time.Now()
	sp := newSampler(d, start) // nil when sampling is off
	var wg sync.WaitGroup
	for _, w := range d.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	if d.dist != nil {
		d.dist.manage(ctx, start, sp)
	} else {
		// The manager waits for its next tick or for the workers to end, whichever comes
		// first: a long GVT period must not hold the end of the run.
		ended := make(chan struct{})
		go func() {
			wg.Wait()
			close(ended)
		}()
		d.manage(ctx, start, ended, sp)
	}
	wg.Wait()
	if d.err != nil {
		return st, d.err
	}
	if sp != nil {
		sp.final(d)
	}
	for i := range d.lps {
		if l := d.lps[i].lazy; l != nil && l.Len() > 0 {
			// Cannot happen (see the package comment): an LP holding outputs keeps GVT
			// below the end time.
			return st, fmt.Errorf("kernel: LP %d still holds %d outputs at the end of the run (lazy cancellation bug)", i, l.Len())
		}
	}
	for _, w := range d.workers {
		d.suppressed += w.stats.suppressed
		x := &w.stats
		st.EventsProcessed += x.processed
		st.EventsRolledBack += x.rolledBack
		st.CoastForwardEvents += x.coastForward
		st.SafeEvents += x.safe
		st.PrimaryRollbacks += x.primary
		st.SecondaryRollbacks += x.secondary
		st.AntiMessagesSent += x.antiSent
		st.SuppressedSends += x.suppressed
		st.CancelledEvents += x.annihil
		st.PeakPendingEvents += w.pool.Allocated()
		if w.p != nil && w.id < len(d.parts) { // the first worker of each part
			st.PeakPendingEvents += w.p.cal.Peak()
		}
		if o := w.off; o != nil {
			st.BatchedEvents += o.batched
			st.OffloadBatches += o.batches
		}
	}
	st.OffloadNote = d.offload.note
	st.StateSaving = d.cfg.StateSaving
	st.ScheduleQueues = d.arrangement()
	st.EventsCommitted = st.EventsProcessed - st.EventsRolledBack
	if n := st.PrimaryRollbacks + st.SecondaryRollbacks; n > 0 {
		st.AverageRollbackLength = float64(st.EventsRolledBack) / float64(n)
	}
	st.GVTCycles = d.gvt.Rounds()
	if d.partitioned() {
		st.FinalTime = d.finalTimePart()
	} else {
		for _, id := range d.local {
			for _, p := range d.lps[id].done {
				if p.k.RecvTime > st.FinalTime {
					st.FinalTime = p.k.RecvTime
				}
			}
		}
	}
	if d.dist != nil {
		return d.dist.gather(st)
	}
	return st, nil
}

// arrangement describes the schedule arrangement of the run (Stats.ScheduleQueues).
func (d *timeWarpDispatcher) arrangement() string {
	if d.partitioned() && !d.grouped() {
		return QueueCalendar + ", one per worker"
	}
	if d.cfg.Schedulers == d.cfg.Workers {
		return d.cfg.QueueType + ", one per worker"
	}
	return fmt.Sprintf("%s, %d shared by %d workers", d.cfg.QueueType, d.cfg.Schedulers, d.cfg.Workers)
}

// initLPs runs every LP's Init and saves its initial state. The partitioned engine runs
// each worker's LPs on that worker, in parallel (see initPart).
func (d *timeWarpDispatcher) initLPs(w *worker) (err error) {
	s := d.sim
	s.init = true
	defer func() { s.init = false }()
	if d.partitioned() {
		return d.initPart()
	}
	return d.initSome(w, d.local)
}

// initSome runs Init for the LPs ids on worker w and saves their initial states.
func (d *timeWarpDispatcher) initSome(w *worker, ids []LPID) (err error) {
	s := d.sim
	defer func() {
		if r := recover(); r != nil {
			err = recoverModel(r, s, w.ctx.self, 0, true)
		}
	}()
	for _, i := range ids {
		r := &s.lps[i]
		w.ctx.now, w.ctx.depth, w.ctx.self, w.ctx.lp = 0, 0, i, r
		w.cause, w.coasting = event.Key{}, false
		w.initSend = true
		r.model.Init(&w.ctx)
		w.initSend = false
		if w.ctx.err != nil {
			return w.ctx.err
		}
		switch {
		case d.reverse:
		case d.partitioned():
			d.base[i] = w.p.save(r)
		default:
			d.lps[i].states.Init(r.model, coreOf(r))
		}
		if d.check {
			if d.partitioned() {
				d.ck.base[i] = w.stateDigest(&d.ck.snap[i], r)
				d.ck.saved[i] = d.ck.base[i]
			} else {
				d.lps[i].base = w.stateDigest(&d.lps[i].checkSnap, r)
			}
		}
	}
	return nil
}

// manage starts GVT rounds every GVT period, watches for the end, cancellation and
// progress, and returns when the run is over or the workers have ended.
// sp, when not nil, takes engine samples.
func (d *timeWarpDispatcher) manage(ctx context.Context, start time.Time, ended <-chan struct{}, sp *sampler) {
	s := d.sim
	tick := time.NewTicker(d.cfg.GVTPeriod)
	defer tick.Stop()
	lastProgress := start
	for !d.done.Load() {
		select {
		case <-ctx.Done():
			d.fail(ctx.Err())
			return
		case <-ended:
			return
		case <-tick.C:
		}
		d.gvt.Start()
		if s.cfg.Progress != nil {
			if now := time.Now(); now.Sub(lastProgress) >= s.cfg.ProgressInterval {
				lastProgress = now
				s.cfg.Progress(Progress{Now: d.gvt.GVT(), EndTime: d.end, EventsProcessed: d.processedSoFar(),
					Elapsed: now.Sub(start)})
			}
		}
		if sp != nil {
			sp.tick(d, time.Now())
		}
	}
}

// loop is a worker goroutine.
func (w *worker) loop() {
	d := w.d
	defer func() {
		if r := recover(); r != nil {
			d.fail(recoverModel(r, d.sim, w.ctx.self, w.ctx.now, false))
		}
	}()
	switch {
	case w.grp:
		w.groupLoop() // group.go
		return
	case w.p != nil:
		w.partLoop()
		return
	}
	if w.off != nil {
		defer w.drainOffload() // no batch may stay in flight on the backend
	}
	for !d.done.Load() {
		if w.off != nil {
			// Batched event handling (offload.go): one batch step, or the unbatched step
			// below while batching is off.
			batched, ok := w.offloadStep()
			if !ok {
				return
			}
			if batched {
				continue
			}
		}
		w.reportGVT()
		id, ok := w.take()
		if !ok {
			w.setIdle(true)
			d.idleRound()
			runtime.Gosched()
			continue
		}
		w.run(id)
		if w.ctx.err != nil {
			d.fail(w.ctx.err)
			return
		}
	}
}

// setIdle keeps the count of idle workers; when all are idle a GVT round starts at once,
// so that the end is noticed without waiting for the next period.
func (w *worker) setIdle(idle bool) {
	if idle == w.idle {
		return
	}
	w.idle = idle
	if !idle {
		w.d.passive.Active()
		return
	}
	if w.d.passive.Passive() {
		w.d.startGVT()
	}
}

// idleRound starts a GVT round, in a run in one process, when every worker is passive and
// no round is running. The round that the last worker to become passive started (setIdle)
// may have ended below the end time, as a worker reports the least time it sent since its
// last report, events it has processed since included; nothing else would start the next
// round before the GVT period is over (a run with a long period waited that long at its
// end).
func (d *timeWarpDispatcher) idleRound() {
	if d.dist == nil && d.passive.AllPassive() && d.gvt.Round() == 0 {
		d.startGVT()
	}
}

// startGVT starts a Fujimoto round now, in a run in one process; across processes, where
// rounds follow Mattern's token (see distributed), it asks rank 0's manager for one.
func (d *timeWarpDispatcher) startGVT() {
	if d.dist == nil {
		d.gvt.Start()
		return
	}
	d.gvtWanted.Store(true)
}

// reportGVT reports to a running GVT round if this worker has not yet.
func (w *worker) reportGVT() {
	d := w.d
	r := d.gvt.Round()
	if !w.tracker.Due(r) {
		return
	}
	head := math.Inf(1)
	w.sq.lock.Lock()
	if k, _, ok := w.sq.q.Min(); ok {
		head = k.RecvTime
	}
	w.sq.lock.Unlock()
	if w.cell != nil {
		w.publish() // engine sampling (sample.go)
	}
	if g, ok := d.gvt.Report(r, w.tracker.Take(r, head)); ok && g >= d.end && d.dist == nil {
		d.done.Store(true)
	}
}

// limit is the time at and above which no event may be processed now (small enough to be
// inlined: the partitioned engine calls it for every event).
func (d *timeWarpDispatcher) limit() Time {
	if d.cfg.OptimismWindow > 0 {
		return d.windowLimit()
	}
	return d.end
}

// windowLimit is limit with an optimism window.
func (d *timeWarpDispatcher) windowLimit() Time {
	return math.Min(d.end, d.gvt.GVT()+d.cfg.OptimismWindow)
}

// take removes the least entry of the worker's schedule queue if it is below the limit,
// and returns its LP. The worker becomes active before it removes the entry, under the
// queue's lock, so that a manager checking for passivity (termination.Workers.Wakes)
// cannot miss work in the hands of a worker it counted as passive.
func (w *worker) take() (LPID, bool) {
	lim := w.d.limit()
	w.sq.lock.Lock()
	k, id, ok := w.sq.q.Min()
	if !ok || k.RecvTime >= lim {
		w.sq.lock.Unlock()
		return 0, false
	}
	w.setIdle(false)
	w.sq.q.Pop()
	w.sq.lock.Unlock()
	return id, true
}

// run claims LP id, processes its least event (rolling back first if needed), and
// releases it.
func (w *worker) run(id LPID) {
	t, ev, k, ok := w.claim(id)
	if !ok {
		return // CheckRollbacks failed the run
	}
	if ev != nil {
		w.process(t, id, ev, k)
	}
	w.release(t, id)
	w.releaseClaimed()
}

// claim claims LP id, whose schedule entry the worker took, and takes its least event,
// rolling the LP back first if that event is a straggler, or if it is an anti-message whose
// twin was processed (the anti-message is then used up). It returns the event to process
// next, with its key, or nil when there is none; the worker owns the LP until it releases
// it. ok is false when CheckRollbacks failed the run.
func (w *worker) claim(id LPID) (t *twLP, ev *event.Event, k event.Key, ok bool) {
	d := w.d
	t = &d.lps[id]
	t.mu.Lock()
	t.queued = false
	t.busy = true
	ev = t.input.PopMin()
	if ev != nil && ev.RecvTime >= d.limit() {
		// The queued event was annihilated after it was taken, and what is left is beyond
		// the end (or the optimism window).
		t.input.Push(ev)
		ev = nil
	}
	t.mu.Unlock()
	switch {
	case ev == nil:
	case ev.Anti:
		// A pending anti-message always has its twin among the processed events: one
		// that was pending annihilated on arrival, and one that a rollback put back
		// annihilated then (see rollback). A pending event with the same key is a later
		// re-send, which this anti-message must not touch.
		twin := twinKey(event.KeyOf(ev))
		if !t.hasProcessed(twin) {
			panic(fmt.Sprintf("kernel: anti-message %+v for LP %d has no processed twin", twin, id))
		}
		w.fossilCollect(t)
		w.stats.secondary++
		w.pool.Put(ev)
		if !w.rollback(t, id, twin, true) {
			return t, nil, twin, false
		}
		ev = nil
	default:
		w.fossilCollect(t)
		k = event.KeyOf(ev)
		if n := len(t.done); n > 0 && event.KeyLess(&k, &t.done[n-1].k) {
			w.stats.primary++
			if !w.rollback(t, id, k, false) {
				return t, nil, k, false
			}
		}
		if t.lazy != nil && t.lazy.Len() > 0 {
			w.outBuf = t.lazy.Expire(k, w.outBuf[:0])
			w.sendAntis(w.outBuf)
		}
	}
	return t, ev, k, true
}

// releaseClaimed releases the LPs that the worker claimed while delivering (see deliver).
func (w *worker) releaseClaimed() {
	d := w.d
	for n := len(w.claimed); n > 0; n = len(w.claimed) {
		c := w.claimed[n-1]
		w.claimed = w.claimed[:n-1]
		w.release(&d.lps[c], c)
	}
}

// release ends the worker's ownership of LP t and reschedules it. With lazy cancellation it
// first cancels the held outputs that re-execution can no longer regenerate (those whose
// cause is below the LP's least pending event, or all of them when nothing is pending),
// and repeats until nothing more expires: sending the anti-messages (without the LP's
// mutex, since one may go to the LP itself) can change the least pending event, and so
// can other workers' anti-messages. The last check and the release happen under one
// lock, so an unowned LP's held outputs never have a cause below its least pending event.
func (w *worker) release(t *twLP, id LPID) {
	for {
		t.mu.Lock()
		if t.lazy != nil {
			if t.lazy.Len() > 0 {
				if k, ok := t.input.MinKey(); ok {
					w.outBuf = t.lazy.Expire(k, w.outBuf[:0])
				} else {
					w.outBuf = t.lazy.Drain(w.outBuf[:0])
				}
				if len(w.outBuf) > 0 {
					t.mu.Unlock()
					w.sendAntis(w.outBuf)
					continue
				}
			}
			t.holding = t.lazy.Len() > 0
			if w.d.cfg.CheckRollbacks && t.holding {
				if m := t.input.Min(); m == nil || t.lazy.MinRecvTime() < m.RecvTime {
					panic(fmt.Sprintf("kernel: LP %d released holding outputs from time %v below its least pending event %+v",
						id, t.lazy.MinRecvTime(), m))
				}
			}
		}
		t.busy = false
		w.d.schedule(w, t, id)
		t.mu.Unlock()
		return
	}
}

// sendAntis sends the anti-message of each event of es (copies of positive events as they
// were sent) and clears es.
func (w *worker) sendAntis(es []event.Event) {
	for j := range es {
		anti := w.pool.Get()
		*anti = es[j]
		anti.Anti = true
		es[j] = event.Event{}
		w.stats.antiSent++
		w.d.deliver(w, anti)
	}
}

// twinKey returns the key of the positive event that the anti-message with key k cancels.
func twinKey(k event.Key) event.Key {
	k.SeqSign |= 1
	return k
}

// antiKey returns the key of the anti-message of the positive event with key k.
func antiKey(k event.Key) event.Key {
	k.SeqSign &^= 1
	return k
}

// hasProcessed reports whether LP t has a processed event with key k (the worker owns t).
func (t *twLP) hasProcessed(k event.Key) bool {
	i, found := slices.BinarySearchFunc(t.done, k, func(a twDone, b event.Key) int {
		switch {
		case event.KeyLess(&a.k, &b):
			return -1
		case event.KeyLess(&b, &a.k):
			return 1
		}
		return 0
	})
	_ = i
	return found
}

// process runs the handler of event ev (key k) on LP t, which the worker owns.
func (w *worker) process(t *twLP, id LPID, ev *event.Event, k event.Key) {
	w.processWith(t, id, ev, k, nil, 0)
}

// processWith is process. With a batch b, element i of b (ev handled by the LP's batch
// kernel, see offload.go) takes the place of the model's Handle: its state, generator and
// sends are applied instead; everything else is the same.
func (w *worker) processWith(t *twLP, id LPID, ev *event.Event, k event.Key, b *gpuoffload.Batch, i int) {
	r := &w.d.sim.lps[id]
	if w.d.check && ev.RecvTime < w.d.gvt.GVT() {
		panic(fmt.Sprintf("kernel: LP %d processes an event at %v below GVT %v", id, ev.RecvTime, w.d.gvt.GVT()))
	}
	w.ctx.now, w.ctx.depth, w.ctx.self, w.ctx.lp = ev.RecvTime, ev.Depth, id, r
	w.cause = k
	w.sendBytes = w.sendBytes[:0]
	g, seq := r.rng, r.seq
	if b == nil {
		r.model.Handle(&w.ctx, ev)
	} else {
		w.applyBatched(r, b, i) // offload.go
	}
	p := twDone{k: k, ev: ev}
	if w.d.reverse {
		p.undo = twUndo{draws: rng.Draws(g, r.rng), seq: seq}
	} else {
		t.states.AfterEvent(k, r.model, coreOf(r))
	}
	if w.d.check {
		t.checks = append(t.checks, w.eventDigest(&t.checkSnap, r))
	}
	t.done = append(t.done, p)
	if w.stats.processed++; w.stats.processed%gvtEvents == 0 {
		// Rounds also follow the work done, not only the clock: when the manager goroutine
		// is starved of CPU, history below the next GVT would otherwise pile up.
		w.shown.Store(w.stats.processed)
		w.d.startGVT()
	}
}

// gvtEvents is the number of events a worker processes between GVT rounds it starts itself.
const gvtEvents = 8192

// rollback undoes every processed event of LP t with key >= k: restores the latest saved
// state before k (or, with reverse computation, reverses those events newest first), puts
// the undone events back into the input (dropping the one with key k when it is the twin
// of an anti-message), cancels their outputs (or holds them, with lazy cancellation), and
// coasts forward (periodic state saving only). It returns false when CheckRollbacks found
// the restored or re-executed state different and failed the run.
func (w *worker) rollback(t *twLP, id LPID, k event.Key, dropTwin bool) bool {
	d := w.d
	r := &d.sim.lps[id]
	d.sim.undoSeries(id, &k) // series.go

	// The first processed event with key >= k, and the first after the restored state
	// (with reverse computation, the LP is restored to just before event i).
	i := len(t.done)
	for i > 0 && !event.KeyLess(&t.done[i-1].k, &k) {
		i--
	}
	from := i
	var restored event.Key
	var ok bool
	if d.reverse {
		w.reverse(t, id, r, i)
	} else {
		core := coreOf(r)
		restored, ok = t.states.Rollback(k, r.model, &core)
		setCore(r, core)
		from = 0
		if ok {
			for from < i && !event.KeyLess(&restored, &t.done[from].k) {
				from++
			}
		}
	}

	// Undone events go back into the input before any anti-message is sent, so that an
	// anti-message to this LP itself finds its twin there.
	t.mu.Lock()
	for j := i; j < len(t.done); j++ {
		e := t.done[j].ev
		if dropTwin && t.done[j].k == k {
			w.pool.Put(e)
			w.stats.annihil++
		} else if anti := t.input.Take(antiKey(t.done[j].k)); anti != nil {
			// Its anti-message arrived while it was processed: they annihilate now,
			// before a re-send with the same key can arrive and be mistaken for it.
			w.pool.Put(anti)
			w.pool.Put(e)
			w.stats.annihil++
		} else {
			t.input.Push(e)
			w.tracker.Made(e.RecvTime)
		}
		w.stats.rolledBack++
		t.done[j] = twDone{}
	}
	t.mu.Unlock()
	t.done = t.done[:i]
	if d.check {
		t.checks = t.checks[:i]
		want := t.base
		if from > 0 {
			want = t.checks[from-1].state
		}
		if w.stateDigest(&t.checkSnap, r) != want {
			if d.reverse {
				d.fail(d.reverseError(id, k))
			} else {
				d.fail(d.restoreError(id, restored, ok))
			}
			return false
		}
	}

	if t.lazy != nil {
		t.lazy.HoldFrom(&t.outputs, k)
	} else {
		w.outBuf = t.outputs.RollbackFrom(k, w.outBuf[:0])
		w.sendAntis(w.outBuf)
	}

	// Coast forward: re-execute the processed events between the restored state and k,
	// without sending (their sends are still valid).
	w.coasting = true
	defer func() { w.coasting = false }()
	for j := from; j < i; j++ {
		e := t.done[j].ev
		w.ctx.now, w.ctx.depth, w.ctx.self, w.ctx.lp = e.RecvTime, e.Depth, id, r
		w.sendBytes = w.sendBytes[:0]
		r.model.Handle(&w.ctx, e)
		t.states.AfterEvent(t.done[j].k, r.model, coreOf(r))
		w.stats.coastForward++
		if d.check && w.eventDigest(&t.checkSnap, r) != t.checks[j] {
			d.fail(d.reexecError(id, e))
			return false
		}
	}
	return true
}

// reverse undoes LP t's processed events from the newest down to index i with the model's
// Reverse (reverse computation).
func (w *worker) reverse(t *twLP, id LPID, r *lpRecord, i int) {
	rev := r.model.(Reverser)
	for j := len(t.done) - 1; j >= i; j-- {
		e := t.done[j].ev
		w.ctx.now, w.ctx.depth, w.ctx.self, w.ctx.lp = e.RecvTime, e.Depth, id, r
		reverseEvent(&w.ctx, rev, e, t.done[j].undo)
	}
}

// reverseEvent undoes event e, the last event that the LP of ctx processed, u being what was
// recorded for it: it rewinds the LP's generator by e's draws and restores its sequence
// number, so that Reverse sees the generator as Handle found it, calls Reverse, and resets
// the generator and sequence number again (whatever Reverse drew). ctx's time and depth
// must be e's.
func reverseEvent(ctx *Context, rev Reverser, e *event.Event, u twUndo) {
	r := ctx.lp
	r.rng.Rewind(uint64(u.draws))
	r.seq = u.seq
	g := r.rng
	ctx.reversing, ctx.drawsMade = true, u.draws
	rev.Reverse(ctx, e)
	ctx.reversing, ctx.drawsMade = false, 0
	r.rng, r.seq = g, u.seq
}

// reverseError describes an LP whose state after reversing its events from key k differs
// from the state it had before them.
func (d *timeWarpDispatcher) reverseError(id LPID, k event.Key) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after reversing its events from time %v "+
		"(from LP %d, sequence %d): its Reverse does not undo exactly what Handle did",
		d.sim.nameOf(id), id, k.RecvTime, k.Sender, k.SeqSign>>1)
}

// restoreError describes a restored state that differs from the state recorded when the LP
// was first at that point.
func (d *timeWarpDispatcher) restoreError(id LPID, restored event.Key, ok bool) error {
	at := "its initial state"
	if ok {
		at = fmt.Sprintf("the state saved after its event at time %v (from LP %d, sequence %d)",
			restored.RecvTime, restored.Sender, restored.SeqSign>>1)
	}
	return d.restoreErrorAt(id, at)
}

// restoreErrorAt is restoreError for the restored state described by at.
func (d *timeWarpDispatcher) restoreErrorAt(id LPID, at string) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after restoring %s: its Snapshot "+
		"and Restore do not reproduce the state (do they copy all of it, sharing no memory "+
		"with the live state?)", d.sim.nameOf(id), id, at)
}

// reexecError describes an LP whose state or sends differ after re-executing its event e
// from what they were the first time.
func (d *timeWarpDispatcher) reexecError(id LPID, e *event.Event) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after re-executing its event at "+
		"time %v (from LP %d, sequence %d): the model is not deterministic under re-execution "+
		"(does its handler read anything besides its state, the event and ctx.RNG()?)",
		d.sim.nameOf(id), id, e.RecvTime, e.Sender, e.Seq)
}

// stateDigest digests the current state of LP record r: its generator, sequence number and
// model state (AppendState, or the canonical encoding of a snapshot into *snap, the LP's
// scratch snapshot).
func (w *worker) stateDigest(snap *any, r *lpRecord) uint64 {
	b := binary.LittleEndian.AppendUint32(w.stateBytes[:0], r.rng.D)
	for _, v := range r.rng.V {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, r.seq)
	if a, ok := r.model.(StateAppender); ok {
		b = a.AppendState(b)
	} else {
		*snap = r.model.Snapshot(*snap)
		b = appendValue(b, *snap)
	}
	w.stateBytes = b
	return maphash.Bytes(w.d.seed, b)
}

// eventDigest is what CheckRollbacks records after an event: the LP's state digest and a
// digest of the sends the handler made (w.sendBytes).
func (w *worker) eventDigest(snap *any, r *lpRecord) twDigest {
	return twDigest{state: w.stateDigest(snap, r), sends: maphash.Bytes(w.d.seed, w.sendBytes)}
}

// fossilCollect drops LP t's history below GVT: old states, old output records and the
// processed events that no remaining state needs for coast forward (with reverse
// computation, the processed events below GVT, which no rollback can reach).
func (w *worker) fossilCollect(t *twLP) {
	if len(t.done) < w.d.fossilAt {
		return
	}
	g := w.d.gvt.GVT()
	if g <= t.fossilGVT {
		return
	}
	t.fossilGVT = g
	t.outputs.FossilCollect(g)
	n := 0
	if w.d.reverse {
		for n < len(t.done) && t.done[n].k.RecvTime < g {
			w.pool.Put(t.done[n].ev)
			n++
		}
	} else {
		t.states.FossilCollect(g)
		oldest, ok := t.states.Oldest()
		if !ok {
			return
		}
		for n < len(t.done) && !event.KeyLess(&oldest, &t.done[n].k) {
			w.pool.Put(t.done[n].ev)
			n++
		}
	}
	if n > 0 {
		m := copy(t.done, t.done[n:])
		clear(t.done[m:])
		t.done = t.done[:m]
		if w.d.check {
			t.base = t.checks[n-1].state
			t.checks = t.checks[:copy(t.checks, t.checks[n:])]
		}
		if c := cap(t.done); c > 256 && m < c/8 {
			// A burst grew the history far beyond what it holds now: give the memory back.
			t.done = append(make([]twDone, 0, 2*m+8), t.done...)
			if w.d.check {
				t.checks = append(make([]twDigest, 0, 2*m+8), t.checks...)
			}
		}
	}
}

// send is the worker's sink: it makes the event, records it as an output of the event
// being processed, and delivers it. While coasting forward, sends are dropped (the
// originals are still valid); Init's sends are not recorded (nothing can cancel them).
// With lazy cancellation a regenerated send identical to a held output of the same cause
// is suppressed (the original is still live), and a held output that clashes with it (same
// key and receiver, other content) is cancelled first.
func (w *worker) send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	if w.d.check && !w.initSend {
		w.appendSend(to, depth, seq, at, ws, payload)
	}
	if w.p != nil { // the partitioned engine's Contexts send to its sinks directly
		if w.d.lazy {
			(*lazySink)(w).send(to, from, depth, seq, at, now, ws, payload)
		} else {
			(*partSink)(w).send(to, from, depth, seq, at, now, ws, payload)
		}
		return
	}
	if w.coasting {
		return
	}
	e := w.pool.Get()
	*e = event.Event{RecvTime: at, SendTime: now, Seq: seq, Payload: payload, Words: ws,
		Depth: depth, Sender: from, Receiver: to}
	if w.initSend {
		w.d.deliver(w, e)
		return
	}
	t := &w.d.lps[from]
	t.outputs.Record(w.cause, e)
	if t.lazy != nil {
		var suppress bool
		w.cancels, suppress = t.lazy.Regenerated(w.cause, e, w.cancels[:0])
		w.sendAntis(w.cancels)
		if suppress {
			w.stats.suppressed++
			w.pool.Put(e)
			return
		}
	}
	w.d.deliver(w, e)
}

// appendSend encodes a send for CheckRollbacks' digest of the event being handled.
func (w *worker) appendSend(to LPID, depth uint32, seq uint64, at Time, ws Words, payload any) {
	b := binary.LittleEndian.AppendUint32(w.sendBytes, to)
	b = binary.LittleEndian.AppendUint32(b, depth)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(at))
	for _, x := range ws {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	w.sendBytes = appendValue(b, payload)
}

// deliver puts event e into its receiver's input: an anti-message whose twin is there
// annihilates with it; otherwise the event waits, and the receiver is (re)scheduled if the
// event is now its least and no worker owns it. An anti-message that annihilates the least
// event of an unowned receiver holding outputs (lazy cancellation) makes worker w claim the
// receiver: its held outputs may now have causes below its least pending event, which no
// longer bounds them for GVT, so they must be expired first (see release).
func (d *timeWarpDispatcher) deliver(w *worker, e *event.Event) {
	t := &d.lps[e.Receiver]
	if d.cfg.CheckRollbacks && e.RecvTime < d.gvt.GVT() {
		panic(fmt.Sprintf("kernel: event %+v sent below GVT %v", *e, d.gvt.GVT()))
	}
	w.tracker.Made(e.RecvTime)
	if d.dist != nil && !d.dist.isLocal(e.Receiver) {
		d.dist.post(e)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Anti {
		twin := twinKey(event.KeyOf(e))
		if p := t.input.Take(twin); p != nil {
			// The twin was the LP's queued event: take the entry out and queue the LP's
			// next event instead.
			if t.queued && t.schedKey == twin && d.unschedule(t, e.Receiver) {
				if t.holding {
					t.busy = true
					w.claimed = append(w.claimed, e.Receiver)
				} else {
					d.schedule(w, t, e.Receiver)
				}
			}
			w.pool.Put(p)
			w.pool.Put(e)
			w.stats.annihil++
			return
		}
	}
	k := event.KeyOf(e)
	t.input.Push(e)
	if t.busy {
		return
	}
	if !t.queued {
		d.schedule(w, t, e.Receiver)
		return
	}
	if event.KeyLess(&k, &t.schedKey) {
		if d.unschedule(t, e.Receiver) {
			d.schedule(w, t, e.Receiver)
		}
	}
}

// unschedule removes LP t's entry from its schedule queue (t.mu held). It returns false
// when a worker popped the entry and is about to claim the LP.
func (d *timeWarpDispatcher) unschedule(t *twLP, id LPID) bool {
	q := &d.queues[t.sched]
	q.lock.Lock()
	removed := q.q.Remove(id)
	q.lock.Unlock()
	if removed {
		t.queued = false
	}
	return removed
}

// schedule queues LP t's least input event if it has one and is neither queued nor owned
// (t.mu held, or the run not started).
func (d *timeWarpDispatcher) schedule(w *worker, t *twLP, id LPID) {
	if t.busy || t.queued {
		return
	}
	k, ok := t.input.MinKey()
	if !ok {
		return
	}
	q := &d.queues[t.sched]
	q.lock.Lock()
	q.q.Push(k, id)
	q.lock.Unlock()
	t.queued, t.schedKey = true, k
	w.tracker.Made(k.RecvTime)
}
