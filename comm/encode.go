package comm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/warpedgo/warped/event"
)

// The encoders of the kernel messages, and the msgpack writers they share.

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
