package outputmgr

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

// senderState is the state of the sending LP in the test worlds.
type senderState struct {
	N   uint64 // events processed
	H   uint64 // running hash of their keys
	Seq uint64 // send sequence number (the kernel's, saved with the state)
}

// handler is a sending LP's event handler: it updates the state and emits its sends
// (RecvTime, Receiver, Words, Payload; the world fills in the rest like a kernel would).
type handler func(s *senderState, c event.Key, emit func(e event.Event))

// self is the id of the sending LP; its input events come from other LPs.
const self = 0

// world runs one sending LP like a time-warp worker does, with aggressive or lazy
// cancellation, and keeps the messages live at the receivers: a send adds one, an
// anti-message removes exactly the one it cancels.
type world struct {
	t       *testing.T
	lazy    bool
	h       handler
	log     Log       // the sends, with their contents (kept with aggressive cancellation too, to check)
	recs    []sentRec // the sends of the processed events, in send order
	fossils int       // fossil collections, every third of which compacts the log
	l       *Lazy
	init    senderState
	state   senderState
	proc    []event.Key   // processed, increasing
	states  []senderState // states[i]: after proc[i]
	pending []event.Key   // increasing
	gvt     float64
	live    map[match]event.Event
	buf     []event.Event
	// counters
	sent, cancelled, suppressed int
}

func newWorld(t *testing.T, lazy bool, h handler) *world {
	return &world{t: t, lazy: lazy, h: h, l: NewLazy(), live: map[match]event.Event{}}
}

func keyCmp(a, b event.Key) int {
	switch {
	case event.KeyLess(&a, &b):
		return -1
	case event.KeyLess(&b, &a):
		return 1
	}
	return 0
}

// outputs runs the handler on s for cause c and returns the events it sends.
func outputs(h handler, s *senderState, c event.Key) []event.Event {
	var out []event.Event
	h(s, c, func(e event.Event) {
		e.SendTime = c.RecvTime
		e.Sender = self
		e.Seq = s.Seq
		s.Seq++
		if e.RecvTime == c.RecvTime {
			e.Depth = c.Depth + 1
		}
		out = append(out, e)
	})
	return out
}

func (w *world) send(e event.Event) {
	m := matchOf(&e)
	if _, dup := w.live[m]; dup { // plain checks on the hot paths: require is slow
		w.t.Fatalf("two live messages with key %+v at receiver %d", m.key, m.receiver)
	}
	w.live[m] = e
	w.sent++
}

func (w *world) cancel(es []event.Event) {
	for _, e := range es {
		m := matchOf(&e)
		got, ok := w.live[m]
		if !ok {
			w.t.Fatalf("anti-message for %+v, which is not live (double cancel?)", e)
		}
		if !identical(&got, &e) {
			w.t.Fatalf("the anti-message %+v does not match the live message %+v", e, got)
		}
		if e.RecvTime < w.gvt {
			w.t.Fatalf("anti-message at %v below GVT %v", e.RecvTime, w.gvt)
		}
		delete(w.live, m)
		w.cancelled++
	}
}

// process processes the earliest pending event.
func (w *world) process() {
	c := w.pending[0]
	w.pending = w.pending[1:]
	if w.lazy { // harmless: the last reschedule expired up to c or further
		w.cancel(w.l.Expire(c, w.buf[:0]))
	}
	for _, e := range outputs(w.h, &w.state, c) {
		w.record(c, &e)
		suppress := false
		if w.lazy {
			var cancels []event.Event
			cancels, suppress = w.l.Regenerated(c, &e, w.buf[:0])
			w.cancel(cancels)
		}
		if suppress {
			w.suppressed++
		} else {
			w.send(e)
		}
	}
	w.proc = append(w.proc, c)
	w.states = append(w.states, w.state)
	w.reschedule()
}

// reschedule is lazy cancellation's step 3: expire the held outputs below the LP's earliest
// pending event, or drain them when it has none.
func (w *world) reschedule() {
	if !w.lazy {
		return
	}
	if len(w.pending) == 0 {
		w.cancel(w.l.Drain(w.buf[:0]))
	} else {
		w.cancel(w.l.Expire(w.pending[0], w.buf[:0]))
	}
}

// rollback undoes the processed events with keys >= k and returns them.
func (w *world) rollback(k event.Key) []event.Key {
	if k.RecvTime < w.gvt {
		w.t.Fatalf("rollback to %v below GVT %v", k.RecvTime, w.gvt)
	}
	i, _ := slices.BinarySearchFunc(w.proc, k, keyCmp)
	undone := slices.Clone(w.proc[i:])
	w.proc, w.states = w.proc[:i], w.states[:i]
	w.state = w.init
	if i > 0 {
		w.state = w.states[i-1]
	}
	j := len(w.recs)
	for j > 0 && !event.KeyLess(&w.recs[j-1].cause, &k) {
		j--
	}
	gone := w.recs[j:]
	w.recs = w.recs[:j] // their sends stay in the log, unreachable, until it drops them
	if w.lazy {
		var ev event.Event
		w.l.Hold(len(gone), func(j int) (event.Key, *event.Event) {
			ev = w.log.Event(gone[j].at)
			return gone[j].cause, &ev
		})
	} else {
		antis := w.buf[:0]
		for _, r := range gone {
			a, e := w.log.At(r.at).Anti(), w.log.Event(r.at)
			want := e // the anti-message: the key, sender and receiver, without the contents
			want.Words, want.Payload, want.Anti = event.Words{}, nil, true
			if a != want {
				w.t.Fatalf("the anti-message %+v is not that of %+v", a, e)
			}
			antis = append(antis, e)
		}
		w.cancel(antis)
	}
	return undone
}

// sentRec is a send of a processed event: its cause and its absolute index in the log.
type sentRec struct {
	cause event.Key
	at    int64
}

// record logs a send of the event with key c, as the kernel does.
func (w *world) record(c event.Key, e *event.Event) {
	*w.log.Push() = Sent{RecvTime: e.RecvTime, SendTime: e.SendTime, Seq: e.Seq, Depth: e.Depth,
		Sender: e.Sender, Receiver: e.Receiver}
	*w.log.PushContents() = Contents{Words: e.Words, Payload: e.Payload}
	w.recs = append(w.recs, sentRec{c, w.log.Next() - 1})
}

func (w *world) last() (event.Key, bool) {
	if len(w.proc) == 0 {
		return event.Key{}, false
	}
	return w.proc[len(w.proc)-1], true
}

// requeue inserts keys (increasing) into the pending events.
func (w *world) requeue(keys []event.Key) {
	for _, k := range keys {
		i, _ := slices.BinarySearchFunc(w.pending, k, keyCmp)
		w.pending = slices.Insert(w.pending, i, k)
	}
}

// arrive delivers a positive event with key k (a straggler when below the last processed).
func (w *world) arrive(k event.Key) {
	if last, ok := w.last(); ok && event.KeyLess(&k, &last) {
		w.requeue(w.rollback(k))
	}
	w.requeue([]event.Key{k})
	w.reschedule()
}

// antiProcessed delivers the anti-message of the processed event k.
func (w *world) antiProcessed(k event.Key) {
	undone := w.rollback(k)
	require.Equal(w.t, k, undone[0])
	w.requeue(undone[1:])
	w.reschedule()
}

// antiPending annihilates a pending event.
func (w *world) antiPending(i int) {
	w.pending = slices.Delete(w.pending, i, i+1)
	w.reschedule()
}

// fossil sets GVT to g and fossil collects.
func (w *world) fossil(g float64) {
	require.GreaterOrEqual(w.t, g, w.gvt)
	w.gvt = g
	n := 0
	for n < len(w.recs) && w.recs[n].cause.RecvTime < g {
		n++
	}
	to := w.log.Next()
	if n < len(w.recs) {
		to = w.recs[n].at
	}
	w.log.DropTo(to)
	w.recs = w.recs[n:]
	if w.fossils++; w.fossils%3 == 0 {
		w.log.BeginCompact()
		for i := range w.recs {
			w.recs[i].at, _ = w.log.Keep(w.recs[i].at, w.recs[i].at+1)
		}
		w.log.EndCompact()
		require.Equal(w.t, len(w.recs), w.log.Len())
	}
}

// maxGVT is the largest GVT the LP allows: its earliest pending event, and with lazy
// cancellation the earliest held output.
func (w *world) maxGVT() float64 {
	g := math.Inf(1)
	if len(w.pending) > 0 {
		g = w.pending[0].RecvTime
	}
	if w.lazy {
		g = min(g, w.l.MinRecvTime())
	}
	return g
}

func (w *world) runAll() {
	for len(w.pending) > 0 {
		w.process()
	}
}

// check verifies that the live messages are exactly those a run without rollbacks sends.
func (w *world) check() {
	require.Zero(w.t, w.l.Len())
	want := map[match]event.Event{}
	s := w.init
	for _, c := range w.proc {
		for _, e := range outputs(w.h, &s, c) {
			want[matchOf(&e)] = e
		}
	}
	require.Equal(w.t, want, w.live)
	// Every send of a processed event still in the log is a live message.
	for _, r := range w.recs {
		s, c := w.log.At(r.at), w.log.ContentsAt(r.at)
		e := event.Event{RecvTime: s.RecvTime, SendTime: s.SendTime, Seq: s.Seq, Depth: s.Depth,
			Sender: s.Sender, Receiver: s.Receiver, Words: c.Words, Payload: c.Payload}
		require.Equal(w.t, w.live[matchOf(&e)], e)
	}
}
