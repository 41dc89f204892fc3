package app

import (
	"bufio"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/kernel"
)

// traceOptions are the event-trace flags (--trace, --trace-every).
type traceOptions struct {
	file  string
	every int
}

// addTraceFlags binds the trace flags to o.
func addTraceFlags(fs *pflag.FlagSet, o *traceOptions) {
	fs.StringVar(&o.file, "trace", "", "write the committed events as CSV to this file: time,lp,name,kind (with -rankN across processes)")
	fs.IntVar(&o.every, "trace-every", 1, "with --trace: write every Nth committed event only")
}

// check reports a bad trace flag, or a trace the simulation type cannot write: the device
// loop commits its events in graphics memory, where no trace line is made.
func (o *traceOptions) check(simType string) error {
	switch {
	case o.every < 1:
		return usageFailure("--trace-every must be at least 1, got %d", o.every)
	case o.file != "" && simType == kernel.GPU:
		return usageFailure("--trace writes the events of sequential and time-warp runs, not of --simulation-type %s: "+
			"drop it, or run another type", kernel.GPU)
	}
	return nil
}

// traceOutput is the --trace file of a run.
type traceOutput struct {
	f *outfile.File
	w *bufio.Writer
	n uint64
	// stop ends the run with the trace's first write error (set by simulate before the
	// run: a run whose trace cannot be written has failed, and need not go on).
	stop    func(error)
	stopped bool
}

// outputFailed is a run's cause of stopping when one of its outputs could not be written
// while it ran (a --trace - whose reader has gone).
type outputFailed struct{ err error }

func (o *outputFailed) Error() string { return o.err.Error() }
func (o *outputFailed) Unwrap() error { return o.err }

// openTrace creates the --trace file and has cfg's dispatcher write each committed event
// (every --trace-every'th) to it: the time, the LP's id and name, and the event's kind
// (Model.EventKind, else the payload's Go type, or "words").
func (inv *invocation) openTrace(cfg *kernel.Config, lps []kernel.LogicalProcess) error {
	o := inv.o.trace
	if o.file == "" {
		return nil
	}
	path := o.file
	if inv.tr != nil && inv.tr.Size() > 1 {
		path = rankPath(path, inv.tr.Rank()) // each rank traces its own LPs' events
	}
	f, err := inv.files().Create(path)
	if err != nil {
		return usageFailure("%v", outputError("trace", err))
	}
	t := &traceOutput{f: f, w: bufio.NewWriterSize(f, 1<<16)}
	inv.trace = t
	t.w.WriteString("time,lp,name,kind\n")
	kind := inv.m.EventKind
	if kind == nil {
		kind = payloadKind
	}
	every := uint64(o.every)
	var line []byte
	cfg.Trace = func(lp kernel.LPID, ev *kernel.Event) {
		t.n++
		if (t.n-1)%every != 0 {
			return
		}
		line = strconv.AppendFloat(line[:0], float64(ev.RecvTime), 'g', -1, 64)
		line = append(line, ',')
		line = strconv.AppendUint(line, uint64(lp), 10)
		line = append(line, ',')
		line = append(line, csvField(lps[lp].Name())...)
		line = append(line, ',')
		line = append(line, csvField(kind(ev))...)
		line = append(line, '\n')
		if _, err := t.w.Write(line); err != nil && !t.stopped && t.stop != nil {
			t.stopped = true
			t.stop(&outputFailed{outputError("trace", err)})
		}
	}
	return nil
}

// payloadKind is an event's kind by default: its payload's Go type, or "words".
func payloadKind(ev *kernel.Event) string {
	if ev.Payload == nil {
		return "words"
	}
	return fmt.Sprintf("%T", ev.Payload)
}

// csvField quotes s when CSV needs it.
func csvField(s string) string {
	for _, r := range s {
		if r == ',' || r == '"' || r == '\n' || r == '\r' {
			return strconv.Quote(s)
		}
	}
	return s
}

// closeTrace writes out and commits the --trace file after a successful run, or drops it
// (failed: nothing half-written is left).
func (inv *invocation) closeTrace(ok bool) error {
	t := inv.trace
	if t == nil {
		return nil
	}
	inv.trace = nil
	if !ok {
		t.f.Abort()
		return nil
	}
	if err := t.w.Flush(); err != nil {
		t.f.Abort()
		return runFailure(outputError("trace", err))
	}
	if err := t.f.Commit(); err != nil {
		return runFailure(outputError("trace", err))
	}
	return nil
}
