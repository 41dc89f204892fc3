package timewarp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDecideTriesOnlyWhereACoreIsFree follows host 0's decisions over a run's windows:
// a busy window takes a host off; after probeFirst windows one more is tried only where a
// core sat idle (or where the idle time is not known), and a try that finds the machine
// busy is undone.
func TestDecideTriesOnlyWhereACoreIsFree(t *testing.T) {
	const window = 100 * time.Millisecond
	d := &timeWarpDispatcher{}
	hs := &hostSet{hosts: []*host{{d: d, wake: make(chan struct{}, 1)}, {d: d, wake: make(chan struct{}, 1)}}}
	hs.active.Store(2)
	t0 := time.Unix(1000, 0)
	at := func(w int) time.Time { return t0.Add(time.Duration(w) * window) }
	const pf = probeFirst
	steps := []struct {
		name        string
		w           int // the window that ends
		share, idle float64
		want        int32 // active hosts after it
	}{
		{"busy: one host off", 1, 0.5, 0, 1},
		{"quiet, but no core free: no try", 1 + pf, 0, 0, 1},
		{"still none free", 2 + pf, 0, 0.3, 1},
		{"a core sat idle: try", 3 + pf, 0, 1, 2},
		{"the try finds the machine busy: undone", 4 + pf, 0.45, 0, 1},
		{"a core free, but the wait doubled", 3 + 3*pf, 0, 1, 1},
		{"after the doubled wait", 4 + 3*pf, 0, 0.6, 2},
		{"the try holds", 5 + 3*pf, 0.05, 0, 2},
		{"at the most hosts: nothing to try", 10 + 3*pf, 0, 2, 2},
	}
	for _, s := range steps {
		hs.decide(at(s.w), window, int(hs.active.Load()), s.share, s.idle)
		require.Equal(t, s.want, hs.active.Load(), s.name)
	}

	// Where the idle time is not known (-1), the tries follow the waits alone.
	hs.active.Store(1)
	hs.adapt = adaptState{gap: pf, nextProbe: at(40)}
	hs.decide(at(39), window, 1, 0, -1)
	require.Equal(t, int32(1), hs.active.Load(), "too soon")
	hs.decide(at(40), window, 1, 0, -1)
	require.Equal(t, int32(2), hs.active.Load(), "idle not known: tried")
}
