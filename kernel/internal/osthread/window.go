package osthread

import "time"

// Waits measures, window by window, the share of the time that passed which threads spent
// waiting for a processor, from a run delay reading (RunDelay for the calling thread,
// ProcessRunDelay for the process's threads, or a test's). The adaptation of the hosts
// (package timewarp) and the manager's turn length (package dist) both judge the load by
// it.
type Waits struct {
	read   func() time.Duration
	since  time.Time     // the current window's start
	delay0 time.Duration // the run delay then
}

// Start begins the first window at now, reading the run delay with read; it reports
// false, and the measure stays off, where the run delay cannot be read.
func (w *Waits) Start(read func() time.Duration, now time.Time) bool {
	d := read()
	if d < 0 {
		return false
	}
	w.read, w.since, w.delay0 = read, now, d
	return true
}

// Share returns, once at least window has passed since the current window began, the
// run delay over that time as a share of it times threads (the threads measured), and
// begins the next window at now; ok is false before that, or when the measure is off. A
// run delay that went down (a thread exited with its share) counts as no wait.
func (w *Waits) Share(now time.Time, window time.Duration, threads int) (share float64, ok bool) {
	el := now.Sub(w.since)
	if w.read == nil || el < window {
		return 0, false
	}
	d := w.read()
	share = max(0, float64(d-w.delay0)) / (float64(el) * float64(max(threads, 1)))
	w.since, w.delay0 = now, d
	return share, true
}
