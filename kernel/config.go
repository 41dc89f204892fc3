package kernel

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/warpedgo/warped/comm"
)

// Registry maps payload types to names so that payloads can cross processes.
type Registry = comm.Registry

// NewRegistry returns an empty payload registry.
func NewRegistry() *Registry { return comm.NewRegistry() }

// Simulation types accepted in Config.Type.
const (
	// Sequential processes every event in the total order, one at a time.
	Sequential = "sequential"
)

// Types lists the accepted simulation types.
func Types() []string { return []string{Sequential} }

// Config configures a Simulation. The zero value is not valid: set MaxSimTime.
type Config struct {
	// MaxSimTime is the end time: events with a receive time strictly below it are
	// processed. Infinity runs until no event is pending.
	MaxSimTime Time
	// Type picks the dispatcher; empty means Sequential.
	Type string
	// Seed seeds every LP's generator (together with the LP's id).
	Seed uint64
	// Payloads names the model's payload types (for runs across processes); may be nil.
	Payloads *Registry
	// Progress, if set, is called from the dispatcher's goroutine about every
	// ProgressInterval (default one second) while the run proceeds.
	Progress func(Progress)
	// ProgressInterval is how often Progress is called.
	ProgressInterval time.Duration
}

// Progress describes a run in progress.
type Progress struct {
	// Now is a lower bound on the time of every unprocessed event (GVT under time warp).
	Now Time
	// EndTime is Config.MaxSimTime.
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

// Validate reports the first thing wrong with c, saying what to do about it.
func (c *Config) Validate() error {
	switch {
	case math.IsNaN(c.MaxSimTime) || c.MaxSimTime <= 0:
		return fmt.Errorf("max simulation time must be positive, got %v", c.MaxSimTime)
	case c.ProgressInterval < 0:
		return errors.New("progress interval must not be negative")
	}
	switch c.Type {
	case "", Sequential:
	default:
		return fmt.Errorf("unknown simulation type %q (want one of %v)", c.Type, Types())
	}
	return nil
}
