package app

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
)

// The checks of a run's flags before anything is built: each refuses, as a usage error
// (exit status 2), what the run would otherwise do wrong or without a word.

// checkFlags runs the checks of a run's flags, in order: empty text flags, the kernel's
// options, contradictions, the sample and trace flags.
func (inv *invocation) checkFlags() error {
	if err := checkEmpty(inv.fs); err != nil {
		return err
	}
	if err := checkOptions(&inv.o); err != nil {
		return err
	}
	if err := inv.checkContradictions(); err != nil {
		return err
	}
	if err := inv.o.sample.check(inv.o.simType); err != nil {
		return err
	}
	return inv.o.trace.check(inv.o.simType)
}

// checkContradictions refuses flags given together that ask for two things at once, of
// which the run would silently do one: a state-saving period with reverse computation.
// (Time-warp flags with another dispatcher are not contradictions: one set of flags serves
// runs of every dispatcher, as a study's runs of simulation type auto do.)
func (inv *invocation) checkContradictions() error {
	if inv.fs.Changed("time-warp-state-saving-period") && inv.o.stateSaving == kernel.StateSavingReverse {
		return usageFailure("--time-warp-state-saving-period is for periodic state saving, not --time-warp-state-saving-type reverse: drop one of the two")
	}
	return nil
}

// checkOptions checks the kernel options that the kernel's own configuration check does
// not see in this form (counts, the GVT period in milliseconds, the offload flags).
func checkOptions(o *options) error {
	for _, c := range []struct {
		name string
		v    int
	}{{"time-warp-worker-threads", o.workers},
		{"time-warp-state-saving-period", o.period}, {"time-warp-communication-max-aggregate", o.maxAggregate}} {
		if c.v < 1 {
			return usageFailure("--%s must be at least 1, got %d", c.name, c.v)
		}
	}
	if o.workers > kernel.MaxWorkers {
		return usageFailure("--time-warp-worker-threads must be at most %d (workers beyond the CPUs take turns on them), got %d", kernel.MaxWorkers, o.workers)
	}
	if o.schedulers < 0 {
		return usageFailure("--time-warp-scheduler-count must be at least 1 (or 0 for one per worker thread), got %d", o.schedulers)
	}
	if !(o.gvtPeriodMS > 0) || o.gvtPeriodMS > maxPeriodMS {
		return usageFailure("--time-warp-gvt-calculation-period must be a positive number of milliseconds, at most %v (an hour), got %v", float64(maxPeriodMS), o.gvtPeriodMS)
	}
	if err := gpuoffload.CheckMode(o.gpu); err != nil {
		return usageFailure("--gpu: unknown mode %q (want %s)", o.gpu, strings.Join(gpuoffload.Modes(), ", "))
	}
	if o.gpuBatchSize < 0 || o.gpuBatchSize > kernel.MaxBatchSize {
		return usageFailure("--gpu-batch-size must be in [0, %d] (0: tuned), got %d", kernel.MaxBatchSize, o.gpuBatchSize)
	}
	if err := gpuwarp.CheckOptions(gpuwarp.Options{Device: o.device.Device, Slots: o.device.Slots, Bound: o.device.Bound,
		Executions: o.device.Executions, Inactivity: o.device.Inactivity, Buffer: o.device.Buffer}); err != nil {
		return usageFailure("%v", err)
	}
	return nil
}

// checkEmpty refuses a text flag set to nothing (on the command line or in --config): an
// unset shell variable, most often, which ran with the flag's default (--simulation-type
// "") or without the file asked for (--stats-file "").
func checkEmpty(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && f.Value.Type() == "string" && f.Value.String() == "" {
			err = usageFailure("--%s is empty: give it a value, or leave it out", f.Name)
		}
	})
	return err
}

// afterOptional says, where the stray argument arg follows a flag whose value is optional
// (--progress 1), which words that flag takes after it.
func afterOptional(fs *pflag.FlagSet, args []string, arg string) string {
	for i := 1; i < len(args); i++ {
		if args[i] != arg {
			continue
		}
		name := strings.TrimLeft(args[i-1], "-")
		if f := fs.Lookup(name); f != nil && f.NoOptDefVal != "" {
			if f.Value.Type() == "bool" {
				return fmt.Sprintf(" (after --%s, which takes true, false, on or off, or --%s=VALUE)", name, name)
			}
			return fmt.Sprintf(" (after --%s, which takes auto, on or off, or --%s=VALUE)", name, name)
		}
	}
	return ""
}

// maxPeriodMS is the longest period in milliseconds a flag may give (an hour): a
// time.Duration holds 292 years, and 1e18 ms overflowed it into a negative period.
const maxPeriodMS = 3600e3
