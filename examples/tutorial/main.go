// Command tutorial is the model that docs/TUTORIAL.md builds step by step: customers walk
// between shops on a grid and sometimes buy. It runs sequentially or under time warp, and
// across processes when started by mpirun (built with -tags mpi).
//
//	go run ./examples/tutorial -end 100 -workers 2
//	go build -tags mpi -o tutorial ./examples/tutorial && mpirun -np 2 ./tutorial
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

func main() {
	cfg := Config{X: 16, Y: 16, Customers: 10, BuyProb: 0.3, Walk: 1, MeanWalk: 5}
	end := flag.Float64("end", 100, "end time")
	seed := flag.Uint64("seed", 1, "random seed")
	sequential := flag.Bool("sequential", false, "run the sequential dispatcher instead of time warp")
	workers := flag.Int("workers", 2, "time-warp worker threads")
	check := flag.Bool("check", false, "check rollbacks (debug mode)")
	flag.IntVar(&cfg.X, "x", cfg.X, "grid width")
	flag.IntVar(&cfg.Y, "y", cfg.Y, "grid height")
	flag.Parse()
	if err := run(os.Stdout, cfg, *end, *seed, *sequential, *workers, *check); err != nil {
		fmt.Fprintln(os.Stderr, "tutorial:", err)
		os.Exit(1)
	}
}

// Step 8: running it. The same model runs sequentially, under time warp, and across
// processes; the digest says whether two runs committed the same result.
func run(w io.Writer, cfg Config, end float64, seed uint64, sequential bool, workers int, check bool) error {
	lps, err := NewShops(cfg)
	if err != nil {
		return err
	}
	kc := kernel.Config{MaxSimTime: end, Seed: seed, Type: kernel.TimeWarp,
		Payloads: Payloads(), Partition: Rows{X: cfg.X, Y: cfg.Y},
		TimeWarp: kernel.TimeWarpConfig{Workers: workers, CheckRollbacks: check}}
	if sequential {
		kc.Type = kernel.Sequential
	}
	rank := 0
	if comm.LaunchedRanks() > 1 { // started by mpirun with several ranks
		mpi, err := comm.NewMPI(comm.MPIOptions{})
		if err != nil {
			return err
		}
		defer mpi.Close()
		kc.Transport, rank = mpi, mpi.Rank()
	}
	sim, err := dispatch.New(kc, lps)
	if err != nil {
		return err
	}
	res, err := sim.Run(context.Background())
	if err != nil {
		return err
	}
	if rank == 0 {
		r := Summarize(lps)
		fmt.Fprintf(w, "visits %d, sales %d, revenue %d\n", r.Visits, r.Sales, r.Revenue)
		fmt.Fprintf(w, "events %d committed, %d rolled back, state saving %s\n",
			res.EventsCommitted, res.EventsRolledBack, res.StateSaving)
		fmt.Fprintf(w, "digest: %s\n", res.Digest)
	}
	return nil
}
