// Package osthread gives the calling OS thread's core away without the Go scheduler: a
// goroutine that waits on its own thread (a manager locked to MPI's thread and running
// workers, a worker that spins) yields or sleeps in the kernel, where [runtime.Gosched] or
// [time.Sleep] on a locked thread would hand the thread's processor to another thread and
// back at each call. It also reads how long a thread, or the process's threads, waited
// for a processor while runnable (the kernel's run delay), which tells a busy machine.
package osthread

import (
	"syscall"
	"time"
)

// Yield gives the calling thread's core to another runnable thread, of this process or
// another (sched_yield), not only to another goroutine as [runtime.Gosched] does.
func Yield() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// Sleep sleeps the calling thread for d (nanosleep), its goroutine staying on it.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
