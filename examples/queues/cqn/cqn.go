// Package cqn is a closed queueing network written against warped's public packages only,
// in a module of its own: Jobs circulate among N single-server FCFS stations in a ring,
// each serving for an exponential time and passing the job on after a fixed transit
// time. Command registers it with package app, which gives it the whole warped command.
package cqn

import (
	"fmt"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/app"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// Config are the network's parameters.
type Config struct {
	Stations int     // stations in the ring
	Jobs     int     // jobs starting at each station
	Service  float64 // mean service time
	Transit  float64 // time from one station to the next (the lookahead)
}

// Validate reports a parameter out of range, naming its flag.
func (c Config) Validate() error {
	switch {
	case c.Stations < 1:
		return fmt.Errorf("--stations must be at least 1, got %d", c.Stations)
	case c.Jobs < 0:
		return fmt.Errorf("--jobs must be at least 0, got %d", c.Jobs)
	case !(c.Service > 0):
		return fmt.Errorf("--service must be a positive number, got %v", c.Service)
	case !(c.Transit > 0):
		return fmt.Errorf("--transit must be a positive number, got %v", c.Transit)
	}
	return nil
}

// State is one station's state: plain values, saved by copying (kernel.Plain).
type State struct {
	Queue       int64   // jobs at the station, the one in service included
	Completions uint64  // services completed
	LastChange  float64 // time of the last change of Queue
	Area        float64 // integral of Queue over time, up to LastChange
}

// The event kinds, in Words[0].
const (
	arrival   = 0
	departure = 1
)

// Station is one LP.
type Station struct {
	kernel.Plain[State]
	id  int
	cfg Config
}

// New builds the network's stations.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	lps := make([]kernel.LogicalProcess, c.Stations)
	for i := range lps {
		lps[i] = &Station{id: i, cfg: c}
	}
	return lps, nil
}

// Name names the station.
func (s *Station) Name() string { return fmt.Sprintf("station%d", s.id) }

// Lookahead is the transit time: every send to another station is that far ahead.
func (s *Station) Lookahead() kernel.Time { return s.cfg.Transit }

// Init puts the station's jobs in its queue and starts serving the first.
func (s *Station) Init(ctx *kernel.Context) {
	s.S.Queue = int64(s.cfg.Jobs)
	if s.S.Queue > 0 {
		s.startService(ctx)
	}
}

// Handle takes a job in (arrival) or passes the served one on (departure).
func (s *Station) Handle(ctx *kernel.Context, ev *kernel.Event) {
	now := float64(ctx.Now())
	s.S.Area += float64(s.S.Queue) * (now - s.S.LastChange)
	s.S.LastChange = now
	switch ev.Words[0] {
	case arrival:
		s.S.Queue++
		if s.S.Queue == 1 {
			s.startService(ctx)
		}
	case departure:
		s.S.Queue--
		s.S.Completions++
		next := kernel.LPID((s.id + 1) % s.cfg.Stations)
		ctx.SendWords(next, ctx.Now()+kernel.Time(s.cfg.Transit), kernel.Words{arrival})
		if s.S.Queue > 0 {
			s.startService(ctx)
		}
	}
}

func (s *Station) startService(ctx *kernel.Context) {
	ctx.SendWords(ctx.Self(), ctx.Now()+kernel.Time(ctx.RNG().Exponential(s.cfg.Service)), kernel.Words{departure})
}

// Results are the network's totals after a run to end.
type Results struct {
	Completions uint64
	Throughput  float64 // completions per station and time unit
	MeanQueue   float64 // time-averaged jobs per station
}

// Summarize adds up the stations after a run that ended at end.
func Summarize(lps []kernel.LogicalProcess, end float64) Results {
	var r Results
	var area float64
	for _, lp := range lps {
		s := lp.(*Station).S
		r.Completions += s.Completions
		area += s.Area + float64(s.Queue)*(end-s.LastChange)
	}
	if n := float64(len(lps)); n > 0 && end > 0 {
		r.Throughput = float64(r.Completions) / n / end
		r.MeanQueue = area / n / end
	}
	return r
}

// DefaultConfig is a small network.
func DefaultConfig() Config { return Config{Stations: 64, Jobs: 4, Service: 1, Transit: 0.5} }

// EndTime is the default end time.
const EndTime = 1000

// Command registers the model with package app: its flags, how to build it, its results.
func Command() *app.Model {
	c := DefaultConfig()
	return &app.Model{
		Name:    "cqn",
		Summary: "a closed queueing network: jobs circulating among FCFS stations in a ring",
		EndTime: EndTime,
		Flags: func(f *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			f.IntVar(&c.Stations, "stations", c.Stations, "stations in the ring")
			f.IntVar(&c.Jobs, "jobs", c.Jobs, "jobs starting at each station")
			f.Float64Var(&c.Service, "service", c.Service, "mean service time")
			f.Float64Var(&c.Transit, "transit", c.Transit, "time from one station to the next")
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				lps, err := New(c)
				return lps, nil, err
			}
		},
		Results: func(lps []kernel.LogicalProcess, fs *pflag.FlagSet) []app.Result {
			end := 0.0
			if fs != nil { // nil: only the keys are asked for
				end, _ = fs.GetFloat64("max-sim-time")
			}
			r := Summarize(lps, end)
			return []app.Result{
				{Label: "Completions", Key: "completions", Value: r.Completions},
				{Label: "Throughput per station", Key: "throughput", Value: r.Throughput},
				{Label: "Mean queue length", Key: "mean_queue", Value: r.MeanQueue},
			}
		},
		LPStats: []app.LPStat{{Label: "Completions", Key: "station_completions",
			Value: func(lp kernel.LogicalProcess) float64 { return float64(lp.(*Station).S.Completions) }}},
		Size: func(flag func(string) float64) (float64, float64) {
			return flag("stations"), flag("stations") * flag("jobs")
		},
		SizeFlags: []string{"stations", "jobs"},
	}
}
