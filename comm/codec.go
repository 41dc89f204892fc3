package comm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/warpedgo/warped/event"
)

// Kind is the kind of a kernel message between ranks. It is the first byte of every
// message (a msgpack positive fixint), so PeekKind reads it without decoding the rest.
type Kind uint8

// The kernel message kinds. Zero is not a kind, so a zeroed buffer never decodes.
const (
	// KindEvents carries a *Batch: events and anti-messages for one destination rank.
	KindEvents Kind = iota + 1
	// KindGVTToken carries a *GVTToken: Mattern's GVT token on its ring.
	KindGVTToken
	// KindGVTValue carries a *GVTValue: the GVT of a finished round, broadcast.
	KindGVTValue
	// KindTermToken carries a *TermToken: the termination-detection token on its ring.
	KindTermToken
	// KindTerminate carries a *Terminate: termination was detected; stop.
	KindTerminate
	// KindTQReport carries a *TQReport: one rank's TQ-GVT report for one quantum.
	KindTQReport
	// KindPromise carries a *Promise: a lower bound on the receive times of the events
	// the sender will send the receiver from now on (safe events across processes).
	KindPromise

	kindEnd // one past the last kind
)

var kindNames = [...]string{
	KindEvents:    "events",
	KindGVTToken:  "gvt-token",
	KindGVTValue:  "gvt-value",
	KindTermToken: "term-token",
	KindTerminate: "terminate",
	KindTQReport:  "tq-report",
	KindPromise:   "promise",
}

// String returns the kind's name, or "kind(N)" for a value that is not a kind.
func (k Kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Batch is a KindEvents message: events and anti-messages aggregated for one destination
// rank, all sent while the sender had one GVT colour.
type Batch struct {
	// Events are the events and anti-messages, in the order the sender added them.
	Events []event.Event
	// Colour is the sender's GVT colour when it sent the batch: its Mattern colour (0 or
	// 1), or under TQ-GVT the quantum it sent the batch in. Every event of the batch has
	// this colour; the receiver counts the events received under this colour (not its
	// own current one).
	Colour uint64
}

// TQReport is a KindTQReport message: one rank's report to the TQ-GVT master for the end
// of one of its quanta (gvt.TQReport).
type TQReport struct {
	// Quantum is the quantum that ended.
	Quantum uint64
	// Sent counts the events the rank sent in that quantum; SentMin is their least
	// receive time (+Inf for none).
	Sent    uint64
	SentMin float64
	// Recv counts the events the rank received since its previous report, per sender
	// quantum: pairs (quantum, count).
	Recv [][2]uint64
	// Local is the rank's local minimum at the end of the quantum.
	Local float64
	// NextMin is the least receive time of the events sent in the next quantum so far.
	NextMin float64
}

// Promise is a KindPromise message: what its receiver needs to bound the events its
// sender will still send it (safe events across processes; the argument is in
// docs/DECISIONS.md, "Safe events across processes"). A snapshot is the sender's reading of
// its workers at one instant, after they took in every event counted in Recv.
type Promise struct {
	// ID numbers the sender's snapshot (from 1, rising).
	ID uint64
	// Low is the least receive time of the sender's pending events and of the causes of
	// its held outputs at the snapshot.
	Low float64
	// Recv is the number of events (and anti-messages) the sender had taken in from the
	// receiver at the snapshot.
	Recv uint64
	// Others is the least of the sender's bounds on what ranks other than the receiver
	// could still send it, at the snapshot (+Inf with two ranks).
	Others float64
	// Echo is the ID of the receiver's latest promise that the sender had received (0:
	// none), and Sent the least receive time of the events the sender sent the receiver
	// beyond the Recv count of that promise (+Inf: none).
	Echo uint64
	Sent float64
}

// GVTToken is a KindGVTToken message: the token of Mattern's two-colour GVT algorithm
// with scalar counters, passed around the ring of ranks. Inside each process the local
// minimum comes from the process's own (Fujimoto-style) GVT.
//
// A round turns every rank from the round's white colour to red when the token first
// visits it. Each rank keeps, per colour, the count of events it sent minus the count it
// received with that colour; the token accumulates the white counts. When the token is
// back at the initiator with Count == 0 (after adding the initiator's own count), no
// white event is in transit and GVT = min(Min, RedMin); otherwise it goes round again
// (Lap+1), each rank adding only the change of its white count since its last visit.
type GVTToken struct {
	// Round is the GVT round (epoch) the token belongs to, incremented by the initiator
	// for each new round. Colours alternate with rounds, and a token or GVT value of an
	// older round is recognised as stale by its Round, so a token that overtakes the
	// previous round's GVT broadcast cannot confuse colours.
	Round uint64
	// Lap counts the completed trips of the token around the ring in this round (0 on
	// the first trip); the token keeps circulating until the white count reaches zero.
	Lap uint32
	// Colour is the colour that is white in this round: the colour of events sent before
	// the cut. Ranks switch to the other colour (red) on the token's first visit.
	Colour uint8
	// Count is the sum, over the ranks visited, of white events sent minus white events
	// received (scalar counters, signed because partial sums go negative).
	Count int64
	// Min is the minimum over the visited ranks of their local virtual time estimate
	// (smallest unprocessed or in-process-transit event time); +Inf for none.
	Min float64
	// RedMin is the minimum receive time of the red events sent by the visited ranks
	// since they turned red, taken at the sender; +Inf for none.
	RedMin float64
}

// GVTValue is a KindGVTValue message: the GVT computed in a round, broadcast by the
// initiator so that every rank can commit and collect fossils.
type GVTValue struct {
	// Round is the GVT round the value was computed in.
	Round uint64
	// GVT is the global virtual time; +Inf when nothing is pending anywhere.
	GVT float64
}

// TermToken is a KindTermToken message: Mattern's sticky-flag termination detection on a
// ring with a dynamic initiator, made safe against in-flight events by message counts.
// The run has terminated when a token returns to its initiator with Sticky still true
// and Sent == Received (all sent events were received).
type TermToken struct {
	// Round is the termination wave, incremented whenever a rank starts a new wave; a
	// token of an older wave is stale.
	Round uint64
	// Sent is the sum, over the visited ranks, of the events each has sent to other
	// ranks since the start of the run.
	Sent uint64
	// Received is the sum, over the visited ranks, of the events each has received from
	// other ranks since the start of the run.
	Received uint64
	// Sticky is true while every visited rank was passive at the visit and has stayed
	// passive (received nothing, so its sticky flag stayed set) since the token's
	// previous visit. One active or reactivated rank clears it for the rest of the wave.
	Sticky bool
	// Initiator is the rank that started this wave (the dynamic initiator); the wave
	// ends when the token returns to it.
	Initiator int
}

// Terminate is a KindTerminate message: every rank stops. With an empty Err, termination
// was detected and the ranks gather their results; otherwise the rank that sent it failed
// and Err says why, and every rank ends its run with that error.
type Terminate struct {
	// Err is the failure that stops the run, or empty at a normal end.
	Err string
}

// Codec encodes and decodes kernel messages. It holds the payload Registry and reusable
// encoder, decoder and batch state, so it is not safe for concurrent use: give each
// goroutine (normally only the manager goroutine of a process) its own Codec.
//
// Wire format (msgpack): one byte, the Kind, followed by the body:
//
//	events:     [colour, [event...]]
//	event:      [flags, recv, send, seq, depth, sender, receiver, (name, payload)?, (w0, w1, w2, w3)?]
//	gvt-token:  [round, lap, colour, count, min, redmin]
//	gvt-value:  [round, gvt]
//	tq-report:  [quantum, sent, sentmin, [tag, count, ...], local, nextmin]
//	promise:    [id, low, recv, others, echo, sent]
//	term-token: [round, sent, received, sticky, initiator]
//	terminate:  err (a string, empty at a normal end)
//
// Event flags: 1 anti-message, 2 a payload follows (registered name and msgpack value,
// see Registry.EncodePayload), 4 the four Words follow (omitted when all are zero). Times
// that are whole numbers (other than -0) are written as msgpack integers, which takes 1 to
// 5 bytes for the integer times most models use instead of 9; others as float64. A
// message must be consumed exactly: trailing bytes are an error.
type Codec struct {
	reg   *Registry
	w     appendWriter
	enc   *msgpack.Encoder
	r     bytes.Reader
	cur   []byte // the message being decoded, after the kind byte
	dec   *msgpack.Decoder
	batch Batch
}

// NewCodec returns a codec that encodes payloads with r. With a nil registry only events
// without payload can be encoded or decoded; a payload is then an error that names its
// type.
func NewCodec(r *Registry) *Codec {
	c := &Codec{reg: r}
	c.enc = msgpack.NewEncoder(&c.w)
	c.dec = msgpack.NewDecoder(&c.r)
	return c
}

// appendWriter is the io.Writer the msgpack encoder writes to: it appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *appendWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

// Event flags on the wire.
const (
	flagAnti    = 1
	flagPayload = 2
	flagWords   = 4
	flagsAll    = flagAnti | flagPayload | flagWords

	eventFields = 7 // array elements of an event without payload and words
)

// PeekKind returns the kind of msg without decoding the rest.
func PeekKind(msg []byte) (Kind, error) {
	if len(msg) == 0 {
		return 0, errors.New("decode message: empty message")
	}
	k := Kind(msg[0])
	if k == 0 || k >= kindEnd {
		return 0, fmt.Errorf("decode message: unknown message kind byte 0x%02x", msg[0])
	}
	return k, nil
}
