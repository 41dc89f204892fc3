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

// TestWaitsShare checks the windows of a made-up run delay: no share before a window has
// passed, the delay over the time times the threads after it, a fall counted as none, and
// no measure where the delay cannot be read.
func TestWaitsShare(t *testing.T) {
	var delay time.Duration
	read := func() time.Duration { return delay }
	t0 := time.Unix(0, 0)
	var w Waits
	require.True(t, w.Start(read, t0))
	_, ok := w.Share(t0.Add(50*time.Millisecond), 100*time.Millisecond, 1)
	require.False(t, ok, "within the first window")
	delay = 30 * time.Millisecond
	s, ok := w.Share(t0.Add(150*time.Millisecond), 100*time.Millisecond, 2)
	require.True(t, ok)
	require.InDelta(t, 0.1, s, 1e-9, "30 ms over 150 ms of 2 threads")
	delay = 10 * time.Millisecond
	s, ok = w.Share(t0.Add(300*time.Millisecond), 100*time.Millisecond, 1)
	require.True(t, ok)
	require.Zero(t, s, "a run delay that fell counts as no wait")
	var off Waits
	require.False(t, off.Start(func() time.Duration { return -1 }, t0))
	_, ok = off.Share(t0.Add(time.Hour), 100*time.Millisecond, 1)
	require.False(t, ok, "off where the run delay cannot be read")
}

// BenchmarkProcessRunDelay measures a reading of the process's run delay (a file of /proc
// per thread), which the engine takes at the start and end of a run and its sampler at
// most every 10 ms.
func BenchmarkProcessRunDelay(b *testing.B) {
	for b.Loop() {
		ProcessRunDelay()
	}
}

// TestIdleCPUs checks the windows of made-up idle ticks: the mean idle CPUs over each
// window, and nothing where the ticks cannot be read.
func TestIdleCPUs(t *testing.T) {
	ticks := int64(500)
	read := func() int64 { return ticks }
	t0 := time.Unix(100, 0)
	var m Idle
	require.Equal(t, -1.0, m.CPUs(t0), "off before Start")
	require.True(t, m.Start(read, t0))
	ticks += 10 // 0.1 s idle over a 100 ms window: one CPU idle
	require.InDelta(t, 1.0, m.CPUs(t0.Add(100*time.Millisecond)), 1e-9)
	ticks += 5 // then half a CPU over the next 100 ms
	require.InDelta(t, 0.5, m.CPUs(t0.Add(200*time.Millisecond)), 1e-9)
	require.Equal(t, -1.0, m.CPUs(t0.Add(200*time.Millisecond)), "no time passed")
	ticks -= 100 // a reading that went down counts as none idle
	require.InDelta(t, 0.0, m.CPUs(t0.Add(300*time.Millisecond)), 1e-9)
	var off Idle
	require.False(t, off.Start(func() int64 { return -1 }, t0), "unreadable: off")
	require.Equal(t, -1.0, off.CPUs(t0.Add(time.Second)))
}
