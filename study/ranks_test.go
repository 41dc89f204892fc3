package study

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gpuoffload"
)

// executeRanks runs the study on size loopback ranks sharing dir and returns each
// rank's study and error.
func executeRanks(t *testing.T, s *Spec, size int, dir string, resume bool, run func(rank int) Runner) ([]*Study, []error) {
	t.Helper()
	trs := comm.NewLoopback(size, comm.LoopbackOptions{})
	sts, errs := make([]*Study, size), make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer trs[r].Close()
			sts[r], errs[r] = Execute(context.Background(), s, run(r), Options{Out: dir, Resume: resume, Types: types, Cores: 2, Ranks: trs[r]})
		}()
	}
	wg.Wait()
	return sts, errs
}

// TestRanksShareTheRuns runs a study on 3 ranks, interrupted on one of them, resumes it
// on 2, and checks that rank 0's tables equal those of one process.
func TestRanksShareTheRuns(t *testing.T) {
	s := parseToy(t, toySpec)
	whole, err := Execute(context.Background(), s, toyRun, Options{Out: t.TempDir(), Types: types})
	if err != nil {
		t.Fatal(err)
	}
	want := tables(t, whole, t.TempDir())

	var counts [3]atomic.Int64
	counting := func(rank int) Runner {
		return func(ctx context.Context, m string, a []string, be gpuoffload.Backend) (Outcome, error) {
			counts[rank].Add(1)
			return toyRun(ctx, m, a, be)
		}
	}
	sts, errs := executeRanks(t, s, 3, t.TempDir(), false, counting)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := range counts {
		if n := counts[r].Load(); n != 10 {
			t.Fatalf("rank %d ran %d runs, want 10 of 30", r, n)
		}
	}
	for r, st := range sts {
		got := tables(t, st, t.TempDir())
		for name, w := range want {
			if got[name] != w {
				t.Fatalf("rank %d: %s differs from one process", r, name)
			}
		}
	}

	// Rank 1 fails after 4 runs; every rank reports it, the other ranks' runs stay in
	// their journals, and 2 ranks resume.
	dir := t.TempDir()
	var ran atomic.Int64
	interrupting := func(rank int) Runner {
		return func(ctx context.Context, m string, a []string, be gpuoffload.Backend) (Outcome, error) {
			if rank == 1 && ran.Add(1) > 4 {
				return Outcome{}, errInterruptForTest
			}
			return toyRun(ctx, m, a, be)
		}
	}
	_, errs = executeRanks(t, s, 3, dir, false, interrupting)
	for r, err := range errs {
		if err == nil {
			t.Fatalf("rank %d: no error after rank 1 failed", r)
		}
	}
	sts, errs = executeRanks(t, s, 2, dir, true, func(int) Runner { return toyRun })
	for r, err := range errs {
		if err != nil {
			t.Fatalf("resume, rank %d: %v", r, err)
		}
	}
	if sts[0].Resumed < 24 || sts[0].Resumed == 30 {
		t.Fatalf("resumed %d runs", sts[0].Resumed)
	}
	got := tables(t, sts[0], t.TempDir())
	for name, w := range want {
		if got[name] != w {
			t.Fatalf("resumed on 2 ranks: %s differs from one process", name)
		}
	}
}

var errInterruptForTest = errors.New("rank 1 fails")

// TestRankStoppedReturnsAtOnce checks that a rank whose context ends returns at once,
// without waiting in the end's collective for the other ranks to finish their runs (its
// caller then ends the job).
func TestRankStoppedReturnsAtOnce(t *testing.T) {
	s := parseToy(t, toySpec)
	trs := comm.NewLoopback(2, comm.LoopbackOptions{})
	release := make(chan struct{})
	ctx1, stop := context.WithCancel(context.Background())
	dir := t.TempDir()
	var rank0 error
	done0 := make(chan struct{})
	go func() { // rank 0's runs wait until rank 1 has returned
		defer close(done0)
		defer trs[0].Close()
		slow := func(ctx context.Context, m string, a []string, be gpuoffload.Backend) (Outcome, error) {
			<-release
			return toyRun(ctx, m, a, be)
		}
		_, rank0 = Execute(context.Background(), s, slow, Options{Out: dir, Types: types, Cores: 1, Ranks: trs[0]})
	}()
	var once sync.Once
	stopping := func(ctx context.Context, m string, a []string, be gpuoffload.Backend) (Outcome, error) {
		once.Do(stop) // a signal during its first run
		return toyRun(ctx, m, a, be)
	}
	_, err := Execute(ctx1, s, stopping, Options{Out: dir, Types: types, Cores: 1, Ranks: trs[1]})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("rank 1: %v, want an interrupt", err)
	}
	trs[1].Close() // as the job's end would
	close(release)
	<-done0
	if rank0 == nil {
		t.Fatal("rank 0 ended without an error, its peer gone")
	}
}
