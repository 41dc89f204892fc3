package dispatch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/ltsf"
	"github.com/warpedgo/warped/models/logic"
)

// queueCase is one arrangement TestQueueTypesDeterminism runs every queue type in.
type queueCase struct {
	workers, schedulers int // schedulers 0: one schedule queue per worker
	stateSaving         string
	cancellation        string
	check               bool // CheckRollbacks
	offload             bool // batches of 16 on the CPU backend
}

func (c queueCase) String() string {
	return fmt.Sprintf("w%d-s%d-%s-%s-check%v-offload%v", c.workers, c.schedulers, c.stateSaving, c.cancellation, c.check, c.offload)
}

// queueCases: one worker; two workers with a queue each; two workers sharing one queue.
// Between them both state-saving types, both cancellations (lazy cancellation's re-sends
// are what the cancellation stamps tell apart), the rollback check and batched offload
// (which takes its batches from the queue).
var queueCases = []queueCase{
	// workers, schedulers, state saving, cancellation, check, offload
	{1, 0, "reverse", "aggressive", false, false},
	{2, 0, "reverse", "aggressive", false, false},
	{2, 0, "periodic", "lazy", true, false},
	{2, 0, "reverse", "aggressive", false, true},
	{2, 1, "reverse", "aggressive", false, false},
	{2, 1, "periodic", "lazy", true, false},
	{2, 1, "periodic", "aggressive", false, true},
}

// logicModel is a small circuit for the queue matrix: integer times, so many events of
// one time, as PCS has.
func logicModel(t *testing.T) model {
	return model{"logic", 400, func() []kernel.LogicalProcess {
		c := logic.DefaultConfig()
		c.Circuit = "multiplier-4"
		lps, err := logic.New(c)
		require.NoError(t, err)
		return lps
	}, true, 0} // 268 events: short already
}

// TestQueueTypesDeterminism runs every schedule queue type (ltsf.QueueTypes) on PHOLD,
// PCS, PHOLD without lookahead (rollbacks and cancellations aplenty) and a logic circuit,
// in each of queueCases, and checks that each run's digest is the sequential one.
func TestQueueTypesDeterminism(t *testing.T) {
	be := cpuBackend(t)
	models := raceShort(append(smallModels(t), logicModel(t)))
	for _, m := range models {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5}, m.build())
		var cov coverage
		for _, qt := range ltsf.QueueTypes() {
			for _, c := range queueCases {
				t.Run(m.name+"/"+qt+"/"+c.String(), func(t *testing.T) {
					tw := kernel.TimeWarpConfig{Workers: c.workers, Schedulers: c.schedulers, QueueType: qt,
						StateSaving: c.stateSaving, Cancellation: c.cancellation, CheckRollbacks: c.check}
					if !m.reversible {
						tw.StateSaving = kernel.StateSavingPeriodic
					}
					if c.offload {
						tw.Offload, tw.BatchSize = be, 16
					}
					r := runTW(t, kernel.Config{MaxSimTime: m.end, Seed: 5, Type: kernel.TimeWarp, TimeWarp: tw}, m.build())
					want := qt + ", one per worker"
					if c.schedulers > 0 {
						want = fmt.Sprintf("%s, %d shared by %d workers", qt, c.schedulers, c.workers)
					}
					require.Equal(t, want, r.ScheduleQueues)
					if c.offload && m.name != "logic" { // logic's gates have no batch kernel
						require.NotZero(t, r.BatchedEvents, "no event was handled in a batch")
					}
					require.Equal(t, seq.Digest, r.Digest)
					require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
					cov.add(r.Result)
				})
			}
		}
		cov.check(t, m.name, true)
	}
}
