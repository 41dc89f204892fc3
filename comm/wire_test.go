package comm

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// wireStats stands for the kernel's statistics in FinalRank.
type wireStats struct {
	Events uint64
	Rate   float64
	Note   string
}

func sampleSyncReading() SyncReading {
	return SyncReading{White: -3, Min: 12.5, RedMin: math.Inf(1), Passive: true, Sent: 7, Recv: 300, Err: "rank 1: boom"}
}

func sampleFinalRank() FinalRank[wireStats] {
	return FinalRank[wireStats]{
		Stats:  wireStats{Events: 42, Rate: 1.5, Note: "n"},
		Peak:   1 << 30,
		Rounds: 12,
		LPs: []FinalLP{
			{ID: 5, RNG: [6]uint32{1, 2, 3, 4, 5, math.MaxUint32}, Seq: 99, Snap: []byte{0x93, 1, 2, 3}, Digest: []byte("digest")},
			{ID: 70000},
		},
		Sent: []uint64{0, 17},
	}
}

// The golden encodings are the wire format as ranks of earlier builds write it
// (msgpack.Marshal of structs of wireStats' shape: docs/DECISIONS.md, "The all-gather
// messages and msgpack live in `comm`"); the
// wire format must not change, or ranks of different builds
// would misread each other.
const (
	goldenSyncReading = "87a177d3fffffffffffffffda16dcb4029000000000000a172cb7ff0000000000000a170c3a173cf0000000000000007a176cf000000000000012ca165ac72616e6b20313a20626f6f6d"
	goldenFinalRank   = "85a17483a64576656e7473cf000000000000002aa452617465cb3ff8000000000000a44e6f7465a16ea170cf0000000040000000a172cf000000000000000ca16c9285a169ce00000005a16796ce00000001ce00000002ce00000003ce00000004ce00000005ceffffffffa171cf0000000000000063a173c40493010203a164c40664696765737485a169ce00011170a16796ce00000000ce00000000ce00000000ce00000000ce00000000ce00000000a171cf0000000000000000a173c0a164c0a16e92cf0000000000000000cf0000000000000011"
	goldenSyncZero    = "87a177d30000000000000000a16dcb0000000000000000a172cb0000000000000000a170c2a173cf0000000000000000a176cf0000000000000000a165a0"
)

func TestSyncReadingWire(t *testing.T) {
	for _, c := range []struct {
		r      SyncReading
		golden string
	}{{sampleSyncReading(), goldenSyncReading}, {SyncReading{}, goldenSyncZero}} {
		b, err := EncodeSyncReading(&c.r)
		require.NoError(t, err)
		require.Equal(t, c.golden, hex.EncodeToString(b))
		got := SyncReading{White: 99, Err: "stale"} // decoding overwrites every field
		require.NoError(t, DecodeSyncReading(b, &got))
		require.Equal(t, c.r, got)
	}
	var r SyncReading
	require.ErrorContains(t, DecodeSyncReading([]byte{0x87, 0xa1}, &r), "decode synchronous GVT reading")
}

func TestFinalRankWire(t *testing.T) {
	fr := sampleFinalRank()
	b, err := EncodeFinalRank(&fr)
	require.NoError(t, err)
	require.Equal(t, goldenFinalRank, hex.EncodeToString(b))
	got := FinalRank[wireStats]{Peak: 1, Sent: []uint64{5, 5, 5}}
	require.NoError(t, DecodeFinalRank(b, &got))
	require.Equal(t, fr, got)

	b, err = EncodeFinalRank(&FinalRank[wireStats]{})
	require.NoError(t, err)
	require.NoError(t, DecodeFinalRank(b, &got))
	require.Equal(t, FinalRank[wireStats]{}, got)

	require.ErrorContains(t, DecodeFinalRank([]byte{0x85, 0xa1, 0x74}, &got), "decode final results")
	_, err = EncodeFinalRank(&FinalRank[any]{Stats: func() {}})
	require.ErrorContains(t, err, "encode final results")
}

type snapValue struct {
	N    int
	Tags []string
}

func TestSnapshotRoundTrip(t *testing.T) {
	v := snapValue{N: 7, Tags: []string{"a", "b"}}
	b, err := EncodeSnapshot(v)
	require.NoError(t, err)

	// A value: a new value of the same type comes back, like is left alone.
	like := snapValue{N: 1}
	got, err := DecodeSnapshot(b, like)
	require.NoError(t, err)
	require.Equal(t, v, got)
	require.Equal(t, snapValue{N: 1}, like)

	// A pointer: decoded into what it points to, and the same pointer comes back.
	p := &snapValue{}
	got, err = DecodeSnapshot(b, p)
	require.NoError(t, err)
	require.Same(t, p, got)
	require.Equal(t, v, *p)

	// A scalar and a slice.
	b, err = EncodeSnapshot([]uint64{1, math.MaxUint64})
	require.NoError(t, err)
	got, err = DecodeSnapshot(b, []uint64(nil))
	require.NoError(t, err)
	require.Equal(t, []uint64{1, math.MaxUint64}, got)

	// No state: nil goes and comes back; a value for a nil snapshot is an error.
	b, err = EncodeSnapshot(nil)
	require.NoError(t, err)
	got, err = DecodeSnapshot(b, nil)
	require.NoError(t, err)
	require.Nil(t, got)
	b, err = EncodeSnapshot(3)
	require.NoError(t, err)
	_, err = DecodeSnapshot(b, nil)
	require.ErrorContains(t, err, "Snapshot is nil")

	// Malformed bytes and a type mismatch are errors.
	_, err = DecodeSnapshot([]byte{0xc1}, snapValue{})
	require.ErrorContains(t, err, "decode model state")
	b, err = EncodeSnapshot("text")
	require.NoError(t, err)
	_, err = DecodeSnapshot(b, &snapValue{})
	require.ErrorContains(t, err, "decode model state")
	_, err = EncodeSnapshot(make(chan int))
	require.ErrorContains(t, err, "encode model state")
}

// FuzzDecodeWire decodes arbitrary bytes as each all-gather message: it must not panic,
// and whatever decodes must encode canonically (encoding the decoded value, decoding and
// encoding again gives the same bytes).
func FuzzDecodeWire(f *testing.F) {
	sr := sampleSyncReading()
	fr := sampleFinalRank()
	for _, v := range []any{&sr, &SyncReading{}, &fr, &FinalRank[wireStats]{}} {
		var b []byte
		var err error
		switch v := v.(type) {
		case *SyncReading:
			b, err = EncodeSyncReading(v)
		case *FinalRank[wireStats]:
			b, err = EncodeFinalRank(v)
		}
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x85, 0xa1, 0x6c, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r SyncReading
		if DecodeSyncReading(b, &r) == nil {
			again, err := EncodeSyncReading(&r)
			require.NoError(t, err)
			var r2 SyncReading
			require.NoError(t, DecodeSyncReading(again, &r2))
			third, err := EncodeSyncReading(&r2)
			require.NoError(t, err)
			require.Equal(t, again, third)
		}
		var fr FinalRank[wireStats]
		if DecodeFinalRank(b, &fr) == nil {
			again, err := EncodeFinalRank(&fr)
			require.NoError(t, err)
			var fr2 FinalRank[wireStats]
			require.NoError(t, DecodeFinalRank(again, &fr2))
			third, err := EncodeFinalRank(&fr2)
			require.NoError(t, err)
			require.Equal(t, again, third)
		}
		if v, err := DecodeSnapshot(b, snapValue{}); err == nil {
			_, err := EncodeSnapshot(v)
			require.NoError(t, err)
		}
	})
}

func TestWireDecodeRejectsCorruptBytes(t *testing.T) {
	var fr FinalRank[wireStats]
	// An array that claims 2^32-1 LPs in 8 bytes: an error, not an allocation.
	require.ErrorContains(t, DecodeFinalRank([]byte{0x81, 0xa1, 0x6c, 0xdd, 0xff, 0xff, 0xff, 0xff}, &fr), "claims")
	b, err := EncodeSyncReading(&SyncReading{Min: 1})
	require.NoError(t, err)
	var r SyncReading
	require.ErrorContains(t, DecodeSyncReading(append(b, 0), &r), "1 trailing bytes")
	_, err = DecodeSnapshot([]byte{}, snapValue{})
	require.ErrorContains(t, err, "decode model state")
}

func TestAgreementWire(t *testing.T) {
	for name, a := range map[string]Agreement{
		"settings": {Made: 1 << 40, Settings: [][2]string{{"lps", "12"}, {"max-sim-time", "+Inf"}, {"seed", ""}}},
		"empty":    {},
	} {
		b, err := EncodeAgreement(&a)
		require.NoError(t, err, name)
		got := Agreement{Made: 3, Settings: [][2]string{{"stale", "x"}}} // decoding overwrites every field
		require.NoError(t, DecodeAgreement(b, &got), name)
		require.Equal(t, a, got, name)
	}
	var a Agreement
	require.ErrorContains(t, DecodeAgreement([]byte("12\nlps=3\n"), &a), "decode configuration")
}
