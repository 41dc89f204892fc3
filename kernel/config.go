package kernel

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/ltsf"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/spinlock"
)

// Registry maps payload types to names so that payloads can cross processes.
type Registry = comm.Registry

// NewRegistry returns an empty payload registry.
func NewRegistry() *Registry { return comm.NewRegistry() }

// Simulation types accepted in Config.Type.
const (
	// Sequential processes every event in the total order, one at a time.
	Sequential = "sequential"
	// TimeWarp processes events optimistically on several worker goroutines, rolling
	// back when an event arrives in an LP's past.
	TimeWarp = "time-warp"
	// GPU runs the whole time warp on a CUDA device (package gpuwarp), for models whose
	// LPs all implement DeviceModeler.
	GPU = "gpu"
)

// State-saving types accepted in TimeWarpConfig.StateSaving ("" is auto).
const (
	// StateSavingAuto is reverse computation when every LP implements Reverser and no
	// state-saving period is set, periodic state saving otherwise.
	StateSavingAuto = "auto"
	// StateSavingPeriodic saves copies of each LP's state and coasts forward after a
	// rollback.
	StateSavingPeriodic = "periodic"
	// StateSavingReverse rolls LPs back with reverse computation (see Reverser).
	StateSavingReverse = "reverse"
)

// QueueCalendar is the default TimeWarpConfig.QueueType: each schedule queue is a calendar
// queue of its LPs' events (the other types are ltsf.QueueTypes).
const QueueCalendar = ltsf.Calendar

// Types lists the accepted simulation types.
func Types() []string { return []string{Sequential, TimeWarp, GPU} }

// TimeWarpConfig configures the time-warp dispatcher. Zero values take the defaults.
type TimeWarpConfig struct {
	// Workers is the number of workers (default: GOMAXPROCS, the CPUs the process may use,
	// which follows a container's CPU limit where the number of CPUs does not). More
	// workers than GOMAXPROCS take turns on GOMAXPROCS goroutines (package timewarp,
	// host.go). At most MaxWorkers.
	Workers int
	// Schedulers is the number of schedule queues (default: one per worker, the fastest
	// arrangement; see docs/PERFORMANCE.md); workers map onto them round-robin and LPs are
	// partitioned among them. At most Workers. With fewer schedule queues than workers,
	// the workers of a queue share it (group.go), and every option works either way.
	Schedulers int
	// QueueType is the kind of each schedule queue's pending events (ltsf.QueueTypes):
	// calendar (the default: a calendar queue of its LPs' events, eventset.Calendar), or
	// ladder, splay, heap or parallel-heap (an LTSF queue of its LPs, each LP's events
	// beside it: ltsf.Schedule), in either arrangement. The history and output logs are
	// beside it whatever its kind (see package timewarp, engine.go).
	QueueType string
	// LockType is the kind of lock that guards each schedule queue's inbound events from
	// other queues and, with fewer schedule queues than workers, a queue its workers share:
	// ticket or mutex (the default: spinlock.Mutex, which polls for a while and then parks,
	// or parks at once where workers outnumber GOMAXPROCS). A ticket lock hands over in
	// order, so a waiter whose thread is off its core holds up every waiter behind it.
	LockType string
	// StateSavingPeriod saves each LP's state every that many events (default 16; 1 is
	// copy state saving). Periodic state saving only: reverse computation ignores it.
	StateSavingPeriod int
	// StateSaving is how a rollback restores an LP's state: periodic (saved copies, every
	// StateSavingPeriod events, then coast forward), reverse (reverse computation: the
	// LP's Reverse undoes each rolled-back event, newest first, and the kernel rewinds its
	// generator and send sequence number; nothing is saved; every LP must implement
	// [Reverser]), or auto (the default): reverse when every LP implements Reverser and
	// StateSavingPeriod is not set, periodic otherwise. Reverse computation saves the
	// copies' memory and time (docs/DECISIONS.md, "Time-warp defaults chosen by
	// measurement"). dispatch.New resolves auto; dispatch.Simulation.StateSaving says what a
	// run uses.
	StateSaving string
	// Cancellation is aggressive (default: anti-messages for every output of a rolled-back
	// event at once) or lazy (hold them, and cancel only the outputs that re-execution
	// does not regenerate identically).
	Cancellation string
	// CheckRollbacks is a debug mode: after every rollback the LP's restored state is
	// compared with the state it had when first at that point, and each re-executed event
	// must rebuild the state and sends it first produced; a difference (a model that is not
	// deterministic under re-execution, or whose Snapshot shares memory with its state)
	// ends the run with an error naming the LP and the event. With reverse computation, the
	// state after reversing events must be the state the LP had before them (a Reverse
	// that does not undo exactly what Handle did fails the run). It also checks some of the
	// dispatcher's own invariants (no event sent below GVT, no LP released holding lazy
	// outputs below its pending events).
	CheckRollbacks bool
	// OptimismWindow, when positive, keeps workers from processing events at or above
	// GVT + OptimismWindow (bounded time warp).
	OptimismWindow Time
	// GVTPeriod is how often a GVT round starts (default 2 ms); rounds also start as soon
	// as every worker is idle. Across processes a worker waits for GVT after a bounded
	// number of events, so rounds must come often or workers wait
	// (docs/PERFORMANCE.md, "Time warp across processes").
	GVTPeriod time.Duration
	// GVTMethod computes GVT between processes (runs across processes only): asynchronous
	// (default: Mattern's token on the ring of processes, Fujimoto inside each) or
	// synchronous (every process reads its counters and local minimum, and an all-gather
	// combines them, repeated until no event is in flight) or tq (TQ-GVT: every process
	// reports per-quantum counts and minimums to rank 0 every GVTPeriod, which combines
	// the complete quanta; no token, no acknowledgements).
	GVTMethod string
	// MaxAggregate is the most events sent to another process in one message (runs
	// across processes only; default 256; 1 sends every event on its own). A batch is
	// also sent when the workers go idle and at least every 200 microseconds.
	MaxAggregate int
	// NoRemoteSafe turns off safe events across processes (runs across processes only):
	// by default, with the engine, reverse computation, one worker per process
	// and a lookahead, each process promises the others a lower bound on the events it will
	// still send them (Stats.PromisesSent), and a worker commits the events below every
	// other process's promise as it processes them, unlogged (Stats.SafeEvents), as in one
	// process. Each process decides alone; a mix is correct. See docs/DECISIONS.md.
	// Where the launcher started more ranks on the node than it has CPUs (the ranks take
	// turns on the cores), they are off unless RemoteSafeCrowded is set.
	NoRemoteSafe bool
	// RemoteSafeCrowded keeps safe events across processes on where the node is crowded
	// (more ranks than CPUs, as the launcher's environment and the node say). There the
	// ranks' promises trail positions that stand still while a rank is off its core, and
	// measured, their cost (snapshots, send logs, promise messages that flush the
	// aggregated events) was more than the events they made safe saved: PHOLD at -np 4
	// and -np 8 on 2 cores ran 27% and 38% faster without them.
	RemoteSafeCrowded bool

	// Offload, when set, handles the events of LPs that implement [Batcher] in batches on
	// this backend (see Batcher and offload.go); nil handles every event with Handle. The
	// results are the same either way. The caller closes the backend after the run. In a
	// run across processes each process has its own.
	Offload gpuoffload.Backend
	// BatchSize is the most events of one worker's batch (Offload only). 0 tunes it while
	// the run proceeds: a hill climb over powers of two from 1 to 4096 on the measured
	// event rate.
	BatchSize int
	// OffloadAuto (Offload only) lets the run decide from measured event rates whether
	// batching pays and handle every event with Handle while it does not (re-checking now
	// and then), and makes a backend error turn offload off, with Stats.OffloadNote saying
	// why, instead of failing the run. It is what --gpu auto sets.
	OffloadAuto bool
	// TuneWindow is how long each of the batch-size tuner's measurements lasts (Offload
	// with BatchSize 0, or OffloadAuto; 0: gpuoffload.DefaultTuneWindow, 10 ms).
	TuneWindow time.Duration
}

// MaxWorkers is the most time-warp workers accepted (TimeWarpConfig.Workers). Each worker
// costs memory (about 170 KiB once its schedule queue holds events: a slab of event
// records, beside its own state) and a report in every GVT round, while workers beyond the
// CPUs only take turns on them: 4096 is above the CPUs of the largest machines, and keeps
// the workers' memory under 1 GiB (100000 workers filled a machine's memory and were still
// being set up after 90 s).
const MaxWorkers = 4096

// MaxBatchSize is the largest TimeWarpConfig.BatchSize accepted.
const MaxBatchSize = 1 << 20

// GVT methods accepted in TimeWarpConfig.GVTMethod ("" is asynchronous).
const (
	// GVTAsynchronous is Mattern's token on the ring of processes.
	GVTAsynchronous = "asynchronous"
	// GVTSynchronous is an all-gather of every process's reading, repeated until no
	// event is in flight.
	GVTSynchronous = "synchronous"
	// GVTTQ is TQ-GVT: per-quantum reports to rank 0.
	GVTTQ = "tq"
)

// Config configures a simulation (package kernel/dispatch builds and runs one). The zero
// value is not valid: set MaxSimTime. Type picks the dispatcher, TimeWarp configures the
// time-warp one.
type Config struct {
	// MaxSimTime is the end time: events with a receive time strictly below it are
	// processed (and those at it too with EndInclusive). Infinity runs until no event is
	// pending.
	MaxSimTime Time
	// EndInclusive processes the events at MaxSimTime as well: WARPED2's rule, whose
	// dispatchers drop only the events with timestamp() > max_sim_time_
	// (wilseypa/warped2, src/SequentialEventDispatcher.cpp:38 and :55), so that a WARPED2
	// run to T is reproduced by a run to T with EndInclusive.
	EndInclusive bool
	// Type picks the dispatcher; empty means Sequential.
	Type string
	// Seed seeds every LP's generator (together with the LP's id).
	Seed uint64
	// TimeWarp configures the time-warp dispatcher.
	TimeWarp TimeWarpConfig
	// GPU configures the device-resident time warp (Type GPU).
	GPU GPUConfig
	// Payloads names the model's payload types (for runs across processes); may be nil.
	Payloads *Registry
	// Transport connects the processes of a run across processes (for example
	// comm.NewMPI, or one of comm.NewLoopback's ranks); nil or a single rank runs in this
	// process alone. Every rank builds the same model and calls Run with its own
	// Transport, on the goroutine that created it (MPI calls must stay on that thread).
	// Each rank runs the LPs that Partition gives it; at the end every rank gets every
	// LP's final state, so the Result and the model's own results are the same on all.
	Transport comm.Transport
	// Partition assigns the LPs to processes and, inside a process, to schedule queues;
	// nil means contiguous blocks (partition.Blocks). It must give every rank the same
	// answer.
	Partition partition.Partitioner
	// Agree lists settings (name and value) that every process of a run across processes
	// must share, besides the kernel's own (end time, seed, number of LPs, ...): before
	// the run starts the ranks compare them, and a difference is an error on every rank
	// that names the setting. The command-line program puts the model's flags here.
	Agree map[string]string
	// Progress, if set, is called from the dispatcher's goroutine about every
	// ProgressInterval (default one second) while the run proceeds.
	Progress func(Progress)
	// ProgressInterval is how often Progress is called.
	ProgressInterval time.Duration
	// Sample, if set, receives engine samples of a time-warp or gpu run (see Sample): one
	// row per worker, taken as SampleMode says, called from the dispatcher's manager
	// goroutine (never from a worker; under gpu, from the goroutine that reads the
	// device's counters), and a last row per worker at the end. It must not block for
	// long: the manager starts GVT rounds. Sequential runs take no samples.
	Sample func(Sample)
	// SampleMode is when rows are taken: SampleGVT (the default: as GVT rounds end, at
	// most once per GVT period; under gpu, at each read of the device's counters) or
	// SampleRealTime (every SampleInterval).
	SampleMode string
	// RecordSeries keeps the values models record with Context.Record: Result.Series.
	RecordSeries bool
	// SampleInterval is the wall time between sets of rows (SampleRealTime; default 100
	// ms), or the least time between them (SampleGVT; default 0).
	SampleInterval time.Duration
	// MemoryPressure, if set, reports whether the process's memory is near its limit. A
	// time-warp run then narrows its optimism: at the end of each GVT round every worker
	// halves its window beyond GVT (down to twice GVT's average advance per round) and
	// does not widen it while the pressure lasts, so that its logs and pending events stop
	// growing. It is called from the workers, about once a GVT round each, and must be
	// cheap and safe for concurrent use. The command's --max-memory watcher sets it.
	MemoryPressure func() bool
	// Trace, if set, is called once for each committed event, with its LP, in the order
	// the events commit: the sequential dispatcher's total order, or under time warp each
	// LP's timestamp order, LPs interleaved as the workers commit them (never an event that
	// rolls back; across processes each rank calls its own, for its LPs). The time-warp
	// workers call it one at a time, from their goroutines. With a trace (or a Commit hook)
	// the time-warp engine processes no event safe (unlogged): each commits at fossil
	// collection.
	Trace func(lp LPID, ev *Event)
	// ModelInit, if set, is the model's init hook (ROSS's and WARPED2's model-level init):
	// Run calls it once with the LPs, in id order, before any LP's Init and before the
	// first event, under every dispatcher, from the goroutine that called Run. An error
	// ends the run before it starts. In a run across processes every rank calls its own,
	// with every LP (a rank holds them all, and runs those Partition gives it).
	ModelInit func(lps []LogicalProcess) error
	// ModelFinal, if set, is the model's final hook (ROSS's and WARPED2's model-level
	// finalize), for results of the model as a whole: Run calls it once after the run
	// ends, with every LP in its final committed state (the state the digest is of; the
	// digest is taken first), from the goroutine that called Run. In a run across processes
	// every rank calls its own, each with every LP's final state (the ranks exchange them
	// at the end), so each rank's ModelFinal sees the whole model, as one process's would.
	// An error is Run's error.
	ModelFinal func(lps []LogicalProcess) error
}

// Progress describes a run in progress.
type Progress struct {
	// Now is a lower bound on the time of every unprocessed event (GVT under time warp).
	Now Time
	// EndTime is the end time as the dispatchers apply it (Config.Bound).
	EndTime Time
	// EventsProcessed counts events processed so far.
	EventsProcessed uint64
	// Elapsed is the wall-clock time since the run started.
	Elapsed time.Duration
}

// Fraction returns how far the run is in simulated time, in [0, 1], or -1 when the end
// time is infinite.
func (p Progress) Fraction() float64 {
	if math.IsInf(p.EndTime, 1) {
		return -1
	}
	if p.EndTime <= 0 {
		return 1
	}
	return math.Min(1, math.Max(0, p.Now/p.EndTime))
}

// Bound returns the end time as every dispatcher applies it: the events with a receive
// time strictly below it are processed. It is MaxSimTime, or with EndInclusive the next
// float64 above MaxSimTime, so that an event at MaxSimTime is processed and none after it.
// A simulation stores it as its MaxSimTime, so the dispatchers (sequential, time warp and
// across processes, whose ranks compare it before they start) share this one rule.
func (c *Config) Bound() Time {
	if c.EndInclusive {
		return math.Nextafter(c.MaxSimTime, math.Inf(1))
	}
	return c.MaxSimTime
}

// Validate reports the first thing wrong with c, saying what to do about it.
func (c *Config) Validate() error {
	switch {
	case math.IsNaN(c.MaxSimTime) || c.MaxSimTime <= 0:
		return fmt.Errorf("max simulation time must be positive, got %v", c.MaxSimTime)
	case c.ProgressInterval < 0:
		return errors.New("progress interval must not be negative")
	}
	if err := c.validateSampling(); err != nil {
		return err
	}
	if c.Transport != nil && c.Transport.Size() > 1 && c.Type != TimeWarp {
		return fmt.Errorf("a run across %d processes needs simulation type %s, not %q", c.Transport.Size(), TimeWarp, c.Type)
	}
	switch c.Type {
	case "", Sequential:
	case TimeWarp:
		return c.TimeWarp.validate()
	case GPU:
		return nil // package gpuwarp checks its options, with the flags' names
	default:
		return fmt.Errorf("unknown simulation type %q (want one of %v)", c.Type, Types())
	}
	return nil
}

// Cancellation kinds accepted in TimeWarpConfig.Cancellation ("" is aggressive).
const (
	// CancelAggressive sends anti-messages for every output of a rolled-back event at once.
	CancelAggressive = "aggressive"
	// CancelLazy holds them and cancels only the outputs that re-execution does not
	// regenerate identically.
	CancelLazy = "lazy"
)

// DefaultTimeWarp returns the table of time-warp defaults: [TimeWarpConfig.WithDefaults]
// fills each zero field from it, and the command line's flags take their defaults from
// it, so each default is written here alone. Schedulers is 0 in the table: one schedule
// queue per worker, resolved by WithDefaults once Workers is known.
func DefaultTimeWarp() TimeWarpConfig {
	return TimeWarpConfig{
		Workers:           min(runtime.GOMAXPROCS(0), MaxWorkers),
		QueueType:         QueueCalendar,
		LockType:          spinlock.KindMutex,
		StateSavingPeriod: 16,
		StateSaving:       StateSavingAuto,
		Cancellation:      CancelAggressive,
		GVTPeriod:         2 * time.Millisecond,
		GVTMethod:         GVTAsynchronous,
		MaxAggregate:      256,
	}
}

// WithDefaults returns tw with every zero field set to its default ([DefaultTimeWarp]).
// It is the one place where a time-warp default is applied.
func (tw TimeWarpConfig) WithDefaults() TimeWarpConfig {
	d := DefaultTimeWarp()
	orDefault(&tw.Workers, d.Workers)
	orDefault(&tw.Schedulers, tw.Workers)
	orDefault(&tw.QueueType, d.QueueType)
	orDefault(&tw.LockType, d.LockType)
	orDefault(&tw.StateSavingPeriod, d.StateSavingPeriod)
	orDefault(&tw.StateSaving, d.StateSaving)
	orDefault(&tw.Cancellation, d.Cancellation)
	orDefault(&tw.GVTPeriod, d.GVTPeriod)
	orDefault(&tw.GVTMethod, d.GVTMethod)
	orDefault(&tw.MaxAggregate, d.MaxAggregate)
	return tw
}

// orDefault sets *v to def when *v is zero.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// validate reports the first bad time-warp setting, saying what to do about it.
func (tw TimeWarpConfig) validate() error {
	d := tw.WithDefaults()
	switch {
	case tw.Workers < 0:
		return fmt.Errorf("time-warp worker threads must be at least 1, got %d", tw.Workers)
	case tw.Workers > MaxWorkers:
		return fmt.Errorf("time-warp worker threads must be at most %d, got %d", MaxWorkers, tw.Workers)
	case tw.Schedulers < 0:
		return fmt.Errorf("time-warp scheduler count must be at least 1, got %d", tw.Schedulers)
	case d.Schedulers > d.Workers:
		return fmt.Errorf("time-warp scheduler count (%d) must not exceed the worker threads (%d): a schedule queue needs a worker", d.Schedulers, d.Workers)
	case tw.StateSavingPeriod < 0:
		return fmt.Errorf("time-warp state-saving period must be at least 1, got %d", tw.StateSavingPeriod)
	case math.IsNaN(tw.OptimismWindow) || tw.OptimismWindow < 0:
		return fmt.Errorf("time-warp optimism window must be >= 0 (0: unbounded), got %v", tw.OptimismWindow)
	case tw.GVTPeriod < 0:
		return fmt.Errorf("time-warp GVT period must be positive, got %v", tw.GVTPeriod)
	case d.Cancellation != CancelAggressive && d.Cancellation != CancelLazy:
		return fmt.Errorf("unknown time-warp cancellation %q (want aggressive or lazy)", tw.Cancellation)
	case d.StateSaving != StateSavingAuto && d.StateSaving != StateSavingPeriodic && d.StateSaving != StateSavingReverse:
		return fmt.Errorf("unknown time-warp state-saving type %q (want auto, periodic or reverse)", tw.StateSaving)
	case d.GVTMethod != GVTAsynchronous && d.GVTMethod != GVTSynchronous && d.GVTMethod != GVTTQ:
		return fmt.Errorf("unknown time-warp GVT calculation method %q (want asynchronous, synchronous or tq)", tw.GVTMethod)
	case tw.MaxAggregate < 0:
		return fmt.Errorf("time-warp communication max aggregate must be at least 1 event, got %d", tw.MaxAggregate)
	case tw.BatchSize < 0 || tw.BatchSize > MaxBatchSize:
		return fmt.Errorf("time-warp offload batch size must be in [0, %d] (0: tuned), got %d", MaxBatchSize, tw.BatchSize)
	}
	if !slices.Contains(ltsf.QueueTypes(), d.QueueType) {
		return fmt.Errorf("time-warp queue type: %w", ltsf.UnknownTypeError(d.QueueType))
	}
	if _, err := spinlock.New(d.LockType); err != nil {
		return fmt.Errorf("time-warp lock type: %w", err)
	}
	return nil
}

// GPUConfig configures the device-resident time warp (Config.GPU); zero fields take
// package gpuwarp's defaults (see gpuwarp.Options).
type GPUConfig struct {
	// Device is the CUDA device's number.
	Device int
	// Slots is each LP's event list capacity (a power of two).
	Slots int
	// Bound is the optimism bound; 0 tunes it while the run proceeds.
	Bound Time
	// Executions is the most handling passes an iteration makes; 0 tunes it.
	Executions int
	// Inactivity is the share of the LPs a pass must keep busy for the next one to run;
	// 0 tunes it.
	Inactivity float64
	// Buffer is the capacity for events in transit.
	Buffer int
	// Profile, if set, receives the time of each device kernel at the end (the loop waits
	// for each launch to time it, so the run is slower).
	Profile io.Writer
}
