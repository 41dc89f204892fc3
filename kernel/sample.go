package kernel

import (
	"fmt"
	"time"
)

// Sample modes accepted in Config.SampleMode ("" is SampleGVT).
const (
	// SampleGVT takes rows as GVT rounds end: at most one set per GVT period (the manager's
	// tick), and at least SampleInterval apart.
	SampleGVT = "gvt"
	// SampleRealTime takes rows every SampleInterval of wall time (default 100 ms).
	SampleRealTime = "real-time"
)

// DefaultSampleInterval is SampleInterval's default in SampleRealTime mode.
const DefaultSampleInterval = 100 * time.Millisecond

// Sample is one row of engine sampling: one worker's activity since its previous row, as of
// the worker's last report to a GVT round (or of the end of the run, in the last row). The
// counts are differences from the worker's previous row, so a worker's rows add up to its
// totals, and all rows to the run's Stats (in a run across processes, to this rank's part).
//
// A run of simulation type gpu has one worker, the device: a row each time the host reads
// the device's counters (after a chunk of iterations), with GVT, Processed, Committed,
// RolledBack, PendingEvents (events in the LPs' lists not handled yet), HistoryLength
// (handled, not yet committed), MemoryBytes (the host's heap), DeviceIterations and
// DeviceBound; the device measures none of the other fields, which are 0.
type Sample struct {
	// Elapsed is the wall-clock time since the run started.
	Elapsed time.Duration
	// GVT is the global virtual time when the row was taken.
	GVT Time
	// Rank is the process's rank in a run across processes (0 in one process).
	Rank int
	// Worker is the worker's index in its process, or -1 in the row of a rank's manager
	// (runs across processes only: one per set, with the time split and zero counts).
	Worker int
	// Processed counts events processed (rolled back or not).
	Processed uint64
	// Committed is Processed less RolledBack: the net events that stand. It is negative when
	// the worker rolled back more than it processed since its previous row.
	Committed int64
	// RolledBack counts processed events undone by rollbacks.
	RolledBack uint64
	// PrimaryRollbacks and SecondaryRollbacks count rollbacks caused by stragglers and by
	// anti-messages.
	PrimaryRollbacks, SecondaryRollbacks uint64
	// AntiMessages counts anti-messages sent.
	AntiMessages uint64
	// SafeEvents counts events committed as they were processed (engine).
	SafeEvents uint64
	// PendingEvents is the number of events in the worker's calendar, and HistoryLength
	// the length of its history log (with a shared schedule queue, the queue's; -1 in a
	// manager's row).
	PendingEvents, HistoryLength int
	// MemoryBytes is the Go heap in use by the process (the same in every row of a set).
	MemoryBytes uint64
	// OffloadBatches counts batches run on the offload backend.
	OffloadBatches uint64
	// Idle, Processing, GVTTime and Comm split the wall time since the worker's previous
	// row: waiting for work (or for GVT to let it go on), processing events (with their
	// rollbacks and offload batches), GVT (reports to rounds, fossil collection, log
	// compaction) and communication (taking in the events and anti-messages other workers
	// handed over, handing over its own). In a worker's rows they add up to the run's wall
	// time. In a rank's row (Worker -1) they split the time of the process's manager,
	// which has no Processing: Comm is sending and receiving messages between processes,
	// GVTTime the GVT and termination steps, Idle its back-off. A worker of a shared
	// schedule queue counts its waits for the queue's lock as Idle.
	Idle, Processing, GVTTime, Comm time.Duration
	// Final marks the rows taken at the end of the run.
	Final bool
	// DeviceIterations counts the device loop's iterations, and DeviceBound is its
	// optimism bound (tuned, or as set) in the iterations before the row (simulation
	// type gpu; 0 in others).
	DeviceIterations uint64
	DeviceBound      float64
	// CPUWait is the time the process's threads have waited for a processor since the run
	// began (cumulative, as Stats.CPUWaitSeconds; read at most every 10 ms of the run), and
	// WorkerThreads the number of threads running the workers when the row was taken
	// (Stats.WorkerThreads): the same in every row of a set (time warp; 0 in others).
	CPUWait       time.Duration
	WorkerThreads int
}

// validateSampling reports a bad sampling setting.
func (c *Config) validateSampling() error {
	switch {
	case c.SampleMode != "" && c.SampleMode != SampleGVT && c.SampleMode != SampleRealTime:
		return fmt.Errorf("unknown sample mode %q (want %s or %s)", c.SampleMode, SampleGVT, SampleRealTime)
	case c.SampleInterval < 0:
		return fmt.Errorf("sample interval must not be negative, got %v", c.SampleInterval)
	}
	return nil
}
