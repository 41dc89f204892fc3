package timewarp

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/canon"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// The rollback check (TimeWarpConfig.CheckRollbacks): each event's digest of the LP's state and sends,
// and the errors that name an LP whose Reverse, Restore or re-execution does not reproduce
// what it did.

// twDigest is what CheckRollbacks records for a processed event: a digest of the LP's
// state after it and one of the sends it made.
type twDigest struct {
	state, sends uint64
}

// reverseError describes an LP whose state after reversing its events from key k differs
// from the state it had before them.
func (d *timeWarpDispatcher) reverseError(id LPID, k event.Key) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after reversing its events from time %v "+
		"(from LP %d, sequence %d): its Reverse does not undo exactly what Handle did",
		d.sim.NameOf(id), id, k.RecvTime, k.Sender, k.SeqSign>>1)
}

// restoreErrorAt describes an LP whose state differs after restoring the saved state that
// at describes.
func (d *timeWarpDispatcher) restoreErrorAt(id LPID, at string) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after restoring %s: its Snapshot "+
		"and Restore do not reproduce the state (do they copy all of it, sharing no memory "+
		"with the live state?)", d.sim.NameOf(id), id, at)
}

// reexecError describes an LP whose state or sends differ after re-executing its event e
// from what they were the first time.
func (d *timeWarpDispatcher) reexecError(id LPID, e *event.Event) error {
	return fmt.Errorf("time-warp check: LP %q (id %d) differs after re-executing its event at "+
		"time %v (from LP %d, sequence %d): the model is not deterministic under re-execution "+
		"(does its handler read anything besides its state, the event and ctx.RNG()?)",
		d.sim.NameOf(id), id, e.RecvTime, e.Sender, e.Seq)
}

// checkTwice is the rollback check's test of a logged event ev of LP record r (lpState x)
// under reverse computation, where a rollback never re-executes an event from the state it
// first had (the straggler that causes the rollback changes that state): at once, it
// reverses the event, which must restore the state the LP had before it (recorded after
// its previous entry prev), and runs it again without sending, which must give the state
// and sends of the first run. It fails the run otherwise. (With periodic state saving,
// rollbacks coast forward from saved states, which checks re-execution.)
func (w *worker) checkTwice(x *lpState, r *core.LPRecord, ev *event.Event, prev int64) {
	d, q := w.d, w.q
	id, h, f := ev.Receiver, q.hist.At(x.last), w.frame()
	if f.Err != nil {
		return // the event failed (a bad send): that is the run's error
	}
	first := *q.checks.At(int(x.last - q.hist.Base()))
	core.Enter(&w.ctx, ev.RecvTime, ev.Depth, id, r)
	f.Scratch = w.scratchOf(q.hist.Scratch(x.last))
	reverseEvent(&w.ctx, r.Model.(core.Reverser), ev, twUndo{draws: h.Draws, seq: r.Seq - uint64(h.OutTo-h.OutFrom)})
	f.Scratch, f.ScratchTouched = &w.scratch, false
	if !w.checkRestored(id, r, prev) {
		d.fail(d.reverseError(id, event.KeyOf(ev)))
		return
	}
	w.sendBytes = w.sendBytes[:0]
	w.coasting = true // digested (worker.Send), not sent
	core.Enter(&w.ctx, ev.RecvTime, ev.Depth, id, r)
	r.Model.Handle(&w.ctx, ev)
	w.coasting = false
	if f.ScratchTouched {
		w.scratch, f.ScratchTouched = event.Words{}, false
	}
	if w.eventDigest(&d.ck.snap[id], r) != first {
		d.fail(d.reexecError(id, ev))
	}
}

// stateDigest digests the current state of LP record r: its generator, sequence number and
// model state (AppendState, or the canonical encoding of a snapshot into *snap, the LP's
// scratch snapshot).
func (w *worker) stateDigest(snap *any, r *core.LPRecord) uint64 {
	b := binary.LittleEndian.AppendUint32(w.stateBytes[:0], r.RNG.D)
	for _, v := range r.RNG.V {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, r.Seq)
	if a, ok := r.Model.(core.StateAppender); ok {
		b = a.AppendState(b)
	} else {
		*snap = r.Model.Snapshot(*snap)
		b = canon.AppendValue(b, *snap)
	}
	w.stateBytes = b
	return maphash.Bytes(w.d.seed, b)
}

// eventDigest is what CheckRollbacks records after an event: the LP's state digest and a
// digest of the sends the handler made (w.sendBytes).
func (w *worker) eventDigest(snap *any, r *core.LPRecord) twDigest {
	return twDigest{state: w.stateDigest(snap, r), sends: maphash.Bytes(w.d.seed, w.sendBytes)}
}

// Send is the worker's sink with CheckRollbacks: it digests the Send (appendSend), checks
// that its payload could cross processes (checkPayload), then passes it to the engine's
// sink (lazySink or sink).
func (w *worker) Send(to, from LPID, depth uint32, seq uint64, at, now Time, ws Words, payload any) {
	if !w.initSend {
		w.appendSend(to, depth, seq, at, ws, payload)
	}
	if payload != nil && w.frame().Err == nil {
		w.checkPayload(from, payload)
	}
	if w.d.lazy {
		(*lazySink)(w).Send(to, from, depth, seq, at, now, ws, payload)
	} else {
		(*sink)(w).Send(to, from, depth, seq, at, now, ws, payload)
	}
}

// checkPayload fails the run (the frame's error) when LP from sends a payload whose type is
// not registered in Config.Payloads: a run in one process passes it by reference, but one
// across processes could not encode it, and a model developed in one process would learn
// it only there.
func (w *worker) checkPayload(from LPID, payload any) {
	if reg := w.d.sim.Cfg.Payloads; reg != nil {
		if _, err := reg.Name(payload); err == nil {
			return
		}
	}
	w.frame().Err = fmt.Errorf("time-warp check: LP %q (id %d) sent a payload of type %T, which is not registered: "+
		"a run across processes could not send it; register the type by name in the configuration's Payloads "+
		"(kernel.Registry), or carry the data in the event's words", w.d.sim.NameOf(from), from, payload)
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
	w.sendBytes = canon.AppendValue(b, payload)
}
