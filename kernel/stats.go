package kernel

// Stats are the totals of a run. The JSON names are those of the --stats-file output.
type Stats struct {
	EventsProcessed  uint64 `json:"events_processed"`
	EventsCommitted  uint64 `json:"events_committed"`
	EventsRolledBack uint64 `json:"events_rolled_back"`
	// Efficiency is committed / processed.
	Efficiency               float64 `json:"efficiency"`
	WallSeconds              float64 `json:"wall_seconds"`
	CommittedEventsPerSecond float64 `json:"committed_events_per_second"`
	// PeakPendingEvents is the largest number of events pending at once (sequential), or
	// the number of event records allocated, an upper bound of it (time warp).
	PeakPendingEvents int `json:"peak_pending_events"`
	// PeakMemoryBytes is the peak resident memory of the process (Linux VmHWM), or the
	// Go runtime's memory obtained from the OS where that is unavailable.
	PeakMemoryBytes uint64 `json:"peak_memory_bytes"`
	// FinalTime is the receive time of the last event processed.
	FinalTime Time `json:"final_time"`
	// CPUWaitSeconds is the time the run's threads spent ready to run but waiting for a
	// processor, summed over the threads (and, across processes, the ranks): the time
	// other processes, or more threads than processors, took from the run (Linux's run
	// delay; 0 where it cannot be read).
	CPUWaitSeconds float64 `json:"cpu_wait_seconds"`

	// Time warp only:

	// PrimaryRollbacks counts rollbacks caused by stragglers.
	PrimaryRollbacks uint64 `json:"primary_rollbacks"`
	// SecondaryRollbacks counts rollbacks caused by anti-messages.
	SecondaryRollbacks uint64 `json:"secondary_rollbacks"`
	// AverageRollbackLength is events rolled back per rollback.
	AverageRollbackLength float64 `json:"average_rollback_length"`
	// AntiMessagesSent counts anti-messages.
	AntiMessagesSent uint64 `json:"anti_messages_sent"`
	// CancelledEvents counts events annihilated by their anti-messages.
	CancelledEvents uint64 `json:"cancelled_events"`
	// SuppressedSends counts sends that lazy cancellation found identical to a held output
	// and did not send again.
	SuppressedSends uint64 `json:"suppressed_sends"`
	// CoastForwardEvents counts events re-executed to rebuild state after a rollback.
	CoastForwardEvents uint64 `json:"coast_forward_events"`
	// SafeEvents counts events committed as they were processed, without being logged for
	// rollback, because no event could arrive below them any more (reverse computation
	// with the engine, in one process or with one worker per process; see the
	// Lookahead interface and docs/DECISIONS.md).
	SafeEvents uint64 `json:"safe_events"`
	// PromisesSent counts the promises sent to other processes: lower bounds on the events
	// still to come, which let them take events as safe (runs across processes only; see
	// TimeWarpConfig.NoRemoteSafe).
	PromisesSent uint64 `json:"promises_sent"`
	// GVTCycles counts completed GVT rounds.
	GVTCycles uint64 `json:"gvt_cycles"`
	// WorkerThreads is the mean number of threads that ran the workers over the run,
	// weighted by time (summed over the ranks across processes): min(workers, GOMAXPROCS)
	// where nothing else takes the processors, fewer while the load leaves the process
	// fewer (the engine's hosts; docs/DECISIONS.md, "Never waits, third part").
	WorkerThreads float64 `json:"worker_threads,omitempty"`

	// Offload (TimeWarpConfig.Offload) only:

	// BatchedEvents counts events handled in a batch on the offload backend (processed,
	// like EventsProcessed: some may have been rolled back since).
	BatchedEvents uint64 `json:"batched_events"`
	// OffloadBatches counts the batches run on the offload backend.
	OffloadBatches uint64 `json:"offload_batches"`
	// OffloadNote says why offload was turned off during the run (a backend error with
	// OffloadAuto), or is empty.
	OffloadNote string `json:"offload_note,omitempty"`
	// Device, DeviceIterations, DeviceBound, DeviceExecutions, DeviceInactivity and
	// DeviceReturned describe a run of simulation type gpu (package gpuwarp): the CUDA
	// device, the loop's iterations, the optimism bound, the most execution passes per
	// iteration and the inactivity threshold at the end (tuned unless set), and the events
	// that full lists put back in transit to make room.
	Device           string  `json:"device,omitempty"`
	DeviceIterations uint64  `json:"device_iterations,omitempty"`
	DeviceBound      float64 `json:"device_bound,omitempty"`
	DeviceExecutions int     `json:"device_executions,omitempty"`
	DeviceInactivity float64 `json:"device_inactivity,omitempty"`
	DeviceReturned   uint64  `json:"device_returned,omitempty"`
	// DeviceLoopSeconds is the wall time of the device loop's iterations alone (without
	// compiling, allocating, the host's Init and the copies of the initial and final
	// states), so EventsCommitted / DeviceLoopSeconds is the loop's event rate.
	DeviceLoopSeconds float64 `json:"device_loop_seconds,omitempty"`
	// StateSaving is the state saving a time-warp run used: periodic or reverse (auto
	// resolved; see TimeWarpConfig.StateSaving); empty for a sequential run.
	StateSaving string `json:"state_saving,omitempty"`
	// ScheduleQueues says which schedule arrangement a time-warp run used: "calendar, one
	// per worker" (the default: each worker runs its own LPs from a calendar queue), or,
	// with fewer schedule queues than workers, "calendar, N shared by M workers"; empty for
	// a sequential run.
	ScheduleQueues string `json:"schedule_queues,omitempty"`
}

// Result is what a completed run produced.
type Result struct {
	Stats
	// Digest is the hex SHA-256 over every LP's id, generator state and model state, in
	// LP order: equal digests mean equal committed results.
	Digest string `json:"digest"`
	// Series are the values the models recorded (Context.Record) in committed events, by
	// time, then LP (Config.RecordSeries only). In a run across processes, this rank's LPs'.
	Series []SeriesPoint `json:"-"`
}

// SeriesPoint is one value of a model's time series.
type SeriesPoint struct {
	// Time is the virtual time of the event that recorded it (0 in Init).
	Time Time `json:"time"`
	// LP is the LP that recorded it.
	LP LPID `json:"lp"`
	// Series is the series' name.
	Series string `json:"series"`
	// Value is the recorded value.
	Value float64 `json:"value"`
}
