package kernel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/ltsf"
)

// Batched event handling on an offload backend (TimeWarpConfig.Offload).
//
// A worker with batching on takes up to its batch size of entries from its schedule queue
// at once (distinct LPs: a queue holds one entry per LP) and claims each LP exactly as the
// unbatched loop does (claim: stragglers and anti-messages roll the LP back first). An
// event whose LP implements Batcher and has a kernel for it is held, with its LP; any other
// event is processed at once with Handle and its LP released. The held events are packed
// into one gpuoffload.Batch per kernel (LP id, time, payload words, the LP's generator and
// PackState's words) and submitted to the backend. While the batch runs, the worker fills
// and submits the next one in its other slot, then waits for the first and commits it:
// each element, in the order taken, goes through processWith, which applies the kernel's
// result (generator, UnpackState, and its outputs sent through the Context like Handle's
// sends) where process would call Handle, so state saving, reverse-computation records,
// sequence numbers, output queues, lazy cancellation and CheckRollbacks' digests are the
// same as for an event handled by Handle. An element that overflowed its output slots, or
// whose batch failed, is processed with Handle instead (the LP's state is untouched until
// then). Each LP is released once its event is committed. Rollback and coast forward always
// use Handle (the kernel is Handle's twin, see Batcher).
//
// Holding LPs across a GVT report would hide their events from it, so a worker finishes its
// batch in flight before it reports, and reports only while it owns no LP, as in the
// unbatched loop. The backend accepts gpuoffload.MaxInFlight batches at once from all the
// workers together; a worker that finds them taken waits for its own batches and then
// runs the batch synchronously (it never blocks for a slot while holding one, so the
// workers cannot deadlock).
//
// The batch size is fixed (BatchSize) or tuned by each worker on its own (gpuoffload.Tuner), and
// with OffloadAuto the tuner may turn batching off while it does not pay. A backend error
// fails the run, or with OffloadAuto turns offload off for every worker (the batches
// concerned are processed with Handle) and leaves a note in Stats.OffloadNote.

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
	// slots are the two batches: one in flight (busy, or -1 for none) while the other is
	// filled.
	slots [2]offSlot
	busy  int
	ids   []LPID
	// popped is takeBatch's scratch for a queue that hands out several entries at once.
	popped []ltsf.Entry
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

// offHeld is an event held for a batch, with its claimed LP (the shared-queue engine),
// or a copy of it (val, the partitioned engine, whose calendar's copy is valid only until
// the next Pop).
type offHeld struct {
	t   *twLP
	id  LPID
	ev  *event.Event
	val event.Event
	k   event.Key
	bt  Batcher
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
	o := &offloader{be: cfg.Offload, fixed: cfg.BatchSize, busy: -1,
		tuning: cfg.BatchSize == 0 || cfg.OffloadAuto}
	o.tune = gpuoffload.NewTuner(cfg.BatchSize, cfg.OffloadAuto, cfg.TuneWindow)
	return o
}

// prepareOffload prepares (compiles, on a GPU) the kernels of the LPs' first pending
// events before the workers start, so that a kernel that does not build is reported at once
// and the first batches have no compile latency. Kernels first met later are prepared by
// the worker that meets them.
func (d *timeWarpDispatcher) prepareOffload() (err error) {
	be := d.cfg.Offload
	if be == nil || d.partitioned() {
		// The partitioned engine's workers prepare each kernel when they first meet it.
		return nil
	}
	var cur LPID
	defer func() {
		if r := recover(); r != nil {
			err = recoverModel(r, d.sim, cur, 0, false)
		}
	}()
	var ks []*gpuoffload.Kernel
	for _, id := range d.local {
		bt, ok := d.sim.lps[id].model.(Batcher)
		if !ok {
			continue
		}
		if ev := d.lps[id].input.Min(); ev != nil {
			cur = id
			if k := bt.BatchKernel(ev); k != nil && !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	for _, k := range ks {
		if err := be.Prepare(k); err != nil {
			return d.offloadError(err)
		}
	}
	for _, w := range d.workers {
		w.off.ready = slices.Clone(ks)
	}
	return nil
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

// offloadStep is one step of the worker loop with an offload backend: it takes a batch of
// events, claims their LPs, submits the batch, and commits the previous one. It returns
// batched = false, having done nothing, while batching is off (the caller then does an
// unbatched step), and ok = false when the run failed.
func (w *worker) offloadStep() (batched, ok bool) {
	o, d := w.off, w.d
	o.tick(w)
	size := o.size(d)
	if size == 0 {
		if o.busy >= 0 {
			return true, w.completeSlot(o.busy)
		}
		return false, true
	}
	if o.busy >= 0 && w.tracker.Due(d.gvt.Round()) {
		// A GVT report must find the worker owning no LP, as in the unbatched loop.
		if !w.completeSlot(o.busy) {
			return true, false
		}
	}
	w.reportGVT()
	o.ids = w.takeBatch(size, o.ids[:0])
	if len(o.ids) == 0 {
		if o.busy >= 0 {
			return true, w.completeSlot(o.busy)
		}
		w.setIdle(true)
		runtime.Gosched()
		return true, true
	}
	s := 0
	if o.busy == 0 {
		s = 1
	}
	if !w.fillSlot(s) {
		return true, false
	}
	if o.busy >= 0 && !w.completeSlot(o.busy) {
		return true, false
	}
	if len(o.slots[s].held) > 0 {
		o.busy = s
	}
	return true, true
}

// takeBatch removes up to n of the least entries below the limit from the worker's schedule
// queue and appends their LPs to ids. Like take, the worker becomes active under the
// queue's lock before it removes the first.
//
// A queue that hands out several least entries at once (ltsf.BatchQueue: the parallel heap)
// gives them in one operation; those at or after the limit go back.
func (w *worker) takeBatch(n int, ids []LPID) []LPID {
	lim := w.d.limit()
	w.sq.lock.Lock()
	if bq, ok := w.sq.q.(ltsf.BatchQueue); ok {
		if k, _, ok := bq.Min(); ok && k.RecvTime < lim {
			w.setIdle(false)
			o := w.off
			o.popped = bq.PopN(o.popped[:0], n)
			for _, e := range o.popped {
				if e.Key.RecvTime >= lim {
					bq.Push(e.Key, e.LP)
					continue
				}
				ids = append(ids, e.LP)
			}
		}
		w.sq.lock.Unlock()
		return ids
	}
	for len(ids) < n {
		k, id, ok := w.sq.q.Min()
		if !ok || k.RecvTime >= lim {
			break
		}
		w.setIdle(false)
		w.sq.q.Pop()
		ids = append(ids, id)
	}
	w.sq.lock.Unlock()
	return ids
}

// fillSlot claims the LPs of o.ids, processes the events that have no batch kernel, and
// packs and submits the others as slot s. It returns false when the run failed.
func (w *worker) fillSlot(s int) bool {
	o, d := w.off, w.d
	sl := &o.slots[s]
	sl.held, sl.n = sl.held[:0], 0
	for _, id := range o.ids {
		t, ev, k, ok := w.claim(id)
		if !ok {
			return false // CheckRollbacks failed the run
		}
		if ev == nil {
			w.release(t, id)
			continue
		}
		kern, bt := w.batchKernel(id, ev)
		if kern == nil {
			w.process(t, id, ev, k)
			if w.ctx.err != nil {
				d.fail(w.ctx.err)
				return false
			}
			w.release(t, id)
			continue
		}
		sl.held = append(sl.held, offHeld{t: t, id: id, ev: ev, k: k, bt: bt, g: int32(sl.group(kern))})
	}
	w.releaseClaimed()
	return w.packSubmit(sl)
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
		r := &d.sim.lps[h.id]
		w.ctx.now, w.ctx.self, w.ctx.lp = h.ev.RecvTime, h.id, r // names the LP if the model panics
		gr.b.Set(i, uint32(h.id), h.ev.RecvTime, r.rng, h.ev.Words)
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
func (w *worker) batchKernel(id LPID, ev *event.Event) (*gpuoffload.Kernel, Batcher) {
	o, d := w.off, w.d
	if d.offload.off.Load() {
		return nil, nil
	}
	bt, ok := d.sim.lps[id].model.(Batcher)
	if !ok {
		return nil, nil
	}
	w.ctx.now, w.ctx.self = ev.RecvTime, id // names the LP if the model panics
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

// submit starts group g's batch on the backend. When the backend has no free slot, the
// worker waits for its own batches and runs g synchronously. It returns false when the
// run failed.
func (w *worker) submit(g *offGroup) bool {
	o := w.off
	p, err := o.be.Submit(g.k, &g.b)
	if errors.Is(err, gpuoffload.ErrBusy) {
		// Blocking for a slot is safe only while this worker holds none.
		if !w.waitOwn() {
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

// waitOwn waits for every batch of the worker in flight, leaving the results to commit.
func (w *worker) waitOwn() bool {
	o := w.off
	for s := range o.slots {
		sl := &o.slots[s]
		for g := range sl.groups[:sl.n] {
			if !w.wait(&sl.groups[g]) {
				return false
			}
		}
	}
	return true
}

// drainOffload waits for the worker's batches in flight when its loop ends, so that none
// is left running on the backend (whatever the outcome: the run is over).
func (w *worker) drainOffload() {
	for s := range w.off.slots {
		sl := &w.off.slots[s]
		for g := range sl.groups[:sl.n] {
			if gr := &sl.groups[g]; gr.p != nil {
				_ = gr.p.Wait()
				gr.p = nil
			}
		}
	}
}

// completeSlot waits for slot s's batches and commits its events in the order taken,
// releasing each LP. It returns false when the run failed.
func (w *worker) completeSlot(s int) bool {
	o, d := w.off, w.d
	if o.busy == s {
		o.busy = -1
	}
	sl := &o.slots[s]
	for g := range sl.groups[:sl.n] {
		if !w.wait(&sl.groups[g]) {
			return false
		}
	}
	for j := range sl.held {
		h := &sl.held[j]
		b, i, ok := w.result(sl, h)
		if !ok {
			return false
		}
		w.processWith(h.t, h.id, h.ev, h.k, b, i)
		if w.ctx.err != nil {
			d.fail(w.ctx.err)
			return false
		}
		w.release(h.t, h.id)
	}
	clear(sl.held)
	sl.held, sl.n = sl.held[:0], 0
	w.releaseClaimed()
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
			"more than its %d output slots without setting Overflow", gr.k.Name, d.sim.nameOf(h.id),
			h.id, n, h.ev.RecvTime, b.OutSlots))
		return nil, 0, false
	}
	o.batched++
	return b, i, true
}

// batchPart is a step of the partitioned engine's loop with batching on (size > 0 the batch
// size; g is GVT): it takes up to size of the worker's least events (cancelled ones count),
// as the loop takes one, stopping early at an event of an LP that already has one in the
// batch, and at a straggler, which it rolls back (step). Of the events taken, those of LPs
// with a batch kernel are held, the others processed at once with Handle; the held ones are
// packed into one batch per kernel, run on the backend, and committed through processPart
// in the order taken. A batch is complete when batchPart returns, so no held event escapes
// a GVT report.
//
// Once an event is held, the events after it are processed out of key order: those
// processed at once before it is committed, and the held ones after the first, which were
// taken before the events that the first one sends. So none of them is safe (see
// updateSafe): each is logged, and a straggler that the batch sends below one rolls it back.
// It returns false when the run failed.
func (w *worker) batchPart(size int, g Time) bool {
	o, d, p := w.off, w.d, w.p
	sl := &o.slots[0]
	sl.held, sl.n = sl.held[:0], 0
	lim := d.limit()
	var safe event.Key // the safe bound before the first event held
	for taken := 0; taken < size; taken++ {
		t, ok := p.cal.Min()
		if !ok || t >= lim || (t > g && (p.ahead >= partAheadEvents || p.hist.Len() >= d.logMax)) {
			break
		}
		if len(p.holding) > 0 && taken > 0 {
			// Lazy cancellation: no event may be processed after a held output's cause
			// before expireHeld has seen it (see the package comment of partitioned.go).
			if mk, _ := p.cal.MinKey(); event.KeyLess(&p.heldMin, &mk) {
				break
			}
		}
		ev := p.cal.Pop()
		id := ev.Receiver
		x := &d.plp[id]
		if x.cancels != 0 {
			// First: pushed back, a cancelled event would take a stamp after its
			// cancellation's (see cancelled).
			if k := event.KeyOf(ev); p.dropCancelled(x, &k, p.cal.PoppedStamp()) {
				continue
			}
		}
		if d.batched[id] {
			p.cal.Push(ev)
			break
		}
		p.ahead++
		if event.Before(ev, &x.lastKey) {
			w.step(ev) // a straggler: the rollback's anti-messages go first
			break
		}
		kern, bt := w.batchKernel(id, ev)
		if kern == nil {
			w.processPart(x, id, ev)
			if w.ctx.err != nil {
				break
			}
			continue
		}
		if len(sl.held) == 0 {
			// From here on, events are processed out of key order: none is safe.
			safe = p.safeBound
			p.safeBound = event.Key{RecvTime: math.Inf(-1)}
		}
		d.batched[id] = true
		sl.held = append(sl.held, offHeld{id: id, val: *ev, k: event.KeyOf(ev), bt: bt, g: int32(sl.group(kern))})
	}
	for j := range sl.held {
		sl.held[j].ev = &sl.held[j].val
	}
	ok := w.ctx.err == nil && w.packSubmit(sl)
	for g := range sl.groups[:sl.n] {
		ok = w.wait(&sl.groups[g]) && ok
	}
	for j := range sl.held {
		h := &sl.held[j]
		d.batched[h.id] = false
		if !ok {
			continue
		}
		b, i, good := w.result(sl, h)
		if ok = good; ok {
			w.batch, w.batchAt = b, i // nil: Handle
			w.processPart(&d.plp[h.id], h.id, h.ev)
			w.batch = nil
			ok = w.ctx.err == nil
		}
	}
	if len(sl.held) > 0 {
		// The safe bound as it was, lowered for the events handed to other workers since
		// (lowerSafe lowered the stand-in bound instead; keyMin has them all).
		p.safeBound = safe
		if c := caused(p.keyMin, d.sim.lookahead); event.KeyLess(&c, &p.safeBound) {
			p.safeBound = c
		}
	}
	clear(sl.held)
	sl.held, sl.n = sl.held[:0], 0
	if w.ctx.err != nil {
		d.fail(w.ctx.err)
		return false
	}
	return ok
}

// applyBatched does what the model's Handle would have for element i of batch b: it sets
// the LP's generator and state from the kernel's results and sends the element's outputs
// (the worker's context is set up for the event, as for Handle).
func (w *worker) applyBatched(r *lpRecord, b *gpuoffload.Batch, i int) {
	if b == &w.stage.marker { // a group's staged event (group.go)
		w.replay(r)
		return
	}
	r.rng = b.Gen(i)
	r.model.(Batcher).UnpackState(b.StateOf(i))
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
// (events processed less events rolled back; see gpuoffload.Tuner.Observe).
func (o *offloader) tick(w *worker) {
	if !o.tuning {
		return
	}
	if o.ticks++; o.ticks < tuneClockEvery && o.busy < 0 && o.tune.Size() == 0 {
		return
	}
	o.ticks = 0
	o.tune.Observe(time.Now(), w.stats.processed, int64(w.stats.processed)-int64(w.stats.rolledBack))
}
