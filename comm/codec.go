package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

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

// AppendBatch appends the KindEvents encoding of b to dst. On error (a payload that
// cannot be encoded) it returns dst unchanged and an error that names the event.
func (c *Codec) AppendBatch(dst []byte, b *Batch) ([]byte, error) {
	start := len(dst)
	dst = appendBatchHeader(dst, b.Colour, len(b.Events))
	for i := range b.Events {
		var err error
		dst, err = c.appendEvent(dst, &b.Events[i])
		if err != nil {
			return dst[:start], fmt.Errorf("encode events message: event %d of %d: %w", i, len(b.Events), err)
		}
	}
	return dst, nil
}

// appendBatchHeader appends what precedes the events of a batch of n events.
func appendBatchHeader(dst []byte, colour uint64, n int) []byte {
	dst = append(dst, byte(KindEvents))
	dst = appendArrayLen(dst, 2)
	dst = appendUint(dst, colour)
	return appendArrayLen(dst, n)
}

// batchHeaderLen is len(appendBatchHeader(nil, colour, n)).
func batchHeaderLen(colour uint64, n int) int {
	return 2 + uintLen(colour) + arrayLenLen(n)
}

// appendEvent appends one event (an array, see Codec).
func (c *Codec) appendEvent(dst []byte, e *event.Event) ([]byte, error) {
	var flags uint8
	fields := eventFields
	if e.Anti {
		flags |= flagAnti
	}
	if e.Payload != nil {
		if c.reg == nil {
			return dst, fmt.Errorf("payload of type %T cannot be encoded: the codec has no payload registry", e.Payload)
		}
		flags |= flagPayload
		fields += 2
	}
	if e.Words != (event.Words{}) {
		flags |= flagWords
		fields += 4
	}
	dst = appendArrayLen(dst, fields)
	dst = append(dst, flags) // a positive fixint
	dst = appendTime(dst, e.RecvTime)
	dst = appendTime(dst, e.SendTime)
	dst = appendUint(dst, e.Seq)
	dst = appendUint(dst, uint64(e.Depth))
	dst = appendUint(dst, uint64(e.Sender))
	dst = appendUint(dst, uint64(e.Receiver))
	if flags&flagPayload != 0 {
		c.w.b = dst
		err := c.reg.EncodePayload(c.enc, e.Payload)
		dst = c.w.b
		c.w.b = nil
		if err != nil {
			return dst, err
		}
	}
	if flags&flagWords != 0 {
		for _, w := range e.Words {
			dst = appendUint(dst, w)
		}
	}
	return dst, nil
}

// AppendGVTToken appends the KindGVTToken encoding of t to dst.
func (c *Codec) AppendGVTToken(dst []byte, t *GVTToken) []byte {
	dst = append(dst, byte(KindGVTToken))
	dst = appendArrayLen(dst, 6)
	dst = appendUint(dst, t.Round)
	dst = appendUint(dst, uint64(t.Lap))
	dst = appendUint(dst, uint64(t.Colour))
	dst = appendInt(dst, t.Count)
	dst = appendTime(dst, t.Min)
	return appendTime(dst, t.RedMin)
}

// AppendGVTValue appends the KindGVTValue encoding of v to dst.
func (c *Codec) AppendGVTValue(dst []byte, v *GVTValue) []byte {
	dst = append(dst, byte(KindGVTValue))
	dst = appendArrayLen(dst, 2)
	dst = appendUint(dst, v.Round)
	return appendTime(dst, v.GVT)
}

// AppendTQReport appends the KindTQReport encoding of r to dst.
func (c *Codec) AppendTQReport(dst []byte, r *TQReport) []byte {
	dst = append(dst, byte(KindTQReport))
	dst = appendArrayLen(dst, 6)
	dst = appendUint(dst, r.Quantum)
	dst = appendUint(dst, r.Sent)
	dst = appendTime(dst, r.SentMin)
	dst = appendArrayLen(dst, 2*len(r.Recv))
	for _, p := range r.Recv {
		dst = appendUint(dst, p[0])
		dst = appendUint(dst, p[1])
	}
	dst = appendTime(dst, r.Local)
	return appendTime(dst, r.NextMin)
}

// AppendPromise appends the KindPromise encoding of p to dst.
func (c *Codec) AppendPromise(dst []byte, p *Promise) []byte {
	dst = append(dst, byte(KindPromise))
	dst = appendArrayLen(dst, 6)
	dst = appendUint(dst, p.ID)
	dst = appendTime(dst, p.Low)
	dst = appendUint(dst, p.Recv)
	dst = appendTime(dst, p.Others)
	dst = appendUint(dst, p.Echo)
	return appendTime(dst, p.Sent)
}

// AppendTermToken appends the KindTermToken encoding of t to dst.
func (c *Codec) AppendTermToken(dst []byte, t *TermToken) []byte {
	dst = append(dst, byte(KindTermToken))
	dst = appendArrayLen(dst, 5)
	dst = appendUint(dst, t.Round)
	dst = appendUint(dst, t.Sent)
	dst = appendUint(dst, t.Received)
	dst = appendBool(dst, t.Sticky)
	return appendInt(dst, int64(t.Initiator))
}

// AppendTerminate appends the KindTerminate encoding of t to dst.
func (c *Codec) AppendTerminate(dst []byte, t *Terminate) []byte {
	dst = append(dst, byte(KindTerminate))
	return appendString(dst, t.Err)
}

// Decode decodes one message and returns its kind and value: *Batch, *GVTToken,
// *GVTValue, *TermToken, *Terminate, *TQReport or *Promise.
//
// The *Batch returned for KindEvents belongs to the Codec: it and its Events slice are
// reused (overwritten) by the next Decode of a KindEvents message, so copy the events
// out (they are plain values) before decoding again. Every other value is freshly
// allocated and belongs to the caller. Payloads are always fresh values.
//
// Malformed, truncated or over-long input gives an error, never a panic: the decoder
// checks every length against the bytes that remain before it allocates. msg is only
// read, and nothing returned aliases it.
func (c *Codec) Decode(msg []byte) (Kind, any, error) {
	k, err := PeekKind(msg)
	if err != nil {
		return 0, nil, err
	}
	if k == KindEvents {
		if b, ok := c.decodeBatchFast(msg[1:]); ok {
			return k, b, nil
		}
	}
	c.cur = msg[1:]
	c.r.Reset(c.cur)
	c.dec.ResetReader(&c.r)
	var v any
	switch k {
	case KindEvents:
		v, err = c.decodeBatch()
	case KindGVTToken:
		v, err = c.decodeGVTToken()
	case KindGVTValue:
		v, err = c.decodeGVTValue()
	case KindTermToken:
		v, err = c.decodeTermToken()
	case KindTerminate:
		var msg string
		if _, err = checkValues(c.rest(), 1); err == nil {
			msg, err = c.dec.DecodeString()
		}
		if err != nil {
			err = fmt.Errorf("error text: %w", err)
		}
		v = &Terminate{Err: msg}
	case KindTQReport:
		v, err = c.decodeTQReport()
	case KindPromise:
		v, err = c.decodePromise()
	}
	if err == nil && c.r.Len() != 0 {
		err = fmt.Errorf("%d trailing bytes", c.r.Len())
	}
	c.r.Reset(nil) // do not keep msg alive
	c.cur = nil
	if err != nil {
		return 0, nil, fmt.Errorf("decode %s message: %w", k, err)
	}
	return k, v, nil
}

// arrayLen reads an array header and checks that it has want elements.
func (c *Codec) arrayLen(want int) error {
	n, err := c.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("array of %d elements, want %d", n, want)
	}
	return nil
}

// uint reads an unsigned integer of at most max.
func (c *Codec) uint(what string, max uint64) (uint64, error) {
	v, err := c.dec.DecodeUint64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if v > max {
		return 0, fmt.Errorf("%s: %d out of range (max %d)", what, v, max)
	}
	return v, nil
}

// time reads a time (an integer or a float).
func (c *Codec) time(what string) (float64, error) {
	v, err := c.dec.DecodeFloat64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// decodeBatchFast decodes the body of a KindEvents message (after the kind byte) by
// reading its bytes directly, for the common case that decodeBatch, with the msgpack
// decoder's call per value, spent most of its time on: events without payloads, their
// values in the forms AppendBatch writes (unsigned integers for counts and numbers,
// integers or float64 for times). On anything else, or anything wrong, it reports false,
// and Decode decodes the message with decodeBatch, which then says what is wrong. It
// decodes exactly what decodeBatch would: FuzzDecode compares the two.
func (c *Codec) decodeBatchFast(body []byte) (*Batch, bool) {
	r := fastReader{b: body, ok: true}
	if r.arrayLen() != 2 {
		return nil, false
	}
	colour := r.uint()
	n := r.arrayLen()
	if !r.ok || n > len(r.b)/(eventFields+1) {
		return nil, false
	}
	b := &c.batch
	clear(b.Events) // drop old payloads
	b.Events = slices.Grow(b.Events[:0], n)[:n]
	b.Colour = colour
	for i := range b.Events {
		e := &b.Events[i]
		fields := r.arrayLen()
		flags := r.uint()
		want := eventFields
		if flags&flagWords != 0 {
			want += 4
		}
		if flags > flagsAll || flags&flagPayload != 0 || fields != want {
			return nil, false
		}
		e.Anti, e.Payload = flags&flagAnti != 0, nil
		e.RecvTime = r.time()
		e.SendTime = r.time()
		e.Seq = r.uint()
		depth, sender, receiver := r.uint(), r.uint(), r.uint()
		if depth > math.MaxUint32 || sender > math.MaxUint32 || receiver > math.MaxUint32 {
			return nil, false
		}
		e.Depth, e.Sender, e.Receiver = uint32(depth), event.LPID(sender), event.LPID(receiver)
		e.Words = event.Words{}
		if flags&flagWords != 0 {
			for w := range e.Words {
				e.Words[w] = r.uint()
			}
		}
	}
	if !r.ok || r.pos != len(r.b) {
		return nil, false
	}
	return b, true
}

// fastReader reads msgpack values from b at pos, for decodeBatchFast: a value in any
// other form than those it reads, or past the end, sets ok false (and reads as 0).
type fastReader struct {
	b   []byte
	pos int
	ok  bool
}

// bytes returns the next n bytes, or nil (and ok false) when fewer remain.
func (r *fastReader) bytes(n int) []byte {
	if !r.ok || len(r.b)-r.pos < n {
		r.ok = false
		return nil
	}
	p := r.b[r.pos : r.pos+n]
	r.pos += n
	return p
}

// code returns the next byte, or 0 (and ok false) past the end.
func (r *fastReader) code() byte {
	if p := r.bytes(1); p != nil {
		return p[0]
	}
	return 0
}

// body reads the n (1, 2, 4 or 8) bytes after a code as a big-endian number, or 0 (and ok
// false) when fewer remain.
func (r *fastReader) body(n int) uint64 {
	p := r.bytes(n)
	switch len(p) {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(p))
	case 4:
		return uint64(binary.BigEndian.Uint32(p))
	case 8:
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// arrayLen reads an array header.
func (r *fastReader) arrayLen() int {
	switch c := r.code(); {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f)
	case c == 0xdc:
		return int(r.body(2))
	case c == 0xdd:
		return int(r.body(4))
	}
	r.ok = false
	return 0
}

// uint reads an unsigned integer (a positive fixint or uint 8 to 64: 0xcc to 0xcf).
func (r *fastReader) uint() uint64 {
	switch c := r.code(); {
	case c < 0x80:
		return uint64(c)
	case c >= 0xcc && c <= 0xcf:
		return r.body(1 << (c - 0xcc))
	}
	r.ok = false
	return 0
}

// time reads a time: a float64, or an integer, converted as the msgpack decoder's
// DecodeFloat64 converts it (through int64).
func (r *fastReader) time() float64 {
	switch c := r.code(); {
	case c < 0x80:
		return float64(c)
	case c >= 0xe0: // negative fixint
		return float64(int8(c))
	case c == 0xcb:
		return math.Float64frombits(r.body(8))
	case c >= 0xcc && c <= 0xcf: // uint 8 to 64
		return float64(int64(r.body(1 << (c - 0xcc))))
	case c >= 0xd0 && c <= 0xd3: // int 8 to 64, sign-extended
		n := 1 << (c - 0xd0)
		shift := 64 - 8*n
		return float64(int64(r.body(n)<<shift) >> shift)
	}
	r.ok = false
	return 0
}

func (c *Codec) decodeBatch() (*Batch, error) {
	if err := c.arrayLen(2); err != nil {
		return nil, err
	}
	colour, err := c.uint("colour", math.MaxUint64)
	if err != nil {
		return nil, err
	}
	n, err := c.dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	// Every event takes at least eventFields+1 bytes (header and one byte per field).
	if n < 0 || n > c.r.Len()/(eventFields+1) {
		return nil, fmt.Errorf("header claims %d events but only %d bytes remain", n, c.r.Len())
	}
	b := &c.batch
	clear(b.Events) // drop old payloads
	b.Events = slices.Grow(b.Events[:0], n)[:n]
	b.Colour = colour
	for i := range b.Events {
		if err := c.decodeEvent(&b.Events[i]); err != nil {
			clear(b.Events)
			b.Events = b.Events[:0]
			return nil, fmt.Errorf("event %d of %d: %w", i, n, err)
		}
	}
	return b, nil
}

func (c *Codec) decodeEvent(e *event.Event) error {
	fields, err := c.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	flags, err := c.uint("flags", flagsAll)
	if err != nil {
		return err
	}
	want := eventFields
	if flags&flagPayload != 0 {
		want += 2
	}
	if flags&flagWords != 0 {
		want += 4
	}
	if fields != want {
		return fmt.Errorf("array of %d elements, flags 0x%x want %d", fields, flags, want)
	}
	*e = event.Event{Anti: flags&flagAnti != 0}
	if e.RecvTime, err = c.time("receive time"); err != nil {
		return err
	}
	if e.SendTime, err = c.time("send time"); err != nil {
		return err
	}
	if e.Seq, err = c.uint("seq", math.MaxUint64); err != nil {
		return err
	}
	var v uint64
	if v, err = c.uint("depth", math.MaxUint32); err != nil {
		return err
	}
	e.Depth = uint32(v)
	if v, err = c.uint("sender", math.MaxUint32); err != nil {
		return err
	}
	e.Sender = event.LPID(v)
	if v, err = c.uint("receiver", math.MaxUint32); err != nil {
		return err
	}
	e.Receiver = event.LPID(v)
	if flags&flagPayload != 0 {
		if c.reg == nil {
			name, _ := c.dec.DecodeString()
			return fmt.Errorf("payload %q cannot be decoded: the codec has no payload registry", name)
		}
		// Check the payload's structure first: the msgpack library allocates a []byte
		// field's declared length before it reads, whatever remains of the message.
		if _, err := checkValues(c.rest(), 2); err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		p, err := c.reg.DecodePayload(c.dec)
		if err != nil {
			return err
		}
		if p == nil {
			return errors.New("payload flag set but the payload name is empty")
		}
		e.Payload = p
	}
	if flags&flagWords != 0 {
		for i := range e.Words {
			if e.Words[i], err = c.uint("words", math.MaxUint64); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Codec) decodeGVTToken() (*GVTToken, error) {
	if err := c.arrayLen(6); err != nil {
		return nil, err
	}
	t := &GVTToken{}
	var err error
	var v uint64
	if t.Round, err = c.uint("round", math.MaxUint64); err != nil {
		return nil, err
	}
	if v, err = c.uint("lap", math.MaxUint32); err != nil {
		return nil, err
	}
	t.Lap = uint32(v)
	if v, err = c.uint("colour", math.MaxUint8); err != nil {
		return nil, err
	}
	t.Colour = uint8(v)
	if t.Count, err = c.dec.DecodeInt64(); err != nil {
		return nil, fmt.Errorf("count: %w", err)
	}
	if t.Min, err = c.time("min"); err != nil {
		return nil, err
	}
	if t.RedMin, err = c.time("red min"); err != nil {
		return nil, err
	}
	return t, nil
}

func (c *Codec) decodeTQReport() (*TQReport, error) {
	if err := c.arrayLen(6); err != nil {
		return nil, err
	}
	r := &TQReport{}
	var err error
	if r.Quantum, err = c.uint("quantum", math.MaxUint64); err != nil {
		return nil, err
	}
	if r.Sent, err = c.uint("sent", math.MaxUint64); err != nil {
		return nil, err
	}
	if r.SentMin, err = c.time("sent min"); err != nil {
		return nil, err
	}
	n, err := c.dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("received counts: %w", err)
	}
	// Every count takes at least one byte.
	if n < 0 || n%2 != 0 || n > c.r.Len() {
		return nil, fmt.Errorf("received counts: %d values with %d bytes left (want an even number)", n, c.r.Len())
	}
	if n > 0 {
		r.Recv = make([][2]uint64, n/2)
	}
	for i := range r.Recv {
		for j := range 2 {
			if r.Recv[i][j], err = c.uint("received count", math.MaxUint64); err != nil {
				return nil, err
			}
		}
	}
	if r.Local, err = c.time("local min"); err != nil {
		return nil, err
	}
	if r.NextMin, err = c.time("next min"); err != nil {
		return nil, err
	}
	return r, nil
}

func (c *Codec) decodePromise() (*Promise, error) {
	if err := c.arrayLen(6); err != nil {
		return nil, err
	}
	p := &Promise{}
	var err error
	if p.ID, err = c.uint("id", math.MaxUint64); err != nil {
		return nil, err
	}
	if p.Low, err = c.time("low"); err != nil {
		return nil, err
	}
	if p.Recv, err = c.uint("recv", math.MaxUint64); err != nil {
		return nil, err
	}
	if p.Others, err = c.time("others"); err != nil {
		return nil, err
	}
	if p.Echo, err = c.uint("echo", math.MaxUint64); err != nil {
		return nil, err
	}
	if p.Sent, err = c.time("sent"); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *Codec) decodeGVTValue() (*GVTValue, error) {
	if err := c.arrayLen(2); err != nil {
		return nil, err
	}
	v := &GVTValue{}
	var err error
	if v.Round, err = c.uint("round", math.MaxUint64); err != nil {
		return nil, err
	}
	if v.GVT, err = c.time("gvt"); err != nil {
		return nil, err
	}
	return v, nil
}

func (c *Codec) decodeTermToken() (*TermToken, error) {
	if err := c.arrayLen(5); err != nil {
		return nil, err
	}
	t := &TermToken{}
	var err error
	if t.Round, err = c.uint("round", math.MaxUint64); err != nil {
		return nil, err
	}
	if t.Sent, err = c.uint("sent", math.MaxUint64); err != nil {
		return nil, err
	}
	if t.Received, err = c.uint("received", math.MaxUint64); err != nil {
		return nil, err
	}
	if t.Sticky, err = c.dec.DecodeBool(); err != nil {
		return nil, fmt.Errorf("sticky: %w", err)
	}
	init, err := c.dec.DecodeInt64()
	if err != nil {
		return nil, fmt.Errorf("initiator: %w", err)
	}
	if init < 0 || int64(int(init)) != init {
		return nil, fmt.Errorf("initiator: rank %d out of range", init)
	}
	t.Initiator = int(init)
	return t, nil
}

// rest returns the bytes of the message that the decoder has not read yet.
func (c *Codec) rest() []byte {
	return c.cur[len(c.cur)-c.r.Len():]
}

// maxNesting bounds the nesting of arrays and maps in a payload, so that decoding a
// hostile message cannot recurse without bound.
const maxNesting = 256

// checkValues checks that b starts with count well-formed msgpack values whose declared
// lengths fit in b, nested at most maxNesting deep, and returns their encoded length. It
// allocates only its small stack and never panics.
func checkValues(b []byte, count int) (int, error) {
	stack := make([]int, 1, 16) // values still to read at each open level
	stack[0] = count
	pos := 0
	need := func(n uint64) error { // n more bytes must remain
		if n > uint64(len(b)-pos) {
			return fmt.Errorf("value at byte %d claims %d bytes but only %d remain", pos, n, len(b)-pos)
		}
		return nil
	}
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if err := need(1); err != nil {
			return 0, err
		}
		code := b[pos]
		pos++
		var skip, lenBytes, extra uint64 // fixed bytes; bytes of a length that follows; bytes after the length
		var items uint64                 // nested values (array elements, or twice the map entries)
		switch {
		case code <= 0x7f || code >= 0xe0 || code == 0xc0 || code == 0xc2 || code == 0xc3:
		case code >= 0x80 && code <= 0x8f:
			items = 2 * uint64(code&0x0f)
		case code >= 0x90 && code <= 0x9f:
			items = uint64(code & 0x0f)
		case code >= 0xa0 && code <= 0xbf:
			skip = uint64(code & 0x1f)
		case code == 0xc4 || code == 0xd9:
			lenBytes = 1
		case code == 0xc5 || code == 0xda:
			lenBytes = 2
		case code == 0xc6 || code == 0xdb:
			lenBytes = 4
		case code == 0xc7:
			lenBytes, extra = 1, 1
		case code == 0xc8:
			lenBytes, extra = 2, 1
		case code == 0xc9:
			lenBytes, extra = 4, 1
		case code == 0xca:
			skip = 4
		case code == 0xcb:
			skip = 8
		case code == 0xcc || code == 0xd0:
			skip = 1
		case code == 0xcd || code == 0xd1:
			skip = 2
		case code == 0xce || code == 0xd2:
			skip = 4
		case code == 0xcf || code == 0xd3:
			skip = 8
		case code >= 0xd4 && code <= 0xd8:
			skip = 1 + 1<<(code-0xd4)
		case code == 0xdc || code == 0xde:
			lenBytes = 2
		case code == 0xdd || code == 0xdf:
			lenBytes = 4
		default: // 0xc1 is never used
			return 0, fmt.Errorf("invalid msgpack code 0x%02x at byte %d", code, pos-1)
		}
		if lenBytes > 0 {
			if err := need(lenBytes); err != nil {
				return 0, err
			}
			var n uint64
			for _, x := range b[pos : pos+int(lenBytes)] {
				n = n<<8 | uint64(x)
			}
			pos += int(lenBytes)
			switch code {
			case 0xdc, 0xdd:
				items = n
			case 0xde, 0xdf:
				items = 2 * n
			default:
				skip = n + extra
			}
		}
		if err := need(skip); err != nil {
			return 0, err
		}
		pos += int(skip)
		if items > 0 {
			if err := need(items); err != nil { // every value takes at least a byte
				return 0, err
			}
			if len(stack) >= maxNesting {
				return 0, fmt.Errorf("values nested more than %d deep", maxNesting)
			}
			stack = append(stack, int(items))
		}
	}
	return pos, nil
}

// Primitive msgpack encoders, appending to a byte slice. The decoder side is msgpack's
// (and decodeBatchFast's fastReader, for batches).

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 0x80:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func uintLen(v uint64) int {
	switch {
	case v < 0x80:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	}
	return 9
}

func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(b, uint64(v))
	case v >= -32:
		return append(b, byte(v)) // negative fixint
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// appendTime writes whole numbers other than -0 as integers, everything else (fractions,
// infinities, NaN with its bits) as a float64.
func appendTime(b []byte, t float64) []byte {
	if t == math.Trunc(t) && t > -(1<<63) && t < 1<<63 && !(t == 0 && math.Signbit(t)) {
		return appendInt(b, int64(t))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(t))
}

// appendString appends s as a msgpack string.
func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func arrayLenLen(n int) int {
	switch {
	case n < 16:
		return 1
	case n <= math.MaxUint16:
		return 3
	}
	return 5
}
