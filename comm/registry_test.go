package comm

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

type call struct {
	Kind     uint8
	Complete uint32
	Name     string
}

type kind uint8

func TestRegistryRoundTrip(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.Register("call", call{}))
	require.NoError(t, r.Register("kind", kind(0)))
	require.NoError(t, r.Register("call", call{}), "same name and type twice is fine")
	require.Equal(t, 2, r.Len())

	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	in := []any{call{Kind: 3, Complete: 77, Name: "x"}, kind(9), nil}
	for _, v := range in {
		require.NoError(t, r.EncodePayload(enc, v))
	}
	dec := msgpack.NewDecoder(&buf)
	for _, want := range in {
		got, err := r.DecodePayload(dec)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func TestRegistryErrors(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.Register("call", call{}))
	require.ErrorContains(t, r.Register("call", kind(0)), "already used")
	require.ErrorContains(t, r.Register("other", call{}), "already registered")
	require.Error(t, r.Register("", call{}))
	require.Error(t, r.Register("nil", nil))
	_, err := r.Name(kind(1))
	require.ErrorContains(t, err, "not registered")

	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	require.NoError(t, enc.EncodeString("nope"))
	_, err = r.DecodePayload(msgpack.NewDecoder(&buf))
	require.ErrorContains(t, err, "unknown payload name")

	_, err = r.DecodePayload(msgpack.NewDecoder(bytes.NewReader([]byte{0xc1})))
	require.Error(t, err, "malformed input is an error, not a panic")
}
