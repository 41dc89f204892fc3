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

}

func TestCheckPlain(t *testing.T) {
	require.NoError(t, CheckPlainState(reflect.TypeFor[fixed]()))
	require.NoError(t, CheckPlainState(reflect.TypeFor[struct {
		S string
		A [3]struct{ X int }
	}]()))
	require.ErrorContains(t, CheckPlainState(reflect.TypeFor[struct{ P *int }]()), "field P")
	require.Error(t, CheckPlainState(reflect.TypeFor[struct{ M map[int]int }]()))
	require.Error(t, CheckPlainState(reflect.TypeFor[[2][]int]()))
	require.Error(t, CheckPlainState(reflect.TypeFor[struct{ I any }]()))
}
