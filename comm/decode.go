package comm

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/warpedgo/warped/event"
)

// The decoder of the kernel messages: Decode, and its msgpack reads.

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
