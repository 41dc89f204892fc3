// Package app is the warped command as a library: a model registers itself once (a
// Model: its name, flags, results, outputs) and a three-line main gets everything the
// bundled models have:
//
//	func main() {
//		app.Main("mysim", mymodel.Command())
//	}
//
// gives, for each model,
//
//	mysim MODEL [flags]     run it: the kernel's flags (--simulation-type, --time-warp-*,
//	                        --seed, --max-sim-time, --gpu, ...), --config/--dump-config,
//	                        --stats-file, --sample-file, --series-file, --report, --progress,
//	                        --max-memory, and runs across processes under mpirun (built
//	                        with -tags mpi)
//	mysim help [MODEL]      the usage, or the model's flags, grouped
//	mysim study SPEC        a parameter study with confidence intervals (mysim study --help)
//	mysim plot FILE...      charts of sample, series and stats files (mysim plot --help)
//	mysim devices           the GPU offload backends and their devices
//	mysim version           the module version, commit, Go version and build tags
//
// The warped command is Main("warped", Bundled()...). A study runs each point in this
// process with --seed, --simulation-type and --time-warp-worker-threads set by the study,
// so a model's flags must not use those names (no model flag may reuse a kernel flag's
// name; the flag set panics on a duplicate).
//
// Every flag can also be given in a JSON file (--config FILE) under the same name; the
// command line overrides the file, and --dump-config prints the flags that were set in
// that format. Usage and configuration errors exit with status 2, failed runs with 1.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/internal/outfile"
)

// Command is a program of models: the warped command, or a model's own.
type Command struct {
	name   string
	models []*Model
	// mu serialises binding a model's flags and reading its results: a model may keep
	// state between the two (the epidemic's --time-series path), and a study runs several
	// runs of one model at once.
	mu sync.Mutex
	// runs counts a study's runs in progress in this process, and starts those begun:
	// a run that shared the process cannot measure the process's figures (runForStudy).
	runs   atomic.Int32
	starts atomic.Uint64
}

// New returns the command called name (its word in usage and messages) that runs models.
// It panics when two models share a name or a model lacks its Name, Flags or Results,
// mistakes of the program, not of its user.
func New(name string, models ...*Model) *Command {
	seen := map[string]bool{}
	for _, m := range models {
		switch {
		case m == nil || m.Name == "" || m.Flags == nil || m.Results == nil:
			panic(fmt.Sprintf("app.New: model %+v needs a Name, Flags and Results", m))
		case seen[m.Name] || commands[m.Name]:
			panic(fmt.Sprintf("app.New: model name %q is taken", m.Name))
		}
		seen[m.Name] = true
	}
	return &Command{name: name, models: models}
}

// commands are the words that are not models.
var commands = map[string]bool{"help": true, "version": true, "devices": true, "study": true, "plot": true}

// Main runs the command called name with models on the process's arguments, stops the
// run cleanly on SIGINT, SIGTERM or SIGHUP (see stopOnSignals), and exits with the
// command's status.
func Main(name string, models ...*Model) {
	os.Exit(New(name, models...).main(os.Args[1:], signalRepeat, stopGrace))
}

// main runs the command on args as the process: on its standard output and error, with
// a context that a stop signal ends (stopOnSignals, with repeat: signalRepeat but in
// tests), or, in a rank of a run across processes, the exit of the launcher
// (watchLauncher). It returns the exit status.
func (c *Command) main(args []string, repeat, grace time.Duration) int {
	ctx, stop := context.WithCancelCause(context.Background())
	stopOnSignals(stop, c.who(args), os.Stderr, repeat, grace)
	// A write to a pipe whose reader has gone (warped phold --trace - | head -1; a rank's
	// standard output and error, pipes to a launcher that exited) must fail as any write
	// does, and the run end as a failed one (its line, exit 1, its temporary files
	// removed, its samples kept), not with SIGPIPE before it settles its outputs. A
	// progress line that cannot be written is dropped; the run goes on.
	signal.Ignore(syscall.SIGPIPE)
	if comm.LaunchedRanks() > 1 {
		go watchLauncher(stop, os.Getppid(), os.Getppid)
	}
	return c.Run(ctx, args, os.Stdout, os.Stderr)
}

// who is what the process's messages begin with for args: the program and the model or
// command ("warped phold", "warped study"), else the program.
func (c *Command) who(args []string) string {
	if len(args) > 0 && (c.find(args[0]) != nil || commands[args[0]]) {
		return c.name + " " + args[0]
	}
	return c.name
}

// stopOnSignals has the first of stopSignals stop the run: stop ends the run's context
// with an *interruption, and the run ends as a failed one does, printing its one line
// and removing its temporary files. A later one ends the process at once (endAtOnce), as
// does the end of grace after the first when the process has not ended by then: a run
// held in a call that no context reaches (a write to a pipe nobody reads, a file system
// that does not answer) would otherwise never end on a single signal, which is all GNU
// timeout and most schedulers send.
//
// A signal within repeat of the first is the same stop delivered twice, not a
// second one: GNU timeout sends its signal to the command and then to the command's
// process group, which holds the command too, and a launcher may forward the SIGINT that
// the terminal sent to the whole foreground group. Taken for a second signal, such a
// pair ended warped phold --lps 6000000 at once, with status 1 and no line at all, in 18
// of 42 runs of timeout -s INT 1 to 3 seconds in (whenever the two were delivered apart).
func stopOnSignals(stop context.CancelCauseFunc, who string, stderr io.Writer, repeat, grace time.Duration) {
	sigs := make(chan os.Signal, 4)
	for _, sig := range stopSignals {
		// A signal the process was started ignoring stays ignored: nohup's SIGHUP, the
		// SIGINT of a job a script started in the background.
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	go func() {
		s := <-sigs
		first := time.Now()
		stop(&interruption{sig: s})
		stuck := time.NewTimer(grace)
		for {
			select {
			case again := <-sigs:
				if time.Since(first) >= repeat {
					endAtOnce(who, fmt.Sprintf("%v again", &interruption{sig: again}), stderr)
				}
			case <-stuck.C:
				endAtOnce(who, fmt.Sprintf("%v, and the run did not stop within %v", &interruption{sig: s}, grace), stderr)
			}
		}
	}()
}

// stopGrace is how long after a stop signal a run that has not ended is ended at once
// (stopOnSignals). A run stops within milliseconds of the signal, settling its outputs;
// one still going seconds later is held where nothing looks at its context.
const stopGrace = 10 * time.Second

// signalRepeat is how long after the first stop signal another one is the same stop
// delivered twice (see stopOnSignals). A person who presses Ctrl-C again to end a stop
// that hangs does so later than this; the first signal stops even the building of a
// model at once (abandonable, runmodel.go), so that there is rarely a need to.
const signalRepeat = time.Second

// endAtOnce ends the process, for why (a second stop signal, a run that a first one did
// not stop), without waiting for the run to wind down (a model's code that never returns,
// a write that blocks): it removes the temporary files of the outputs being written, so
// that nothing is published after (outfile.RemovePending), prints one line and exits with
// status 1, as an interrupted run does. (Not by re-raising the signal: the exit with 1
// that follows the raise can come before the signal is delivered, and the process would
// end saying nothing.)
func endAtOnce(who, why string, stderr io.Writer) {
	outfile.RemovePending()
	fmt.Fprintf(stderr, "%s: %s: stopped at once\n", who, why)
	os.Exit(exitRun)
}

// watchLauncher stops the run, as a signal does, once the process's parent (ppid: its
// pid now), which was parent when the process started (mpirun, or its daemon on another
// node), has exited. Open MPI 4.1's mpirun exits at once on a second SIGINT or SIGTERM
// within 5 seconds of the first, without stopping its ranks (GNU timeout sends it two,
// see stopOnSignals); the ranks get no signal, and Open MPI's library ends them a second
// later from a thread of its own (exit status 195), which left the temporary files of
// their outputs behind. The parent is looked at every launcherPoll, which leaves the rank
// most of that second. (Linux's PR_SET_PDEATHSIG would tell at once, but when the thread
// that started the process ends, not the launcher, and only on Linux.)
func watchLauncher(stop context.CancelCauseFunc, parent int, ppid func() int) {
	if parent <= 1 {
		return // started by init (or adopted already): no launcher to watch
	}
	t := time.NewTicker(launcherPoll)
	defer t.Stop()
	for range t.C {
		if ppid() != parent {
			stop(&interruption{why: fmt.Sprintf("its launcher (parent process %d) exited", parent)})
			return
		}
	}
}

// launcherPoll is how often watchLauncher looks at the process's parent (one getppid).
const launcherPoll = 100 * time.Millisecond

// find returns the model called name, or nil.
func (c *Command) find(name string) *Model {
	for _, m := range c.models {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// stopSignals are the signals that stop a run cleanly: Ctrl-C, kill's default, and a
// closed terminal (mpirun and batch schedulers send SIGTERM).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruption is the cause of a context that a signal ended, or, with why set,
// something else that stops a run as a signal does (watchLauncher).
type interruption struct {
	sig os.Signal
	why string
}

func (i *interruption) Error() string {
	if i.why != "" {
		return "interrupted: " + i.why
	}
	name := map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[i.sig]
	if name == "" {
		name = i.sig.String()
	}
	return "interrupted by " + name
}

// interrupted returns the interruption that ended ctx, or nil.
func interrupted(ctx context.Context) error {
	var i *interruption
	if errors.As(context.Cause(ctx), &i) {
		return i
	}
	return nil
}

// Exit statuses.
const (
	exitOK    = 0
	exitRun   = 1 // the run failed or was interrupted (SIGINT, SIGTERM, SIGHUP)
	exitUsage = 2 // bad command line or configuration
)

// Run is the whole program without the process: it parses args (the arguments after the
// program's name), runs, writes to stdout and stderr, and returns the exit status.
// Cancelling ctx stops a run as a signal does. Output that stdout does not take (a full
// disk, /dev/full) fails the command, exit 1, rather than being lost without a word.
func (c *Command) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &stickyWriter{w: stdout}
	code := c.run(ctx, args, out, stderr)
	if out.err != nil && code == exitOK { // a failure says so itself (a run: report)
		fmt.Fprintf(stderr, "%s: cannot write to standard output: %v\n", c.who(args), writeError(out.err))
		return exitRun
	}
	return code
}

// stickyWriter passes writes on to w and keeps the first error, which fmt.Fprint's
// callers do not look at, for the command to check once it is done.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	s.err = err
	return n, err
}

// writeError is err without the operation and path of a *fs.PathError ("write
// /dev/stdout: "), which the message says in its own words.
func writeError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// run is Run, writing to stdout as it is given.
func (c *Command) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, c.usage())
		return exitUsage
	}
	switch cmd := args[0]; cmd {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if m := c.find(args[1]); m != nil {
				fmt.Fprint(stdout, c.modelUsage(m))
				return exitOK
			}
			switch cmd := args[1]; {
			case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
				fmt.Fprint(stdout, c.usage())
				return exitOK
			case commands[cmd]: // 'PROGRAM help study' is 'PROGRAM study --help'
				return c.run(ctx, []string{cmd, "--help"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "%s: unknown command or model %q; run '%s help' for the list\n", c.name, args[1], c.name)
			return exitUsage
		}
		fmt.Fprint(stdout, c.usage())
		return exitOK
	case "devices":
		return c.devicesCommand(args[1:], stdout, stderr)
	case "study":
		return c.studyCommand(ctx, args[1:], stdout, stderr)
	case "plot":
		return c.plotCommand(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		if len(args) > 1 {
			if h := args[1]; h == "-h" || h == "-help" || h == "--help" {
				fmt.Fprintf(stdout, "Usage: %s version\n\nPrints the module version, commit, Go version and build tags of this binary.\n", c.name)
				return exitOK
			}
			fmt.Fprintf(stderr, "%s version: takes no arguments, got %q; run '%s version --help'\n", c.name, args[1], c.name)
			return exitUsage
		}
		writeVersion(stdout, c.name, readBuildInfo()) // version.go
		return exitOK
	default:
		m := c.find(cmd)
		if m == nil {
			fmt.Fprintf(stderr, "%s: unknown command or model %q; run '%s help' for the list\n", c.name, cmd, c.name)
			return exitUsage
		}
		return c.runModel(ctx, m, args[1:], stdout, stderr)
	}
}
