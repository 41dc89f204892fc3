package comm

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/warpedgo/warped/event"
)

// The fast path of decoding a batch of events (decodeBatchFast).

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
