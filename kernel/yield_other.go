//go:build !linux

package kernel

import "runtime"

// yieldThread gives the core to another goroutine (sched_yield is Linux only here).
func yieldThread() { runtime.Gosched() }
