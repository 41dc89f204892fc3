// Package event defines virtual time, logical-process ids, the event envelope and the one
// total order on events that every queue, dispatcher and transport of warped uses.
//
// Virtual time is a float64; +Inf (Infinity) means "never". LPs are addressed by a dense id
// (0..N-1 in the order the LPs were given to the simulation). The total order is: receive
// time, then send time, then sender id, then the sender's send sequence number, and an
// anti-message sorts before its positive twin. Between send time and sender comes Depth, a
// zero-delay generation count: an event sent for the same time as the event that caused it
// gets its cause's depth plus one, and zero otherwise. Without it, a zero-delay event could
// sort before its own cause (when its sender's id is lower than the cause's sender), so a
// sequential run would not process events in increasing order and a time-warp LP would
// process such ties in another order than the sequential one. With it, every event sorts
// after the event that caused it. Because the sequence number is part of the
// sender's rollback-restored kernel state, a re-executed event regenerates exactly the same
// key, so an anti-message and its positive twin are matched by key (Sender, Seq), which is
// unique among the positive events of one run.
package event

import "math"

// Time is virtual (simulated) time.
type Time = float64

// Infinity is the time that is never reached; GVT is Infinity when nothing is pending.
// Read only: a var because Go has no constant for +Inf.
var Infinity = math.Inf(1)

// LPID is the dense id of a logical process: its index in the simulation's LP slice.
type LPID = uint32

// Words is the inline payload of an event: four machine words whose meaning the model
// defines. It travels with the event within and between processes.
type Words [4]uint64

// Event is the envelope of one simulation event (or anti-message).
//
// The kernel owns Event records: it pools and reuses them, so a model must not keep a
// pointer to an Event after its handler returns, and must treat the fields as read-only.
type Event struct {
	// RecvTime is the virtual time at which the receiver processes the event.
	RecvTime Time
	// SendTime is the virtual time of the sender when it sent the event.
	SendTime Time
	// Seq is the sender's send sequence number: the count of events the sender had sent
	// before this one. Together with Sender it identifies the event.
	Seq uint64
	// Payload is the model's data as a Go value registered by name; nil for none.
	// Boxing a non-pointer value in an interface allocates, so models on a hot path
	// carry small data in Words instead.
	Payload any
	// Words is a small payload carried inline in the record: sending it costs nothing.
	// Its meaning is the model's (for example an event kind and a few times or counts).
	Words Words
	// Depth is the zero-delay generation: the cause's Depth+1 when RecvTime equals the
	// cause's receive time, else 0.
	Depth uint32
	// Sender is the id of the sending LP.
	Sender LPID
	// Receiver is the id of the receiving LP.
	Receiver LPID
	// Anti marks an anti-message: it cancels the positive event with the same key.
	Anti bool
}

// Compare orders events totally: receive time, send time, depth, sender, sequence number, and an
// anti-message before its positive twin. It returns -1, 0 or +1. Zero means a and b have
// the same key and sign. NaN times are rejected at send time, so they never reach here.
func Compare(a, b *Event) int {
	switch {
	case a.RecvTime < b.RecvTime:
		return -1
	case a.RecvTime > b.RecvTime:
		return 1
	}
	return compareTail(a, b)
}

// Less reports whether a sorts before b in the total order.
func Less(a, b *Event) bool {
	if a.RecvTime != b.RecvTime {
		return a.RecvTime < b.RecvTime
	}
	return compareTail(a, b) < 0
}

// compareTail compares the keys of two events with equal receive times.
func compareTail(a, b *Event) int {
	switch {
	case a.SendTime < b.SendTime:
		return -1
	case a.SendTime > b.SendTime:
		return 1
	case a.Depth < b.Depth:
		return -1
	case a.Depth > b.Depth:
		return 1
	case a.Sender < b.Sender:
		return -1
	case a.Sender > b.Sender:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	case a.Anti == b.Anti:
		return 0
	case a.Anti:
		return -1
	}
	return 1
}

// Key is an event's whole sort key in a compact form that queues keep inline in their
// entries, so that ordering never touches the event records: integer-time models tie on
// receive time constantly, and comparisons that dereference two scattered records are what
// their queues would otherwise spend their time on. Keys order exactly as Compare orders
// events: lexicographically by RecvTime, SendTime, Depth, Sender and SeqSign.
type Key struct {
	RecvTime Time
	SendTime Time
	Depth    uint32
	Sender   LPID
	// SeqSign is Seq<<1, plus 1 for a positive event, so an anti-message sorts just
	// before its positive twin.
	SeqSign uint64
}

// KeyOf returns e's key.
func KeyOf(e *Event) Key {
	ss := e.Seq << 1
	if !e.Anti {
		ss |= 1
	}
	return Key{RecvTime: e.RecvTime, SendTime: e.SendTime, Depth: e.Depth, Sender: e.Sender, SeqSign: ss}
}

// Set sets k to e's key, as KeyOf(e) but field by field: on a hot path, the compiler builds
// KeyOf's result on the stack and copies it in 16-byte moves, which stall on forwarding
// from the 8-byte stores that just built it.
func (k *Key) Set(e *Event) {
	k.RecvTime, k.SendTime, k.Depth, k.Sender = e.RecvTime, e.SendTime, e.Depth, e.Sender
	k.SeqSign = e.Seq << 1
	if !e.Anti {
		k.SeqSign |= 1
	}
}

// Before reports whether event e sorts before key k, as KeyLess(KeyOf(e), k) without
// building e's key (see Set).
func Before(e *Event, k *Key) bool {
	switch {
	case e.RecvTime != k.RecvTime:
		return e.RecvTime < k.RecvTime
	case e.SendTime != k.SendTime:
		return e.SendTime < k.SendTime
	case e.Depth != k.Depth:
		return e.Depth < k.Depth
	case e.Sender != k.Sender:
		return e.Sender < k.Sender
	}
	ss := e.Seq << 1
	if !e.Anti {
		ss |= 1
	}
	return ss < k.SeqSign
}

// KeyLess reports whether key a sorts before key b.
func KeyLess(a, b *Key) bool {
	if a.RecvTime != b.RecvTime { // the common case first
		return a.RecvTime < b.RecvTime
	}
	if a.SendTime != b.SendTime {
		return a.SendTime < b.SendTime
	}
	if a.Depth != b.Depth {
		return a.Depth < b.Depth
	}
	if a.Sender != b.Sender {
		return a.Sender < b.Sender
	}
	return a.SeqSign < b.SeqSign
}
