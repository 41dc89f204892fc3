package partition

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundRobin(t *testing.T) {
	require.Equal(t, []int{0, 1, 2, 0, 1, 2, 0}, RoundRobin{}.Partition(7, 3))
	require.Equal(t, []int{0, 0, 1, 1, 0, 0, 1}, RoundRobin{Block: 2}.Partition(7, 2))
}

func TestBlocks(t *testing.T) {
	require.Equal(t, []int{0, 0, 0, 1, 1, 2, 2}, Blocks{}.Partition(7, 3))
	require.Equal(t, []int{0, 1, 2}, Blocks{}.Partition(3, 5), "more parts than LPs leaves parts empty")
}

// TestBalancedAndValid checks, over random sizes, that the built-in partitioners give every
// LP a valid part and that part sizes differ by at most one (at most Block for RoundRobin).
func TestBalancedAndValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n, parts, block := r.IntN(300), 1+r.IntN(9), 1+r.IntN(5)
		for _, c := range []struct {
			p     Partitioner
			slack int
		}{{Blocks{}, 1}, {RoundRobin{Block: block}, block}} {
			part, err := Check(c.p, n, parts)
			require.NoError(t, err)
			s := Sizes(part, parts)
			lo, hi := n, 0
			for _, v := range s {
				lo, hi = min(lo, v), max(hi, v)
			}
			require.LessOrEqual(t, hi-lo, c.slack, "%T n=%d parts=%d sizes=%v", c.p, n, parts, s)
		}
	}
}

type broken struct{ out []int }

func (b broken) Partition(n, parts int) []int { return b.out }

func TestCheckRejectsBadPartitions(t *testing.T) {
	_, err := Check(broken{[]int{0}}, 2, 2)
	require.ErrorContains(t, err, "returned 1 parts for 2 LPs")
	_, err = Check(broken{[]int{0, 2}}, 2, 2)
	require.ErrorContains(t, err, "LP 1 in part 2")
	_, err = Check(Blocks{}, 2, 0)
	require.Error(t, err)
}

func TestNamed(t *testing.T) {
	for _, n := range Names() {
		_, err := Named(n)
		require.NoError(t, err)
	}
	_, err := Named("metis")
	require.ErrorContains(t, err, `unknown partitioning "metis"`)
}
