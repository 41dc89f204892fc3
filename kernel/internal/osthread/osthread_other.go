//go:build !linux

// Package osthread gives the calling OS thread's core away without the Go scheduler
// (on Linux; elsewhere through it), and reads the run delay and the CPUs' idle time (on
// Linux only).
package osthread

import (
	"runtime"
	"time"
)

// Yield gives the core to another goroutine (sched_yield is Linux only here).
func Yield() { runtime.Gosched() }

// Sleep sleeps the calling goroutine for d.
func Sleep(d time.Duration) { time.Sleep(d) }
