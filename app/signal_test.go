package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// TestSignalStopsTheRunCleanly runs a model under a context that a signal ended, as
// main's handler does: one line naming the signal, exit 1, and no output file written.
func TestSignalStopsTheRunCleanly(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want string
	}{
		{os.Interrupt, "interrupted by SIGINT"},
		{syscall.SIGTERM, "interrupted by SIGTERM"},
		{syscall.SIGHUP, "interrupted by SIGHUP"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&interruption{sig: tc.sig})
			var out, errOut bytes.Buffer
			code := run(ctx, []string{"phold", "--lps", "16", "--max-sim-time", "50", "--gpu", "off",
				"--stats-file", filepath.Join(dir, "s.json"), "--report", filepath.Join(dir, "r.html"),
				"--series-file", filepath.Join(dir, "series.csv")}, &out, &errOut)
			require.Equal(t, exitRun, code)
			require.Equal(t, "warped phold: "+tc.want+"\n", errOut.String())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "an interrupted run writes nothing")
		})
	}
}

// TestFailedRunKeepsItsSamples: a run stopped by a signal keeps its samples, which show
// how it went, and says where: under the --sample-file's name when it is new, beside it
// (FILE.partial.EXT) when a file was there, which a failed run never replaces. The signal
// comes as the run begins (PHOLD with an init hook that stands for it): one that comes
// before, while the model is built, stops the run before any output is opened.
func TestFailedRunKeepsItsSamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  string // the --sample-file's contents before the run ("": none)
		kept    string // where the samples go
		message string // what the failure line adds
	}{
		{"a new file", "", "s.csv", "; its samples so far are in DIR/s.csv\n"},
		{"an existing file", "earlier run\n", "s.partial.csv",
			"; its samples so far are in DIR/s.partial.csv (--sample-file DIR/s.csv was there before the run and is left as it was)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.csv")
			if tc.before != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.before), 0o644))
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			phold := *findModel("phold")
			phold.Init = func([]kernel.LogicalProcess) error {
				cancel(&interruption{sig: os.Interrupt})
				return nil
			}
			var out, errOut bytes.Buffer
			code := New("warped", &phold).Run(ctx, []string{"phold", "--lps", "16", "--max-sim-time", "50", "--gpu", "off",
				"--sample-file", path, "--stats-file", filepath.Join(dir, "stats.json")}, &out, &errOut)
			require.Equal(t, exitRun, code)
			require.Equal(t, "warped phold: interrupted by SIGINT"+strings.ReplaceAll(tc.message, "DIR", dir), errOut.String())
			kept, err := os.ReadFile(filepath.Join(dir, tc.kept))
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(kept), "wall_seconds,"), "the samples' header at least: %q", kept)
			want := []string{"s.csv"}
			if tc.before != "" {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, tc.before, string(b), "the existing file is left as it was")
				want = []string{"s.csv", "s.partial.csv"}
			}
			var names []string
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				names = append(names, e.Name())
			}
			require.Equal(t, want, names, "no stats file, no temporary file")
		})
	}
}

// TestFailedWriteIsExit1: an output whose write fails (/dev/full: no space left) is one
// line and exit 1, never exit 0 (the issue's row 9).
func TestFailedWriteIsExit1(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	for _, args := range [][]string{
		{"phold", "--lps", "8", "--max-sim-time", "5", "--gpu", "off", "--stats-file", "/dev/full"},
		{"phold", "--lps", "8", "--max-sim-time", "5", "--gpu", "off", "--report", "/dev/full"},
		{"epidemic", "--num-locations", "8", "--watts-strogatz-k", "4", "--population", "10", "--max-sim-time", "300", "--gpu", "off", "--series-file", "/dev/full"},
		{"epidemic", "--num-locations", "8", "--watts-strogatz-k", "4", "--population", "10", "--max-sim-time", "300", "--gpu", "off", "--time-series", "/dev/full"},
	} {
		code, _, errOut := warped(args...)
		require.Equal(t, exitRun, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "/dev/full: no space left on device", args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
}

// TestStdoutWriteFailureIsExit1: output that standard output does not take (/dev/full: no
// space left) fails the command with one line and exit 1, never exit 0 with the totals
// and digest lost; a run writes no stats file after losing its results.
func TestStdoutWriteFailureIsExit1(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	stats := filepath.Join(t.TempDir(), "s.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a run's results", []string{"phold", "--lps", "8", "--max-sim-time", "5", "--gpu", "off", "--stats-file", stats},
			"warped phold: cannot write the results to standard output: no space left on device\n"},
		{"--dump-config", []string{"phold", "--lps", "8", "--dump-config"},
			"warped phold: cannot write the configuration to standard output: no space left on device\n"},
		{"a model's help", []string{"help", "phold"}, "warped help: cannot write to standard output: no space left on device\n"},
		{"the version", []string{"version"}, "warped version: cannot write to standard output: no space left on device\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := run(context.Background(), tc.args, full, &errOut)
			require.Equal(t, exitRun, code, errOut.String())
			require.Equal(t, tc.want, errOut.String())
		})
	}
	_, err = os.Stat(stats)
	require.ErrorIs(t, err, os.ErrNotExist, "no stats file after the results were lost")
}

// stallModel is a test model whose construction takes as long as a test wants, as a big
// model's does (phold --lps 6000000, logic --circuit multiplier-1000: seconds): its build
// calls building, then waits for release (or a minute, the bound of a child process that
// nothing stops), and fails.
func stallModel(building func(), release <-chan struct{}) *Model {
	return &Model{Name: "stall", Summary: "a model that takes long to build", EndTime: 10,
		Flags: func(*pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				building()
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
				return nil, nil, errors.New("stall: built, as nothing stopped it")
			}
		},
		Results: func([]kernel.LogicalProcess, *pflag.FlagSet) []Result { return nil }}
}

// TestSignalStopsTheModelBuild: a signal while the model is built stops the run as it
// comes, without waiting for the build (which here only ends with the test): one line,
// exit 1.
func TestSignalStopsTheModelBuild(t *testing.T) {
	release, building := make(chan struct{}), make(chan struct{})
	defer close(release) // the abandoned build ends with the test
	c := New("warped", stallModel(func() { close(building) }, release))
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-building
		cancel(&interruption{sig: syscall.SIGTERM})
	}()
	var out, errOut bytes.Buffer
	code := c.Run(ctx, []string{"stall"}, &out, &errOut)
	require.Equal(t, exitRun, code)
	require.Equal(t, "warped stall: interrupted by SIGTERM\n", errOut.String())
	require.Empty(t, out.String())
}

// initsModel is a test model of n LPs (countLP) whose Inits count themselves in inits;
// LP 0's calls started, then waits for stop, as a run that a signal interrupts while its
// LPs' Inits run. A nil started and stop run the Inits straight through.
func initsModel(n int, inits *atomic.Int64, started func(), stop <-chan struct{}) *Model {
	return &Model{Name: "inits", Summary: "LPs whose Inits count themselves", EndTime: 10,
		Flags: func(*pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				lps := make([]kernel.LogicalProcess, n)
				for i := range lps {
					lps[i] = &countLP{id: i, inits: inits, started: started, stop: stop}
				}
				return lps, nil, nil
			}
		},
		Results: func([]kernel.LogicalProcess, *pflag.FlagSet) []Result { return nil }}
}

// countLP is an LP of initsModel.
type countLP struct {
	kernel.Plain[countState]
	id      int
	inits   *atomic.Int64
	started func()
	stop    <-chan struct{}
}

// countState is a countLP's state: the events it handled.
type countState struct{ Events uint64 }

func (lp *countLP) Name() string { return "count_" + strconv.Itoa(lp.id) }

func (lp *countLP) Init(ctx *kernel.Context) {
	if lp.id == 0 && lp.started != nil {
		lp.started()
		<-lp.stop
	}
	lp.inits.Add(1)
	ctx.SendWords(ctx.Self(), 1, kernel.Words{})
}

func (lp *countLP) Handle(*kernel.Context, *kernel.Event) { lp.S.Events++ }

// TestSignalStopsTheLPsInits: a signal while the kernel runs the LPs' Inits stops them
// within a thousand or so LPs, not after all of them (the run of 6 million PHOLD LPs
// spent about a second there), under each dispatcher that runs Inits on the host.
func TestSignalStopsTheLPsInits(t *testing.T) {
	const n = 200_000
	for _, simType := range []string{"sequential", "time-warp"} {
		t.Run(simType, func(t *testing.T) {
			var inits atomic.Int64
			started := make(chan struct{})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			c := New("warped", initsModel(n, &inits, func() { close(started) }, ctx.Done()))
			go func() {
				<-started
				cancel(&interruption{sig: os.Interrupt})
			}()
			var out, errOut bytes.Buffer
			code := c.Run(ctx, []string{"inits", "--simulation-type", simType, "--time-warp-worker-threads", "1",
				"--gpu", "off"}, &out, &errOut)
			require.Equal(t, exitRun, code)
			require.Equal(t, "warped inits: interrupted by SIGINT\n", errOut.String())
			require.Less(t, inits.Load(), int64(n/10), "Inits run after the signal")
		})
	}
	// Not interrupted, the same model runs to its end: the stop is the signal's doing.
	var inits atomic.Int64
	code := New("warped", initsModel(2000, &inits, nil, nil)).Run(context.Background(),
		[]string{"inits", "--gpu", "off"}, io.Discard, io.Discard)
	require.Equal(t, exitOK, code)
	require.Equal(t, int64(2000), inits.Load())
}

// TestLauncherExitStopsTheRun: in a rank of a run across processes, the exit of the
// launcher (the process's parent: mpirun, which may exit without stopping its ranks)
// stops the run as a signal does; a process that init started has no launcher to watch.
func TestLauncherExitStopsTheRun(t *testing.T) {
	ctx, stop := context.WithCancelCause(context.Background())
	var looks atomic.Int32
	ppid := func() int {
		if looks.Add(1) < 3 {
			return 4242 // mpirun, still there
		}
		return 1 // adopted by init: mpirun has exited
	}
	done := make(chan struct{})
	go func() {
		watchLauncher(stop, 4242, ppid)
		close(done)
	}()
	<-ctx.Done()
	<-done
	require.NotNil(t, interrupted(ctx))
	require.EqualError(t, context.Cause(ctx), "interrupted: its launcher (parent process 4242) exited")

	ctx, stop = context.WithCancelCause(context.Background())
	defer stop(nil)
	watchLauncher(stop, 1, func() int { return 1 }) // returns at once
	require.NoError(t, ctx.Err())
}
