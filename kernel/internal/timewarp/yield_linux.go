package timewarp

import "syscall"

// yieldThread gives the calling OS thread's core to another runnable thread, of this
// process or another (sched_yield), not only to another goroutine as [runtime.Gosched]
// does.
func yieldThread() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
