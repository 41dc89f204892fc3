package termination

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLastPassiveWorkerIsTold(t *testing.T) {
	w := NewWorkers(3)
	require.False(t, w.Passive())
	require.False(t, w.Passive())
	require.False(t, w.AllPassive())
	require.True(t, w.Passive(), "the third of three")
	require.True(t, w.AllPassive())
	w.Active()
	require.False(t, w.AllPassive())
	require.True(t, w.Passive())
}

// TestConcurrentTransitions: workers going passive and active concurrently; exactly the
// transitions that complete the set report it, and the count ends consistent.
func TestConcurrentTransitions(t *testing.T) {
	const n, rounds = 8, 1000
	w := NewWorkers(n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				w.Passive()
				w.Active()
			}
			w.Passive()
		}()
	}
	wg.Wait()
	require.True(t, w.AllPassive())
}
