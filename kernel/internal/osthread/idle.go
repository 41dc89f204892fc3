package osthread

import "time"

// ticksPerSecond is the unit of /proc/stat's CPU times (USER_HZ, 100 on every Linux
// architecture Go supports: the kernel reports in it whatever its own tick rate).
const ticksPerSecond = 100

// Idle measures, window by window, how many of the CPUs this process may run on sat idle
// on average, from an idle time reading (IdleTicks, or a test's). The adaptation of the
// hosts (package timewarp) tries one more thread only where a core was free: beside a
// process that keeps the other cores busy, the try costs the run (docs/PERFORMANCE.md).
type Idle struct {
	read  func() int64
	since time.Time // the current window's start
	t0    int64     // the idle ticks then
}

// Start begins the first window at now, reading the idle ticks with read; it reports
// false, and the measure stays off, where they cannot be read.
func (m *Idle) Start(read func() int64, now time.Time) bool {
	t := read()
	if t < 0 {
		return false
	}
	m.read, m.since, m.t0 = read, now, t
	return true
}

// CPUs returns the mean number of idle CPUs since the current window began, and begins
// the next window at now; it returns -1 when the measure is off or no time has passed.
// /proc/stat counts in ticks of 10 ms, so over a 100 ms window the mean comes in steps of
// 0.1 CPU.
func (m *Idle) CPUs(now time.Time) float64 {
	el := now.Sub(m.since)
	if m.read == nil || el <= 0 {
		return -1
	}
	t := m.read()
	if t < 0 {
		return -1
	}
	idle := float64(max(0, t-m.t0)) / ticksPerSecond
	m.since, m.t0 = now, t
	return idle / el.Seconds()
}
