package canon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendValueIsCanonical checks the digest's encoding of a variable-size state.
func TestAppendValueIsCanonical(t *testing.T) {
	// Variable-size states are encoded canonically: map order does not matter, and
	// every field, element and entry does.
	type rich struct {
		M     map[string]int
		L     []uint16
		p     *int
		Any   any
		Inner struct{ S string }
	}
	mk := func() rich {
		x := 5
		return rich{M: map[string]int{"z": 1, "a": 2, "m": 3}, L: []uint16{1, 2}, p: &x, Any: 1.5}
	}
	a := mk()
	want := AppendValue(nil, &a)
	for range 20 { // map iteration order varies from call to call
		b := mk()
		require.Equal(t, want, AppendValue(nil, &b))
	}
	for _, change := range []func(*rich){
		func(r *rich) { r.M["a"] = 9 },
		func(r *rich) { r.M["b"] = 2 },
		func(r *rich) { r.L = append(r.L, 0) },
		func(r *rich) { *r.p = 6 },
		func(r *rich) { r.p = nil },
		func(r *rich) { r.Any = float32(1.5) },
		func(r *rich) { r.Inner.S = "x" },
	} {
		b := mk()
		change(&b)
		require.NotEqual(t, want, AppendValue(nil, &b))
	}
	// A pointer cycle ends in a marker instead of recursing forever.
	type node struct{ Next *node }
	n := &node{}
	n.Next = n
	require.Contains(t, string(AppendValue(nil, n)), "<too deep>")
}
