package timewarp

import (
	"fmt"

	"github.com/warpedgo/warped/event"
)

// cancelled is a pending event cancelled by its anti-message, in its LP's list
// (lpState.cancels): its key, and the calendar's stamp when the anti-message came. The
// event stays in the calendar until it is taken, and is then dropped instead of processed.
// Removing it at once would mean searching its calendar bucket, which in a model with many
// events at one time holds thousands: those scans are a measurable share of a PCS run with
// two workers (docs/PERFORMANCE.md). Until it is taken it still counts as pending for GVT
// and the commit horizon, which is only conservative.
//
// The sender's re-execution often sends an event with the same key again (its sequence
// number was rewound), perhaps with other contents, and it may arrive before the cancelled
// one is taken: only an event pushed before the anti-message came (per-pair order puts
// its twin there) is the one cancelled, which the stamps tell.
type cancelled struct {
	k      event.Key
	before uint64 // the queue's stamp (pending.Stamp) when the anti-message came
	next   uint32 // 1 + the index of the LP's next entry (or the next unused one), or 0
}

// cancel records that the pending event with key k of LP record x was cancelled, as of
// calendar stamp before.
func (q *queue) cancel(x *lpState, k event.Key, before uint64) {
	var i uint32
	if q.cancelFree != 0 {
		i = q.cancelFree - 1
		q.cancelFree = q.cancels[i].next
	} else {
		i = uint32(len(q.cancels))
		if i+1 >= seenBit {
			panic("timewarp: more than 2^30 cancelled events wait at once")
		}
		q.cancels = append(q.cancels, cancelled{})
	}
	q.cancels[i] = cancelled{k: k, before: before, next: x.firstCancel()}
	x.cancels = x.cancels&(heldBit|seenBit) | (i + 1)
}

// dropCancelled reports whether the event with key k and calendar stamp stamp just taken
// for LP record x was cancelled by its anti-message, and forgets the cancellation if so.
// Several cancellations may name its key (the event was re-sent and cancelled again): its
// own is the earliest that came after it was pushed.
func (q *queue) dropCancelled(x *lpState, k *event.Key, stamp uint64) bool {
	var best, bestPrev, prev uint32 // 1-based; 0: none
	for i := x.firstCancel(); i != 0; i = q.cancels[i-1].next {
		c := &q.cancels[i-1]
		if c.k == *k && stamp <= c.before && (best == 0 || c.before < q.cancels[best-1].before) {
			best, bestPrev = i, prev
		}
		prev = i
	}
	if best == 0 {
		return false
	}
	next := q.cancels[best-1].next
	if bestPrev == 0 {
		x.cancels = x.cancels&(heldBit|seenBit) | next
	} else {
		q.cancels[bestPrev-1].next = next
	}
	q.cancels[best-1] = cancelled{next: q.cancelFree}
	q.cancelFree = best
	return true
}

// sendAntis sends the anti-message of each event of es (copies of positive events as
// they were sent) and clears es.
func (w *worker) sendAntis(es []event.Event) {
	for j := range es {
		es[j].Anti, es[j].Payload = true, nil
		w.stats.antiSent++
		w.d.deliver(w, &es[j])
		es[j] = event.Event{}
	}
}

// handleAntis handles the anti-messages for the worker's own LPs, including those that
// handling them sends.
func (w *worker) handleAntis() {
	q := w.q
	if w.grp {
		w.handleAntisGroup()
		return
	}
	for i := 0; i < len(q.antis); i++ {
		a := q.antis[i]
		if a.Anti {
			w.handleAnti(&a)
		} else {
			q.pend.Push(&a) // a lazy re-send behind the anti-message of what it replaces
		}
	}
	clear(q.antis)
	q.antis = q.antis[:0]
}

// pushAnti appends e to the anti-message list (antis).
func (q *queue) pushAnti(e *event.Event) { q.antis = append(q.antis, *e) }

// handleAnti handles anti-message a for one of the worker's LPs: when its twin was
// processed, the LP rolls back to the twin, which is dropped; otherwise the twin is
// pending, and is cancelled.
func (w *worker) handleAnti(a *event.Event) {
	q := w.q
	id := a.Receiver
	x := &w.d.lps[id]
	twin := twinKey(event.KeyOf(a))
	if !event.KeyLess(&x.lastKey, &twin) {
		for i := x.last; q.hist.Holds(i); {
			h := q.hist.At(i)
			hk := event.KeyOf(&h.Ev)
			if event.KeyLess(&hk, &twin) {
				break
			}
			if hk == twin {
				w.stats.secondary++
				w.rollback(x, id, twin, true) // false: the run failed, and ends
				return
			}
			i = h.Prev
		}
	}
	// The twin is pending: it is dropped when taken (see cancelled). Per-pair order puts
	// it ahead of its anti-message, so it is in the calendar already.
	if !event.KeyLess(&q.safeHigh, &twin) {
		panic(fmt.Sprintf("kernel: an anti-message for LP %d came for %+v, at or below a safe event %+v", id, twin, q.safeHigh))
	}
	q.cancel(x, twin, q.pend.Stamp())
	w.stats.annihil++
}
