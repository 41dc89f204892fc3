package dispatch_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

// underRace returns race when the race detector is on and plain otherwise. The detector
// makes every event many times slower, and what it is there to check is the concurrency:
// hand-overs, rollbacks and cancellations, GVT rounds and fossil collection, which a run of
// a few hundred events per arrangement already goes through (GVT rounds come every few
// hundred events a worker and every GVT period of wall-clock time, so a slowed run has more
// of them per event, not fewer). So the heaviest tests run every arrangement under it,
// each compared with the sequential digest, with shorter end times or smaller models; see
// docs/DECISIONS.md, "Runs under the race detector".
func underRace[T any](plain, race T) T {
	if raceEnabled {
		return race
	}
	return plain
}

// coverage sums what the runs of one model in a matrix went through, so that the matrix
// can assert that its runs (shorter under the race detector) still exercised the engine:
// some rolled back, and some agreed on GVT more than once (and so fossil collected).
type coverage struct {
	rolledBack, rounds uint64
}

func (c *coverage) add(r kernel.Result) {
	c.rolledBack += r.EventsRolledBack
	c.rounds = max(c.rounds, r.GVTCycles)
}

// check fails t unless some run rolled back and some run had more than one GVT round.
func (c coverage) check(t *testing.T, what string) {
	t.Helper()
	require.NotZero(t, c.rolledBack, "%s: no run rolled back", what)
	require.Greater(t, c.rounds, uint64(1), "%s: no run agreed on GVT more than once", what)
}
