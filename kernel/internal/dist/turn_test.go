package dist

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTurnsFollowContention drives the turn length with a made-up run delay: short turns
// once a window's wait exceeds contendedShare, long ones again only below half of it.
func TestTurnsFollowContention(t *testing.T) {
	var delay time.Duration
	tl := turns{delay: func() time.Duration { return delay }}
	t0 := time.Unix(0, 0)
	tl.start(t0)
	window := func(i int, share float64) int {
		delay += time.Duration(share * float64(contendWindow))
		return tl.events(t0.Add(time.Duration(i) * contendWindow))
	}
	require.Equal(t, turnEvents, tl.events(t0.Add(contendWindow/2)), "within the first window")
	steps := []struct {
		name  string
		share float64
		want  int
	}{
		{"idle core", 0.01, turnEvents},
		{"waits a third of the time", 0.33, contendedEvents},
		{"between the thresholds keeps short turns", 0.15, contendedEvents},
		{"below half the threshold", 0.05, turnEvents},
		{"between the thresholds keeps long turns", 0.15, turnEvents},
		{"contended again", 0.5, contendedEvents},
	}
	for i, s := range steps {
		require.Equal(t, s.want, window(i+1, s.share), s.name)
	}
}

// TestTurnsWithoutRunDelay keeps the long turns where the run delay cannot be read.
func TestTurnsWithoutRunDelay(t *testing.T) {
	tl := turns{delay: func() time.Duration { return -1 }}
	t0 := time.Unix(0, 0)
	tl.start(t0)
	require.Equal(t, turnEvents, tl.events(t0.Add(10*contendWindow)))
}
