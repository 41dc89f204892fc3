package device

import (
	"math"
	"runtime/metrics"
	"time"

	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// observer turns the device's counters, as the host reads them after each chunk of
// iterations (gpuwarp.Options.Observe), into the run's progress (Config.Progress, about
// every ProgressInterval) and engine samples (Config.Sample). The device is the run's one
// worker: a row each read in gvt mode (at least SampleInterval apart), or at the first
// read after each SampleInterval in real-time mode, and a last one at the end, so that
// the rows add up to the run's totals. The counters cost the device nothing more when
// neither is asked for: the host reads them anyway.
type observer struct {
	start time.Time
	end   float64

	progress     func(core.Progress)
	progressGap  time.Duration
	lastProgress time.Time

	sample     func(core.Sample)
	sampleGap  time.Duration
	lastSample time.Time
	prev       gpuwarp.Counters // the counters of the last row
	mem        []metrics.Sample
}

// newObserver returns the observer of cfg's progress and samples for a run that started
// at start, or nil when cfg asks for neither.
func newObserver(cfg *core.Config, start time.Time) *observer {
	if cfg.Progress == nil && cfg.Sample == nil {
		return nil
	}
	o := &observer{start: start, end: cfg.MaxSimTime, progress: cfg.Progress, progressGap: cfg.ProgressInterval,
		lastProgress: start, sample: cfg.Sample, sampleGap: cfg.SampleInterval, lastSample: start,
		mem: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	if cfg.SampleMode == core.SampleRealTime && o.sampleGap == 0 {
		o.sampleGap = core.DefaultSampleInterval
	}
	return o
}

// observe takes the counters of one read.
func (o *observer) observe(c gpuwarp.Counters) {
	now := time.Now()
	if o.progress != nil && now.Sub(o.lastProgress) >= o.progressGap {
		o.lastProgress = now
		o.progress(core.Progress{Now: math.Min(c.GVT, o.end), EndTime: o.end, EventsProcessed: c.Processed,
			Elapsed: now.Sub(o.start)})
	}
	if o.sample != nil && (now.Sub(o.lastSample) >= o.sampleGap || c.Done) {
		o.lastSample = now
		o.row(c, now)
	}
}

// row emits the row of c, read at now: the counts since the last row's.
func (o *observer) row(c gpuwarp.Counters, now time.Time) {
	metrics.Read(o.mem)
	var mem uint64
	if v := o.mem[0].Value; v.Kind() == metrics.KindUint64 {
		mem = v.Uint64()
	}
	p := o.prev
	o.prev = c
	o.sample(core.Sample{Elapsed: now.Sub(o.start), GVT: c.GVT, Processed: c.Processed - p.Processed,
		Committed:  int64(c.Processed-p.Processed) - int64(c.RolledBack-p.RolledBack),
		RolledBack: c.RolledBack - p.RolledBack, PendingEvents: int(c.Pending), HistoryLength: int(c.History),
		MemoryBytes: mem, DeviceIterations: c.Iterations - p.Iterations, DeviceBound: c.Bound, Final: c.Done})
}
