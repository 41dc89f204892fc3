//go:build !linux

package timewarp

import "runtime"

// yieldThread gives the core to another goroutine (sched_yield is Linux only here).
func yieldThread() { runtime.Gosched() }
