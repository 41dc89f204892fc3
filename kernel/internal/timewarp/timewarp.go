package timewarp

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gvt"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/dist"
	"github.com/warpedgo/warped/kernel/internal/osthread"
	"github.com/warpedgo/warped/outputmgr"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/statemgr"
	"github.com/warpedgo/warped/termination"
)

// twStats are one worker's counters; the dispatcher adds them up at the end.
type twStats struct {
	processed, rolledBack, coastForward   uint64
	primary, secondary, antiSent, annihil uint64
	suppressed                            uint64 // lazy cancellation: regenerated sends not sent
	safe                                  uint64 // committed as processed (engine)
}

// worker is one worker goroutine's own state.
type worker struct {
	d       *timeWarpDispatcher
	id      int
	ctx     core.Context
	pool    event.Pool
	tracker gvt.Tracker
	stats   twStats
	// cause is the key of the event being processed; coasting suppresses sends;
	// initSend marks sends from Init, which are not recorded as outputs.
	cause    event.Key
	coasting bool
	initSend bool
	// scratch is the Context's scratch words while an event is handled, zero between
	// events (see process); a rolled-back event's Reverse and a committed one's Commit get
	// those its log kept instead, or spare (scratchOf).
	scratch, spare event.Words
	// unlogged is set while the worker processes a safe event (see queue.safeBound),
	// whose sends are not recorded as outputs, and after it until the next event: sends
	// come only from handlers, and each handler runs after process set or cleared it
	// (coasting and initSend come first).
	unlogged bool
	idle     bool
	// cancels receives the clashes of Regenerated (lazy cancellation).
	cancels []event.Event
	// CheckRollbacks: the encoded sends of the event being handled, and scratch.
	sendBytes, stateBytes []byte
	// off is the worker's batched event handling (TimeWarpConfig.Offload; see offload.go),
	// or nil; batch and batchAt are the batch and element whose results the
	// engine applies in place of Handle (set while processBatch commits; batch is nil otherwise).
	off     *offloader
	batch   *gpuoffload.Batch
	batchAt int
	// extra is set when the engine's loop has more to do than take events: lazy
	// cancellation or offload (one test an event instead of two).
	extra bool
	// q is the worker's schedule queue (engine.go), or nil; g is its
	// index in timeWarpDispatcher.queues. grp is set when the queue is shared by a group of
	// workers (group.go), and stage is then its batch.
	q     *queue
	g     int
	grp   bool
	stage stage
	// shown is stats.processed as of the last GVT round the worker started, for progress
	// lines: the worker counts in a plain field, as an atomic add on every event would
	// wait for its pending stores each time.
	shown atomic.Uint64
	// cell is where the worker publishes its counters for engine sampling at each GVT
	// report (see sample.go), or nil when sampling is off.
	cell *sampleCell
	// pk is what the worker needs to park while it may not take an event (park.go);
	// seenCommits is its group's commits as of its last take (group.go).
	pk          parker
	seenCommits uint64
	// host is the number of the host goroutine that runs the worker, or free (host.go);
	// hostPlan is the number of active hosts that its host follows (written by the host
	// that claims it, read by mayGo).
	host     atomic.Int32
	hostPlan int32
	// seenChanges is its queue's changes as the worker's last housekeep read it, before
	// it looked at what bumps them (see stretch).
	seenChanges uint64
	// least is the time of the least pending event (+Inf: none) as its host's last pass
	// read it, valid while leastKnown; both are the host's (host.pass).
	least      Time
	leastKnown bool
	// perEvent is set where the worker must housekeep before every event (lazy
	// cancellation, offload: their checks are not behind queue.changes), so that its
	// stretches take one event each. Set once, before the run.
	perEvent bool
	// longest is the most events a stretch may take (stretchMax): remoteLowEvery with
	// safe events across processes, whose snapshots housekeep takes, else no limit. Set
	// once, before the run.
	longest int
	// direct is set where the worker takes events from the other workers of its host
	// straight into its calendar, and puts its own straight into theirs (beside): not a
	// group's worker, nor one that housekeeps before every event (the same for every
	// worker of a run). Set once, before the run. mates is its host's mine while the host
	// runs it (host.follow).
	direct bool
	mates  []bool
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
	sim     *core.Sim
	cfg     core.TimeWarpConfig
	end     Time
	workers []*worker
	gvt     *gvt.Fujimoto
	passive *termination.Workers
	// gvtWanted is set by a worker every slowGVTEvents events in a run across processes, where rounds follow Mattern's token: rank 0
	// then starts the next round without waiting for the GVT period (dist.Driver's stepGVT).
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
	// suppressed counts the sends that lazy cancellation suppressed (set at the end).
	suppressed uint64
	// local lists the LPs this process runs (all of them in a run in one process).
	local []LPID
	// dist is the machinery of a run across processes, or nil.
	dist *dist.Driver
	// mw is the manager's worker in a run across processes: it delivers the events that
	// arrive from other ranks, without a schedule queue of its own (see driver.go).
	mw *worker
	// safeW is the worker's part of safe events across processes (remotesafe.go).
	safeW safeWorker
	// offload is what the workers' offloaders share (see offload.go).
	offload offloadShared
	// lps are the LPs' records (engine.go), and owner[id] is the schedule queue
	// that runs LP id.
	lps   []lpState
	owner []int32
	// queues are the schedule queues (owner indexes
	// them); worker i runs queue i modulo their number (several workers share one when
	// there are fewer schedule queues than workers: group.go).
	queues []*queue
	// Periodic state saving in the engine: base[id] is LP id's newest saved
	// state that is no longer in a log entry, spill[id] its committed events after base that
	// coast forward may need (see collectFossils), period the state saving period.
	base   []*statemgr.Saved
	spill  [][]event.Event
	period uint32
	// parkAfter is how long an idle worker spins before it parks (park.go; tests set it
	// lower).
	parkAfter time.Duration
	// hs is the host goroutines (host.go), nil where groups share queues; hostLoad and
	// hostIdle, when set (by tests), stand for the hosts' measured waits for a processor
	// and the machine's idle CPUs (adapt.go).
	hs         *hostSet
	hostLoad   func() float64
	hostIdle   func() float64
	loadWindow time.Duration // loadWindow (tests set it shorter)
	loadCheck  int           // loadCheck (tests set it to 1)
	// logMax is the engine's bound on a worker's history log, logMaxDefault (tests
	// set it lower to exercise compaction).
	logMax int
	// hz is the engine's commit horizon in a run in one process, or nil.
	hz *horizon
	// ck is the engine's CheckRollbacks record (check only).
	ck rollbackCheck
	// lazies[id] holds LP id's rolled-back outputs in the engine (lazy
	// cancellation only; owned by the LP's worker), and listed[id] says whether LP id is in
	// its worker's holding list (queue.holding).
	lazies []*outputmgr.Lazy
	listed []bool
	// perSend is set with lazy cancellation, CheckRollbacks or Config.RecordSeries (whose
	// Record reads the cause): the engine's workers note each event's key (the
	// cause of its sends) and digest its sends.
	perSend bool
	// hooks is set when an LP has a Commit hook or the configuration a Trace (commit.go);
	// traceMu serialises the workers' calls of the Trace.
	hooks   bool
	traceMu sync.Mutex
}

// Run runs the LPs of s optimistically to its end time, in this process or, with a
// Transport of several ranks, across processes, and returns the run's totals.
func Run(ctx context.Context, s *core.Sim) (core.Stats, error) {
	d, err := newTimeWarp(s)
	if err != nil {
		return core.Stats{}, err
	}
	return d.run(ctx)
}

func newTimeWarp(s *core.Sim) (*timeWarpDispatcher, error) {
	cfg := s.Cfg.TimeWarp.WithDefaults() // validated by core.NewSim
	d := &timeWarpDispatcher{sim: s, cfg: cfg, end: s.Cfg.MaxSimTime,
		gvt: gvt.NewFujimoto(cfg.Workers), passive: termination.NewWorkers(cfg.Workers), lazy: cfg.Cancellation == core.CancelLazy,
		check: cfg.CheckRollbacks, seed: maphash.MakeSeed(), reverse: cfg.StateSaving == core.StateSavingReverse, parkAfter: parkAfter,
		loadWindow: loadWindow, loadCheck: loadCheck}
	d.perSend = d.lazy || d.check || s.Series != nil
	d.hooks = s.Committers != nil || s.Cfg.Trace != nil
	parts := s.Cfg.Partition
	if parts == nil {
		parts = partition.Blocks{}
	}
	if tr := s.Cfg.Transport; tr != nil && tr.Size() > 1 {
		owner, err := partition.Check(parts, len(s.LPs), tr.Size())
		if err != nil {
			return nil, fmt.Errorf("partition LPs among processes: %w", err)
		}
		d.gvt = gvt.NewFujimotoLocal(cfg.Workers + 1) // the workers and the manager
		for i, r := range owner {
			if r == tr.Rank() {
				d.local = append(d.local, LPID(i))
			}
		}
		// Safe events across processes need the engine's one worker per process,
		// reverse computation and a lookahead (see dist.RemoteSafe), and no commit hooks
		// (commit.go); the driver keeps them off on a crowded node (RemoteSafeCrowded).
		safe := !cfg.NoRemoteSafe && d.reverse && cfg.Workers == 1 && s.Lookahead > 0 && !d.hooks
		d.dist = dist.New(s, cfg, tr, owner, d.local, d.gvt, d.passive, safe)
		d.safeW.seen = math.Inf(-1)
	} else {
		d.local = make([]LPID, len(s.LPs))
		for i := range d.local {
			d.local[i] = LPID(i)
		}
	}
	sched, err := partition.Check(parts, len(d.local), cfg.Schedulers)
	if err != nil {
		return nil, fmt.Errorf("partition LPs among schedule queues: %w", err)
	}
	d.addWorkers()
	d.gvt.OnChange(d.onGVTChange)
	if err := d.initQueues(sched, cfg.LockType); err != nil {
		return nil, err
	}
	return d, nil
}

// addWorkers makes the workers (and the manager's, in a run across processes).
func (d *timeWarpDispatcher) addWorkers() {
	cfg, s := d.cfg, d.sim
	depot := new(event.Depot)
	for w := range cfg.Workers {
		wk := &worker{d: d, id: w, tracker: gvt.NewTracker(), pk: parker{wake: make(chan struct{}, 1)}}
		wk.pool.Depot = depot
		wk.ctx = s.NewContext(wk)
		f := wk.frame()
		f.Cause, f.Coasting = &wk.cause, &wk.coasting // for Record (core's series.go)
		f.Scratch = &wk.scratch
		if cfg.Offload != nil {
			wk.off = newOffloader(d) // offload.go
		}
		wk.extra = d.lazy || wk.off != nil
		wk.perEvent = wk.extra
		wk.longest = math.MaxInt
		if d.dist != nil && d.dist.Safe() != nil {
			wk.longest = remoteLowEvery
		}
		d.workers = append(d.workers, wk)
	}
	if d.dist != nil {
		// The manager delivers the events that arrive from other processes as a worker
		// without a schedule queue of its own.
		mw := &worker{d: d, id: cfg.Workers, tracker: gvt.NewTracker()}
		mw.pool.Depot = depot
		mw.ctx = s.NewContext(mw)
		d.mw = mw
	}
}

// fail records the run's first error and stops the workers.
func (d *timeWarpDispatcher) fail(err error) {
	d.errOnce.Do(func() { d.err = err })
	d.stop()
}

// stop ends the run: the workers leave their loops, parked ones woken.
func (d *timeWarpDispatcher) stop() {
	d.done.Store(true)
	d.changed()
	d.wakeAll()
}

// changed bumps every queue's changes (see queue.changes): something that all workers
// must see before their next event changed.
func (d *timeWarpDispatcher) changed() {
	for _, q := range d.queues {
		q.changes.Add(1)
	}
}

// onGVTChange is the [gvt.Fujimoto.OnChange] hook: a round started or ended, or GVT was
// set. Running workers see it through their queues' changes, parked ones are woken
// (park.go).
func (d *timeWarpDispatcher) onGVTChange() {
	d.changed()
	d.wakeAll()
}

// coreOf and setCore move an LP's kernel state to and from its saved form.
func coreOf(r *core.LPRecord) statemgr.Core { return statemgr.Core{RNG: r.RNG, Seq: r.Seq} }

func setCore(r *core.LPRecord, c statemgr.Core) { r.RNG, r.Seq = c.RNG, c.Seq }

func (d *timeWarpDispatcher) run(ctx context.Context) (st core.Stats, err error) {
	if err := d.initLPs(ctx); err != nil {
		return st, err
	}
	made := 0
	for _, p := range d.queues {
		made += p.pend.Len()
	}
	if d.dist != nil {
		var err error
		if made, err = d.dist.Agree(made); err != nil {
			return st, err
		}
	}
	if made == 0 {
		return st, errors.New("no initial events: no LP sent an event from Init, so there is nothing to simulate")
	}

	start, wait0 := time.Now(), osthread.ProcessRunDelay()
	sp := newSampler(d, start, wait0) // nil when sampling is off
	var wg sync.WaitGroup
	if d.grouped() {
		for _, w := range d.workers {
			wg.Go(w.loop)
		}
	} else {
		d.hs = d.newHosts(start)
		hosts := d.hs.hosts
		if d.dist != nil {
			hosts = hosts[1:] // the manager's goroutine runs host 0 (cohost.go)
		}
		for _, h := range hosts {
			wg.Go(h.loop) // host.go
		}
	}
	if d.dist != nil {
		e := &driverEngine{d: d, sp: sp}
		if d.hs != nil {
			e.co = d.newCohost()
			defer e.co.end()
		}
		d.dist.Manage(ctx, start, e)
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
	if d.hooks {
		if err := d.commitRest(); err != nil {
			return st, err
		}
	}
	if sp != nil {
		sp.final(d)
	}
	for i, l := range d.lazies {
		if l != nil && l.Len() > 0 {
			// Cannot happen (see engine.go's comment on lazy cancellation): an LP holding
			// outputs keeps GVT below the end time.
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
		if w.id < len(d.queues) { // the first worker of each queue
			st.PeakPendingEvents += w.q.pend.Peak()
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
	st.FinalTime = d.finalTime()
	st.CPUWaitSeconds = osthread.Since(wait0).Seconds()
	if d.hs != nil {
		st.WorkerThreads = d.hs.meanThreads(start, time.Now())
	} else {
		st.WorkerThreads = float64(d.threads())
	}
	if d.dist != nil {
		return d.dist.Gather(st)
	}
	return st, nil
}

// threads returns the number of threads that run the workers now: the active hosts, or,
// with a goroutine per worker (groups), as many as Go runs at once.
func (d *timeWarpDispatcher) threads() int {
	if d.hs != nil {
		return int(d.hs.active.Load())
	}
	return min(len(d.workers), runtime.GOMAXPROCS(0))
}

// arrangement describes the schedule arrangement of the run (Stats.ScheduleQueues).
func (d *timeWarpDispatcher) arrangement() string {
	if !d.grouped() {
		return d.cfg.QueueType + ", one per worker"
	}
	return fmt.Sprintf("%s, %d shared by %d workers", d.cfg.QueueType, d.cfg.Schedulers, d.cfg.Workers)
}

// initLPs runs every LP's Init and saves its initial state, each queue's LPs on its first
// worker, in parallel (see initEach).
func (d *timeWarpDispatcher) initLPs(ctx context.Context) (err error) {
	s := d.sim
	s.InInit = true
	defer func() { s.InInit = false }()
	return d.initEach(ctx)
}

// initSome runs Init for the LPs ids on worker w and saves their initial states.
func (d *timeWarpDispatcher) initSome(ctx context.Context, w *worker, ids []LPID) (err error) {
	s := d.sim
	defer func() {
		if r := recover(); r != nil {
			err = core.RecoverModel(r, s, w.frame().Self, 0, true)
		}
	}()
	for _, i := range ids {
		if err := core.InitStopped(ctx); err != nil {
			return err
		}
		r := &s.LPs[i]
		core.Enter(&w.ctx, 0, 0, i, r)
		w.cause, w.coasting = event.Key{}, false
		w.initSend = true
		r.Model.Init(&w.ctx)
		w.initSend = false
		if w.frame().Err != nil {
			return w.frame().Err
		}
		if !d.reverse {
			d.base[i] = w.q.save(r)
		}
		if d.check {
			d.ck.base[i] = w.stateDigest(&d.ck.snap[i], r)
			d.ck.saved[i] = d.ck.base[i]
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
			d.fail(context.Cause(ctx))
			return
		case <-ended:
			return
		case <-tick.C:
		}
		d.gvt.Start()
		if s.Cfg.Progress != nil {
			if now := time.Now(); now.Sub(lastProgress) >= s.Cfg.ProgressInterval {
				lastProgress = now
				s.Cfg.Progress(core.Progress{Now: d.gvt.GVT(), EndTime: d.end, EventsProcessed: d.processedSoFar(),
					Elapsed: now.Sub(start)})
			}
		}
		if sp != nil {
			sp.tick(d, time.Now())
		}
	}
}

// loop is the goroutine of a worker of a group (group.go); other workers run on hosts
// (host.go).
func (w *worker) loop() {
	d := w.d
	defer func() {
		if r := recover(); r != nil {
			d.fail(core.RecoverModel(r, d.sim, w.frame().Self, w.frame().Now, false))
		}
	}()
	w.groupLoop()
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
// rounds follow Mattern's token (see package dist), it asks rank 0's manager for one.
func (d *timeWarpDispatcher) startGVT() {
	if d.dist == nil {
		d.gvt.Start()
		return
	}
	d.gvtWanted.Store(true)
}

// limit is the time at and above which no event may be processed now (small enough to be
// inlined: the engine calls it for every event).
func (d *timeWarpDispatcher) limit() Time {
	if d.cfg.OptimismWindow > 0 {
		return d.windowLimit()
	}
	return d.end
}

// windowLimit is limit with an optimism window: at least just above GVT, where the window
// is below GVT's resolution (GVT + W == GVT held back even the events at GVT: a livelock).
func (d *timeWarpDispatcher) windowLimit() Time {
	g := d.gvt.GVT()
	l := g + d.cfg.OptimismWindow
	if l <= g {
		l = math.Nextafter(g, math.Inf(1))
	}
	return math.Min(d.end, l)
}
