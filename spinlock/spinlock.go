// Package spinlock provides the locks that guard data shared by the time-warp workers
// (schedule queues and the structures beside them): Ticket, a FIFO-fair ticket spinlock;
// Mutex, a sync.Mutex that polls for a while before it parks; and New, which builds a
// lock by its configuration name ("ticket" or "mutex").
//
// Ticket is padded so that it has a cache line to itself. Waiters yield the processor
// (the next in line after a short spin), so it tolerates more goroutines than cores, but
// it is at its best when lock holders are not descheduled (workers at most GOMAXPROCS).
// Its strength is a bounded, first-come first-served wait; its cost is a cache-line
// hand-off on every contended acquisition, and a hand-over to a waiter whose thread is
// not running stalls everyone. Mutex is the alternative: unfair (a releasing goroutine
// may take it straight back, and a waiter parks after polling for a while), which gives
// it the higher throughput under contention (see BenchmarkLocks in package ltsf, which
// measures both around a schedule queue's hold operation) and keeps it working when the
// machine has other work to run.
package spinlock

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/internal/spin"
)

// ticketSpins is how many times Lock polls before it starts yielding the processor.
const ticketSpins = 1024

// ticketPauseAfter is how long a Ticket waiter yields through the Go scheduler alone
// before it also pauses now and then (spin.Pause): a holder woken onto the local queue of
// a processor that something holds (the collector's mark worker) would otherwise wait
// there while every waiter spins.
const ticketPauseAfter = 5 * time.Millisecond

// Ticket is a FIFO-fair ticket spinlock: Lock takes the next ticket and waits until it
// is served, Unlock serves the next ticket. The waiter next in line spins briefly
// (ticketSpins polls) and then calls runtime.Gosched on every poll; waiters further back
// yield on every poll from the start; a wait past ticketPauseAfter also pauses now and
// then. So the holder gets to run even when goroutines outnumber processors. The zero
// value is an unlocked lock. A Ticket must not be copied after first use, and it is not
// reentrant.
//
// Strict FIFO hand-off costs a cache-line transfer between cores on every contended
// acquisition, where sync.Mutex lets the releasing goroutine take the lock again; under
// contention the mutex has the higher throughput, the ticket lock the bounded wait.
//
// The two counters are surrounded by padding, so that wherever the lock sits (alone or
// inside another struct) the cache line holding them holds nothing else.
type Ticket struct {
	_       [56]byte
	next    atomic.Uint32 // the next ticket to hand out
	serving atomic.Uint32 // the ticket that holds the lock
	_       [56]byte
}

var _ sync.Locker = (*Ticket)(nil)

// Lock acquires the lock, waiting for every goroutine that asked before.
func (l *Ticket) Lock() {
	t := l.next.Add(1) - 1
	var yields spin.Wait
	for i := 0; ; i++ {
		s := l.serving.Load()
		if s == t {
			return
		}
		// Only the next in line spins, and only briefly; the others yield at once.
		switch {
		case t-s <= 1 && i < ticketSpins:
			pause()
		case yields.Turn(ticketPauseAfter):
			time.Sleep(spin.Pause)
		default:
			runtime.Gosched()
		}
	}
}

// Unlock releases the lock to the next ticket. Unlocking a lock that is not locked
// corrupts it.
func (l *Ticket) Unlock() { l.serving.Add(1) }

// The lock kinds New accepts.
const (
	// KindTicket names a *Ticket.
	KindTicket = "ticket"
	// KindMutex names a *Mutex that polls before it parks.
	KindMutex = "mutex"
)

// Kinds returns the names New accepts.
func Kinds() []string { return []string{KindTicket, KindMutex} }

// New returns a new unlocked lock of the named kind: [KindTicket] (*Ticket) or
// [KindMutex] (*Mutex).
func New(kind string) (sync.Locker, error) {
	switch kind {
	case KindTicket:
		return new(Ticket), nil
	case KindMutex:
		return NewMutex(true), nil
	}
	return nil, fmt.Errorf("unknown lock type %q (want ticket or mutex)", kind)
}

// mutexSpin is how long Mutex.Lock polls for the lock before it parks: it parks at its
// first look at the clock after that long.
const mutexSpin = 100 * time.Microsecond

// Mutex is a sync.Mutex whose Lock first polls for the lock, for up to mutexSpin, and
// only then parks the goroutine as sync.Mutex does. sync.Mutex alone parks its waiter
// after well under a microsecond; waking a parked goroutine costs microseconds, which a
// lock held for a few microseconds at a time (workers sharing a schedule queue, each
// taking a batch) then pays on nearly every hand-over. Polling, the waiter takes the lock
// as it is released; parking after mutexSpin, it keeps sync.Mutex's behaviour where the
// holder is held up, and it yields the processor now and then while it polls, so that
// goroutines beyond GOMAXPROCS, the holder among them, get to run. Unlike Ticket it is
// not fair: the releasing goroutine may take it straight back, so a waiter whose thread
// the operating system has descheduled holds up no one.
//
// Where the goroutines that take it outnumber the processors (GOMAXPROCS), a polling
// waiter keeps a processor from a goroutine that could use it, the holder perhaps, for
// up to mutexPolls polls: NewMutex(false) then gives one that parks at once, as
// sync.Mutex (PHOLD, 4 workers sharing 2 schedule queues on 2 processors: 0.59 of
// sync.Mutex's rate when polling). The zero value polls.
type Mutex struct {
	mu   sync.Mutex
	park bool // park at once: no polling
}

var _ sync.Locker = (*Mutex)(nil)

// NewMutex returns a new unlocked Mutex that polls before it parks, or, with poll false,
// parks at once.
func NewMutex(poll bool) *Mutex { return &Mutex{park: !poll} }

// Lock acquires the lock.
func (m *Mutex) Lock() {
	if m.park {
		m.mu.Lock()
		return
	}
	if m.mu.TryLock() {
		return
	}
	start := time.Now()
	for i := 1; ; i++ {
		pause()
		if m.mu.TryLock() {
			return
		}
		if i%mutexPolls == 0 {
			if time.Since(start) > mutexSpin {
				break
			}
			runtime.Gosched()
		}
	}
	m.mu.Lock()
}

// mutexPolls is how many times Mutex.Lock polls between its looks at the clock, at each
// of which it also yields the processor: about 0.1 ms on the 2-vCPU machine of
// docs/PERFORMANCE.md (a poll is a PAUSE, 27 ns there). Yielding more often costs workers
// that share a schedule queue their rate: a waiter in the scheduler misses the hand-over
// (docs/DECISIONS.md, "Shared schedule queues at the sequential rate").
const mutexPolls = 4096

// Unlock releases the lock.
func (m *Mutex) Unlock() { m.mu.Unlock() }
