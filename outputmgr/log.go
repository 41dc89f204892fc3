package outputmgr

import (
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/internal/ring"
)

// logMin is the number of slots a Log's rings start with (a power of two).
const logMin = 1024

// Sent is one send in an output [Log]: what its anti-message needs (the event's key, its
// sender and receiver). Its contents, kept only for lazy cancellation, are a [Contents]
// beside it.
type Sent struct {
	RecvTime, SendTime event.Time
	Seq                uint64
	Depth              uint32
	Sender, Receiver   event.LPID
}

// Anti returns the anti-message of the send.
func (s *Sent) Anti() event.Event {
	return event.Event{RecvTime: s.RecvTime, SendTime: s.SendTime, Seq: s.Seq, Depth: s.Depth,
		Sender: s.Sender, Receiver: s.Receiver, Anti: true}
}

// Contents is what lazy cancellation needs of a send besides its [Sent]: its contents, to
// compare a regenerated send with.
type Contents struct {
	Words   event.Words
	Payload any
}

// Log is a worker's output log: the sends of the events it processed, oldest first, each
// with an absolute index that stays its own while it is in the log (the history log's
// entries delimit their sends by these indexes). Sends are pushed at the back, dropped from
// the front (fossil collection) and moved towards the front by compaction, never removed
// from the back: a rolled-back event's sends stay until fossil collection or compaction
// drops the event. With lazy cancellation the log also keeps each send's [Contents], pushed
// with PushContents for every Push, index for index; otherwise it keeps none. The rings
// start with 1024 slots and double when full. Not safe for concurrent use.
type Log struct {
	sent     ring.Ring[Sent]
	contents ring.Ring[Contents] // empty, or as long as sent
	base     int64               // absolute index of sent.At(0)
	// compaction (BeginCompact): the absolute index of the first kept send, and the number
	// kept so far
	newBase int64
	kept    int
}

// Len returns the number of sends in the log.
func (l *Log) Len() int { return l.sent.N }

// Base returns the absolute index of the oldest send in the log.
func (l *Log) Base() int64 { return l.base }

// Next returns the absolute index the next Push takes.
func (l *Log) Next() int64 { return l.base + int64(l.sent.N) }

// Push appends a send and returns it, holding whatever its slot held: the caller sets
// every field.
func (l *Log) Push() *Sent {
	r := &l.sent // indexed here, not by r.Push: see ring.Ring
	if r.N == len(r.Buf) {
		r.Grow(logMin)
	}
	r.N++
	return &r.Buf[(r.Head+r.N-1)&(len(r.Buf)-1)]
}

// PushContents appends the contents of a send (lazy cancellation), returning them as Push
// does: the log keeps contents for every send or for none.
func (l *Log) PushContents() *Contents {
	r := &l.contents
	if r.N == len(r.Buf) {
		r.Grow(logMin)
	}
	r.N++
	return &r.Buf[(r.Head+r.N-1)&(len(r.Buf)-1)]
}

// At returns the send with absolute index i (Base() <= i < Next()).
func (l *Log) At(i int64) *Sent {
	r := &l.sent
	return &r.Buf[(r.Head+int(i-l.base))&(len(r.Buf)-1)]
}

// ContentsAt returns the contents of the send with absolute index i (lazy cancellation).
func (l *Log) ContentsAt(i int64) *Contents { return l.contents.At(int(i - l.base)) }

// Event returns the positive event of the send with absolute index i with its contents
// (lazy cancellation), and lets the log's copy of the payload go.
func (l *Log) Event(i int64) event.Event {
	s, c := l.At(i), l.ContentsAt(i)
	e := event.Event{RecvTime: s.RecvTime, SendTime: s.SendTime, Seq: s.Seq, Depth: s.Depth,
		Sender: s.Sender, Receiver: s.Receiver, Words: c.Words, Payload: c.Payload}
	c.Payload = nil
	return e
}

// DropTo drops the sends with absolute index below i (Base() <= i <= Next()). The dropped
// sends are not cleared (see ring.Ring.DropFront), but their payloads are let go.
func (l *Log) DropTo(i int64) {
	n := int(i - l.base)
	l.sent.DropFront(n)
	if l.contents.Len() > 0 {
		for j := range n {
			l.contents.At(j).Payload = nil
		}
		l.contents.DropFront(n)
	}
	l.base = i
}

// BeginCompact starts a compaction: the caller then calls Keep for the sends to keep, in
// increasing order, and EndCompact. The kept sends move towards the front in order and are
// renumbered from the absolute index Next() had at BeginCompact, so that an index from
// before the compaction is below Base() after it.
func (l *Log) BeginCompact() { l.newBase, l.kept = l.Next(), 0 }

// Keep keeps the sends with absolute indexes from, from+1, ..., to-1 (after those kept
// so far in this compaction) and returns their new indexes, [newFrom, newTo).
func (l *Log) Keep(from, to int64) (newFrom, newTo int64) {
	newFrom = l.newBase + int64(l.kept)
	withContents := l.contents.Len() > 0
	for o := from; o < to; o++ {
		*l.sent.At(l.kept) = *l.At(o)
		if withContents {
			*l.contents.At(l.kept) = *l.ContentsAt(o)
		}
		l.kept++
	}
	return newFrom, l.newBase + int64(l.kept)
}

// EndCompact ends a compaction: it drops the sends not kept, letting their payloads go.
func (l *Log) EndCompact() {
	if l.contents.Len() > 0 {
		for o := l.kept; o < l.contents.Len(); o++ {
			l.contents.At(o).Payload = nil
		}
		l.contents.Truncate(l.kept)
	}
	l.sent.Truncate(l.kept)
	l.base = l.newBase
}
