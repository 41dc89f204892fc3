package grid

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/partition"
)

func TestMoveWraps(t *testing.T) {
	require.EqualValues(t, 1, Move(0, East, 4, 3))
	require.EqualValues(t, 3, Move(0, West, 4, 3))
	require.EqualValues(t, 4, Move(0, North, 4, 3))
	require.EqualValues(t, 8, Move(0, South, 4, 3))
	for i := range uint32(12) {
		require.Equal(t, i, Move(Move(i, East, 4, 3), West, 4, 3))
		require.Equal(t, i, Move(Move(i, North, 4, 3), South, 4, 3))
	}
}

func TestTiles(t *testing.T) {
	g := Tiles{X: 10, Y: 6}
	for _, parts := range []int{1, 2, 3, 4, 6, 7} {
		part, err := partition.Check(g, 60, parts)
		require.NoError(t, err)
		for p, s := range partition.Sizes(part, parts) {
			require.Positive(t, s, "parts=%d: part %d empty", parts, p)
		}
	}
	part := g.Partition(60, 4)
	require.Equal(t, []int{0, 1, 2, 3}, []int{part[0], part[5], part[30], part[59]})
	require.Len(t, g.Partition(61, 2), 61, "not a grid: blocks")
}
