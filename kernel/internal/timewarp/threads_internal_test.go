package timewarp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeanThreads checks Stats.WorkerThreads' arithmetic: the active hosts' count over the
// run, weighted by time, as setActive changes it.
func TestMeanThreads(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name    string
		changes []int // the active hosts after each second (from 4 at the start)
		want    float64
	}{
		{"unchanged", nil, 4},
		{"one second each at 4, 1", []int{1}, 2.5},
		{"4, 2, 1, 1", []int{2, 1, 1}, 2},
		{"4, 1, 4", []int{1, 4}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := &hostSet{threadsSince: t0, hosts: make([]*host, 0)}
			hs.active.Store(4)
			for i, k := range c.changes {
				hs.countThreads(t0.Add(time.Duration(i+1) * time.Second))
				hs.active.Store(int32(k))
			}
			end := t0.Add(time.Duration(len(c.changes)+1) * time.Second)
			require.InDelta(t, c.want, hs.meanThreads(t0, end), 1e-12)
		})
	}
	hs := &hostSet{threadsSince: t0}
	hs.active.Store(3)
	require.Equal(t, 3.0, hs.meanThreads(t0, t0), "a run of no time: the active hosts")
}
