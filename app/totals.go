package app

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/warpedgo/warped/kernel"
)

// What a run prints when it ends (the totals and the model's results) and what it writes
// to --stats-file.

// printResults prints WARPED2-style totals, the model's results and the digest line;
// offload names the offload backend of the run, if any.
func printResults(w io.Writer, m *Model, simType, offload string, r kernel.Result, results []Result) {
	fmt.Fprintf(w, "Simulation of %s complete (%s)\n", m.Name, simType)
	width := 26 // the totals' labels; a longer result label widens the column
	for _, x := range results {
		width = max(width, len(x.Label)+1)
	}
	line := func(label, value string) { fmt.Fprintf(w, "  %-*s %s\n", width, label+":", value) }
	for _, t := range totals(simType, offload, r) {
		line(t[0], t[1])
	}
	fmt.Fprintf(w, "Results\n")
	for _, x := range results {
		line(x.Label, x.text())
	}
	fmt.Fprintf(w, "digest: %s\n", r.Digest)
}

// totals are the run's totals as printed (and as the report's table shows them): label
// and value; offload names the offload backend of the run, if any.
func totals(simType, offload string, r kernel.Result) [][2]string {
	var out [][2]string
	line := func(label string, format string, a ...any) {
		out = append(out, [2]string{label, fmt.Sprintf(format, a...)})
	}
	line("Events processed", "%d", r.EventsProcessed)
	line("Events committed", "%d", r.EventsCommitted)
	line("Events rolled back", "%d", r.EventsRolledBack)
	if r.EventsProcessed > 0 {
		line("Efficiency", "%.2f%%", 100*r.Efficiency)
	} else {
		line("Efficiency", "n/a (no events before the end time)")
	}
	// Every digit: rounded, an event just before an exclusive end time would read as the
	// end time itself (19.99998 as 20).
	line("Final event time", "%s", strconv.FormatFloat(r.FinalTime, 'g', -1, 64))
	if simType == kernel.TimeWarp {
		line("Schedule queues", "%s", r.ScheduleQueues)
		line("State saving", "%s", r.StateSaving)
		line("Primary rollbacks", "%d", r.PrimaryRollbacks)
		line("Secondary rollbacks", "%d", r.SecondaryRollbacks)
		line("Average rollback length", "%.2f", r.AverageRollbackLength)
		line("Anti-messages sent", "%d", r.AntiMessagesSent)
		line("Cancelled events", "%d", r.CancelledEvents)
		line("Suppressed sends (lazy)", "%d", r.SuppressedSends)
		line("Coast-forward events", "%d", r.CoastForwardEvents)
		line("Safe events (unlogged)", "%d", r.SafeEvents)
		if r.PromisesSent > 0 {
			line("Promises sent", "%d", r.PromisesSent)
		}
		line("GVT cycles", "%d", r.GVTCycles)
		if offload != "" {
			line("Batched events", "%d in %d batches on %s", r.BatchedEvents, r.OffloadBatches, offload)
		}
	}
	if simType == kernel.GPU {
		line("Device", "%s", r.Device)
		line("Iterations", "%d", r.DeviceIterations)
		if r.DeviceLoopSeconds > 0 {
			line("Device loop", "%.3f s, %.4g committed events/s", r.DeviceLoopSeconds, float64(r.EventsCommitted)/r.DeviceLoopSeconds)
		}
		line("Optimism bound", "%.4g (at the end)", r.DeviceBound)
		line("Passes per iteration", "at most %d, while a pass keeps %.3g of the LPs busy", r.DeviceExecutions, r.DeviceInactivity)
		line("Events returned for room", "%d", r.DeviceReturned)
	}
	line("Wall time", "%.3f s", r.WallSeconds)
	line("Committed events/s", "%.4g", r.CommittedEventsPerSecond)
	if r.WallSeconds > 0 {
		// Where a run's time went when other processes (or more threads than processors)
		// took the CPUs: summed over the threads, so it may pass 100%.
		line("CPU wait", "%.3f s, %.0f%% of the wall time (threads ready to run, waiting for a processor)",
			r.CPUWaitSeconds, 100*r.CPUWaitSeconds/r.WallSeconds)
	}
	if r.WorkerThreads > 0 {
		line("Worker threads", "%.2f (mean over the run)", r.WorkerThreads)
	}
	if simType != kernel.GPU { // the device loop does not count them
		line("Peak pending events", "%d", r.PeakPendingEvents)
	}
	line("Peak memory", "%.1f MiB", float64(r.PeakMemoryBytes)/(1<<20))
	return out
}

// writeStats writes the --stats-file: the kernel's statistics and ROSS-comparable figures
// at the top level, the model's results under "results" (their printed labels under
// "result_labels"), the provenance and the configuration. The offload keys appear only
// when the run had an offload backend. README.md's table lists every key.
func (inv *invocation) writeStats(r kernel.Result, results []Result) error {
	kv := map[string]any{}
	// JSON has no infinity: an unbounded gpu run's bound is null, as in sample files.
	unbounded := math.IsInf(r.DeviceBound, 1)
	if unbounded {
		r.DeviceBound = 0
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &kv); err != nil {
		return err
	}
	if unbounded {
		kv["device_bound"] = nil
	}
	if inv.be == nil {
		delete(kv, "batched_events")
		delete(kv, "offload_batches")
	}
	kv["model"] = inv.m.Name
	kv[rollbacksKey] = r.PrimaryRollbacks + r.SecondaryRollbacks
	net, ross := rossFigures(r.Stats)
	kv[netEventsKey], kv[rossEfficiencyKey] = net, ross
	values, labels := map[string]any{}, map[string]string{}
	for _, x := range results {
		values[x.Key], labels[x.Key] = x.Value, x.Label
		if v, ok := x.Value.(float64); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			values[x.Key] = nil // JSON has no NaN: null, "no value"
		}
	}
	kv["results"], kv["result_labels"] = values, labels
	kv["provenance"] = inv.provenance(time.Now())
	// The run's flags without its outputs' paths: a run from this config (jq .config)
	// reproduces the run without writing over its outputs, this file first, which would
	// otherwise be replaced by the rerun's.
	omit := map[string]bool{}
	for _, o := range inv.outputs() {
		omit[o.flag] = true
		for _, f := range outputOptions[o.flag] {
			omit[f] = true // refused without their output (a rerun from this config would be)
		}
	}
	cfg, err := dumpConfig(inv.fs, omit)
	if err != nil {
		return err
	}
	kv["config"] = json.RawMessage(cfg)
	out, err := json.MarshalIndent(kv, "", "  ")
	if err != nil {
		return err
	}
	return inv.files().WriteFile(inv.o.statsFile, append(out, '\n'))
}
