// Command warped runs the bundled models on the warped simulation kernel.
//
//	warped phold [flags]     run PHOLD
//	warped pcs [flags]       run the PCS cellular network model
//	warped traffic [flags]   run WARPED2's traffic model
//	warped epidemic [flags]  run WARPED2's epidemic model
//	warped airport [flags]   run the airport model
//	warped logic [flags]     run a gate-level logic circuit
//	warped version           print the module version, commit, Go version and build tags
//	warped devices           list the GPU offload backends and their devices
//	warped study SPEC        run a parameter study (see 'warped study --help')
//	warped plot FILE...      draw a --sample-file or --series-file as charts (see 'warped plot --help')
//	warped help [model]      print usage, or a model's flags
//
// Every flag can also be given in a JSON file (--config FILE) under the same name; the
// command line overrides the file, and --dump-config prints the effective configuration in
// that format. Usage and configuration errors exit with status 2, failed runs with 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	for _, sig := range stopSignals {
		// A signal the process was started ignoring stays ignored: nohup's SIGHUP, the
		// SIGINT of a job a script started in the background.
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	go func() {
		// The first signal stops the run: it ends as a failed run does, removing its
		// temporary files. A second one ends the process at once, as if unhandled.
		s := <-sigs
		cancel(&interruption{s})
		s = <-sigs
		signal.Reset()
		if sig, ok := s.(syscall.Signal); ok {
			syscall.Kill(os.Getpid(), sig)
		}
		os.Exit(exitRun)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(code)
}

// stopSignals are the signals that stop a run cleanly: Ctrl-C, kill's default, and a
// closed terminal (mpirun and batch schedulers send SIGTERM).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruption is the cause of a context that a signal ended.
type interruption struct{ sig os.Signal }

func (i *interruption) Error() string {
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

// run is the whole program: it parses args, runs, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	switch cmd := args[0]; cmd {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			m := findModel(args[1])
			if m == nil {
				fmt.Fprintf(stderr, "warped: unknown model %q; run 'warped help' for the list\n", args[1])
				return exitUsage
			}
			fmt.Fprint(stdout, modelUsage(m))
			return exitOK
		}
		fmt.Fprint(stdout, usage())
		return exitOK
	case "devices":
		return devicesCommand(args[1:], stdout, stderr)
	case "study":
		return studyCommand(ctx, args[1:], stdout, stderr)
	case "plot":
		return plotCommand(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		writeVersion(stdout, readBuildInfo()) // version.go
		return exitOK
	default:
		m := findModel(cmd)
		if m == nil {
			fmt.Fprintf(stderr, "warped: unknown command or model %q; run 'warped help' for the list\n", cmd)
			return exitUsage
		}
		return runModel(ctx, m, args[1:], stdout, stderr)
	}
}
