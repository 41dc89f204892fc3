package app

import (
	"encoding/json"
	"maps"
	"reflect"
	"sort"
	"strings"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/sample/chart"
)

// statsNumbers returns the numeric statistics of a run by their stats-file keys, as a
// study summarises them (a spec may list any of them under results), with rollbacks, the
// primary and secondary rollbacks together.
func statsNumbers(s kernel.Stats) map[string]float64 {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // Stats is numbers and strings: it always marshals
	}
	var kv map[string]any
	if err := json.Unmarshal(b, &kv); err != nil {
		panic(err)
	}
	out := make(map[string]float64, len(kv)+1)
	for k, v := range kv {
		if x, ok := v.(float64); ok {
			out[k] = x
		}
	}
	out[rollbacksKey] = float64(s.PrimaryRollbacks + s.SecondaryRollbacks)
	net, ross := rossFigures(s)
	out[netEventsKey], out[rossEfficiencyKey] = float64(net), ross
	return out
}

// rollbacksKey is the stats-file key of the primary and secondary rollbacks together.
const rollbacksKey = "rollbacks"

// The stats-file keys of the figures that ROSS reports, so that ours compare with ROSS
// papers: net events are those processed less those rolled back (what ROSS calls net
// events processed), and ROSS's efficiency is 1 - rolled back / net events (negative
// when more events were rolled back than kept). Our efficiency is committed / processed.
const (
	netEventsKey      = "net_events"
	rossEfficiencyKey = "ross_efficiency"
)

// rossFigures returns the net events and ROSS's efficiency of s. With no net events the
// ratio is undefined: it is 1 when nothing was rolled back either (nothing ran), else 0
// (JSON has no infinity).
func rossFigures(s kernel.Stats) (net uint64, efficiency float64) {
	if s.EventsRolledBack >= s.EventsProcessed {
		if s.EventsRolledBack == 0 {
			return 0, 1
		}
		return 0, 0
	}
	net = s.EventsProcessed - s.EventsRolledBack
	return net, 1 - float64(s.EventsRolledBack)/float64(net)
}

// statsKeys are the keys statsNumbers may give, sorted: those of a run of any dispatcher
// (a key of another dispatcher's, such as time warp's worker_threads in a sequential run,
// is absent from its numbers: unmeasured in a study).
func statsKeys() []string {
	kv := statsNumbers(kernel.Stats{})
	t := reflect.TypeFor[kernel.Stats]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Float64:
			if name != "" && name != "-" {
				kv[name] = 0 // those left out when zero (omitempty)
			}
		}
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// statsLabel names the kernel's statistics on plots where the key alone does not say
// enough (a unit, what a share is of); the rest are their keys with spaces.
var statsLabel = map[string]chart.Label{
	"efficiency":                  {Text: "efficiency (committed / processed)"},
	rossEfficiencyKey:             {Text: "ROSS's efficiency (1 - rolled back / net)"},
	"committed_events_per_second": {Text: "committed event rate", Unit: "events/s"},
	"wall_seconds":                {Text: "wall time", Unit: "s"},
	"cpu_wait_seconds":            {Text: "CPU wait (threads waiting for a processor, summed)", Unit: "s"},
	"worker_threads":              {Text: "worker threads (mean over the run)", Unit: "threads"},
	"peak_memory_bytes":           {Text: "peak resident memory", Unit: "bytes"},
	"peak_pending_events":         {Text: "peak pending events", Unit: "events"},
	"final_time":                  {Text: "final event time", Unit: "simulated time"},
	rollbacksKey:                  {Text: "rollbacks (primary and secondary)"},
	netEventsKey:                  {Text: "net events (processed - rolled back)", Unit: "events"},
}

// kernelFlagLabels name the kernel's flags that a study varies most on its plots' axes (a
// model's own flags are named by its Labels).
var kernelFlagLabels = map[string]chart.Label{
	"time-warp-worker-threads":         {Text: "time-warp workers"},
	"time-warp-scheduler-count":        {Text: "schedule queues"},
	"time-warp-gvt-calculation-period": {Text: "GVT period", Unit: "ms"},
	"time-warp-optimism-window":        {Text: "optimism window", Unit: "simulated time"},
	"time-warp-state-saving-period":    {Text: "state-saving period", Unit: "events"},
	"max-sim-time":                     {Text: "end time", Unit: "simulated time"},
	"gpu-batch-size":                   {Text: "offload batch size", Unit: "events"},
}

// statsLabels returns the labels of every key of statsKeys, and of the kernel's flags that
// kernelFlagLabels names.
func statsLabels() map[string]chart.Label {
	out := map[string]chart.Label{}
	maps.Copy(out, kernelFlagLabels)
	for _, k := range statsKeys() {
		l, ok := statsLabel[k]
		if !ok {
			l.Text = strings.ReplaceAll(k, "_", " ")
		}
		out[k] = l
	}
	return out
}
