package timewarp

import (
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/osthread"
)

// Engine sampling (Config.Sample): a time series of a time-warp run's progress, one row per
// worker at each GVT round (or each interval of wall time).
//
// Workers pay nothing per event: when a worker reports to a GVT round (report),
// which it does anyway, it copies its counters into a sampleCell of atomics of
// its own, and only when sampling is on. The dispatcher's manager goroutine reads the
// cells and calls Config.Sample; at the end of the run it takes a last row per worker from
// the workers' own counters, so the rows of a worker add up to its totals.
//
// The time split (Sample.Idle, Processing, GVTTime, Comm) comes from a phaseClock per
// worker of the engine, and one for the manager of a run across processes. A
// worker's phase is processing but in the parts of its loop that it marks (worker.mark):
// each such part enters its phase and goes back to processing at its end. No mark sits on
// the path of an event that the loop takes with nothing else to do, and a mark tests the
// worker's cell, which is nil when sampling is off (set once before the workers start).
// The clock is read only when the phase changes. A mark before every event, even one that
// tests a local of the loop, would cost every event instructions with sampling off
// (docs/PERFORMANCE.md).

// sampleCell is what a worker publishes for the sampler at each GVT report, alone on its
// cache lines.
type sampleCell struct {
	processed, rolledBack, primary, secondary, anti, safe, batches atomic.Uint64
	pending, history                                               atomic.Int64
	phases                                                         [numPhases]atomic.Int64 // nanoseconds
	_                                                              [56]byte
	// clock is the worker's own (not read by the manager until the workers have ended).
	clock phaseClock
	_     [64]byte
}

// sampleCounts are a worker's cumulative counters as a row reads them.
type sampleCounts struct {
	processed, rolledBack, primary, secondary, anti, safe, batches uint64
	pending, history                                               int64
	phases                                                         [numPhases]int64 // nanoseconds
}

// Phases of the time split (Sample.Idle and the rest).
const (
	phaseIdle = iota
	phaseProcess
	phaseGVT
	phaseComm
	numPhases
)

// phaseClock splits a goroutine's wall time into phases: it charges the time since the
// last change of phase to the phase that ends. A nil clock does nothing (sampling off).
type phaseClock struct {
	start time.Time
	since int64 // nanoseconds from start at the last change
	cur   int
	acc   [numPhases]int64 // nanoseconds
}

// enter makes ph the current phase (nothing when c is nil or ph is current already).
func (c *phaseClock) enter(ph int) {
	if c != nil && c.cur != ph {
		c.change(ph)
	}
}

// change charges the time since the last change to the current phase and enters ph.
func (c *phaseClock) change(ph int) {
	c.flush()
	c.cur = ph
}

// flush charges the time since the last change to the current phase.
func (c *phaseClock) flush() {
	now := int64(time.Since(c.start))
	c.acc[c.cur] += now - c.since
	c.since = now
}

// mark enters phase ph of the worker's time split (the engine's loop; nothing
// when sampling is off).
func (w *worker) mark(ph int) {
	if c := w.cell; c != nil && c.clock.cur != ph {
		c.clock.change(ph)
	}
}

// manager returns the manager's phase clock in a run across processes, or nil when
// sampling is off (sp nil).
func (sp *sampler) manager() *phaseClock {
	if sp == nil {
		return nil
	}
	return &sp.mgr
}

// publish copies the worker's counters into its sample cell (sampling on only).
func (w *worker) publish() {
	c := w.cell
	c.processed.Store(w.stats.processed)
	c.rolledBack.Store(w.stats.rolledBack)
	c.primary.Store(w.stats.primary)
	c.secondary.Store(w.stats.secondary)
	c.anti.Store(w.stats.antiSent)
	c.safe.Store(w.stats.safe)
	if w.off != nil {
		c.batches.Store(w.off.batches)
	}
	c.pending.Store(int64(w.q.pend.Len()))
	c.history.Store(int64(w.q.hist.Len()))
	c.clock.flush()
	for i := range c.phases {
		c.phases[i].Store(c.clock.acc[i])
	}
}

// load reads a sample cell.
func (c *sampleCell) load() sampleCounts {
	sc := sampleCounts{processed: c.processed.Load(), rolledBack: c.rolledBack.Load(),
		primary: c.primary.Load(), secondary: c.secondary.Load(), anti: c.anti.Load(),
		safe: c.safe.Load(), batches: c.batches.Load(), pending: c.pending.Load(),
		history: c.history.Load()}
	for i := range c.phases {
		sc.phases[i] = c.phases[i].Load()
	}
	return sc
}

// countsOf reads worker w's own counters (after the workers have ended).
func countsOf(w *worker) sampleCounts {
	c := sampleCounts{processed: w.stats.processed, rolledBack: w.stats.rolledBack,
		primary: w.stats.primary, secondary: w.stats.secondary, anti: w.stats.antiSent,
		safe: w.stats.safe, pending: int64(w.q.pend.Len()), history: int64(w.q.hist.Len())}
	if w.off != nil {
		c.batches = w.off.batches
	}
	if w.cell != nil {
		// The time since the worker's last change of phase, to the end of the run, is its
		// last phase's.
		w.cell.clock.flush()
		c.phases = w.cell.clock.acc
	}
	return c
}

// sampler is the manager's side of engine sampling.
type sampler struct {
	fn         func(core.Sample)
	realTime   bool
	every      time.Duration
	start      time.Time
	last       time.Time
	lastRounds uint64
	rank       int
	prev       []sampleCounts
	mem        []metrics.Sample
	// mgr is the manager's phase clock and mgrPrev its phases at the previous row (runs
	// across processes).
	mgr     phaseClock
	mgrPrev [numPhases]int64
	// wait0 is the process's run delay at the start (osthread.ProcessRunDelay); wait is
	// the wait since, as read at waitAt (at most every waitPeriod).
	wait0  time.Duration
	wait   time.Duration
	waitAt time.Time
}

// waitPeriod is the least wall time between two reads of the process's run delay for
// rows: a read of /proc costs tens of microseconds a thread, and rounds can come every
// 0.2 ms.
const waitPeriod = 10 * time.Millisecond

// newSampler returns d's sampler, or nil when sampling is off; the run started at start,
// with the process's run delay at wait0. It gives every worker its sample cell, so it
// must be called before the workers start.
func newSampler(d *timeWarpDispatcher, start time.Time, wait0 time.Duration) *sampler {
	cfg := &d.sim.Cfg
	if cfg.Sample == nil {
		return nil
	}
	sp := &sampler{fn: cfg.Sample, realTime: cfg.SampleMode == core.SampleRealTime, every: cfg.SampleInterval,
		start: start, last: start, prev: make([]sampleCounts, len(d.workers)),
		mem: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	sp.wait0, sp.waitAt = wait0, start
	if sp.realTime && sp.every == 0 {
		sp.every = core.DefaultSampleInterval
	}
	if d.dist != nil {
		sp.rank = d.dist.Rank()
	}
	sp.mgr = phaseClock{start: start, cur: phaseIdle}
	cells := make([]sampleCell, len(d.workers))
	for i, w := range d.workers {
		w.cell = &cells[i]
		// Processing: a worker takes its first events without marking a phase (it marks
		// one only when it stops, communicates or reports), and starting idle counted
		// its first stretch, up to its first report, as idle time.
		cells[i].clock = phaseClock{start: start, cur: phaseProcess}
	}
	return sp
}

// tick takes a set of rows if one is due at now (the manager's goroutine).
func (sp *sampler) tick(d *timeWarpDispatcher, now time.Time) {
	if now.Sub(sp.last) < sp.every {
		return
	}
	if !sp.realTime {
		r := d.gvt.Rounds()
		if r == sp.lastRounds {
			return
		}
		sp.lastRounds = r
	}
	sp.last = now
	sp.emit(d, now, false)
}

// final takes the last set of rows from the workers' own counters, once they have ended.
func (sp *sampler) final(d *timeWarpDispatcher) {
	sp.emit(d, time.Now(), true)
}

// emit calls the sampling function once per worker.
func (sp *sampler) emit(d *timeWarpDispatcher, now time.Time, final bool) {
	metrics.Read(sp.mem)
	var mem uint64
	if v := sp.mem[0].Value; v.Kind() == metrics.KindUint64 {
		mem = v.Uint64()
	}
	g := d.gvt.GVT()
	if final || now.Sub(sp.waitAt) >= waitPeriod {
		sp.wait, sp.waitAt = osthread.Since(sp.wait0), now
	}
	threads := d.threads()
	for i, w := range d.workers {
		var c sampleCounts
		if final {
			c = countsOf(w)
		} else {
			c = w.cell.load()
		}
		p := sp.prev[i]
		sp.prev[i] = c
		sp.fn(core.Sample{Elapsed: now.Sub(sp.start), GVT: g, Rank: sp.rank, Worker: i,
			Processed:  c.processed - p.processed,
			Committed:  int64(c.processed-p.processed) - int64(c.rolledBack-p.rolledBack),
			RolledBack: c.rolledBack - p.rolledBack, PrimaryRollbacks: c.primary - p.primary,
			SecondaryRollbacks: c.secondary - p.secondary, AntiMessages: c.anti - p.anti,
			SafeEvents: c.safe - p.safe, PendingEvents: int(c.pending), HistoryLength: int(c.history),
			MemoryBytes: mem, OffloadBatches: c.batches - p.batches, Final: final,
			Idle:       time.Duration(c.phases[phaseIdle] - p.phases[phaseIdle]),
			Processing: time.Duration(c.phases[phaseProcess] - p.phases[phaseProcess]),
			GVTTime:    time.Duration(c.phases[phaseGVT] - p.phases[phaseGVT]),
			Comm:       time.Duration(c.phases[phaseComm] - p.phases[phaseComm]),
			CPUWait:    sp.wait, WorkerThreads: threads})
	}
	if d.dist != nil {
		// The manager's row: emit runs on the manager's goroutine (tick from manage, final
		// after it returned).
		sp.mgr.flush()
		a, p := sp.mgr.acc, sp.mgrPrev
		sp.mgrPrev = a
		sp.fn(core.Sample{Elapsed: now.Sub(sp.start), GVT: g, Rank: sp.rank, Worker: -1,
			PendingEvents: -1, HistoryLength: -1, MemoryBytes: mem, Final: final,
			CPUWait: sp.wait, WorkerThreads: threads,
			Idle:    time.Duration(a[phaseIdle] - p[phaseIdle]),
			GVTTime: time.Duration(a[phaseGVT] - p[phaseGVT]),
			Comm:    time.Duration(a[phaseComm] - p[phaseComm])})
	}
}
