package comm

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

type ping struct {
	Hops  int
	Route []uint32
	Note  string
}

type blob struct {
	B    []byte
	Next []ping
}

func testRegistry(t testing.TB) *Registry {
	r := NewRegistry()
	require.NoError(t, r.Register("ping", ping{}))
	require.NoError(t, r.Register("kind", kind(0)))
	require.NoError(t, r.Register("pingp", &ping{}))
	require.NoError(t, r.Register("blob", blob{}))
	return r
}

func sampleEvents() []event.Event {
	inf := math.Inf(1)
	return []event.Event{
		{RecvTime: 1, SendTime: 0, Seq: 0, Sender: 1, Receiver: 2},
		{RecvTime: 12.5, SendTime: 12.25, Seq: 1 << 40, Depth: 3, Sender: math.MaxUint32, Receiver: 7, Anti: true},
		{RecvTime: inf, SendTime: 3, Seq: 5, Sender: 9, Receiver: 0, Words: event.Words{1, 0, math.MaxUint64, 42}},
		{RecvTime: 1e300, SendTime: -7, Seq: 6, Payload: ping{Hops: 3, Route: []uint32{1, 2}, Note: "x"}, Anti: true},
		{RecvTime: 2, SendTime: 1, Payload: kind(9), Words: event.Words{0, 0, 0, 1}},
		{RecvTime: 3, SendTime: 2, Payload: &ping{Hops: -1}},
		{RecvTime: math.Copysign(0, -1), SendTime: math.SmallestNonzeroFloat64, Seq: math.MaxUint64},
		{RecvTime: 1 << 62, SendTime: -(1 << 62), Depth: math.MaxUint32},
		{RecvTime: 4, Payload: blob{B: []byte("abc"), Next: []ping{{Hops: 1}, {Note: "n"}}}},
	}
}

// sameBits compares decoded values, treating floats bitwise (so NaN equals itself and
// -0 differs from +0).
func sameBits(t testing.TB, want, got any) {
	t.Helper()
	if !bitEqual(reflect.ValueOf(want), reflect.ValueOf(got)) {
		t.Fatalf("values differ:\nwant %#v\n got %#v", want, got)
	}
}

func bitEqual(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return bitEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !bitEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() && (a.Len() != 0 || b.Len() != 0) {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !bitEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !bitEqual(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// cloneValue copies a decoded value out of the codec's reused state.
func cloneValue(v any) any {
	if b, ok := v.(*Batch); ok {
		return &Batch{Events: append([]event.Event(nil), b.Events...), Colour: b.Colour}
	}
	return v
}

func allMessages() []any {
	return []any{
		&Batch{Events: sampleEvents(), Colour: 1},
		&Batch{Colour: 0},
		&Batch{Events: make([]event.Event, 20), Colour: 200},
		&Batch{Events: sampleEvents()[:1], Colour: math.MaxUint64},
		&GVTToken{Round: 7, Lap: 2, Colour: 1, Count: -12, Min: 33.5, RedMin: math.Inf(1)},
		&GVTToken{},
		&GVTToken{Round: math.MaxUint64, Lap: math.MaxUint32, Colour: 255, Count: math.MinInt64, Min: -1, RedMin: 1e-9},
		&GVTValue{Round: 3, GVT: math.Inf(1)},
		&GVTValue{Round: 0, GVT: 17},
		&TermToken{Round: 9, Sent: 1 << 50, Received: 3, Sticky: true, Initiator: 4},
		&TermToken{},
		&Terminate{},
		&Terminate{Err: "rank 3: model panic in LP \"x\""},
		&TQReport{Quantum: 12, Sent: 300, SentMin: 4.5, Recv: [][2]uint64{{11, 7}, {12, 1 << 40}}, Local: 9, NextMin: math.Inf(1)},
		&TQReport{SentMin: math.Inf(1), Local: math.Inf(1), NextMin: 0.25},
		&Promise{ID: 9, Low: 12.75, Recv: 1 << 40, Others: math.Inf(1), Echo: 7, Sent: 3},
		&Promise{},
		&Promise{ID: math.MaxUint64, Low: math.Inf(-1), Others: -2.5, Echo: math.MaxUint64, Sent: math.Inf(1)},
	}
}

func TestCodecRoundTripAllKinds(t *testing.T) {
	enc := NewCodec(testRegistry(t))
	dec := NewCodec(testRegistry(t))
	wantKinds := map[string]Kind{
		"*comm.Batch": KindEvents, "*comm.GVTToken": KindGVTToken, "*comm.GVTValue": KindGVTValue,
		"*comm.TermToken": KindTermToken, "*comm.Terminate": KindTerminate,
		"*comm.TQReport": KindTQReport, "*comm.Promise": KindPromise,
	}
	for i, m := range allMessages() {
		t.Run(fmt.Sprintf("%d-%T", i, m), func(t *testing.T) {
			prefix := []byte("keep")
			msg, err := appendMessage(enc, prefix, m)
			require.NoError(t, err)
			require.Equal(t, "keep", string(msg[:4]), "appendMessage appends")
			msg = msg[4:]
			k, err := PeekKind(msg)
			require.NoError(t, err)
			require.Equal(t, wantKinds[fmt.Sprintf("%T", m)], k)
			k2, got, err := dec.Decode(msg)
			require.NoError(t, err)
			require.Equal(t, k, k2)
			sameBits(t, m, got)

			// The value form encodes the same bytes as the pointer form.
			again, err := appendMessage(enc, nil, reflect.ValueOf(m).Elem().Interface())
			require.NoError(t, err)
			require.Equal(t, msg, again)
		})
	}
}

func TestCodecTimesCompact(t *testing.T) {
	c := NewCodec(nil)
	small, err := c.AppendBatch(nil, &Batch{Events: []event.Event{{RecvTime: 10, SendTime: 9, Seq: 1, Sender: 1, Receiver: 2}}})
	require.NoError(t, err)
	// kind, [2], colour, [1], [7], flags, 10, 9, 1, depth, 1, 2
	require.Len(t, small, 12, "an integer-time event without payload encodes in 8 bytes")

	for _, tm := range []float64{0, math.Copysign(0, -1), 0.5, -1, 1 << 53, 1 << 63, -(1 << 63), math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64} {
		msg := c.AppendGVTValue(nil, &GVTValue{GVT: tm})
		_, v, err := c.Decode(msg)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(tm), math.Float64bits(v.(*GVTValue).GVT), "time %v", tm)
	}
}

func TestCodecKindString(t *testing.T) {
	require.Equal(t, "events", KindEvents.String())
	require.Equal(t, "promise", KindPromise.String())
	require.Equal(t, "tq-report", KindTQReport.String())
	require.Equal(t, "kind(0)", Kind(0).String())
	require.Equal(t, "kind(99)", Kind(99).String())
}

func TestCodecRegistryErrors(t *testing.T) {
	reg := testRegistry(t)
	full := NewCodec(reg)
	bare := NewCodec(nil)

	b := &Batch{Events: []event.Event{{RecvTime: 1}, {RecvTime: 2, Payload: ping{Hops: 1}}}}
	dst := []byte("x")
	out, err := bare.AppendBatch(dst, b)
	require.ErrorContains(t, err, "comm.ping")
	require.ErrorContains(t, err, "no payload registry")
	require.ErrorContains(t, err, "event 1 of 2")
	require.Equal(t, "x", string(out), "dst unchanged on error")

	_, err = full.AppendBatch(nil, &Batch{Events: []event.Event{{Payload: 3.5}}})
	require.ErrorContains(t, err, "float64 is not registered")

	msg, err := full.AppendBatch(nil, b)
	require.NoError(t, err)
	_, _, err = bare.Decode(msg)
	require.ErrorContains(t, err, `payload "ping" cannot be decoded: the codec has no payload registry`)

	other := NewRegistry()
	require.NoError(t, other.Register("kind", kind(0)))
	_, _, err = NewCodec(other).Decode(msg)
	require.ErrorContains(t, err, `unknown payload name "ping"`)

	_, err = appendMessage(full, nil, 42)
	require.ErrorContains(t, err, "int is not a kernel message type")

	// Events without payload need no registry.
	msg, err = bare.AppendBatch(nil, &Batch{Events: sampleEvents()[:3]})
	require.NoError(t, err)
	_, got, err := bare.Decode(msg)
	require.NoError(t, err)
	sameBits(t, sampleEvents()[:3], got.(*Batch).Events)
}

func TestCodecMalformed(t *testing.T) {
	c := NewCodec(testRegistry(t))
	cases := map[string][]byte{
		"empty":                {},
		"kind zero":            {0},
		"unknown kind":         {0x42},
		"terminate trailing":   {byte(KindTerminate), 0x00},
		"huge event count":     {byte(KindEvents), 0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff},
		"negative count":       {byte(KindEvents), 0x92, 0x00, 0xc0},
		"bad flags":            {byte(KindEvents), 0x92, 0x00, 0x91, 0x97, 0x08, 1, 1, 1, 1, 1, 1},
		"fields vs flags":      {byte(KindEvents), 0x92, 0x00, 0x91, 0x98, 0x01, 1, 1, 1, 1, 1, 1, 1},
		"sender too big":       {byte(KindEvents), 0x92, 0x00, 0x91, 0x97, 0x00, 1, 1, 1, 1, 0xcf, 1, 0, 0, 0, 0, 0, 0, 0, 1},
		"tq report odd counts": {byte(KindTQReport), 0x96, 1, 1, 1, 0x93, 1, 1, 1, 1, 1},
		"tq report huge":       {byte(KindTQReport), 0x96, 1, 1, 1, 0xdd, 0x7f, 0xff, 0xff, 0xfe, 1, 1},
		"empty payload name":   {byte(KindEvents), 0x92, 0x00, 0x91, 0x99, 0x02, 1, 1, 1, 1, 1, 1, 0xa0, 0xc0},
		"token short":          {byte(KindGVTToken), 0x95, 1, 1, 1, 1, 1},
		"negative initiator":   {byte(KindTermToken), 0x95, 1, 1, 1, 0xc3, 0xff},
		"time is string":       {byte(KindGVTValue), 0x92, 1, 0xa1, 'x'},
		"gvt value long array": {byte(KindGVTValue), 0x93, 1, 1, 1},
		"promise not a time":   {byte(KindPromise), 0x96, 1, 0xa1, 'x', 1, 1, 1, 1},
		"promise short array":  {byte(KindPromise), 0x95, 1, 1, 1, 1, 1},
		"promise empty":        {byte(KindPromise)},
		"huge payload bytes": {byte(KindEvents), 0x92, 0x00, 0x91, 0x99, 0x02, 1, 1, 1, 1, 1, 1,
			0xa4, 'b', 'l', 'o', 'b', 0x82, 0xa1, 'B', 0xc6, 0x7f, 0xff, 0xff, 0xff},
		"deep payload": append([]byte{byte(KindEvents), 0x92, 0x00, 0x91, 0x99, 0x02, 1, 1, 1, 1, 1, 1,
			0xa4, 'b', 'l', 'o', 'b'}, bytes.Repeat([]byte{0x91}, 1000)...),
		"invalid code in payload": {byte(KindEvents), 0x92, 0x00, 0x91, 0x99, 0x02, 1, 1, 1, 1, 1, 1,
			0xa4, 'b', 'l', 'o', 'b', 0xc1},
	}
	for name, msg := range cases {
		_, v, err := c.Decode(msg)
		require.Error(t, err, name)
		require.Nil(t, v, name)
	}
}

// TestCodecTruncated checks that every proper prefix of every valid message is an error.
// (The format has no optional tail, so no prefix can decode.)
func TestCodecTruncated(t *testing.T) {
	enc := NewCodec(testRegistry(t))
	dec := NewCodec(testRegistry(t))
	for _, m := range allMessages() {
		msg, err := appendMessage(enc, nil, m)
		require.NoError(t, err)
		for n := range len(msg) {
			_, _, err := dec.Decode(msg[:n])
			require.Error(t, err, "%T: prefix of %d of %d bytes", m, n, len(msg))
		}
		// And one trailing byte too many.
		_, _, err = dec.Decode(append(msg[:len(msg):len(msg)], 0))
		require.ErrorContains(t, err, "trailing", "%T", m)
	}
}

func TestCodecDecodeReusesBatch(t *testing.T) {
	c := NewCodec(testRegistry(t))
	m1, err := c.AppendBatch(nil, &Batch{Events: sampleEvents()})
	require.NoError(t, err)
	m2, err := c.AppendBatch(nil, &Batch{Events: []event.Event{{RecvTime: 5}}})
	require.NoError(t, err)
	_, v1, err := c.Decode(m1)
	require.NoError(t, err)
	b1 := v1.(*Batch)
	require.Len(t, b1.Events, len(sampleEvents()))
	_, v2, err := c.Decode(m2)
	require.NoError(t, err)
	require.Same(t, b1, v2.(*Batch), "the batch is the codec's, reused")
	require.Len(t, b1.Events, 1)
	require.Equal(t, event.Event{RecvTime: 5}, b1.Events[0])
	// A failed decode leaves an empty batch, not stale events.
	_, _, err = c.Decode(m1[:len(m1)-1])
	require.Error(t, err)
	require.Empty(t, b1.Events)
}

func TestAggregator(t *testing.T) {
	reg := testRegistry(t)
	dec := NewCodec(reg)
	type out struct {
		to  int
		msg []byte
	}
	var sent []out
	emit := func(to int, msg []byte) { sent = append(sent, out{to, bytes.Clone(msg)}) } // msg: valid until emit returns
	decode := func(o out) *Batch {
		k, v, err := dec.Decode(o.msg)
		require.NoError(t, err)
		require.Equal(t, KindEvents, k)
		return cloneValue(v).(*Batch)
	}

	t.Run("count limit and flush", func(t *testing.T) {
		sent = nil
		a := NewAggregator(NewCodec(reg), 3, 4, 0)
		evs := sampleEvents()
		for i := range 10 {
			require.NoError(t, a.Add(i%3, 0, &evs[i%len(evs)], emit))
		}
		// Rank 0 got events 0,3,6,9: one full batch of 4.
		require.Len(t, sent, 1)
		require.Equal(t, 0, sent[0].to)
		b := decode(sent[0])
		require.Len(t, b.Events, 4)
		for j, i := range []int{0, 3, 6, 9} {
			sameBits(t, evs[i%len(evs)], b.Events[j])
		}
		require.Equal(t, 0, a.Pending(0))
		require.Equal(t, 3, a.Pending(1))
		require.Equal(t, 3, a.Pending(2))
		a.FlushAll(emit)
		require.Len(t, sent, 3)
		require.Equal(t, []int{1, 2}, []int{sent[1].to, sent[2].to})
		require.Len(t, decode(sent[1]).Events, 3)
		a.FlushAll(emit)
		require.Len(t, sent, 3, "nothing more to flush")
	})

	t.Run("same bytes as AppendBatch", func(t *testing.T) {
		sent = nil
		c := NewCodec(reg)
		a := NewAggregator(c, 1, 0, 0)
		evs := sampleEvents()
		for i := range evs {
			require.NoError(t, a.Add(0, 1, &evs[i], emit))
		}
		a.FlushAll(emit)
		require.Len(t, sent, 1)
		want, err := c.AppendBatch(nil, &Batch{Events: evs, Colour: 1})
		require.NoError(t, err)
		require.Equal(t, want, sent[0].msg)
	})

	t.Run("colour change splits", func(t *testing.T) {
		sent = nil
		a := NewAggregator(NewCodec(reg), 1, 0, 0)
		e := event.Event{RecvTime: 1}
		for _, col := range []uint64{0, 0, 1, 1, 1, 0} {
			require.NoError(t, a.Add(0, col, &e, emit))
		}
		a.FlushAll(emit)
		require.Len(t, sent, 3)
		for i, want := range []struct {
			colour uint64
			n      int
		}{{0, 2}, {1, 3}, {0, 1}} {
			b := decode(sent[i])
			require.Equal(t, want.colour, b.Colour)
			require.Len(t, b.Events, want.n)
		}
	})

	t.Run("byte limit", func(t *testing.T) {
		sent = nil
		const maxBytes = 100
		a := NewAggregator(NewCodec(reg), 2, 0, maxBytes)
		var total int
		for i := range 200 {
			e := event.Event{RecvTime: float64(i) + 0.5, SendTime: float64(i), Seq: uint64(i), Sender: 3, Receiver: 4}
			if i%7 == 0 {
				e.Words = event.Words{uint64(i), 2, 3, 4}
			}
			require.NoError(t, a.Add(1, 0, &e, emit))
		}
		// One oversized event goes alone.
		big := event.Event{Payload: ping{Note: string(make([]byte, 300))}}
		require.NoError(t, a.Add(1, 0, &big, emit))
		a.FlushAll(emit)
		var seq uint64
		for i, o := range sent {
			require.Equal(t, 1, o.to)
			b := decode(o)
			total += len(b.Events)
			if len(b.Events) == 1 && b.Events[0].Payload != nil {
				require.Equal(t, len(sent)-1, i, "the big event is last")
				continue
			}
			require.LessOrEqual(t, len(o.msg), maxBytes)
			if i < len(sent)-2 {
				require.Greater(t, len(o.msg), maxBytes-30, "batches are filled")
			}
			for _, e := range b.Events {
				require.Equal(t, seq, e.Seq, "order kept across batches")
				seq++
			}
		}
		require.Equal(t, 201, total)
	})

	t.Run("errors", func(t *testing.T) {
		sent = nil
		a := NewAggregator(NewCodec(nil), 2, 0, 0)
		require.ErrorContains(t, a.Add(2, 0, &event.Event{}, emit), "out of range")
		require.ErrorContains(t, a.Add(-1, 0, &event.Event{}, emit), "out of range")
		require.NoError(t, a.Add(0, 0, &event.Event{RecvTime: 1}, emit))
		require.ErrorContains(t, a.Add(0, 0, &event.Event{Payload: ping{}}, emit), "no payload registry")
		require.Equal(t, 1, a.Pending(0))
		a.FlushAll(emit)
		require.Len(t, sent, 1)
		b := decode(sent[0])
		require.Equal(t, []event.Event{{RecvTime: 1}}, b.Events)
	})
}

func FuzzDecode(f *testing.F) {
	reg := testRegistry(f)
	enc := NewCodec(reg)
	for _, m := range allMessages() {
		msg, err := appendMessage(enc, nil, m)
		require.NoError(f, err)
		f.Add(msg)
	}
	f.Add([]byte{})
	f.Add([]byte{byte(KindEvents), 0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{byte(KindEvents), 0x92, 0x01, 0x91, 0x97, 0x01, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xd0, 0xff,
		0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x05, 0xce, 0xff, 0xff, 0xff, 0xff, 0x7f}) // every form decodeBatchFast reads
	dec1 := NewCodec(reg)
	dec2 := NewCodec(reg)
	fast, slow := NewCodec(reg), NewCodec(reg)
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 0 && Kind(msg[0]) == KindEvents {
			// The fast path decodes exactly what the msgpack decoder does, where it decodes.
			if b, ok := fast.decodeBatchFast(msg[1:]); ok {
				want, err := slow.decodeBatchSlow(msg)
				require.NoError(t, err, "decodeBatchFast decoded what decodeBatch refuses")
				sameBits(t, want, b)
			}
		}
		k, v, err := dec1.Decode(msg)
		if err != nil {
			require.Nil(t, v)
			return
		}
		// Round trip: what decoded encodes, and decodes to the same value.
		again, err := appendMessage(enc, nil, v)
		require.NoError(t, err)
		k2, v2, err := dec2.Decode(again)
		require.NoError(t, err)
		require.Equal(t, k, k2)
		sameBits(t, v, v2)
		// And the re-encoding is canonical: encoding again gives the same bytes.
		third, err := appendMessage(enc, nil, v2)
		require.NoError(t, err)
		require.Equal(t, again, third)
	})
}

func BenchmarkCodecBatch256(b *testing.B) {
	reg := testRegistry(b)
	for _, variant := range []string{"words", "payload"} {
		b.Run(variant, func(b *testing.B) {
			evs := make([]event.Event, 256)
			for i := range evs {
				evs[i] = event.Event{
					RecvTime: float64(1000 + i), SendTime: float64(990 + i), Seq: uint64(10000 + i),
					Sender: uint32(i % 50), Receiver: uint32(i%50 + 1000), Anti: i%10 == 0,
				}
				if variant == "payload" {
					evs[i].Payload = ping{Hops: i, Note: "hello"}
				} else {
					evs[i].Words = event.Words{uint64(i), 7, 0, 0}
				}
			}
			batch := &Batch{Events: evs, Colour: 1}
			c := NewCodec(reg)
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = c.AppendBatch(buf[:0], batch)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.Decode(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			b.ReportMetric(float64(len(buf))/float64(len(evs)), "bytes/event")
		})
	}
}

// decodeBatchSlow decodes a KindEvents message with the msgpack decoder alone
// (decodeBatch), as Decode does where decodeBatchFast declines.
func (c *Codec) decodeBatchSlow(msg []byte) (*Batch, error) {
	c.cur = msg[1:]
	c.r.Reset(c.cur)
	c.dec.ResetReader(&c.r)
	b, err := c.decodeBatch()
	if err == nil && c.r.Len() != 0 {
		err = fmt.Errorf("%d trailing bytes", c.r.Len())
	}
	return b, err
}

// TestCodecFastAndSlowAgree decodes every batch of allMessages and a batch with every
// value form the fast path reads both ways (decodeBatchFast, decodeBatchSlow).
func TestCodecFastAndSlowAgree(t *testing.T) {
	reg := testRegistry(t)
	enc, fast, slow := NewCodec(reg), NewCodec(reg), NewCodec(reg)
	evs := []event.Event{{RecvTime: 1.5, SendTime: -1, Seq: 1 << 63, Depth: 5, Sender: math.MaxUint32, Receiver: 127},
		{RecvTime: 300, SendTime: 70000, Seq: 255, Depth: 65535, Sender: 1 << 20, Receiver: 0, Anti: true},
		{RecvTime: -200, SendTime: -40000, Seq: 1 << 40, Words: event.Words{1, 1 << 9, 1 << 17, 1 << 33}},
		{RecvTime: 1 << 40, SendTime: -(1 << 40), Seq: 3}, {RecvTime: math.Inf(1), SendTime: math.NaN()}}
	msgs := [][]byte{}
	for _, m := range allMessages() {
		if b, ok := m.(*Batch); ok {
			msg, err := appendMessage(enc, nil, b)
			require.NoError(t, err)
			msgs = append(msgs, msg)
		}
	}
	msg, err := enc.AppendBatch(nil, &Batch{Events: evs, Colour: 1 << 35})
	require.NoError(t, err)
	msgs = append(msgs, msg)
	decoded := 0
	for _, m := range msgs {
		want, err := slow.decodeBatchSlow(m)
		require.NoError(t, err)
		if b, ok := fast.decodeBatchFast(m[1:]); ok {
			sameBits(t, want, b)
			decoded++
		}
	}
	require.NotZero(t, decoded, "the fast path decoded none")
	b, ok := fast.decodeBatchFast(msg[1:])
	require.True(t, ok, "the fast path declined a batch without payloads")
	sameBits(t, evs, b.Events)
}

// appendMessage appends the encoding of v, one of the kernel message types (a pointer or a
// value), to dst with c's Append method for it; on error it returns dst unchanged.
func appendMessage(c *Codec, dst []byte, v any) ([]byte, error) {
	switch m := v.(type) {
	case *Batch:
		return c.AppendBatch(dst, m)
	case Batch:
		return c.AppendBatch(dst, &m)
	case *GVTToken:
		return c.AppendGVTToken(dst, m), nil
	case GVTToken:
		return c.AppendGVTToken(dst, &m), nil
	case *GVTValue:
		return c.AppendGVTValue(dst, m), nil
	case GVTValue:
		return c.AppendGVTValue(dst, &m), nil
	case *TermToken:
		return c.AppendTermToken(dst, m), nil
	case TermToken:
		return c.AppendTermToken(dst, &m), nil
	case *Terminate:
		return c.AppendTerminate(dst, m), nil
	case Terminate:
		return c.AppendTerminate(dst, &m), nil
	case *TQReport:
		return c.AppendTQReport(dst, m), nil
	case TQReport:
		return c.AppendTQReport(dst, &m), nil
	case *Promise:
		return c.AppendPromise(dst, m), nil
	case Promise:
		return c.AppendPromise(dst, &m), nil
	}
	return dst, fmt.Errorf("encode message: %T is not a kernel message type", v)
}
