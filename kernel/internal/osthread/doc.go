// Package osthread gives the calling OS thread's core away without the Go scheduler: a
// goroutine that waits on its own thread (a manager locked to MPI's thread and running
// workers, a worker that spins) yields or sleeps in the kernel, where [runtime.Gosched] or
// [time.Sleep] on a locked thread would hand the thread's processor to another thread and
// back at each call. It also reads how long a thread, or the process's threads, waited
// for a processor while runnable (the kernel's run delay), which tells a busy machine, and
// how long the CPUs it may run on sat idle (/proc/stat), which tells a core to spare.
// Elsewhere than on Linux it yields through the Go scheduler and reads neither.
package osthread
