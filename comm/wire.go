package comm

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// The messages below are not kernel messages of the Codec (they carry no Kind byte): they
// are what each rank contributes to the collective Transport.AllGather calls of a run
// across processes: the comparison of configurations before the run, a lap of the
// synchronous GVT method and the final gather of results.
// They are plain msgpack maps with one-letter keys (the msgpack tags), so adding a field
// later keeps older fields readable. Decoding first checks that the bytes hold exactly one
// well-formed msgpack value whose declared lengths fit in them, so a corrupt message is an
// error, never a huge allocation.

// Agreement is one rank's contribution to the comparison of configurations before a run:
// the settings every rank must share and the number of initial events the rank made.
// Wire format: a msgpack map {"n", "s"}.
type Agreement struct {
	// Made is the number of initial events the rank made (the ranks add them up).
	Made int64 `msgpack:"n"`
	// Settings are the (name, value) pairs every rank must share, sorted by name.
	Settings [][2]string `msgpack:"s"`
}

// EncodeAgreement returns the wire encoding of a.
func EncodeAgreement(a *Agreement) ([]byte, error) {
	b, err := msgpack.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	return b, nil
}

// DecodeAgreement decodes b, written by EncodeAgreement, into a.
func DecodeAgreement(b []byte, a *Agreement) error {
	*a = Agreement{}
	if err := unmarshal(b, a); err != nil {
		return fmt.Errorf("decode configuration: %w", err)
	}
	return nil
}

// SyncReading is one rank's contribution to a lap of the synchronous GVT method: every
// rank takes its reading, the ranks all-gather them, and each combines them the same way.
// Wire format: a msgpack map {"w", "m", "r", "p", "s", "v", "e"}.
type SyncReading struct {
	// White is the rank's count of white events sent minus those received in the lap's
	// round (Mattern's counter); the lap gives GVT when the ranks' counts add up to zero.
	White int64 `msgpack:"w"`
	// Min is the rank's local minimum (the result of its local GVT round).
	Min float64 `msgpack:"m"`
	// RedMin is the least receive time of the red events the rank sent in the round.
	RedMin float64 `msgpack:"r"`
	// Passive says the rank is passive now and has been clean since the last lap.
	Passive bool `msgpack:"p"`
	// Sent and Recv count the events the rank has sent to and received from other ranks
	// since the start of the run; termination needs the totals equal.
	Sent uint64 `msgpack:"s"`
	// Recv: see Sent.
	Recv uint64 `msgpack:"v"`
	// Err, when not empty, says that the rank failed and why; the others stop with it.
	Err string `msgpack:"e"`
}

// EncodeSyncReading returns the wire encoding of r.
func EncodeSyncReading(r *SyncReading) ([]byte, error) {
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode synchronous GVT reading: %w", err)
	}
	return b, nil
}

// DecodeSyncReading decodes b, written by EncodeSyncReading, into r.
func DecodeSyncReading(b []byte, r *SyncReading) error {
	*r = SyncReading{}
	if err := unmarshal(b, r); err != nil {
		return fmt.Errorf("decode synchronous GVT reading: %w", err)
	}
	return nil
}

// FinalLP is one LP's final state as it crosses to the other ranks at the end of a run.
// Wire format: a msgpack map {"i", "g", "q", "s", "d"}.
type FinalLP struct {
	// ID is the LP's id.
	ID uint32 `msgpack:"i"`
	// RNG is the LP's XORWOW generator state: d, then v[0..4].
	RNG [6]uint32 `msgpack:"g"`
	// Seq is the LP's send sequence number.
	Seq uint64 `msgpack:"q"`
	// Snap is the model state, as EncodeSnapshot wrote it.
	Snap []byte `msgpack:"s"`
	// Digest is what the LP adds to the result digest, to check that Snap restored it.
	Digest []byte `msgpack:"d"`
}

// FinalRank is one rank's contribution to the final all-gather of a run across processes:
// its statistics (of the kernel's type S, encoded as msgpack encodes that struct), peak
// memory, GVT rounds, the final state of its LPs, and the count of messages it sent to
// each rank. Wire format: a msgpack map {"t", "p", "r", "l", "n"}.
type FinalRank[S any] struct {
	// Stats are the rank's statistics.
	Stats S `msgpack:"t"`
	// Peak is the rank's peak memory in bytes.
	Peak uint64 `msgpack:"p"`
	// Rounds is the number of GVT rounds the rank completed.
	Rounds uint64 `msgpack:"r"`
	// LPs are the final states of the rank's LPs.
	LPs []FinalLP `msgpack:"l"`
	// Sent counts the messages the rank sent to each rank, so that each can receive
	// every one before the transport closes.
	Sent []uint64 `msgpack:"n"`
}

// EncodeFinalRank returns the wire encoding of fr.
func EncodeFinalRank[S any](fr *FinalRank[S]) ([]byte, error) {
	b, err := msgpack.Marshal(fr)
	if err != nil {
		return nil, fmt.Errorf("encode final results: %w", err)
	}
	return b, nil
}

// DecodeFinalRank decodes b, written by EncodeFinalRank, into fr.
func DecodeFinalRank[S any](b []byte, fr *FinalRank[S]) error {
	*fr = FinalRank[S]{}
	if err := unmarshal(b, fr); err != nil {
		return fmt.Errorf("decode final results: %w", err)
	}
	return nil
}

// EncodeSnapshot returns the msgpack encoding of v, a model's state as its Snapshot
// returns it (exported fields, or a type with msgpack's Marshaler/Unmarshaler).
func EncodeSnapshot(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode model state: %w", err)
	}
	return b, nil
}

// DecodeSnapshot decodes b, written by EncodeSnapshot, into a value of like's type and
// returns it; like is a value from the same model's Snapshot. When like is a pointer, b
// is decoded into what it points to and like itself is returned; otherwise a new value is
// returned and like is unchanged. A nil like stands for a model without state: b must
// then encode nil, and nil is returned.
func DecodeSnapshot(b []byte, like any) (any, error) {
	if like == nil {
		var v any
		if err := unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("decode model state: %w", err)
		}
		if v != nil {
			return nil, errors.New("decode model state: a value arrived for a model whose Snapshot is nil")
		}
		return nil, nil
	}
	rv := reflect.ValueOf(like)
	if rv.Kind() == reflect.Pointer {
		if err := unmarshal(b, like); err != nil {
			return nil, fmt.Errorf("decode model state: %w", err)
		}
		return like, nil
	}
	p := reflect.New(rv.Type())
	if err := unmarshal(b, p.Interface()); err != nil {
		return nil, fmt.Errorf("decode model state: %w", err)
	}
	return p.Elem().Interface(), nil
}

// unmarshal decodes b, which must hold exactly one msgpack value, into v.
func unmarshal(b []byte, v any) error {
	n, err := checkValues(b, 1)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-n)
	}
	return msgpack.Unmarshal(b, v)
}
