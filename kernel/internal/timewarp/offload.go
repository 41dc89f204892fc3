package timewarp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Batched event handling on an offload backend (TimeWarpConfig.Offload).
//
// A worker with batching on takes up to its batch size of its least events at once
// (processBatch, in a worker's own loop; in a group, its staged batch: stageBatches in
// group.go), of distinct LPs, rolling a straggler's LP back as the loop does. An event
// whose LP implements Batcher and has a kernel for it is held; any other is processed at
// once with Handle (in a group, handled with Handle outside the lock). The held events are
// packed into one [gpuoffload.Batch] per kernel (LP id, time, payload words, the LP's
// generator and PackState's words), submitted to the backend, and waited for; each result
// is then committed in the order taken through process, with applyBatched in Handle's
// place (generator, UnpackState, and the outputs sent through the Context like Handle's
// sends), so state saving, reverse-computation records, sequence numbers, output logs,
// lazy cancellation and CheckRollbacks' digests are the same as for an event handled by
// Handle. An element that overflowed its output slots (Overflow set), or whose batch
// failed, is processed with Handle instead (the LP's state is untouched until then); one
// with more outputs than its slots that did not set Overflow fails the run. Rollback and
// coast forward always use Handle (the kernel is Handle's twin, see Batcher).
//
// A batch is complete before the worker reports to a GVT round, so no held event escapes
// a report. The backend accepts [gpuoffload.MaxInFlight] batches at once for each worker's
// lane ([gpuoffload.Options.Lanes]); a worker that finds them taken waits for its own
// batches and then runs the batch synchronously (it never blocks for a slot while holding
// one, so the workers cannot deadlock).
//
// The batch size is fixed (BatchSize) or tuned by each worker on its own
// ([gpuoffload.Tuner]), and with OffloadAuto the tuner may turn batching off while it does
// not pay. A backend error fails the run, or with OffloadAuto turns offload off for every
// worker (the batches concerned are processed with Handle) and leaves a note in
// Stats.OffloadNote.

// offloadShared is what the workers' offloaders share.
type offloadShared struct {
	// off is set once a backend error turned offload off for the rest of the run.
	off atomic.Bool
	// once guards note, which says why (read after the workers are done).
	once sync.Once
	note string
}

// offloader is one worker's batched event handling.
type offloader struct {
	be gpuoffload.Backend
	// fixed is BatchSize (0: tuned); tuning is set when the tuner runs (a tuned size, or
	// OffloadAuto).
	fixed  int
	tuning bool
	tune   gpuoffload.Tuner
	// ticks counts the steps since the tuner last looked at the clock.
	ticks int
	// slot is the batch being formed, run and committed (processBatch).
	slot offSlot
	// ready are the kernels this worker has prepared.
	ready []*gpuoffload.Kernel
	// batched counts the events committed from batch results, batches the backend runs.
	batched, batches uint64
}

// offSlot is one batch: the held events in the order taken, and a group per kernel.
type offSlot struct {
	held   []offHeld
	groups []offGroup
	n      int // groups in use (groups[n:] keep their buffers for later batches)
}

// offHeld is an event held for a batch: a copy of it (val: the calendar's copy is valid
// only until the next Pop), ev pointing at val.
type offHeld struct {
	id  LPID
	ev  *event.Event
	val event.Event
	k   event.Key
	bt  core.Batcher
	g   int32 // its group
	i   int32 // its element in the group's batch
}

// offGroup is the batch of one kernel.
type offGroup struct {
	k     *gpuoffload.Kernel
	b     gpuoffload.Batch
	count int // elements
	// p is the batch in flight, or nil; err is the error of its run.
	p   gpuoffload.Pending
	err error
}

// newOffloader returns the offloader of a worker of d.
func newOffloader(d *timeWarpDispatcher) *offloader {
	cfg := d.cfg
	o := &offloader{be: cfg.Offload, fixed: cfg.BatchSize,
		tuning: cfg.BatchSize == 0 || cfg.OffloadAuto}
	o.tune = gpuoffload.NewTuner(cfg.BatchSize, cfg.OffloadAuto, cfg.TuneWindow)
	return o
}

// offloadError handles a backend error: without OffloadAuto it returns the error that
// fails the run; with it, it turns offload off for the rest of the run and returns nil.
func (d *timeWarpDispatcher) offloadError(err error) error {
	be := d.cfg.Offload
	if !d.cfg.OffloadAuto {
		return fmt.Errorf("gpu offload on %s: %w", be.Name(), err)
	}
	d.offload.once.Do(func() {
		msg := strings.TrimPrefix(err.Error(), "gpuoffload: ")
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		d.offload.note = fmt.Sprintf("gpu offload off: %s failed: %s; the run went on without it", be.Name(), msg)
		d.offload.off.Store(true)
	})
	return nil
}

// offloadFailed handles a backend error in a worker; it returns false when the run failed.
func (w *worker) offloadFailed(err error) bool {
	if e := w.d.offloadError(err); e != nil {
		w.d.fail(e)
		return false
	}
	return true
}

// packSubmit packs the held events of slot sl into one batch per kernel and submits them.
// It returns false when the run failed.
func (w *worker) packSubmit(sl *offSlot) bool {
	d := w.d
	if len(sl.held) == 0 {
		return true
	}
	for g := range sl.groups[:sl.n] {
		gr := &sl.groups[g]
		gr.b.Reset(gr.count, gr.k)
		gr.count = 0 // counts the elements packed below
	}
	for j := range sl.held {
		h := &sl.held[j]
		gr := &sl.groups[h.g]
		i := gr.count
		gr.count++
		h.i = int32(i)
		r := &d.sim.LPs[h.id]
		f := w.frame() // names the LP if the model panics
		f.Now, f.Self, f.LP = h.ev.RecvTime, h.id, &r.LPState
		gr.b.Set(i, uint32(h.id), h.ev.RecvTime, r.RNG, h.ev.Words)
		h.bt.PackState(gr.b.StateOf(i))
	}
	for g := range sl.groups[:sl.n] {
		if !w.submit(&sl.groups[g]) {
			return false
		}
	}
	return true
}

// group returns the index of kernel k's group in the slot, adding it (and counting one
// more element in it).
func (sl *offSlot) group(k *gpuoffload.Kernel) int {
	for g := range sl.groups[:sl.n] {
		if sl.groups[g].k == k {
			sl.groups[g].count++
			return g
		}
	}
	if sl.n == len(sl.groups) {
		sl.groups = append(sl.groups, offGroup{})
	}
	g := sl.n
	sl.n++
	gr := &sl.groups[g]
	gr.k, gr.count, gr.p, gr.err = k, 1, nil, nil
	return g
}

// batchKernel returns the batch kernel for event ev of LP id and the LP as a Batcher, or
// nil when ev is to be handled by Handle. It prepares a kernel the worker has not met yet.
func (w *worker) batchKernel(id LPID, ev *event.Event) (*gpuoffload.Kernel, core.Batcher) {
	o, d := w.off, w.d
	if d.offload.off.Load() {
		return nil, nil
	}
	bt, ok := d.sim.LPs[id].Model.(core.Batcher)
	if !ok {
		return nil, nil
	}
	f := w.frame() // names the LP if the model panics
	f.Now, f.Self = ev.RecvTime, id
	k := bt.BatchKernel(ev)
	if k == nil {
		return nil, nil
	}
	if !slices.Contains(o.ready, k) {
		if err := o.be.Prepare(k); err != nil {
			w.offloadFailed(err)
			return nil, nil
		}
		o.ready = append(o.ready, k)
		o.tune.Restart() // the compile time is no batch size's fault
	}
	return k, bt
}

// waitOwn waits for every batch of the worker in flight but g's, leaving the results to
// commit.
func (w *worker) waitOwn(g *offGroup) bool {
	sl := &w.off.slot
	for i := range sl.groups[:sl.n] {
		if x := &sl.groups[i]; x != g && !w.wait(x) {
			return false
		}
	}
	return true
}

// submit starts group g's batch on the backend. When the backend has no free slot, the
// worker waits for its own batches and runs g synchronously. It returns false when the
// run failed.
func (w *worker) submit(g *offGroup) bool {
	o := w.off
	p, err := o.be.Submit(g.k, &g.b)
	if errors.Is(err, gpuoffload.ErrBusy) {
		// Blocking for a slot is safe only while this worker holds none.
		if !w.waitOwn(g) {
			return false
		}
		err = o.be.Run(g.k, &g.b)
	} else if err == nil {
		g.p = p
	}
	if err != nil {
		g.err = err
		return w.offloadFailed(err)
	}
	o.batches++
	return true
}

// wait waits for group g's batch if it is in flight. It returns false when the run failed.
func (w *worker) wait(g *offGroup) bool {
	if g.p == nil {
		return true
	}
	err := g.p.Wait()
	g.p = nil
	if err != nil {
		g.err = err
		return w.offloadFailed(err)
	}
	return true
}

// result returns the batch and element that hold the result for held event h of slot sl,
// or a nil batch when the event is to be handled with Handle (its element overflowed its
// output slots, or its batch failed). It returns false when the kernel broke its output
// slots' contract, having failed the run.
func (w *worker) result(sl *offSlot, h *offHeld) (*gpuoffload.Batch, int, bool) {
	o, d := w.off, w.d
	gr := &sl.groups[h.g]
	b, i := &gr.b, int(h.i)
	if gr.err != nil || b.Overflow[i] != 0 {
		return nil, 0, true
	}
	if n := b.OutCount[i]; int(n) > b.OutSlots {
		d.fail(fmt.Errorf("gpu offload: kernel %s gave LP %q (id %d) %d output events at time %v, "+
			"more than its %d output slots without setting Overflow", gr.k.Name, d.sim.NameOf(h.id),
			h.id, n, h.ev.RecvTime, b.OutSlots))
		return nil, 0, false
	}
	o.batched++
	return b, i, true
}

// processBatch is a step of the engine's loop with batching on (size > 0 the batch
// size; g is GVT): it takes up to size of the worker's least events (cancelled ones count),
// as the loop takes one, stopping early at an event of an LP that already has one in the
// batch, and at a straggler, which it rolls back. Of the events taken, those of LPs
// with a batch kernel are held, the others processed at once with Handle; the held ones are
// packed into one batch per kernel, run on the backend, and committed through process
// in the order taken. A batch is complete when processBatch returns, so no held event escapes
// a GVT report.
//
// Once an event is held, the events after it are processed out of key order: those
// processed at once before it is committed, and the held ones after the first, which were
// taken before the events that the first one sends. So none of them is safe (see
// updateSafe): each is logged, and a straggler that the batch sends below one rolls it back.
// It returns false when the run failed.
func (w *worker) processBatch(size int, g Time) bool {
	o, d, q := w.off, w.d, w.q
	sl := &o.slot
	sl.held, sl.n = sl.held[:0], 0
	lim := d.limit()
	var safe event.Key // the safe bound before the first event held
	for taken := 0; taken < size; taken++ {
		ev, stop := w.nextTake(lim, g, taken)
		if stop {
			break
		}
		if ev == nil {
			continue // cancelled, and dropped
		}
		id := ev.Receiver
		x := &d.lps[id]
		if x.held() { // already in this batch
			q.pend.Push(ev)
			break
		}
		q.ahead++
		if event.Before(ev, &x.lastKey) {
			w.straggler(x, id, ev) // the rollback's anti-messages go first
			break
		}
		kern, bt := w.batchKernel(id, ev)
		if kern == nil {
			w.process(x, id, ev)
			if w.frame().Err != nil {
				break
			}
			continue
		}
		if len(sl.held) == 0 {
			// From here on, events are processed out of key order: none is safe.
			safe = q.safeBound
			q.safeBound = event.Key{RecvTime: math.Inf(-1)}
		}
		x.setHeld(true)
		sl.held = append(sl.held, offHeld{id: id, val: *ev, k: event.KeyOf(ev), bt: bt, g: int32(sl.group(kern))})
	}
	for j := range sl.held {
		sl.held[j].ev = &sl.held[j].val
	}
	ok := w.frame().Err == nil && w.packSubmit(sl)
	for g := range sl.groups[:sl.n] {
		ok = w.wait(&sl.groups[g]) && ok
	}
	for j := range sl.held {
		h := &sl.held[j]
		d.lps[h.id].setHeld(false)
		if !ok {
			continue
		}
		b, i, good := w.result(sl, h)
		if ok = good; ok {
			w.batch, w.batchAt = b, i // nil: Handle
			w.process(&d.lps[h.id], h.id, h.ev)
			w.batch = nil
			ok = w.frame().Err == nil
		}
	}
	if len(sl.held) > 0 {
		// The safe bound as it was, lowered for the events handed to other workers since
		// (lowerSafe lowered the stand-in bound instead; keyMin has them all).
		q.safeBound = safe
		if c := caused(q.keyMin, d.sim.Lookahead); event.KeyLess(&c, &q.safeBound) {
			q.safeBound = c
		}
	}
	clear(sl.held)
	sl.held, sl.n = sl.held[:0], 0
	if w.frame().Err != nil {
		d.fail(w.frame().Err)
		return false
	}
	return ok
}

// nextTake pops the worker's least pending event for a batch that has popped n events so
// far (processBatch, takeGroup; dropped and set-aside ones count: after any pop, the least
// event is no longer the one housekeep saw), where a host would take it: stop is set when it must not
// (nothing below the limit lim, or beyond GVT g the ahead or log bound, or with lazy
// cancellation a held output's cause first); ev is nil when the event popped was cancelled
// by its anti-message, and dropped.
func (w *worker) nextTake(lim, g Time, n int) (ev *event.Event, stop bool) {
	d, q := w.d, w.q
	t, ok := q.pend.Min()
	if !ok || w.pastLimit(t, lim, g) {
		return nil, true
	}
	if len(q.holding) > 0 && n > 0 {
		// Lazy cancellation: no event may be processed after a held output's cause
		// before expireHeld has seen it (see lazy.go and the comment at the top of engine.go).
		if mk, _ := q.pend.MinKey(); event.KeyLess(&q.heldMin, &mk) {
			return nil, true
		}
	}
	ev = q.pend.Pop()
	if x := &d.lps[ev.Receiver]; x.firstCancel() != 0 {
		// First: put back or set aside, a cancelled event would take a stamp after its
		// cancellation's (see cancelled).
		if k := event.KeyOf(ev); q.dropCancelled(x, &k, q.pend.PoppedStamp()) {
			return nil, false
		}
	}
	return ev, false
}

// applyBatched does what the model's Handle would have for element i of batch b: it sets
// the LP's generator and state from the kernel's results and sends the element's outputs
// (the worker's context is set up for the event, as for Handle).
func (w *worker) applyBatched(r *core.LPRecord, b *gpuoffload.Batch, i int) {
	if b == &w.stage.marker { // a group's staged event (group.go)
		w.replay(r)
		return
	}
	r.RNG = b.Gen(i)
	r.Model.(core.Batcher).UnpackState(b.StateOf(i))
	for s := range int(b.OutCount[i]) {
		to, at, words := b.Out(i, s)
		w.ctx.SendWords(to, at, words)
	}
}

// size returns the batch size to use now; 0 means batching is off.
func (o *offloader) size(d *timeWarpDispatcher) int {
	switch {
	case d.offload.off.Load():
		return 0
	case !o.tuning:
		return o.fixed
	}
	return o.tune.Size()
}

// tuneClockEvery is how many steps the tuner lets pass between looks at the clock while
// batching is off (a step is then one event, too cheap to read the clock each time).
const tuneClockEvery = 16

// tick lets the tuner end its measurement window, feeding it the worker's net event count
// (events processed less events rolled back; see [gpuoffload.Tuner.Observe]).
func (o *offloader) tick(w *worker) {
	if !o.tuning {
		return
	}
	if o.ticks++; o.ticks < tuneClockEvery && o.tune.Size() == 0 {
		return
	}
	o.ticks = 0
	o.tune.Observe(time.Now(), w.stats.processed, int64(w.stats.processed)-int64(w.stats.rolledBack))
}
