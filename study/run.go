package study

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/internal/meminfo"
)

// Run is one planned run of a study.
type Run struct {
	// Index is the run's place in the plan: points in order, replications within.
	Index       int
	Point       int
	Replication int
	Seed        uint64
	// Args are the run's flags as a command line: the fixed flags, the point's
	// parameters and the seed. They name the run (its Key): execution flags, which do
	// not change a run's results, are added when it runs.
	Args []string
}

// Key identifies the run in the journal.
func (r Run) Key() string { return strings.Join(r.Args, " ") }

// Runs returns the study's runs in plan order.
func (s *Spec) Runs() []Run {
	runs := make([]Run, 0, len(s.Points)*s.Replications)
	for pi, pt := range s.Points {
		for rep := range s.Replications {
			seed := s.Seed + uint64(rep)
			args := make([]string, 0, len(s.Flags)+len(pt)+1)
			for _, f := range s.Flags {
				args = append(args, "--"+f.Name+"="+f.Value)
			}
			for i, v := range pt {
				args = append(args, "--"+s.Params[i]+"="+v)
			}
			args = append(args, "--seed="+strconv.FormatUint(seed, 10))
			runs = append(runs, Run{Index: len(runs), Point: pi, Replication: rep, Seed: seed, Args: args})
		}
	}
	return runs
}

// The runs.csv columns of every run's committed events and wall time, named as in a
// stats file.
const (
	EventsCommitted = "events_committed"
	WallSeconds     = "wall_seconds"
)

// Outcome is what one run gives.
type Outcome struct {
	// Results are the model's results and the kernel's statistics (Catalog.StatsKeys) by
	// key.
	Results map[string]float64 `json:"results"`
	// Digest is the kernel's digest of the final state.
	Digest string `json:"digest"`
	// Events is the number of committed events.
	Events uint64 `json:"events"`
	// WallSeconds is the run's wall time.
	WallSeconds float64 `json:"wall_seconds"`
	// Unmeasured are the keys of Results the run could not measure (figures of the whole
	// process, such as its peak memory, while other runs shared it, or a model's result
	// without a value, NaN): left out of Results, blank in the tables, and not counted in
	// a point's statistics.
	Unmeasured []string `json:"unmeasured,omitempty"`
}

// Value returns the outcome's result k, or NaN where the run has none (Unmeasured).
func (o Outcome) Value(k string) float64 {
	if v, ok := o.Results[k]; ok {
		return v
	}
	return math.NaN()
}

// Runner runs one simulation of model with the command-line flags args and returns its
// outcome. It is called from several goroutines at once. A non-nil offload is the
// backend a time-warp run with batch kernels uses instead of opening its own (a view of
// the study's Merger); the runner closes it when the run ends.
type Runner func(ctx context.Context, model string, args []string, offload gpuoffload.Backend) (Outcome, error)

// Options are the settings of Execute.
type Options struct {
	// Out is the directory of the journal and tables; it is created if needed.
	Out string
	// Resume continues the study whose journal is in Out; without it, a journal with
	// runs in Out is an error.
	Resume bool
	// Execution overrides the spec's execution settings where its fields are set
	// (SimulationType "" or "auto" keeps the spec's).
	Execution Execution
	// Cores is the number of cores to use (0: runtime.NumCPU).
	Cores int
	// Progress is told how the runs go; nil shows nothing.
	Progress Progress
	// Log receives notes (the execution chosen); nil discards them.
	Log io.Writer
	// OpenMerge opens the offload backend that the runs share when the execution merges
	// batches (see Merger); Execute closes it.
	OpenMerge func() (gpuoffload.Backend, error)
	// Ranks, when not nil, are the processes that share the study (under mpirun): each
	// runs every Size-th missing run and journals it in its own file in Out; at the end
	// every rank has every outcome, and the caller has rank 0 write the tables.
	Ranks Ranks
	// Types are the kernel's simulation types (kernel.Types(); required); SimulationType
	// must be one of them or auto. The first is the sequential one, the second time warp.
	Types []string
	// Device, when not nil, runs the runs of its simulation type several to a device
	// loop (see Device) instead of one by one with Runner.
	Device Device
}

// Progress is told when runs finish.
type Progress interface {
	// Start says how many runs there are and how many were done before (resumed).
	Start(total, done int)
	// Add says that one more run finished.
	Add()
	// Finish says that no more runs will finish.
	Finish()
}

// Study is a study after Execute: its spec, its runs and their outcomes.
type Study struct {
	Spec     *Spec
	Runs     []Run
	Outcomes []Outcome
	// Plan is the execution chosen: runs at once, simulation type, workers per run.
	Plan Plan
	// Resumed is the number of runs found finished in the journal.
	Resumed int
	// MergedCalls, MergedBatches and MergedElements are, when the execution merges
	// batches, the calls of the shared backend, the batches this process's runs
	// submitted, and their elements.
	MergedCalls, MergedBatches, MergedElements uint64
	// DeviceLoops is the number of device loops that ran this process's runs (Device).
	DeviceLoops int
	// Provenance says where the study's figures came from (the program's build, the
	// machine, the command line): any value that encodes as JSON, written into
	// summary.json as it is; set by the caller before WriteTables, or nil.
	Provenance any
}

// Plan is how a study's runs are executed.
type Plan struct {
	Jobs           int
	SimulationType string
	Workers        int
	// MemoryBudget and RunMemory are the memory budget and one run's estimated memory,
	// in bytes (RunMemory 0: not measured).
	MemoryBudget, RunMemory uint64
}

// SettingsError is a bad setting of Execute (a usage error): an unknown simulation type,
// or an output directory that holds a journal without Resume.
type SettingsError struct{ Msg string }

func (e *SettingsError) Error() string { return e.Msg }

// ErrInterrupted is wrapped by Execute's error when its context ended before every run
// finished; the finished runs are in the journal.
var ErrInterrupted = errors.New("study interrupted")

// Execute runs the study's runs that its journal in o.Out does not have, journals each
// as it finishes, and returns the study with every outcome. When ctx ends, it waits for
// the runs in progress to stop and returns an error wrapping ErrInterrupted.
func Execute(ctx context.Context, s *Spec, run Runner, o Options) (*Study, error) {
	if o.Cores <= 0 {
		o.Cores = runtime.NumCPU()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Types) < 2 {
		return nil, &SettingsError{Msg: "study: Options.Types must list the kernel's simulation types, sequential first and time warp second: give it kernel.Types()"}
	}
	ex, err := mergeExecution(s.Execution, o.Execution, o.Types)
	if err == nil {
		err = checkSpecWorkers(s, ex, o.Types)
	}
	if err != nil {
		return nil, err // the same on every rank: the same spec and flags
	}
	rank, size := 0, 1
	if o.Ranks != nil {
		rank, size = o.Ranks.Rank(), o.Ranks.Size()
	}
	st := &Study{Spec: s, Runs: s.Runs()}
	st.Outcomes = make([]Outcome, len(st.Runs))
	j, done, err := openJournal(o.Out, journalName(rank), o.Resume)
	if err == nil && rank == 0 && o.Resume && size > 1 {
		err = readRankJournals(o.Out, done)
	}
	var merger *Merger
	if err == nil && ex.MergeBatches {
		var be gpuoffload.Backend
		if o.OpenMerge == nil {
			err = &SettingsError{"merging batches across runs needs an offload backend"}
		} else if be, err = o.OpenMerge(); err == nil {
			merger = NewMerger(be)
		}
	}
	if size > 1 {
		// Every rank learns whether every rank could start, and rank 0's finished runs.
		done, err = agreeStart(o.Ranks, done, err)
	}
	if err != nil {
		j.close()
		if merger != nil {
			merger.Close()
		}
		return nil, err
	}
	var pending []Run
	for _, r := range st.Runs {
		if out, ok := done[r.Key()]; ok {
			st.Outcomes[r.Index] = out
			st.Resumed++
		} else {
			pending = append(pending, r)
		}
	}
	// A journal none of whose runs is in the spec belongs to another study (the spec was
	// edited, or --out names another's directory): resuming would run everything again
	// and mix the two studies' runs in one journal.
	if stale := len(done) - st.Resumed; stale > 0 && st.Resumed == 0 {
		j.close()
		if merger != nil {
			merger.Close()
		}
		return nil, &SettingsError{fmt.Sprintf("--resume: none of the %d runs in the journal in %s is a run of this spec "+
			"(its points, seeds or settings changed): give a new --out for the changed study", stale, o.Out)}
	} else if stale > 0 {
		fmt.Fprintf(o.Log, "study: %d runs in the journal are not runs of this spec (it changed since): left out\n", stale)
	}
	mine := pending
	if size > 1 {
		mine = nil
		for i, r := range pending {
			if i%size == rank {
				mine = append(mine, r)
			}
		}
	}
	if o.Progress != nil {
		if size > 1 {
			o.Progress.Start(len(mine), 0) // this rank's share
		} else {
			o.Progress.Start(len(st.Runs), st.Resumed)
		}
	}
	sch := &scheduler{spec: s, run: run, j: j, st: st, o: o, ex: ex, merger: merger}
	err = sch.execute(ctx, mine)
	if o.Progress != nil {
		o.Progress.Finish()
	}
	if cerr := j.close(); err == nil {
		err = cerr
	}
	if merger != nil {
		st.MergedCalls, st.MergedBatches, st.MergedElements = merger.Stats()
		merger.Close()
	}
	if size > 1 && !(errors.Is(err, ErrInterrupted) && ctx.Err() != nil) {
		// Every rank hands its runs' outcomes (or its error) to every rank. Not a rank
		// stopped by a signal: the others would finish their shares first, hours maybe;
		// it returns at once, its runs journaled, and its caller ends the job (MPI_Abort).
		err = agreeEnd(o.Ranks, st, mine, err)
	}
	if err != nil {
		return st, err
	}
	for _, r := range st.Runs {
		if err := checkResults(s, r, st.Outcomes[r.Index]); err != nil {
			return st, err
		}
	}
	return st, nil
}

// mergeExecution returns the spec's execution with the command line's settings over it,
// checked.
func mergeExecution(spec, cmd Execution, types []string) (Execution, error) {
	e := spec
	if cmd.Jobs > 0 {
		e.Jobs = cmd.Jobs
	}
	if cmd.Workers > 0 {
		e.Workers = cmd.Workers
	}
	if cmd.MemoryMiB > 0 {
		e.MemoryMiB = cmd.MemoryMiB
	}
	e.MergeBatches = e.MergeBatches || cmd.MergeBatches
	if cmd.GroupRuns > 0 {
		e.GroupRuns = cmd.GroupRuns
	}
	if cmd.SimulationType != "" && cmd.SimulationType != "auto" {
		e.SimulationType = cmd.SimulationType
	}
	if e.SimulationType == "" {
		e.SimulationType = "auto"
	}
	if e.SimulationType != "auto" && !slices.Contains(types, e.SimulationType) {
		return e, &SettingsError{fmt.Sprintf("unknown simulation type %q (want auto, %s)", e.SimulationType, strings.Join(types, ", "))}
	}
	return e, nil
}

// checkResults checks that the outcome has every result the spec summarises.
func checkResults(s *Spec, r Run, out Outcome) error {
	for _, k := range s.Results {
		if _, ok := out.Results[k]; !ok && !slices.Contains(out.Unmeasured, k) {
			return fmt.Errorf("run %d (%s) has no result %q; the spec's results must be among the model's", r.Index, r.Key(), k)
		}
	}
	return nil
}

// scheduler runs a study's pending runs.
type scheduler struct {
	spec *Spec
	run  Runner
	j    *journal
	st   *Study
	o    Options
	ex   Execution
	// merger is the shared offload backend, or nil.
	merger *Merger
}

// pilotSeconds is the wall time of one sequential run above which a study with fewer
// runs than cores runs them with time-warp workers.
const pilotSeconds = 1.0

// execute runs pending. Unless the execution is fully given, the first run is a pilot,
// run alone: its heap growth estimates one run's memory, and (under auto) its wall time
// decides between sequential runs on every core and time-warp runs.
func (sch *scheduler) execute(ctx context.Context, pending []Run) error {
	if len(pending) == 0 {
		return nil
	}
	o, ex := sch.o, sch.ex
	seqType, twType := o.Types[0], o.Types[1]
	plan := Plan{MemoryBudget: memoryBudget(ex.MemoryMiB)}
	plan.SimulationType = ex.SimulationType
	specWorkers := sch.spec.specWorkers() // checkSpecWorkers: then auto or time warp
	if plan.SimulationType == "auto" {
		plan.SimulationType = seqType
		if ex.MergeBatches || specWorkers > 0 {
			plan.SimulationType = twType // only time-warp runs offload batches, or have workers
		}
	}
	if o.Device != nil && plan.SimulationType == o.Device.Type() {
		plan.Jobs = 1
		return sch.groups(ctx, pending, plan)
	}
	plan.Jobs = ex.Jobs
	if plan.Jobs == 0 {
		plan.Jobs = o.Cores
		switch {
		case specWorkers > 0:
			plan.Jobs = max(1, o.Cores/specWorkers)
		case plan.SimulationType == twType && ex.SimulationType != "auto":
			plan.Jobs = max(1, o.Cores/max(1, ex.Workers))
		}
	}
	plan.Workers = ex.Workers
	// The pilot.
	piloted := len(pending) > 1 && plan.Jobs > 1
	if piloted {
		base := heapLive()
		stop := make(chan struct{})
		peak := make(chan uint64)
		go samplePeak(stop, peak)
		out, err := sch.one(ctx, pending[0], plan)
		close(stop)
		p := <-peak
		if err != nil {
			return err
		}
		if p > base {
			plan.RunMemory = (p - base) + (p-base)/4
		}
		pending = pending[1:]
		if ex.SimulationType == "auto" && !ex.MergeBatches && specWorkers == 0 && len(pending) < o.Cores && out.WallSeconds >= pilotSeconds {
			plan.SimulationType = twType
			if ex.Jobs == 0 {
				plan.Jobs = len(pending)
			}
		}
		if plan.RunMemory > 0 {
			plan.Jobs = max(1, min(plan.Jobs, int(plan.MemoryBudget/plan.RunMemory)))
		}
	}
	if plan.SimulationType == twType && plan.Workers == 0 && specWorkers == 0 {
		plan.Workers = max(1, o.Cores/max(1, min(plan.Jobs, len(pending))))
	}
	sch.st.Plan = plan
	if piloted {
		// Said, or the count below would read as one run short of the study's.
		fmt.Fprint(o.Log, "study: 1 run done alone (it measures a run's memory), ")
	} else {
		fmt.Fprint(o.Log, "study: ")
	}
	fmt.Fprintf(o.Log, "%d runs to do, %d at once, %s", len(pending), plan.Jobs, plan.SimulationType)
	switch {
	case specWorkers > 0:
		fmt.Fprintf(o.Log, " with the spec's workers (at most %d a run)", specWorkers)
	case plan.SimulationType == twType:
		fmt.Fprintf(o.Log, " with %d workers each", plan.Workers)
	}
	if plan.RunMemory > 0 {
		fmt.Fprintf(o.Log, " (about %.1f MiB a run, budget %.0f MiB)", float64(plan.RunMemory)/(1<<20), float64(plan.MemoryBudget)/(1<<20))
	}
	fmt.Fprintln(o.Log)
	if plan.Jobs > 1 && len(pending) > 1 {
		// Said once: a scaling study read off such runs would be wrong without a word.
		fmt.Fprintln(o.Log, "study: runs at once share the cores and the process: their wall times and rates are "+
			"not those of a run alone, and figures of the whole process (peak memory, CPU wait) are left blank; "+
			"--jobs 1 measures each run alone")
	}
	return sch.pool(ctx, pending, plan)
}

// studyGCPercent is the garbage collector's target while several runs share the process
// (unless GOGC is set): the runs allocate their models and queues together, and at the
// default 100 the collector's work took PCS studies (64 runs, 20x20, end 200) to 1.63x the
// rate of the runs one after another on 2 cores, against 1.93x at 400 (PHOLD: 1.99x and
// 1.92x, the same within the noise); docs/PERFORMANCE.md. The heap may then grow to five
// times the live data between collections, so the memory budget also becomes the
// runtime's soft memory limit (unless GOMEMLIMIT is set), where the collector works harder
// again.
const studyGCPercent = 400

// tuneGC sets the collector for plan (see studyGCPercent) and returns the function that
// restores it.
func tuneGC(plan Plan) func() {
	if plan.Jobs <= 1 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	gc := debug.SetGCPercent(studyGCPercent)
	limit := int64(-1) // read only
	if os.Getenv("GOMEMLIMIT") == "" && plan.MemoryBudget > 0 && plan.MemoryBudget < math.MaxInt64 {
		limit = debug.SetMemoryLimit(int64(plan.MemoryBudget))
	}
	return func() {
		debug.SetGCPercent(gc)
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// pool runs pending with at most plan.Jobs at once, admitting a run while the live heap
// leaves room for it in the budget (or nothing runs).
func (sch *scheduler) pool(parent context.Context, pending []Run, plan Plan) error {
	defer tuneGC(plan)()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		running int
		first   error
		wg      sync.WaitGroup
	)
	admit := func() bool {
		if running == 0 {
			return true
		}
		if running >= plan.Jobs {
			return false
		}
		return plan.RunMemory == 0 || heapLive()+plan.RunMemory <= plan.MemoryBudget
	}
	for _, r := range pending {
		mu.Lock()
		for first == nil && ctx.Err() == nil && !admit() {
			cond.Wait()
		}
		if first != nil || ctx.Err() != nil {
			mu.Unlock()
			break
		}
		running++
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := sch.one(ctx, r, plan)
			mu.Lock()
			running--
			if err != nil && first == nil {
				first = err
				cancel()
			}
			cond.Broadcast()
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first == nil && parent.Err() != nil {
		return fmt.Errorf("%w: resume it with --resume", ErrInterrupted)
	}
	return first
}

// args are r's flags under plan: its own and the execution's.
func (sch *scheduler) args(r Run, plan Plan) []string {
	args := append(r.Args[:len(r.Args):len(r.Args)], "--simulation-type="+plan.SimulationType)
	if plan.Workers > 0 {
		args = append(args, "--time-warp-worker-threads="+strconv.Itoa(plan.Workers))
	}
	return args
}

// one runs r under plan, journals its outcome and records it.
func (sch *scheduler) one(ctx context.Context, r Run, plan Plan) (Outcome, error) {
	var offload gpuoffload.Backend
	if sch.merger != nil {
		offload = sch.merger.View()
	}
	out, err := sch.run(ctx, sch.spec.Model, sch.args(r, plan), offload)
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("%w: resume it with --resume", ErrInterrupted)
		}
		return out, fmt.Errorf("run %d (%s): %w", r.Index, r.Key(), err)
	}
	return out, sch.record(r, out)
}

// record journals r's outcome, keeps it and counts it done.
func (sch *scheduler) record(r Run, out Outcome) error {
	if err := sch.j.append(r, out); err != nil {
		return err
	}
	sch.st.Outcomes[r.Index] = out
	if sch.o.Progress != nil {
		sch.o.Progress.Add()
	}
	return nil
}

// heapLive returns the heap's live bytes after the last GC plus what was allocated since.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// samplePeak sends the largest heapLive seen every few milliseconds until stop closes.
func samplePeak(stop <-chan struct{}, peak chan<- uint64) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	p := heapLive()
	for {
		select {
		case <-stop:
			peak <- max(p, heapLive())
			return
		case <-t.C:
			p = max(p, heapLive())
		}
	}
}

// memoryBudget returns mib MiB, or half the memory available now (Linux), else 4 GiB.
func memoryBudget(mib int) uint64 {
	if mib > 0 {
		return uint64(mib) << 20
	}
	if avail := meminfo.Bytes("MemAvailable:"); avail > 0 {
		return avail / 2
	}
	return 4 << 30
}
