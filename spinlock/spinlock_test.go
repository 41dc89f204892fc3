package spinlock

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestLocksMutualExclusion has many goroutines increment a plain counter under each kind
// of lock: a lost update shows in the total, and a data race in the race detector.
func TestLocksMutualExclusion(t *testing.T) {
	const goroutines = 16
	iters := 5000
	if testing.Short() || raceEnabled {
		iters = 1000
	}
	locks := map[string]func() sync.Locker{"mutex-parking": func() sync.Locker { return NewMutex(false) }}
	for _, kind := range Kinds() {
		locks[kind] = func() sync.Locker {
			l, err := New(kind)
			require.NoError(t, err)
			return l
		}
	}
	for kind, newLock := range locks {
		t.Run(kind, func(t *testing.T) {
			l := newLock()
			counter := 0
			inside := 0 // goroutines inside the critical section
			var start, done sync.WaitGroup
			start.Add(1)
			for range goroutines {
				done.Go(func() {
					start.Wait()
					for range iters {
						l.Lock()
						inside++
						if inside != 1 {
							panic("two goroutines hold the lock")
						}
						counter++
						inside--
						l.Unlock()
					}
				})
			}
			start.Done()
			done.Wait()
			require.Equal(t, goroutines*iters, counter)
		})
	}
}

// TestTicketFIFO checks that tickets are served in order: with the lock held, a
// goroutine that takes a ticket waits until every earlier ticket has been served.
func TestTicketFIFO(t *testing.T) {
	var l Ticket
	l.Lock()
	require.Equal(t, uint32(1), l.next.Load())
	require.Equal(t, uint32(0), l.serving.Load())
	got := make(chan struct{})
	go func() {
		l.Lock() // ticket 1
		close(got)
		l.Unlock()
	}()
	for l.next.Load() != 2 { // wait until the goroutine holds its ticket
		runtime.Gosched()
	}
	select {
	case <-got:
		t.Fatal("second Lock succeeded while the lock was held")
	default:
	}
	l.Unlock()
	<-got
	l.Lock()
	require.Equal(t, uint32(2), l.serving.Load())
	l.Unlock()
}

func TestTicketPadding(t *testing.T) {
	var l Ticket
	require.GreaterOrEqual(t, unsafe.Offsetof(l.next), uintptr(56))
	require.GreaterOrEqual(t, unsafe.Sizeof(l)-unsafe.Offsetof(l.serving)-4, uintptr(56))
}

func TestNew(t *testing.T) {
	l, err := New("ticket")
	require.NoError(t, err)
	require.IsType(t, &Ticket{}, l)
	l, err = New("mutex")
	require.NoError(t, err)
	require.IsType(t, &Mutex{}, l)
	l, err = New("spin")
	require.Nil(t, l)
	require.EqualError(t, err, `unknown lock type "spin" (want ticket or mutex)`)
	require.Equal(t, []string{"ticket", "mutex"}, Kinds())
}

// TestMutexLongHold: a waiter that has polled for longer than mutexSpin parks, and still
// gets the lock when it is released.
func TestMutexLongHold(t *testing.T) {
	for _, poll := range []bool{true, false} {
		t.Run(fmt.Sprint("poll=", poll), func(t *testing.T) { testMutexLongHold(t, NewMutex(poll)) })
	}
}

// testMutexLongHold is TestMutexLongHold for one Mutex.
func testMutexLongHold(t *testing.T, m *Mutex) {
	m.Lock()
	asked := make(chan struct{})
	got := make(chan struct{})
	go func() {
		close(asked)
		m.Lock()
		close(got)
		m.Unlock()
	}()
	<-asked
	for start := time.Now(); time.Since(start) < 4*mutexSpin; { // a hold past the waiter's polling
		runtime.Gosched()
	}
	select {
	case <-got:
		t.Fatal("Lock succeeded while the lock was held")
	default:
	}
	m.Unlock()
	<-got
	require.True(t, m.mu.TryLock(), "the lock was not released by the waiter")
}
