package kernel

import (
	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// The configuration's types are defined in package kernel/internal/core, beside the
// dispatchers that read them, and re-exported here: package kernel cannot define them,
// since it imports the dispatchers, which need them (an import cycle). Their docs here
// name every field (TestAliasDocsNameFields); the fields' own docs are core's.

// Config configures a Simulation. The zero value is not valid: set MaxSimTime. Config.Type
// picks the dispatcher, Config.TimeWarp configures the time-warp one.
//
// Fields (each documented in full in kernel/internal/core: go doc shows an alias's fields
// only there): MaxSimTime (the end time), EndInclusive (process events at it too), Type
// (Sequential or TimeWarp), Seed, TimeWarp (TimeWarpConfig), Payloads (a Registry, for
// runs across processes), Transport (nil: one process), Partition (LPs to processes and
// schedule queues), Agree (settings every rank must share), Progress and ProgressInterval
// (a progress callback), Sample, SampleMode and SampleInterval (engine sampling),
// RecordSeries (keep Context.Record's values in Result.Series), MemoryPressure (near the
// memory limit: time warp narrows its optimism), Trace (a function called with each
// committed event, under every dispatcher).
type Config = core.Config

// TimeWarpConfig configures the time-warp dispatcher. Zero values take the defaults
// (DefaultTimeWarp).
//
// Fields (documented in full in kernel/internal/core): Workers, Schedulers, QueueType,
// LockType, StateSavingPeriod, StateSaving, Cancellation, CheckRollbacks, OptimismWindow,
// GVTPeriod, GVTMethod, MaxAggregate, NoRemoteSafe, Offload, BatchSize, OffloadAuto,
// TuneWindow; the warped command's --time-warp-* flags set them.
type TimeWarpConfig = core.TimeWarpConfig

// Progress describes a run in progress (Config.Progress): Now, EndTime, EventsProcessed
// and Elapsed; Fraction is the share of the simulated time done.
type Progress = core.Progress

// Sample is one row of engine sampling (Config.Sample): one worker's activity since its
// previous row. Fields (documented in full in kernel/internal/core): Elapsed, GVT, Rank,
// Worker, Processed, Committed, RolledBack, PrimaryRollbacks, SecondaryRollbacks,
// AntiMessages, SafeEvents, PendingEvents, HistoryLength, MemoryBytes, OffloadBatches,
// Idle, Processing, GVTTime, Comm, Final.
type Sample = core.Sample

// Registry maps payload types to names so that payloads can cross processes.
type Registry = comm.Registry

// NewRegistry returns an empty payload registry.
func NewRegistry() *Registry { return comm.NewRegistry() }

// Simulation types accepted in Config.Type.
const (
	// Sequential processes every event in the total order, one at a time.
	Sequential = core.Sequential
	// TimeWarp processes events optimistically on several worker goroutines, rolling
	// back when an event arrives in an LP's past.
	TimeWarp = core.TimeWarp
	// GPU runs the whole time warp on a CUDA device (package gpuwarp), for models whose
	// LPs all implement DeviceModeler.
	GPU = core.GPU
)

// GPUConfig configures the device-resident time warp (Config.GPU); zero fields take
// package gpuwarp's defaults.
type GPUConfig = core.GPUConfig

// DeviceModeler is implemented by LPs that the device-resident time warp can run: the
// model's device code (package gpuwarp's Model) and its state as words.
type DeviceModeler = core.DeviceModeler

// Types lists the accepted simulation types.
func Types() []string { return core.Types() }

// State-saving types accepted in TimeWarpConfig.StateSaving ("" is auto).
const (
	// StateSavingAuto is reverse computation when every LP implements Reverser and no
	// state-saving period is set, periodic state saving otherwise.
	StateSavingAuto = core.StateSavingAuto
	// StateSavingPeriodic saves copies of each LP's state and coasts forward after a
	// rollback.
	StateSavingPeriodic = core.StateSavingPeriodic
	// StateSavingReverse rolls LPs back with reverse computation (see Reverser).
	StateSavingReverse = core.StateSavingReverse
)

// QueueCalendar is the default TimeWarpConfig.QueueType: each schedule queue is a calendar
// queue of its LPs' events (the other types are ltsf.QueueTypes).
const QueueCalendar = core.QueueCalendar

// GVT methods accepted in TimeWarpConfig.GVTMethod ("" is asynchronous).
const (
	// GVTAsynchronous is Mattern's token on the ring of processes.
	GVTAsynchronous = core.GVTAsynchronous
	// GVTSynchronous is an all-gather of every process's reading, repeated until no
	// event is in flight.
	GVTSynchronous = core.GVTSynchronous
	// GVTTQ is TQ-GVT: per-quantum reports to rank 0.
	GVTTQ = core.GVTTQ
)

// Cancellation kinds accepted in TimeWarpConfig.Cancellation ("" is aggressive).
const (
	// CancelAggressive sends anti-messages for every output of a rolled-back event at once.
	CancelAggressive = core.CancelAggressive
	// CancelLazy holds them and cancels only the outputs that re-execution does not
	// regenerate identically.
	CancelLazy = core.CancelLazy
)

// DefaultTimeWarp returns the table of time-warp defaults, which
// [TimeWarpConfig.WithDefaults] applies to zero fields and the command line's flags
// show. Schedulers is 0: one schedule queue per worker.
func DefaultTimeWarp() TimeWarpConfig { return core.DefaultTimeWarp() }

// MaxBatchSize is the largest TimeWarpConfig.BatchSize accepted.
const MaxBatchSize = core.MaxBatchSize

// Sample modes accepted in Config.SampleMode ("" is SampleGVT).
const (
	// SampleGVT takes rows as GVT rounds end: at most one set per GVT period, and at least
	// SampleInterval apart.
	SampleGVT = core.SampleGVT
	// SampleRealTime takes rows every SampleInterval of wall time (default 100 ms).
	SampleRealTime = core.SampleRealTime
)
