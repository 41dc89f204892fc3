//go:build linux

package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

// The command as a process (Command.main, what Main runs) under signals: each case runs
// this test binary again as the command, with the test models below (TestMain, with
// signalChildEnv set), and signals it once it says on stderr that it is where the case
// wants it.

// signalChildEnv holds a signalChild (JSON); set, TestMain runs the command as Main does
// instead of the tests.
const signalChildEnv = "WARPED_TEST_SIGNAL_CHILD"

// signalChild is what a child process runs: the command's arguments, and the window of
// a repeated signal (signalRepeat in Main).
type signalChild struct {
	Args   []string
	Repeat time.Duration
	Grace  time.Duration // stopGrace in Main; 0: stopGrace
}

// childReady is the line a child's test model writes on stderr where the case signals it.
const childReady = "test model: ready for the signal"

// runSignalChild runs the command of the child that spec (a signalChild) describes and
// returns its exit status.
func runSignalChild(spec string) int {
	var ch signalChild
	if err := json.Unmarshal([]byte(spec), &ch); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	ready := func() { fmt.Fprintln(os.Stderr, childReady) }
	c := New("warped", stallModel(ready, nil), hookModel(ready), findModel("phold"))
	if ch.Grace == 0 {
		ch.Grace = stopGrace
	}
	return c.main(ch.Args, ch.Repeat, ch.Grace)
}

// hookModel is a test model whose init hook (Model.Init) calls ready and then hangs (for
// a minute, the bound of a child that nothing stops) without looking at the run's
// context: a run that a first signal cannot stop.
func hookModel(ready func()) *Model {
	m := initsModel(4, new(atomic.Int64), nil, nil)
	m.Name, m.Summary = "hook", "a model whose init hook hangs"
	m.Init = func([]kernel.LogicalProcess) error {
		ready()
		<-time.After(time.Minute)
		return nil
	}
	return m
}

// startChild starts the command as a process with args in directory dir (signalRepeat
// repeat) and waits until it writes childReady. It returns the process and a wait that
// returns the exit status and what the process wrote on stderr after that line.
func startChild(t *testing.T, dir string, repeat time.Duration, args ...string) (*os.Process, func() (int, string)) {
	t.Helper()
	return startChildOf(t, dir, signalChild{Args: args, Repeat: repeat})
}

// startChildOf is startChild for the child ch.
func startChildOf(t *testing.T, dir string, ch signalChild) (*os.Process, func() (int, string)) {
	t.Helper()
	spec, err := json.Marshal(ch)
	require.NoError(t, err)
	// The bound of a child that does not end (a hang): a minute, then the test fails.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChildEnv+"="+string(spec))
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := bufio.NewReader(stderr)
	var before strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("the child ended before it was ready: %v; stderr: %s", err, before.String())
		}
		if strings.TrimSpace(line) == childReady {
			break
		}
		before.WriteString(line)
	}
	return cmd.Process, func() (int, string) {
		rest, _ := io.ReadAll(r)
		err := cmd.Wait()
		require.NoError(t, ctx.Err(), "the child did not end: stderr %s", rest)
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.False(t, ws.Signaled(), "the child was killed by %v; stderr %s", ws.Signal(), rest)
		return ws.ExitStatus(), string(rest)
	}
}

// TestSignalTwiceAtOnceIsOneStop: the same stop delivered twice (GNU timeout signals the
// command and then its process group; a launcher forwards the terminal's SIGINT as
// SIGTERM) is one stop, not the second signal that ends the process at once: the run's
// one line and exit 1. Two signals of different kinds, sent back to back, always arrive
// as two (two of a kind may merge into one); before, that ended the process with exit 1
// and nothing said, or killed it.
func TestSignalTwiceAtOnceIsOneStop(t *testing.T) {
	p, wait := startChild(t, t.TempDir(), signalRepeat, "stall")
	require.NoError(t, p.Signal(os.Interrupt))
	require.NoError(t, p.Signal(syscall.SIGTERM))
	code, stderr := wait()
	require.Equal(t, exitRun, code, stderr)
	require.Regexp(t, `^warped stall: interrupted by SIG(INT|TERM)\n$`, stderr)
}

// TestSecondSignalEndsAtOnce: a second signal, after signalRepeat (0 here), ends a run
// that the first could not stop (its model's init hook hangs) at once: one line, exit 1,
// and the temporary file of the --sample-file it was writing removed.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	dir := t.TempDir()
	p, wait := startChild(t, dir, 0, "hook", "--gpu", "off", "--sample-file", "s.csv")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the sample file's temporary file, before the signals")
	require.True(t, strings.HasPrefix(entries[0].Name(), ".s.csv.tmp"), entries[0].Name())
	require.NoError(t, p.Signal(os.Interrupt))
	require.NoError(t, p.Signal(syscall.SIGTERM))
	code, stderr := wait()
	require.Equal(t, exitRun, code, stderr)
	require.Regexp(t, `^warped hook: interrupted by SIG(INT|TERM) again: stopped at once\n$`, stderr)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "files left: %v", entries)
}

// TestStuckRunEndsAfterGrace: a run that one signal cannot stop (its model's init hook
// hangs, as a write to a pipe nobody reads would) ends once the grace after the signal is
// over (stopGrace; 0.2 s here): one line, exit 1, the --sample-file's temporary removed.
func TestStuckRunEndsAfterGrace(t *testing.T) {
	dir := t.TempDir()
	p, wait := startChildOf(t, dir, signalChild{Args: []string{"hook", "--gpu", "off", "--sample-file", "s.csv"},
		Repeat: signalRepeat, Grace: 200 * time.Millisecond})
	require.NoError(t, p.Signal(syscall.SIGTERM))
	code, stderr := wait()
	require.Equal(t, exitRun, code, stderr)
	require.Equal(t, "warped hook: interrupted by SIGTERM, and the run did not stop within 200ms: stopped at once\n", stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "files left: %v", entries)
}

// TestBrokenPipeFailsTheRun: a run whose standard output's reader has gone (warped phold
// --trace - | head -1) fails as a failed write does, not by SIGPIPE: its line, exit 1,
// the samples of the failed run kept, no temporary file left.
func TestBrokenPipeFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	spec, err := json.Marshal(signalChild{Args: []string{"phold", "--lps", "64", "--max-sim-time", "1e6", "--gpu", "off",
		"--trace", "-", "--sample-file", "s.csv", "--stats-file", "s.json"}, Repeat: signalRepeat})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang's bound
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChildEnv+"="+string(spec))
	cmd.Dir = dir
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, r.Close()) // the reader is gone before the first write
	require.NoError(t, cmd.Start())
	w.Close()
	err = cmd.Wait()
	require.NoError(t, ctx.Err(), "the child did not end: %s", stderr.String())
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.False(t, ws.Signaled(), "the child was killed by %v; stderr %s", ws.Signal(), stderr.String())
	require.Equal(t, exitRun, ws.ExitStatus(), stderr.String())
	require.Equal(t, "warped phold: cannot write --trace -: broken pipe; its samples so far are in s.csv\n", stderr.String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"s.csv"}, names, "the failed run's samples, and nothing else")
}
