package timewarp

import (
	"os"
	"time"
)

// delayMeter reads the process's run delay: the time its threads spent runnable but
// waiting for a processor, summed over its threads (the second field of each
// /proc/self/task/TID/schedstat). A thread that exits takes its share with it, so a
// difference may come out negative; callers clamp it.
type delayMeter struct{}

// delay returns the process's run delay so far, or -1 when it cannot be read.
func (m *delayMeter) delay() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		if d := runDelay(b); d > 0 {
			sum += d
		}
	}
	return sum
}

// runDelay returns the second field of a schedstat line ("exec_runtime run_delay
// timeslices", in nanoseconds), or -1.
func runDelay(b []byte) time.Duration {
	field, v, seen := 0, int64(0), false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v, seen = v*10+int64(c-'0'), true
		case seen:
			if field == 1 {
				return time.Duration(v)
			}
			field, v, seen = field+1, 0, false
		}
	}
	return -1
}
