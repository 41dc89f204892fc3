// Package core holds what the model-facing API and the dispatchers share: the model's
// interfaces (LogicalProcess and the optional ones), Context and its Frame, the
// configuration, the per-LP records and the simulation they belong to (Sim), the run's
// totals (Stats), the recorded series and the result digest's encoding. Package kernel
// re-exports the public part by type aliases; the dispatchers (kernel/internal/sequential,
// kernel/internal/timewarp) reach into the rest: a Context's Frame (FrameOf), the LP
// records (Sim.LPs).
package core
