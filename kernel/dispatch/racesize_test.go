package dispatch_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

// The race detector makes every event about ten times slower, and what it is there to
// check is the concurrency: hand-overs between workers and ranks, rollbacks and
// cancellations, GVT rounds and fossil collection. A run of a thousand events or so goes
// through all of them in every arrangement: in one process a GVT round comes every
// period of wall-clock time, so a run slowed by the detector has more rounds per event,
// not fewer (the matrices' runs have 2 to 100 rounds); across loopback ranks a round
// waits for the token's laps, and the runs keep 1 to 14, most 2 or more. So under the
// detector the heaviest tests run every arrangement they run without it, each compared
// with the sequential digest, on shorter runs or smaller models, and the matrices assert
// that their runs still roll back and that most agree on GVT more than once (coverage).
// See docs/DECISIONS.md, "Tests under the race detector".

// underRace returns race when the race detector is on and plain otherwise.
func underRace[T any](plain, race T) T {
	if raceEnabled {
		return race
	}
	return plain
}

// raceShort returns ms with each model's end time cut to its raceEnd when the race
// detector is on (ms unchanged otherwise, and for a model without a raceEnd).
func raceShort(ms []model) []model {
	out := make([]model, len(ms))
	for i, m := range ms {
		if raceEnabled && m.raceEnd > 0 {
			m.end = m.raceEnd
		}
		out[i] = m
	}
	return out
}

// coverage sums what the runs of one model in a matrix went through, so that the matrix
// can assert that its runs (shorter under the race detector) still exercised the engine.
// Parallel subtests add to it.
type coverage struct {
	mu                           sync.Mutex
	runs, rolledBack, multiRound uint64
	rounds                       []uint64
}

// add counts the result of one run (of one rank).
func (c *coverage) add(r kernel.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	c.rounds = append(c.rounds, r.GVTCycles)
	c.rolledBack += r.EventsRolledBack
	if r.GVTCycles > 1 {
		c.multiRound++
	}
}

// check fails t unless some run rolled back, and most runs agreed on GVT more than once
// (so that fossil collection ran before the end). A model run with a single worker in
// one process rolls nothing back, and a matrix of such runs passes rollbacks false.
func (c *coverage) check(t *testing.T, what string, rollbacks bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == 0 { // every subtest filtered out by -run
		return
	}
	if rollbacks {
		require.NotZero(t, c.rolledBack, "%s: no run rolled back", what)
	}
	require.Greater(t, 2*c.multiRound, c.runs, "%s: most runs agreed on GVT at most once (rounds of each: %v)", what, c.rounds)
}
