package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/partition"
)

// options are the kernel and output flags shared by every model.
type options struct {
	maxSimTime float64
	inclusive  bool
	simType    string
	seed       uint64
	config     string
	dumpConfig bool
	statsFile  string
	progress   progressMode

	workers, schedulers, period int
	queueType, lockType         string
	cancellation, stateSaving   string
	window                      float64
	gvtPeriodMS                 float64
	checkRollbacks              bool
	gvtMethod, partitioning     string
	maxAggregate                int
	remoteSafe                  bool
	gpu                         string
	gpuBatchSize                int
	device                      kernel.GPUConfig // --gpu-device, --gpu-slots, ... (simulation type gpu)
	gpuProfile                  bool
	sample                      sampleOptions
	report                      string
	trace                       traceOptions
	maxMemory                   maxMemory
}

// runModel runs model m with the command-line arguments that follow its name, prints
// the results, and returns the exit status. The steps are the methods of invocation
// below, in the order they run.
func (c *Command) runModel(ctx context.Context, m *Model, args []string, stdout, stderr io.Writer) int {
	inv := &invocation{c: c, m: m, stdout: stdout, stderr: stderr, args: args}
	defer inv.close()
	err := inv.run(ctx, args)
	err = inv.keepSamples(err) // a failed run's, named in its line (sampling.go)
	code := inv.exit(err)
	if f, ok := err.(*failure); ok && !f.quiet {
		// MPI_Abort does not return, so nothing deferred runs after it: the trace's
		// temporary file goes first (the samples are settled by now).
		_ = inv.closeTrace(false)
		inv.abortRanks(code, errors.As(err, new(*kernel.PeerError)))
	}
	return code
}

// peerAbortGrace is how long a rank that shows another rank's failure waits for that
// rank's MPI_Abort to end the job before it aborts the job itself.
const peerAbortGrace = 10 * time.Second

// abortRanks ends every rank of a run across processes after this rank failed on its
// own (an error before or during the run that the others may not know of, a signal), so
// that none waits for it forever: MPI_Abort, once this rank's outputs are closed (its
// samples kept by keepSamples). A
// failure every rank reports (quiet here) needs no abort. Where the failure began on
// another rank (peer), that rank aborts the job; this one (rank 0, which shows the
// failure) aborts only if the job still runs after peerAbortGrace, because Open MPI 4.1's
// mpirun has been seen to hang in its teardown when two ranks call MPI_Abort at once.
func (inv *invocation) abortRanks(code int, peer bool) {
	a, ok := inv.tr.(interface{ Abort(int) })
	if inv.tr == nil || inv.tr.Size() < 2 || !ok {
		return
	}
	if peer {
		time.Sleep(peerAbortGrace)
	}
	a.Abort(code)
}

// invocation is one run of a model from the command line: its flags, where its output
// goes, and what the steps of the run hand on to each other.
type invocation struct {
	c              *Command
	m              *Model
	stdout, stderr io.Writer
	o              options
	fs             *pflag.FlagSet
	args           []string        // the arguments after the model's name, for the provenance
	given          map[string]bool // the flags the command line or --config set (not Model.Resolve)
	build          func() ([]kernel.LogicalProcess, partition.Partitioner, error)
	tr             comm.Transport     // nil unless the run spans several processes
	be             gpuoffload.Backend // the offload backend, or nil
	samples        *sampleOutput      // the --sample-file, or nil (sampling.go)
	collector      *reportCollector   // the samples kept for --report, or nil (report.go)
	trace          *traceOutput       // the --trace file, or nil (trace.go)
	// pressure is set by the memory watcher while the process's memory is near
	// --max-memory (memory.go), and read by the time-warp engine (Config.MemoryPressure).
	pressure atomic.Bool
}

// close releases what the run opened, last opened first: the trace and the sample file
// (committed by now, after a successful run and by keepSamples after a failed one; kept
// beside any file should one be open still), the offload backend, the transport. It runs
// after the outcome is printed.
func (inv *invocation) close() {
	_ = inv.closeTrace(false) // a successful run has committed it already
	_, _, _ = inv.finishSamples(true)
	if inv.be != nil {
		inv.be.Close()
	}
	if inv.tr != nil {
		inv.tr.Close()
	}
}

// who is the program and model that messages begin with: "warped phold".
func (inv *invocation) who() string { return inv.c.name + " " + inv.m.Name }

// run carries out the steps of one run. It returns nil after a successful run, --help or
// --dump-config, and a *failure otherwise.
func (inv *invocation) run(ctx context.Context, args []string) error {
	if err := comm.CheckLaunch(); err != nil {
		// Started as several ranks by mpirun, but built without MPI: every rank would
		// run the whole model alone.
		return &failure{err: err, status: exitUsage, alike: true}
	}
	// Under mpirun every rank would print the help, or the configuration: rank 0 alone
	// does (several JSON objects one after another are no --config file).
	quiet := comm.LaunchedRanks() > 1 && comm.LaunchedRank() > 0
	if err := inv.parseFlags(args); errors.Is(err, pflag.ErrHelp) {
		if !quiet {
			fmt.Fprint(inv.stdout, inv.c.modelUsage(inv.m))
		}
		return nil
	} else if err != nil {
		return err
	}
	if err := inv.checkFlags(); err != nil {
		return alike(err)
	}
	if inv.o.dumpConfig { // after the checks of the flags: a configuration they refuse is none
		if quiet {
			return nil
		}
		return inv.dumpConfig()
	}
	if err := inv.checkOutputs(); err != nil {
		return err
	}
	if err := checkMemoryAgainst(inv.m, inv.fs, runLimit(&inv.o.maxMemory)); err != nil {
		return err
	}
	b, err := abandonable(ctx, func() (built, error) {
		lps, part, err := inv.buildModel()
		return built{lps, part}, err
	})
	if err != nil {
		return err
	}
	lps, part := b.lps, b.part
	workersNote := inv.fitWorkers(len(lps))
	if err := inv.openTransport(); err != nil {
		return err
	}
	inv.settleLeftovers() // outputs.go
	cfg := inv.config(part)
	offloadNote, err := inv.openOffload(&cfg, lps)
	if err != nil {
		return err
	}
	inv.attachProgress(&cfg)
	if inv.o.maxMemory.limit() > 0 {
		cfg.MemoryPressure = inv.pressure.Load // memory.go's watcher sets it
	}
	inv.attachSamples(&cfg)
	inv.attachSeries(&cfg)                           // sampling.go
	inv.attachReport(&cfg)                           // report.go
	if err := inv.openTrace(&cfg, lps); err != nil { // trace.go; a failed run drops it
		return err
	}
	sim, err := abandonable(ctx, func() (*dispatch.Simulation, error) {
		sim, err := dispatch.New(cfg, lps) // checks every LP: seconds for millions
		if err != nil {
			return nil, usageFailure("%v", err)
		}
		return sim, nil
	})
	if err != nil {
		return err
	}
	if err := inv.openSamples(); err != nil {
		return err
	}
	inv.note(workersNote) // once the configuration is known to be good
	inv.note(offloadNote)
	inv.note(bindingNote(inv.tr, runtime.GOMAXPROCS(0)))
	inv.note(crowdNote(inv.tr, comm.LocalRanks(), comm.NodeCPUs()))
	res, err := inv.simulate(ctx, sim, cfg.Progress != nil && isTerminal(inv.stderr)) // a line to clear
	if err != nil {
		return err
	}
	if err := inv.closeSamples(); err != nil {
		return err
	}
	if err := inv.closeTrace(true); err != nil {
		return err
	}
	if err := inv.writeSeries(res); err != nil {
		return err
	}
	inv.note(res.OffloadNote)
	return inv.report(lps, res)
}

// built is what building a model gives: its LPs and its partitioner.
type built struct {
	lps  []kernel.LogicalProcess
	part partition.Partitioner
}

// abandonable runs step, a part of the setup of a run that only computes in memory (it
// opens, creates and writes nothing) and looks at no context: building the model's LPs,
// which a model's constructor takes seconds for when the model is big, and the kernel's
// check of them (dispatch.New). It returns step's result, or, when ctx ends first (a
// signal), the interruption at once, leaving step to finish on its own goroutine and
// dropping what it returns. As step writes nothing, abandoning it leaves nothing
// half-written, and every model is stopped so without a context in its constructor; the
// price is the CPU that step goes on using until the process exits, which Main does right
// after (a program that runs Command.Run itself has step finish in the background). So a
// signal while phold --lps 6000000 is built is acted on within a tenth of a second, not 3
// to 4 seconds later, once the model and the kernel's check are done.
func abandonable[T any](ctx context.Context, step func() (T, error)) (T, error) {
	var zero T
	if err := stopped(ctx); err != nil {
		return zero, err
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1) // buffered: an abandoned step does not block on it
	go func() {
		v, err := step()
		done <- outcome{v, err}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		return zero, stopped(ctx)
	}
}

// stopped returns the failure of a run whose context has ended, before the simulation
// proper (which says why it stopped itself, see simulate), or nil while it goes on.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if why := stopCause(ctx); why != nil {
		return runFailure(why)
	}
	return runFailure(fmt.Errorf("run failed: %w", context.Cause(ctx)))
}

// buildModel builds the model's LPs from its flags, and the partitioner that
// --partitioning names (model: the model's own).
func (inv *invocation) buildModel() ([]kernel.LogicalProcess, partition.Partitioner, error) {
	lps, part, err := inv.build()
	if err != nil {
		return nil, nil, usageFailure("%v", err)
	}
	if inv.o.partitioning != "model" {
		if part, err = partition.Named(inv.o.partitioning); err != nil {
			return nil, nil, usageFailure("--partitioning: %v (or model)", err)
		}
	}
	return lps, part, nil
}

// fitWorkers keeps a time-warp run's workers, and its schedule queues, to its lps LPs: the
// engine partitions the LPs among the schedule queues, so a worker beyond the LPs would
// have a queue without LPs, or a share of a queue with fewer LPs than workers, and nothing
// to do but cost memory and a report in every GVT round. It returns a note saying so when
// the workers were asked for (the default, the CPUs the process may use, is fitted without
// a word).
func (inv *invocation) fitWorkers(lps int) string {
	o := &inv.o
	if o.simType != kernel.TimeWarp || lps < 1 || o.workers <= lps {
		return ""
	}
	asked := o.workers
	o.workers, o.schedulers = lps, min(o.schedulers, lps)
	if !inv.fs.Changed("time-warp-worker-threads") {
		return ""
	}
	return fmt.Sprintf("--time-warp-worker-threads %d is more than the model's %d LPs: running %d workers (a worker without LPs would have nothing to do)",
		asked, lps, lps)
}

// openTransport opens MPI when mpirun started several ranks, so that the run spans the
// processes: this goroutine becomes the manager (NewMPI locks it to its OS thread, and
// Run must be called from it). Ranks other than 0 print nothing, write no stats file and
// show no progress.
func (inv *invocation) openTransport() error {
	if comm.LaunchedRanks() <= 1 {
		return nil
	}
	mpi, err := comm.NewMPI(comm.MPIOptions{})
	if err != nil {
		return runFailure(err)
	}
	if mpi.Rank() != 0 {
		inv.stdout, inv.o.statsFile, inv.o.progress = io.Discard, "", "off"
	}
	inv.tr = mpi
	return nil
}

// config returns the kernel configuration of the options, with partitioner part. A state
// saving period given (on the command line or in --config) asks for periodic state
// saving under auto; left out, the kernel's default applies.
func (inv *invocation) config(part partition.Partitioner) kernel.Config {
	o := &inv.o
	period := 0
	if inv.fs.Changed("time-warp-state-saving-period") {
		period = o.period
	}
	gpu := o.device
	if o.gpuProfile {
		gpu.Profile = inv.stderr
	}
	var payloads *kernel.Registry
	if inv.m.Payloads != nil {
		payloads = inv.m.Payloads()
	}
	return kernel.Config{MaxSimTime: o.maxSimTime, EndInclusive: o.inclusive, Type: o.simType, Seed: o.seed,
		Payloads:  payloads,
		Transport: inv.tr, Partition: part, Agree: agreed(inv.m.Name, inv.fs),
		ModelInit: inv.m.Init, ModelFinal: inv.m.Final,
		TimeWarp: kernel.TimeWarpConfig{Workers: o.workers, Schedulers: o.schedulers,
			QueueType: o.queueType, LockType: o.lockType, StateSavingPeriod: period,
			StateSaving:  o.stateSaving,
			Cancellation: o.cancellation, CheckRollbacks: o.checkRollbacks,
			OptimismWindow: o.window, GVTPeriod: time.Duration(o.gvtPeriodMS * float64(time.Millisecond)),
			GVTMethod: o.gvtMethod, MaxAggregate: o.maxAggregate, NoRemoteSafe: !o.remoteSafe,
			RemoteSafeCrowded: o.remoteSafe && inv.fs.Changed("time-warp-remote-safe")},
		GPU: gpu}
}

// openOffload opens the offload backend that --gpu asks for (time warp only) as inv.be
// and puts it in cfg. It returns a note to print when --gpu auto found no GPU.
func (inv *invocation) openOffload(cfg *kernel.Config, lps []kernel.LogicalProcess) (string, error) {
	if inv.o.simType != kernel.TimeWarp {
		return "", nil
	}
	if inv.o.gpu == gpuoffload.ModeOn && !hasBatcher(lps) {
		return "", usageFailure("--gpu on offloads batch kernels, and model %s has none (PHOLD and PCS have): drop it, or give auto", inv.m.Name)
	}
	be, note, err := openOffload(inv.o.gpu, lps, inv.o.workers, inv.o.device.Device)
	if err != nil {
		return "", runFailure(err)
	}
	if be != nil {
		inv.be = be
		cfg.TimeWarp.Offload, cfg.TimeWarp.BatchSize = be, inv.o.gpuBatchSize
		cfg.TimeWarp.OffloadAuto = inv.o.gpu == gpuoffload.ModeAuto
	}
	return note, nil
}

// attachProgress has the run print a progress line on stderr when --progress asks for
// it (auto: when stderr is a terminal). Across processes rank 0 prints it, with its own
// events: the others' would take messages each line.
func (inv *invocation) attachProgress(cfg *kernel.Config) {
	if showProgress(inv.o.progress, inv.stderr) {
		scope := ""
		if inv.tr != nil && inv.tr.Size() > 1 {
			scope = fmt.Sprintf(" on rank 0 (of %d ranks)", inv.tr.Size())
		}
		cfg.Progress = progressPrinter(inv.stderr, scope)
		cfg.ProgressInterval = 500 * time.Millisecond
	}
}

// bindingNote says, for a run across processes whose rank may use one CPU alone (Open
// MPI binds each rank to a core by default for up to two ranks), that the rank's workers
// and its manager take turns on it: on 16 cores, PHOLD's small configuration at -np 2
// committed 0.35 M events/s bound and 2.5 M with --bind-to none (docs/PERFORMANCE.md).
func bindingNote(tr comm.Transport, procs int) string {
	if tr == nil || tr.Size() < 2 || procs > 1 {
		return ""
	}
	return "this rank may use 1 CPU (mpirun binds ranks to cores), so its workers and its manager take turns on it; " +
		"mpirun --bind-to none (or --map-by slot:PE=N) lets them run at once"
}

// crowdNote says, for a run with more ranks on this node (local, as the launcher says)
// than it has CPUs, that the ranks take turns on the cores: a rank off its core holds
// back the others' GVT, and what it sends when it runs again rolls them back. Each rank
// adapts its own threads to the load, but not the number of ranks: PHOLD's small
// configuration at -np 4 on 2 cores ran at 0.5 – 0.6 of -np 2's rate, and at -np 8 at
// 0.26 – 0.32, where ranks that exchange no event at all reach 0.6 and 0.47
// (docs/PERFORMANCE.md).
func crowdNote(tr comm.Transport, local, cpus int) string {
	if tr == nil || tr.Size() < 2 || local <= cpus {
		return ""
	}
	return fmt.Sprintf("%d ranks share this node's %d CPUs, so they take turns on them and roll each other back; "+
		"start at most %d ranks a node (each rank runs --time-warp-worker-threads workers)", local, cpus, cpus)
}

// note prints a note about the run on stderr (on rank 0 only); empty notes are skipped.
func (inv *invocation) note(s string) {
	if s != "" && (inv.tr == nil || inv.tr.Rank() == 0) {
		fmt.Fprintf(inv.stderr, "%s: %s\n", inv.who(), s)
	}
}

// simulate runs sim and clears the progress line if there is one. A failure another rank
// reports is quiet here; a model's panic comes with its stack.
func (inv *invocation) simulate(ctx context.Context, sim *dispatch.Simulation, progress bool) (kernel.Result, error) {
	ctx, unwatch := watchMemory(ctx, inv.o.maxMemory.limit(), &inv.pressure)
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	if inv.trace != nil {
		inv.trace.stop = stopRun
	}
	res, err := sim.Run(ctx)
	why := stopCause(ctx)
	unwatch()
	if progress {
		fmt.Fprint(inv.stderr, "\r\033[K")
	}
	if why != nil {
		// Stopped by a signal or the memory watcher, or finished as it stopped it:
		// either way nothing is written.
		return res, runFailure(why)
	}
	if err == nil {
		return res, nil
	}
	f := runFailure(fmt.Errorf("run failed: %w", err))
	if inv.tr != nil && inv.tr.Rank() != 0 && kernel.ReportedElsewhere(err) {
		f.quiet = true // rank 0 shows it
	}
	var p *kernel.ModelPanicError
	if !f.quiet && errors.As(err, &p) {
		f.detail = string(p.Stack)
	}
	return res, f
}

// report prints the totals and the model's results, and writes the stats file if one was
// asked for.
func (inv *invocation) report(lps []kernel.LogicalProcess, res kernel.Result) error {
	offload := ""
	if inv.be != nil {
		offload = inv.be.Name()
	}
	results := inv.m.results(lps, inv.fs)
	w, where := inv.resultsOut()
	out := &stickyWriter{w: w}
	printResults(out, inv.m, inv.o.simType, offload, res, results)
	if out.err != nil {
		// The totals and the digest are lost: a failed run, so the files that follow
		// are not written either.
		return runFailure(fmt.Errorf("cannot write the results to %s: %w", where, writeError(out.err)))
	}
	if err := inv.m.write(lps); err != nil {
		return runFailure(err)
	}
	if err := inv.writeReport(res, results); err != nil {
		return err
	}
	if inv.o.statsFile == "" {
		return nil
	}
	if err := inv.writeStats(res, results); err != nil {
		return runFailure(outputError("stats-file", err))
	}
	return nil
}

// localFlags are the flags that may differ between the ranks of a run across processes:
// they tune one process or name its output, and do not change the result.
var localFlags = map[string]bool{"config": true, "dump-config": true, "stats-file": true, "progress": true,
	"time-warp-worker-threads": true, "time-warp-scheduler-count": true, "time-warp-queue-type": true,
	"time-warp-lock-type": true, "time-warp-state-saving-period": true, "gpu": true, "gpu-batch-size": true,
	"gpu-device": true, "gpu-slots": true, "gpu-bound": true, "gpu-executions": true, "gpu-inactivity": true, "gpu-profile": true, "gpu-buffer": true,
	"sample-file": true, "sample-mode": true, "sample-format": true, "sample-period": true, "report": true,
	"series-file": true, "max-memory": true, "trace": true, "trace-every": true}

// openOffload opens the offload backend of --gpu mode, on CUDA device device, for a time-warp run of lps. With
// auto it opens nothing when no LP has batch kernels (kernel.Batcher), and returns a note
// to print when CUDA does not open; with on, CUDA not opening is an error. The backend
// takes batches from the run's workers at once (a lane each).
func openOffload(mode string, lps []kernel.LogicalProcess, workers, device int) (gpuoffload.Backend, string, error) {
	if mode == gpuoffload.ModeAuto && !hasBatcher(lps) {
		return nil, "", nil
	}
	return gpuoffload.Open(mode, gpuoffload.Options{Lanes: workers, Device: device}) // --gpu-device
}
