package timewarp

import (
	"unsafe"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/prefetch"
	"github.com/warpedgo/warped/statemgr"
)

// collectFossils drops the history log's head below the commit horizon hk (see horizon; GVT's
// time across processes), rolled-back entries and committed ones alike (see commitEntry),
// with their outputs, calling the commit hooks for the committed ones first (commit.go).
func (w *worker) collectFossils(hk event.Key) {
	q := w.q
	q.fossilKey = hk
	if w.d.hooks { // once a collection: nothing an event without hooks
		w.commitHeadHooks(hk)
	}
	n, outTo := 0, q.outs.Base()
	for n < q.hist.Len() {
		h := q.hist.Nth(n)
		if !h.Dead {
			if !committed(&h.Ev, &hk) {
				break
			}
			if !w.d.reverse {
				w.prefetchCommit(n)
			}
			if h.Ev.RecvTime == hk.RecvTime {
				q.atGVT++
			}
			w.commitEntry(h, q.hist.Base()+int64(n), hk.RecvTime)
		}
		outTo = h.OutTo
		n++
	}
	if n == 0 {
		return
	}
	q.hist.DropFront(n)
	if w.d.check {
		q.checks.DropFront(n)
	}
	q.outs.DropTo(outTo)
}

// committed reports whether event e sorts below the commit horizon hk.
func committed(e *event.Event, hk *event.Key) bool { return event.Before(e, hk) }

// prefetchCommit asks, while fossil collection commits log entry n, for what committing
// the entries after it will touch with periodic state saving (their LPs' records and spill
// lists are at random), in two stages: the LP records of entry n+8, and the spill slot of
// entry n+4 (whose list header the stage before asked for).
func (w *worker) prefetchCommit(n int) {
	d, q := w.d, w.q
	if n+8 < q.hist.Len() {
		id := q.hist.Nth(n + 8).Ev.Receiver
		prefetch.Line(unsafe.Pointer(&d.spill[id]))
		prefetch.Line(unsafe.Pointer(&d.lps[id]))
	}
	if n+4 < q.hist.Len() {
		sp := d.spill[q.hist.Nth(n+4).Ev.Receiver]
		if len(sp) < cap(sp) {
			prefetch.Line(unsafe.Pointer(&sp[:len(sp)+1][len(sp)]))
		}
	}
}

// commitEntry does what dropping history entry h (absolute index i), a committed event
// below the commit horizon at time g, requires: with periodic state saving, its saved state
// becomes its LP's base state, or its event moves to the LP's spill list when a rollback
// could still need it for coast forward (the LP has no newer saved state before g; a newer
// one at g may be committed too, and then replaces the spill as it is dropped). An LP's
// entries are dropped oldest first.
func (w *worker) commitEntry(h *statemgr.Entry, i int64, g Time) {
	d, q := w.d, w.q
	if d.check {
		if id := h.Ev.Receiver; d.ck.safeAt[id] < i {
			d.ck.base[id] = q.checks.At(int(i - q.hist.Base())).state
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
				q.hist.Free(old)
			}
			d.base[id], h.Saved = h.Saved, nil
			clear(d.spill[id])
			d.spill[id] = d.spill[id][:0]
		case !(d.lps[id].anchor > i && d.lps[id].anchorTime < g):
			d.spill[id] = append(d.spill[id], h.Ev)
		}
	}
	if h.Ev.RecvTime > q.maxCommitted { // times are never NaN: no need for math.Max
		q.maxCommitted = h.Ev.RecvTime
	}
	if h.Ev.Payload != nil { // a store to every entry would dirty its line again
		h.Ev.Payload = nil
	}
}

// compact drops from anywhere in the history log what fossil collection drops from its
// head only: rolled-back entries and committed ones (below the commit horizon hk, as of the
// last fossil collection), with their outputs ([statemgr.History.Compact] and
// [outputmgr.Log.Keep] do the moving and renumbering): an index that still refers to a
// dropped entry (an LP's last or anchor entry, committed) is then below the log's base,
// which every walk along an LP's entries reads as none, as it does after fossil collection. An LP's
// committed entries all precede its entries above the horizon in the log, so they are
// dropped oldest first, as commitEntry requires.
func (w *worker) compact(hk event.Key) {
	d, q := w.d, w.q
	n := q.hist.Len()
	oldBase, newBase := q.hist.Base(), q.hist.Next()
	q.compactions++
	q.compactPeak = max(q.compactPeak, n)
	q.outs.BeginCompact()
	q.hist.Compact(func(i int64, h *statemgr.Entry) bool {
		if h.Dead || committed(&h.Ev, &hk) {
			if !h.Dead {
				if d.hooks {
					w.commitEntryHooks(h, q.hist.Scratch(i))
				}
				w.commitEntry(h, i, hk.RecvTime)
			}
			return true
		}
		return false
	}, func(h *statemgr.Entry, old, to int64) {
		h.OutFrom, h.OutTo = q.outs.Keep(h.OutFrom, h.OutTo)
		x := &d.lps[h.Ev.Receiver]
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
			*q.checks.At(int(to - newBase)) = *q.checks.At(int(old - oldBase))
		}
	})
	q.outs.EndCompact()
	if d.check {
		q.checks.Truncate(q.hist.Len())
	}
}
