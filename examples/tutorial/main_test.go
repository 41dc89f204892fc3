package main

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

func small() Config { return Config{X: 6, Y: 4, Customers: 3, BuyProb: 0.3, Walk: 1, MeanWalk: 4} }

// runWith runs the model with kernel configuration kc and returns the result and totals.
func runWith(t *testing.T, c Config, kc kernel.Config) (kernel.Result, Results) {
	t.Helper()
	lps, err := NewShops(c)
	require.NoError(t, err)
	kc.Payloads, kc.Partition = Payloads(), Rows{X: c.X, Y: c.Y}
	sim, err := dispatch.New(kc, lps)
	require.NoError(t, err)
	res, err := sim.Run(context.Background())
	require.NoError(t, err)
	return res, Summarize(lps)
}

// By hand: one shop, one customer, every walk exactly 1: visits at 1, 2, ..., 10 before
// the end time 10.5; with BuyProb 1 every visit is a sale.
func TestByHand(t *testing.T) {
	c := Config{X: 1, Y: 1, Customers: 1, BuyProb: 1, Walk: 1, MeanWalk: 1}
	res, r := runWith(t, c, kernel.Config{MaxSimTime: 10.5, Seed: 1})
	require.EqualValues(t, 10, res.EventsCommitted)
	require.EqualValues(t, 10, r.Visits)
	require.EqualValues(t, 10, r.Sales)
	require.EqualValues(t, 10, res.FinalTime)
}

// Step 9: the digest is the oracle. Every time-warp configuration commits the sequential
// result, with the rollback check on (it also checks that Reverse undoes Handle).
func TestTimeWarpMatchesSequential(t *testing.T) {
	want, wantR := runWith(t, small(), kernel.Config{MaxSimTime: 60, Seed: 3})
	for _, workers := range []int{1, 2, 4} {
		for _, tw := range []kernel.TimeWarpConfig{
			{StateSaving: kernel.StateSavingReverse, CheckRollbacks: true},
			{StateSaving: kernel.StateSavingPeriodic, StateSavingPeriod: 3, CheckRollbacks: true},
			{Cancellation: "lazy", CheckRollbacks: true},
			{}, // the defaults: reverse computation, since every shop implements Reverse
		} {
			tw.Workers = workers
			res, r := runWith(t, small(), kernel.Config{MaxSimTime: 60, Seed: 3, Type: kernel.TimeWarp, TimeWarp: tw})
			require.Equal(t, want.Digest, res.Digest, "%+v", tw)
			require.Equal(t, wantR, r)
		}
	}
}

// Across processes: loopback ranks stand in for mpirun in a test; the Customer payload
// crosses between them through the registry.
func TestAcrossProcesses(t *testing.T) {
	want, _ := runWith(t, small(), kernel.Config{MaxSimTime: 60, Seed: 3})
	for _, n := range []int{2, 3} {
		trs := comm.NewLoopback(n, comm.LoopbackOptions{Seed: 1, MaxDelay: 2, Reorder: true})
		res := make([]kernel.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for rank := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lps, err := NewShops(small())
				if err == nil {
					var sim *dispatch.Simulation
					sim, err = dispatch.New(kernel.Config{MaxSimTime: 60, Seed: 3, Type: kernel.TimeWarp,
						Transport: trs[rank], Payloads: Payloads(), Partition: Rows{X: 6, Y: 4},
						TimeWarp: kernel.TimeWarpConfig{Workers: 2, CheckRollbacks: true}}, lps)
					if err == nil {
						res[rank], err = sim.Run(context.Background())
					}
				}
				errs[rank] = err
				trs[rank].Close()
			}()
		}
		wg.Wait()
		for rank := range n {
			require.NoError(t, errs[rank], "%d ranks, rank %d", n, rank)
			require.Equal(t, want.Digest, res[rank].Digest, "%d ranks, rank %d", n, rank)
		}
	}
}

func TestRunPrints(t *testing.T) {
	var seq, tw bytes.Buffer
	require.NoError(t, run(&seq, small(), 50, 1, true, 1, false))
	require.NoError(t, run(&tw, small(), 50, 1, false, 2, true))
	require.Contains(t, seq.String(), "visits ")
	line := func(s string) string { return s[bytes.LastIndex([]byte(s), []byte("digest:")):] }
	require.Equal(t, line(seq.String()), line(tw.String()))
	require.Error(t, run(&seq, Config{}, 50, 1, true, 1, false))
}

func TestRows(t *testing.T) {
	part := Rows{X: 3, Y: 4}.Partition(12, 2)
	require.Equal(t, []int{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, part)
	require.Len(t, Rows{X: 3, Y: 4}.Partition(12, 5), 12, "more parts than rows: blocks")
}
