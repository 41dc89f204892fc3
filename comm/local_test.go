package comm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLocal(t *testing.T) {
	l := NewLocal()
	require.Equal(t, 0, l.Rank())
	require.Equal(t, 1, l.Size())
	_, _, ok, err := l.Poll()
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, l.Send(0, []byte("a")))
	require.NoError(t, l.Send(0, []byte("b")))
	require.ErrorContains(t, l.Send(1, nil), "only rank 0")
	for _, want := range []string{"a", "b"} {
		from, msg, ok, err := l.Poll()
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 0, from)
		require.Equal(t, want, string(msg))
	}
	all, err := l.AllGather([]byte("x"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("x")}, all)
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Close(), ErrClosed)
	require.ErrorIs(t, l.Send(0, nil), ErrClosed)
}
