package osthread

import (
	"os"
	"time"
)

// RunDelay returns how long the calling thread has waited for a processor while runnable
// (the second field of /proc/thread-self/schedstat), or -1 when it cannot be read. Only a
// goroutine locked to its thread ([runtime.LockOSThread]) measures itself with it.
func RunDelay() time.Duration {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return -1
	}
	return ParseRunDelay(b)
}

// ProcessRunDelay returns the time the process's threads have waited for a processor
// while runnable, summed over the threads (/proc/self/task/TID/schedstat), or -1 when it
// cannot be read. A thread that exits takes its share with it, so a difference of two
// readings may come out negative; callers clamp it.
func ProcessRunDelay() time.Duration {
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
		if d := ParseRunDelay(b); d > 0 {
			sum += d
		}
	}
	return sum
}
