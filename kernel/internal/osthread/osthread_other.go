//go:build !linux

package osthread

import (
	"runtime"
	"time"
)

// Yield gives the core to another goroutine (sched_yield is Linux only here).
func Yield() { runtime.Gosched() }

// Sleep sleeps the calling goroutine for d.
func Sleep(d time.Duration) { time.Sleep(d) }
