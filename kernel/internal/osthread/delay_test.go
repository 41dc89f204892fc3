package osthread

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRunDelay(t *testing.T) {
	cases := []struct {
		name string
		line string
		want time.Duration
	}{
		{"three fields", "123456 7890 12\n", 7890},
		{"zero delay", "5 0 1\n", 0},
		{"one field only", "42\n", -1},
		{"empty", "", -1},
	}
	for _, c := range cases {
		require.Equal(t, c.want, ParseRunDelay([]byte(c.line)), c.name)
	}
}

func TestRunDelayReadsOwnThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		require.Equal(t, time.Duration(-1), RunDelay())
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := RunDelay()
	require.GreaterOrEqual(t, a, time.Duration(0), "schedstat readable")
	require.GreaterOrEqual(t, RunDelay(), a, "a thread's run delay never decreases")
	require.GreaterOrEqual(t, ProcessRunDelay(), time.Duration(0))
}
