package app

// How a run that stops without results ends: its one line on stderr and its exit status.

import (
	"fmt"
	"strings"

	"github.com/warpedgo/warped/comm"
)

// failure is why a run stops without results: the error to print after "PROGRAM
// MODEL: " and the exit status.
type failure struct {
	err    error
	status int
	hint   bool   // add the pointer to the model's flags ("run 'PROGRAM help MODEL'")
	quiet  bool   // print nothing: rank 0 of a run across processes shows it
	alike  bool   // every rank started from the same command line finds it (alike)
	detail string // printed after the line as it is (a model panic's stack)
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// usageFailure is a bad command line or configuration: exit status 2, and the line
// points to the model's flags.
func usageFailure(format string, a ...any) *failure {
	return &failure{err: fmt.Errorf(format, a...), status: exitUsage, hint: true}
}

// alike marks err, a *failure found in the command line alone (a flag that does not
// parse or is out of range), as one that every rank of a run across processes started
// from the same command line finds: rank 0 alone prints it. Other errors pass unchanged.
func alike(err error) error {
	if f, ok := err.(*failure); ok {
		f.alike = true
	}
	return err
}

// runFailure is a run that could not start or did not finish: exit status 1.
func runFailure(err error) *failure { return &failure{err: err, status: exitRun} }

// exit prints err, the result of run, as one line on stderr and returns the exit status.
func (inv *invocation) exit(err error) int {
	if err == nil {
		return exitOK
	}
	f, ok := err.(*failure)
	if !ok {
		f = runFailure(err)
	}
	// Before MPI is open, under a launcher that started every rank from one command line,
	// a failure that the command line alone causes is every rank's: rank 0 says it, for
	// all of them, not every rank once.
	shared := f.alike && inv.tr == nil && comm.LaunchedRanks() > 1 && comm.LaunchedAlike()
	who := inv.who()
	switch {
	case inv.tr != nil && inv.tr.Size() > 1:
		who += fmt.Sprintf(": rank %d", inv.tr.Rank())
	case inv.tr == nil && comm.LaunchedRanks() > 1 && !shared:
		// Before MPI is open (a bad flag, an output that cannot be written): the rank the
		// launcher gave, as every rank may say it.
		who += fmt.Sprintf(": rank %d", comm.LaunchedRank())
	}
	// A model's own errors name it, for programs that use it without the command; who
	// names it already.
	msg := strings.TrimPrefix(f.err.Error(), inv.m.Name+": ")
	switch {
	case f.quiet:
	case shared && comm.LaunchedRank() > 0:
	case f.hint:
		fmt.Fprintf(inv.stderr, "%s: %s; run '%s help %s' for the flags\n", who, msg, inv.c.name, inv.m.Name)
	default:
		fmt.Fprintf(inv.stderr, "%s: %s\n", who, msg)
	}
	fmt.Fprint(inv.stderr, f.detail)
	return f.status
}
