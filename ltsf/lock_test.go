package ltsf

import (
	"runtime"
	"sync"
	"testing"
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
	for _, kind := range LockKinds() {
		t.Run(kind, func(t *testing.T) {
			l, err := NewLock(kind)
			require.NoError(t, err)
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

// TestTicketLockFIFO checks that tickets are served in order: with the lock held, a
// goroutine that takes a ticket waits until every earlier ticket has been served.
func TestTicketLockFIFO(t *testing.T) {
	var l TicketLock
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

func TestTicketLockPadding(t *testing.T) {
	var l TicketLock
	require.GreaterOrEqual(t, unsafe.Offsetof(l.next), uintptr(56))
	require.GreaterOrEqual(t, unsafe.Sizeof(l)-unsafe.Offsetof(l.serving)-4, uintptr(56))
}

func TestNewLock(t *testing.T) {
	l, err := NewLock("ticket")
	require.NoError(t, err)
	require.IsType(t, &TicketLock{}, l)
	l, err = NewLock("mutex")
	require.NoError(t, err)
	require.IsType(t, &sync.Mutex{}, l)
	l, err = NewLock("spin")
	require.Nil(t, l)
	require.EqualError(t, err, `unknown lock type "spin" (want ticket or mutex)`)
	require.Equal(t, []string{"ticket", "mutex"}, LockKinds())
	require.Equal(t, []string{"heap", "splay", "ladder", "parallel-heap"}, Kinds())
}
