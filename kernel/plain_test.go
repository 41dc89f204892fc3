package kernel

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

type fixed struct {
	A uint32
	b int64 // unexported fields count too
	C [2]float64
}

func TestPlainSnapshotRestore(t *testing.T) {
	var p Plain[fixed]
	p.S = fixed{A: 1, b: -2, C: [2]float64{3, 4}}
	snap := p.Snapshot(nil)
	p.S.A = 99
	again := p.Snapshot(snap)
	require.Same(t, snap, again, "Snapshot reuses dst")
	p.S.A = 5
	p.Restore(snap)
	require.Equal(t, fixed{A: 99, b: -2, C: [2]float64{3, 4}}, p.S)
}

func TestAppendStateIsDeterministicAndCoversAllFields(t *testing.T) {
	var p, q Plain[fixed]
	p.S = fixed{A: 1, b: 2}
	q.S = fixed{A: 1, b: 3}
	require.Equal(t, p.AppendState(nil), p.AppendState(nil))
	require.NotEqual(t, p.AppendState(nil), q.AppendState(nil))

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
	want := appendValue(nil, &a)
	for range 20 { // map iteration order varies from call to call
		b := mk()
		require.Equal(t, want, appendValue(nil, &b))
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
		require.NotEqual(t, want, appendValue(nil, &b))
	}
	// A pointer cycle ends in a marker instead of recursing forever.
	type node struct{ Next *node }
	n := &node{}
	n.Next = n
	require.Contains(t, string(appendValue(nil, n)), "<too deep>")
}

func TestCheckPlain(t *testing.T) {
	require.NoError(t, checkPlain(reflect.TypeFor[fixed]()))
	require.NoError(t, checkPlain(reflect.TypeFor[struct {
		S string
		A [3]struct{ X int }
	}]()))
	require.ErrorContains(t, checkPlain(reflect.TypeFor[struct{ P *int }]()), "field P")
	require.Error(t, checkPlain(reflect.TypeFor[struct{ M map[int]int }]()))
	require.Error(t, checkPlain(reflect.TypeFor[[2][]int]()))
	require.Error(t, checkPlain(reflect.TypeFor[struct{ I any }]()))
}
