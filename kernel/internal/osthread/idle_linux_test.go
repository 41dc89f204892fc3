package osthread

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseIdleTicks(t *testing.T) {
	const stat = "cpu  10 0 20 3000 40 0 0 0 0 0\n" +
		"cpu0 5 0 10 1000 10 0 0 0 0 0\n" +
		"cpu1 5 0 10 2000 30 0 0 0 0 0\n" +
		"intr 12345\nctxt 678\n"
	all := func(int) bool { return true }
	cases := []struct {
		name string
		text string
		mine func(int) bool
		want int64
	}{
		{"every CPU, the total line left out", stat, all, 1000 + 10 + 2000 + 30},
		{"only the CPUs the process may use", stat, func(c int) bool { return c == 1 }, 2030},
		{"none of them", stat, func(int) bool { return false }, -1},
		{"no per-CPU lines", "cpu  1 2 3 4 5\n", all, -1},
		{"a short line is skipped", "cpu0 1 2 3\ncpu1 0 0 0 7 1 0\n", all, 8},
		{"no final newline", "cpu3 0 0 0 9 1", all, 10},
		{"not a number", "cpu0 0 0 0 x 1 0\n", all, -1},
	}
	for _, c := range cases {
		require.Equal(t, c.want, parseIdleTicks([]byte(c.text), c.mine), c.name)
	}
}

// TestIdleTicksReadable: /proc/stat gives this process's CPUs' idle time. (Not that it
// never decreases: with NO_HZ, some kernels' per-CPU idle and iowait accounting steps
// back a little, which the callers' differences over windows absorb.)
func TestIdleTicksReadable(t *testing.T) {
	require.GreaterOrEqual(t, IdleTicks(), int64(0), "/proc/stat readable")
}
