package comm

import (
	"fmt"

	"github.com/warpedgo/warped/event"
)

// Aggregator collects outgoing events per destination rank and turns each destination's
// events into KindEvents messages: a batch is emitted when it holds MaxEvents events or
// its encoding reaches MaxBytes bytes, when the sender's colour changes (a batch has one
// colour), and on Flush or FlushAll (call FlushAll when the workers go idle, so that
// events do not wait for a batch to fill). It encodes each event as it is added, and
// builds each message in a buffer it reuses, so emitting allocates nothing.
//
// An Aggregator is not safe for concurrent use; it belongs to the manager goroutine.
type Aggregator struct {
	// MaxEvents is the most events in one message; 0 or less means no limit.
	MaxEvents int
	// MaxBytes is the most bytes in one message; a single event larger than that is sent
	// alone. 0 or less means no limit.
	MaxBytes int

	codec *Codec
	dests []pending
	out   []byte // the message emit gets, reused: valid until emit returns
}

// pending is one destination's batch under construction: the encoded events.
type pending struct {
	body   []byte
	n      int
	colour uint64
}

// NewAggregator returns an aggregator for ranks destinations that encodes with c.
func NewAggregator(c *Codec, ranks, maxEvents, maxBytes int) *Aggregator {
	return &Aggregator{MaxEvents: maxEvents, MaxBytes: maxBytes, codec: c, dests: make([]pending, ranks)}
}

// Add encodes e into the batch for rank to, sent with the given colour, and calls emit
// for every message that becomes ready (at most two: a batch of the previous colour, and
// the new batch when it is full). A message is valid until emit returns: the aggregator
// reuses its buffer (emit copies it where its transport keeps what it sends). The event
// is copied; e may be reused at once. On error (a payload that cannot be encoded, or a bad
// rank) nothing is added.
func (a *Aggregator) Add(to int, colour uint64, e *event.Event, emit func(to int, msg []byte)) error {
	if to < 0 || to >= len(a.dests) {
		return fmt.Errorf("aggregate event: destination rank %d out of range [0, %d)", to, len(a.dests))
	}
	p := &a.dests[to]
	if p.n > 0 && p.colour != colour {
		a.Flush(to, emit)
	}
	p.colour = colour
	prev := len(p.body)
	body, err := a.codec.appendEvent(p.body, e)
	if err != nil {
		p.body = body[:prev]
		return fmt.Errorf("aggregate event for rank %d: %w", to, err)
	}
	p.body = body
	p.n++
	if a.MaxBytes > 0 && p.n > 1 && batchHeaderLen(colour, p.n)+len(p.body) > a.MaxBytes {
		// The new event does not fit: send the others and keep it.
		emit(to, a.message(p, p.body[:prev], p.n-1))
		p.body = p.body[:copy(p.body, p.body[prev:])]
		p.n = 1
	}
	if (a.MaxEvents > 0 && p.n >= a.MaxEvents) ||
		(a.MaxBytes > 0 && batchHeaderLen(colour, p.n)+len(p.body) >= a.MaxBytes) {
		a.Flush(to, emit)
	}
	return nil
}

// message returns the KindEvents message of the n encoded events in body, in the
// aggregator's buffer (valid until the next message).
func (a *Aggregator) message(p *pending, body []byte, n int) []byte {
	msg := appendBatchHeader(a.out[:0], p.colour, n)
	a.out = append(msg, body...)
	return a.out
}

// Pending returns the number of events waiting for rank to.
func (a *Aggregator) Pending(to int) int { return a.dests[to].n }

// Flush emits the batch waiting for rank to, if any (the message valid until emit returns).
func (a *Aggregator) Flush(to int, emit func(to int, msg []byte)) {
	p := &a.dests[to]
	if p.n == 0 {
		return
	}
	msg := a.message(p, p.body, p.n)
	p.body = p.body[:0]
	p.n = 0
	emit(to, msg)
}

// FlushAll emits every waiting batch, in rank order.
func (a *Aggregator) FlushAll(emit func(to int, msg []byte)) {
	for to := range a.dests {
		a.Flush(to, emit)
	}
}
