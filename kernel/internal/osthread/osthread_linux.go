package osthread

import (
	"syscall"
	"time"
)

// Yield gives the calling thread's core to another runnable thread, of this process or
// another (sched_yield), not only to another goroutine as [runtime.Gosched] does.
//
// A raw system call: the thread keeps its Go processor (P) while the kernel runs others.
// Through syscall.Syscall the P is marked as in a system call, and a yield that lasts (the
// thread waits behind other ranks on a crowded node) lets the runtime's monitor hand the
// P to another thread, which this one must then wake and take it back from: at -np 8 on 2
// cores twice the voluntary switches and 13 – 16% of the rate (docs/PERFORMANCE.md,
// "Session 32"). sched_yield returns as soon as the kernel runs the thread again, so
// what needs the P (a stop of the world for the collector) waits no longer than the
// thread's own turn would make it wait anyway.
func Yield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// Sleep sleeps the calling thread for d (nanosleep), its goroutine staying on it.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
