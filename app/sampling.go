package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample"
)

// sampleOptions are the engine sampling flags (--sample-*).
type sampleOptions struct {
	file, mode, format string
	intervalMS         float64
	seriesFile         string // --series-file
}

// addSampleFlags binds the sampling flags to o.
func addSampleFlags(fs *pflag.FlagSet, o *sampleOptions) {
	fs.StringVar(&o.file, "sample-file", "", "time warp and gpu: write engine samples (one row per worker at each GVT round or interval; gpu: one row for the device at each read of its counters) to this file; across processes each rank writes FILE with -rankN before its extension")
	fs.StringVar(&o.mode, "sample-mode", kernel.SampleGVT, "time warp and gpu with --sample-file: take rows as GVT rounds end or the device's counters are read (gvt), or every --sample-period (real-time)")
	fs.Float64Var(&o.intervalMS, "sample-period", 0, "time warp and gpu with --sample-file: milliseconds between rows (real-time; 0: 100), or the least between them (gvt)")
	fs.StringVar(&o.format, "sample-format", sample.CSV, "time warp and gpu with --sample-file: "+strings.Join(sample.Formats(), " or "))
	fs.StringVar(&o.seriesFile, "series-file", "", "write the model's own time series (the committed values it records, such as the epidemic's disease-state counts) to this CSV file: time,lp,series,value; across processes each rank writes its LPs' to FILE with -rankN before its extension")
}

// check reports a bad sampling flag.
func (o *sampleOptions) check(simType string) error {
	switch {
	case o.mode != kernel.SampleGVT && o.mode != kernel.SampleRealTime:
		return usageFailure("--sample-mode: unknown mode %q (want %s or %s)", o.mode, kernel.SampleGVT, kernel.SampleRealTime)
	case o.format != sample.CSV && o.format != sample.JSONL:
		return usageFailure("--sample-format: unknown format %q (want %s)", o.format, strings.Join(sample.Formats(), " or "))
	case !(o.intervalMS >= 0) || o.intervalMS > maxPeriodMS:
		return usageFailure("--sample-period must be a non-negative number of milliseconds, at most %v (an hour), got %v", float64(maxPeriodMS), o.intervalMS)
	case o.file == "" && (o.mode != kernel.SampleGVT || o.intervalMS != 0):
		return usageFailure("--sample-mode and --sample-period say how --sample-file takes its rows: give --sample-file FILE, or drop them")
	case o.file != "" && !sampled(simType):
		return usageFailure("--sample-file samples time-warp and gpu runs only: use --simulation-type %s or %s, or drop it",
			kernel.TimeWarp, kernel.GPU)
	}
	return nil
}

// sampled reports whether runs of simulation type simType take engine samples.
func sampled(simType string) bool { return simType == kernel.TimeWarp || simType == kernel.GPU }

// sampleOutput is the --sample-file of a run: the file and its writer, which the run's
// Sample function feeds once open.
type sampleOutput struct {
	path string
	f    *outfile.File
	w    *sample.Writer
}

// attachSamples sets cfg's sampling from the options (no --sample-file: nothing). The file
// opens later (openSamples), once the configuration is known to be good.
func (inv *invocation) attachSamples(cfg *kernel.Config) {
	o := &inv.o.sample
	if o.file == "" {
		return
	}
	out := &sampleOutput{path: o.file}
	if inv.tr != nil && inv.tr.Size() > 1 {
		out.path = rankPath(o.file, inv.tr.Rank())
	}
	inv.samples = out
	cfg.Sample = func(s kernel.Sample) { out.w.Add(s) }
	cfg.SampleMode = o.mode
	cfg.SampleInterval = time.Duration(o.intervalMS * float64(time.Millisecond))
}

// rankPath is path with -rankN before its extension.
func rankPath(path string, rank int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-rank%d%s", strings.TrimSuffix(path, ext), rank, ext)
}

// openSamples creates the --sample-file and starts its writer.
func (inv *invocation) openSamples() error {
	out := inv.samples
	if out == nil {
		return nil
	}
	f, err := inv.files().Create(out.path)
	if err != nil {
		return usageFailure("%v", outputError("sample-file", err))
	}
	w, err := sample.NewWriter(f, inv.o.sample.format, 0)
	if err != nil {
		f.Abort()
		return usageFailure("--sample-format: %v", err)
	}
	out.f, out.w = f, w
	return nil
}

// closeSamples writes the rows still buffered and commits the --sample-file of a
// successful run, replacing the file, noting rows that the writer dropped. After a failed
// write the file is not committed.
func (inv *invocation) closeSamples() error {
	_, dropped, err := inv.finishSamples(false)
	if dropped > 0 {
		fmt.Fprintf(inv.stderr, "%s: %d sample rows were dropped (the writer fell behind; a longer --sample-period takes fewer)\n", inv.who(), dropped)
	}
	if err != nil {
		return runFailure(outputError("sample-file", err))
	}
	return nil
}

// keepSamples keeps the samples of a failed run, as far as they go, since they show how
// it went, and returns err, the run's failure, saying where they are. They never replace
// a file, though: an existing --sample-file holds an earlier run's samples, and a failed
// run must not clobber it. Where one was there before the run (or has appeared since),
// they go beside it, FILE.partial.EXT (outfile.CommitAside). A failure that another rank
// shows (quiet) stays quiet.
func (inv *invocation) keepSamples(err error) error {
	f, ok := err.(*failure)
	if !ok || inv.samples == nil || inv.samples.f == nil {
		return err
	}
	given := inv.samples.path
	path, dropped, kerr := inv.finishSamples(true)
	switch {
	case kerr != nil:
		f.err = fmt.Errorf("%w; its samples could not be kept: %v", f.err, outputError("sample-file", kerr))
	case path != given:
		f.err = fmt.Errorf("%w; its samples so far are in %s (--sample-file %s was there before the run and is left as it was)", f.err, path, given)
	default:
		f.err = fmt.Errorf("%w; its samples so far are in %s", f.err, path)
	}
	if dropped > 0 && kerr == nil {
		f.err = fmt.Errorf("%w (the writer dropped %d rows)", f.err, dropped)
	}
	return f
}

// finishSamples writes the rows still buffered and commits the --sample-file: over the
// file (replace), or beside a file that is there (aside: outfile.CommitAside). It returns
// the path written ("" without a sample file open) and how many rows the writer dropped.
// After a failed write the file is not committed.
func (inv *invocation) finishSamples(aside bool) (path string, dropped uint64, err error) {
	out := inv.samples
	if out == nil || out.f == nil {
		return "", 0, nil
	}
	f := out.f
	out.f = nil
	path = out.path
	switch err = out.w.Close(); {
	case err != nil:
		f.Abort()
	case aside:
		path, err = f.CommitAside()
	default:
		err = f.Commit()
	}
	return path, out.w.Dropped(), err
}

// attachSeries has the run record the model's series for --series-file and --report.
func (inv *invocation) attachSeries(cfg *kernel.Config) {
	if inv.o.sample.seriesFile != "" || inv.reportHere() {
		cfg.RecordSeries = true
	}
}

// seriesPath is this process's --series-file (with -rankN across processes), or "".
func (inv *invocation) seriesPath() string {
	path := inv.o.sample.seriesFile
	if path != "" && inv.tr != nil && inv.tr.Size() > 1 {
		path = rankPath(path, inv.tr.Rank())
	}
	return path
}

// writeSeries writes the run's model series to the --series-file, noting when the model
// recorded none.
func (inv *invocation) writeSeries(res kernel.Result) error {
	path := inv.seriesPath()
	if path == "" {
		return nil
	}
	if len(res.Series) == 0 {
		fmt.Fprintf(inv.stderr, "%s: the model recorded no series; --series-file %s has its header only\n", inv.who(), path)
	}
	err := inv.files().WriteTo(path, func(w io.Writer) error { return sample.WriteSeries(w, res.Series) })
	if err != nil {
		return runFailure(outputError("series-file", err))
	}
	return nil
}
