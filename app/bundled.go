package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/airport"
	"github.com/warpedgo/warped/models/epidemic"
	"github.com/warpedgo/warped/models/kademlia"
	"github.com/warpedgo/warped/models/logic"
	"github.com/warpedgo/warped/models/pcs"
	"github.com/warpedgo/warped/models/phold"
	"github.com/warpedgo/warped/models/traffic"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/sample/chart"
)

// Bundled returns the models of this repository as the warped command registers them
// (new values on each call: a model may keep state between its flags and its results).
func Bundled() []*Model {
	return []*Model{
		{
			Name:    "phold",
			Summary: "PHOLD synthetic benchmark (ROSS parameters)",
			EndTime: 500,
			Labels: map[string]chart.Label{"lps": {Text: "LPs"}, "remote": {Text: "share of events to a random LP"},
				"mean": {Text: "mean delay", Unit: "simulated time"}, "lookahead": {Unit: "simulated time"},
				"start-events": {Text: "initial events per LP"}, "grain": {Unit: "generator steps per event"}},
			Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				c := phold.DefaultConfig()
				fs.IntVar(&c.LPs, "lps", c.LPs, "number of logical processes")
				fs.Float64Var(&c.Remote, "remote", c.Remote, "probability that an event goes to a random LP")
				fs.Float64Var(&c.Mean, "mean", c.Mean, "mean delay between events")
				fs.Float64Var(&c.Lookahead, "lookahead", c.Lookahead, "minimum delay between events")
				fs.IntVar(&c.StartEvents, "start-events", c.StartEvents, "initial events per LP")
				fs.IntVar(&c.Grain, "grain", c.Grain, "busy work per event, in generator steps")
				return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
					lps, err := phold.New(c)
					return lps, nil, err
				}
			},
			Size: func(flag func(string) float64) (float64, float64) {
				return flag("lps"), flag("lps") * flag("start-events")
			},
			SizeFlags: []string{"lps", "start-events"},
			Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
				r := phold.Summarize(lps)
				return []Result{
					{"Events", "events", r.Events},
					{"Remote events", "remote_events", r.Remote},
				}
			},
		},
		{
			Name:    "pcs",
			Summary: "PCS cellular network (WARPED2's)",
			EndTime: 200,
			Labels: map[string]chart.Label{"channel-cnt": {Text: "channels per cell"},
				"call-interval":  {Text: "mean time between calls", Unit: "simulated time"},
				"call-duration":  {Text: "mean call duration", Unit: "simulated time"},
				"move-interval":  {Text: "mean time between moves", Unit: "simulated time"},
				"portable-count": {Text: "portables per cell"},
				"call_attempts":  {Unit: "calls"}, "channel_blocks": {Unit: "calls"}, "handoff_blocks": {Unit: "calls"}},
			Against: against(pcsWARPED2),
			Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				c := pcs.DefaultConfig()
				fs.IntVar(&c.CellsX, "num-cells-x", c.CellsX, "width of the cell grid")
				fs.IntVar(&c.CellsY, "num-cells-y", c.CellsY, "height of the cell grid")
				fs.IntVar(&c.Channels, "channel-cnt", c.Channels, "channels per cell")
				fs.IntVar(&c.CallInterval, "call-interval", c.CallInterval, "mean time between the end of a call and the next call")
				fs.IntVar(&c.CallDuration, "call-duration", c.CallDuration, "mean call duration")
				fs.IntVar(&c.MoveInterval, "move-interval", c.MoveInterval, "mean time between moves")
				fs.IntVar(&c.Portables, "portable-count", c.Portables, "portables per cell")
				fs.IntVar(&c.MaxHops, "max-hops", c.MaxHops, "most hops of a move: 1 is WARPED2's one hop in a random direction; N > 1 moves 1 to N random hops")
				return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
					lps, err := pcs.New(c)
					return lps, c.Partitioner(), err
				}
			},
			Size: func(flag func(string) float64) (float64, float64) {
				cells := flag("num-cells-x") * flag("num-cells-y")
				return cells, cells * (flag("portable-count") + flag("channel-cnt"))
			},
			SizeFlags: []string{"num-cells-x", "num-cells-y", "portable-count", "channel-cnt"},
			Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
				r := pcs.Summarize(lps)
				return []Result{
					{"Call attempts", "call_attempts", r.CallAttempts},
					{"Channel blocks", "channel_blocks", r.ChannelBlocks},
					{"Handoff blocks", "handoff_blocks", r.HandoffBlocks},
				}
			},
		},
		{
			Name:    "traffic",
			Summary: "traffic on a grid of intersections (WARPED2's, with its own lane choice)",
			EndTime: 10000,
			Against: against(trafficWARPED2),
			Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				c := traffic.DefaultConfig()
				fs.IntVar(&c.IntersectionsX, "num-intersections-x", c.IntersectionsX, "width of the intersection grid")
				fs.IntVar(&c.IntersectionsY, "num-intersections-y", c.IntersectionsY, "height of the intersection grid")
				fs.IntVar(&c.Cars, "number-of-cars", c.Cars, "cars starting at each intersection")
				fs.IntVar(&c.MeanInterval, "mean-interval", c.MeanInterval, "mean of each step's exponential delay")
				fs.IntVar(&c.MaxCarsOnRoad, "max-cars-on-road", c.MaxCarsOnRoad, "cars a road holds before cars look for another")
				fs.IntVar(&c.MaxDistance, "max-distance", c.MaxDistance, "farthest destination along each axis, in blocks")
				return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
					lps, err := traffic.New(c)
					return lps, c.Partitioner(), err
				}
			},
			Size: func(flag func(string) float64) (float64, float64) {
				n := flag("num-intersections-x") * flag("num-intersections-y")
				return n, n * flag("number-of-cars")
			},
			SizeFlags: []string{"num-intersections-x", "num-intersections-y", "number-of-cars"},
			Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
				r := traffic.Summarize(lps)
				return []Result{
					{"Cars arrived", "cars_arrived", r.CarsArrived},
					{"Cars finished", "cars_finished", r.CarsFinished},
					{"Average travel time", "average_travel_time", r.AverageTravelTime},
					{"Full roads found", "full_roads", r.FullRoads},
					{"Cars in lanes at end", "cars_in_lanes", r.CarsInLanes},
					{"Cars on roads at end", "cars_on_roads", r.CarsOnRoads},
				}
			},
		},
		{
			Name:    "airport",
			Summary: "planes flying between airports, with runway contention or as WARPED2's (--variant warped2)",
			EndTime: 2000,
			Against: against(airportWARPED2),
			Resolve: airportResolve,
			Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				c := airport.DefaultConfig()
				fs.StringVar(&c.Variant, "variant", c.Variant, "runways (runway contention) or warped2 (WARPED2's airport: no runways, and no runway flags)")
				fs.IntVar(&c.AirportsX, "num-airports-x", c.AirportsX, "width of the airport grid")
				fs.IntVar(&c.AirportsY, "num-airports-y", c.AirportsY, "height of the airport grid")
				fs.IntVar(&c.Planes, "num-planes", c.Planes, "planes starting at each airport")
				fs.IntVar(&c.GroundTime, "ground-time", c.GroundTime, "mean time a plane stays at the gate")
				fs.IntVar(&c.FlightTime, "flight-time", c.FlightTime, "mean flight time")
				fs.IntVar(&c.Runways, "runways", c.Runways, "runways per airport")
				fs.IntVar(&c.LandTime, "land-time", c.LandTime, "mean time a landing holds a runway")
				fs.IntVar(&c.TakeoffTime, "takeoff-time", c.TakeoffTime, "mean time a takeoff holds a runway")
				fs.IntVar(&c.HoldTime, "hold-time", c.HoldTime, "time a plane waits for a runway before trying again")
				return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
					lps, err := airport.New(c)
					return lps, c.Partitioner(), err
				}
			},
			Size: func(flag func(string) float64) (float64, float64) {
				n := flag("num-airports-x") * flag("num-airports-y")
				return n, n * flag("num-planes")
			},
			SizeFlags: []string{"num-airports-x", "num-airports-y", "num-planes"},
			Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
				r := airport.Summarize(lps)
				return []Result{
					{"Arrivals", "arrivals", r.Arrivals},
					{"Landings", "landings", r.Landings},
					{"Departures", "departures", r.Departures},
					{"Planes grounded", "planes_grounded", r.Grounded},
					{"Runway holds", "holds", r.Holds},
					{"Hold time", "hold_time", r.HoldTime},
					{"Average delay", "average_delay", r.AverageDelay},
				}
			},
		},
		epidemicModel(),
		kademliaModel(),
		logicModel(),
	}
}

// epidemicModel returns the epidemic's entry: its --time-series path is shared by the flag
// set and the results, and its configuration with the size check, which reads --network
// (text, which Size's numbers cannot carry) from the latest Flags call's, the flag set that
// the check is given (a study checks and builds under the command's lock).
func epidemicModel() *Model {
	var series, file string
	var cfg *epidemic.Config
	labels := map[string]chart.Label{}
	for s := range epidemic.NumDiseaseStates { // the series it records, one per state
		labels[s.String()] = chart.Label{Unit: "people"}
	}
	return &Model{
		Labels:  labels,
		Name:    "epidemic",
		Summary: "epidemic spreading over a small world of locations (WARPED2's rules, or --variant stochastic)",
		Notes:   epidemicNotes,
		Against: against(epidemicWARPED2),
		Resolve: epidemicResolve,
		EndTime: 5000,
		Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			c := epidemic.DefaultConfig()
			cfg = &c
			epidemicFlags(fs, &c)
			fs.StringVar(&file, "warped2-config", "", "read the locations, people, network and disease parameters from this WARPED2 configuration file (the comma-separated text its config/createConfig.cpp writes); needs --variant warped2")
			fs.StringVar(&series, "time-series", "", "write the counts per disease state over time as CSV to this file")
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				if file == "" {
					lps, err := epidemic.New(c)
					return lps, nil, err
				}
				if err := epidemicFileConflicts(fs, c); err != nil {
					return nil, nil, err
				}
				c, sites, err := epidemic.ReadConfigFile(file, c)
				if err != nil {
					return nil, nil, err
				}
				lps, err := epidemic.Build(c, sites)
				return lps, nil, err
			}
		},
		Size: func(flag func(string) float64) (float64, float64) {
			// A person is about 80 bytes, a quarter of an event. A location has
			// --watts-strogatz-k neighbours, or up to twice --barabasi-albert-m: measured
			// at the network's peak (its lists while built, then the adjacency list), 8 to
			// 11 bytes a location and unit of k (20000 locations, k 500 to 2000, both
			// variants) and 10 a unit of m; 13 a neighbour, a 24th of an event, leans
			// high.
			n, ba := flag("num-locations"), cfg != nil && cfg.Network == epidemic.BarabasiAlbert
			var deg float64
			switch {
			case !ba && flag("watts-strogatz-k") < n:
				deg = flag("watts-strogatz-k")
			case ba && flag("barabasi-albert-m") < n:
				deg = min(2*flag("barabasi-albert-m"), n-1)
			default:
				return 0, 0 // k or m not below the locations: the build refuses it, saying why
			}
			return n, n*flag("population")/4 + n*deg/24
		},
		SizeFlags: []string{"num-locations", "population", "watts-strogatz-k", "barabasi-albert-m"},
		Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
			r := epidemic.Summarize(lps)
			out := make([]Result, 0, 10)
			for s := range epidemic.NumDiseaseStates {
				name := s.String()
				out = append(out, Result{"Final " + name, "final_" + name, r.Final[s]})
			}
			return append(out,
				Result{"Infections", "infections", r.Infections},
				Result{"Moves", "moves", r.Moves},
				Result{"Peak infected", "peak_infected", r.PeakInfected},
				Result{"Peak time", "peak_time", r.PeakTime})
		},
		OutputPaths: func() map[string]string {
			if series == "" {
				return nil
			}
			return map[string]string{"time-series": series}
		},
		InputPaths: func() map[string]string {
			if file == "" {
				return nil
			}
			return map[string]string{"warped2-config": file}
		},
		WriteOutputs: func(lps []kernel.LogicalProcess) error {
			if series == "" {
				return nil
			}
			if err := outfile.WriteFile(series, epidemic.Summarize(lps).CSV()); err != nil {
				return outputError("time-series", err)
			}
			return nil
		},
	}
}

// kademliaModel returns the Kademlia overlay's entry.
func kademliaModel() *Model {
	return &Model{
		Name:    "kademlia",
		Summary: "Kademlia peer-to-peer overlay doing iterative node lookups (Liu and Andelfinger's second model)",
		Notes: "  Nodes with 64-bit ids and k-buckets in a static overlay; each node looks up random keys, one\n" +
			"  at a time, with alpha FIND_NODE requests in flight, until its k closest have replied.\n" +
			"  Defaults are Kademlia's (k 20, alpha 3): the paper's own parameters were not found.\n" +
			"  Periodic state saving only (no reverse computation); lookahead --min-delay.\n" +
			"  Runs on the GPU with --simulation-type gpu (the device loop's state saving: a copy of a\n" +
			"  node's 10 + k state words per list slot).\n",
		EndTime: 2000,
		Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			c := kademlia.DefaultConfig()
			fs.IntVar(&c.Nodes, "nodes", c.Nodes, "number of nodes (LPs)")
			fs.IntVar(&c.K, "bucket-size", c.K, "Kademlia's k: contacts per k-bucket, and the closest nodes a lookup seeks (at most 32)")
			fs.IntVar(&c.Alpha, "alpha", c.Alpha, "FIND_NODE requests a lookup keeps in flight (at most --bucket-size)")
			fs.Float64Var(&c.LookupInterval, "lookup-interval", c.LookupInterval, "mean time from the end of a node's lookup to its next")
			fs.Float64Var(&c.MeanDelay, "mean-delay", c.MeanDelay, "mean delay of a message")
			fs.Float64Var(&c.MinDelay, "min-delay", c.MinDelay, "least delay of a message (the model's lookahead)")
			fs.Uint64Var(&c.IDSeed, "id-seed", c.IDSeed, "seed of the node ids and of which contacts fill a full bucket")
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				lps, err := kademlia.New(c)
				return lps, nil, err
			}
		},
		Size: func(flag func(string) float64) (float64, float64) {
			// Up to alpha requests and a start pending per node, and its table of about
			// a dozen buckets of k 4-byte contacts (k/2 events' worth).
			n := flag("nodes")
			return n, n * (flag("alpha") + 1 + flag("bucket-size")/2)
		},
		SizeFlags: []string{"nodes", "alpha", "bucket-size"},
		Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
			r := kademlia.Summarize(lps)
			return []Result{
				{"Lookups started", "lookups_started", r.Started},
				{"Lookups completed", "lookups_completed", r.Completed},
				{"Mean hops", "mean_hops", r.MeanHops},
				{"Mean latency", "mean_latency", r.MeanLatency},
				{"FIND_NODE requests", "find_node_requests", r.Requests},
				{"Stale replies", "stale_replies", r.Stale},
			}
		},
	}
}

// against is the help section of a bundled model that follows one of WARPED2's.
func against(text string) string {
	return "Against WARPED2 (wilseypa/warped2-models):\n" + text
}

// logicModel returns the logic circuits' entry: the size check reads the circuit that
// --circuit names from the configuration its flags are bound to (a text flag, which Size's
// numbers cannot carry), set by the latest Flags call, which is the flag set that the
// check is given (a study checks and builds under the command's lock).
func logicModel() *Model {
	var cfg *logic.Config
	return &Model{
		Name:           "logic",
		DynamicResults: true,
		Summary:        "gate-level logic circuits (.bench files, adders, multipliers, random circuits)",
		EndTime:        2100,
		Flags: func(fs *pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			c := logic.DefaultConfig()
			cfg = &c
			fs.StringVar(&c.Circuit, "circuit", c.Circuit, "an ISCAS .bench file, or full-adder, adder-N or multiplier-N")
			fs.IntVar(&c.RandomGates, "random-gates", c.RandomGates, "generate a random circuit of this many gates instead (0: use --circuit)")
			fs.Uint64Var(&c.CircuitSeed, "circuit-seed", c.CircuitSeed, "seed of the random circuit")
			fs.IntVar(&c.GateDelay, "gate-delay", c.GateDelay, "delay of every gate")
			fs.IntVar(&c.VectorPeriod, "vector-period", c.VectorPeriod, "time between input vectors")
			fs.IntVar(&c.ClockPeriod, "clock-period", c.ClockPeriod, "time between flip-flop clock edges")
			fs.StringVar(&c.Vectors, "vectors", c.Vectors, "input vectors: comma-separated bit strings, one bit per input in declaration order (empty: random)")
			fs.IntVar(&c.NumVectors, "num-vectors", c.NumVectors, "number of random input vectors")
			return func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
				// Flags of which the model would silently use one.
				switch {
				case c.RandomGates > 0 && fs.Changed("circuit"):
					return nil, nil, errors.New("logic: --random-gates generates a circuit, and --circuit names one: give one of them")
				case c.Vectors != "" && fs.Changed("num-vectors"):
					return nil, nil, errors.New("logic: --vectors gives the input vectors, and --num-vectors asks for random ones: give one of them")
				}
				lps, err := logic.New(c)
				return lps, nil, err
			}
		},
		Size: func(flag func(string) float64) (float64, float64) {
			if flag("random-gates") > 0 {
				return flag("random-gates"), 0 // measured 250-320 bytes a gate: an LP's 512 leans high
			}
			if cfg == nil {
				return 0, 0
			}
			n, err := cfg.Signals()
			if err != nil {
				return 0, 0 // the build says what is wrong
			}
			// A shipped circuit is generated as .bench text and parsed: measured at peak
			// (time warp, --max-sim-time 0.5), multiplier-256 200 MiB, -512 761 MiB and -1024
			// 2.84 GiB for 0.39, 1.57 and 6.29 million signals, 535, 508 and 484 bytes a
			// signal, the whole process's: about an LP's 512, so 5/4 of an LP a signal
			// leans high as the other estimates do (a .bench file, streamed, and counted by
			// its lines, leans higher).
			return float64(n) * 5 / 4, 0
		},
		SizeFlags: []string{"circuit", "random-gates"},
		InputPaths: func() map[string]string {
			if cfg == nil || cfg.RandomGates > 0 {
				return nil
			}
			if st, err := os.Stat(cfg.Circuit); err != nil || !st.Mode().IsRegular() {
				return nil // a shipped circuit's name, or a file the model will say it cannot read
			}
			return map[string]string{"circuit": cfg.Circuit}
		},
		Results: func(lps []kernel.LogicalProcess, _ *pflag.FlagSet) []Result {
			r := logic.Summarize(lps)
			out := []Result{
				{"Gates", "gates", uint64(r.Gates)},
				{"Inputs", "inputs", uint64(r.Inputs)},
				{"Outputs", "outputs", uint64(r.Outputs)},
				{"Transitions", "transitions", r.Transitions},
			}
			var outT uint64
			for _, n := range r.OutputTransitions {
				outT += n
			}
			out = append(out, Result{"Output transitions", "output_transitions", outT},
				Result{"Outputs at 1", "outputs_at_1", r.Ones},
				Result{"Output value (bit j = output j)", "output_value", r.Value})
			if r.Outputs <= 16 {
				for j, n := range r.OutputTransitions {
					name := logic.OutputName(lps, j)
					out = append(out, Result{"Transitions of " + name, "transitions_" + name, n})
				}
			}
			return out
		},
	}
}

// airportRunwayFlags are the airport's flags that --variant runways alone reads.
var airportRunwayFlags = []readBy{
	{"runways", "variant", airport.VariantRunways, " (WARPED2's airport has no runways)"},
	{"land-time", "variant", airport.VariantRunways, " (WARPED2's airport has no runways)"},
	{"takeoff-time", "variant", airport.VariantRunways, " (WARPED2's airport has no runways)"},
	{"hold-time", "variant", airport.VariantRunways, " (WARPED2's airport has no runways)"},
}

// airportResolve refuses a runway flag given (on the command line or in --config) to a run
// of --variant warped2, whose airports have no runways: it would go on without it.
func airportResolve(fs *pflag.FlagSet) error { return refuseUnread(fs, "airport", airportRunwayFlags) }

// readBy says that a model's flag is read only where another of its flags, a variant or
// network, has one value; why, when not empty, follows in the message.
type readBy struct {
	flag, by, value, why string
}

// refuseUnread refuses the first flag of only that was given (on the command line or in
// --config) while the flag it depends on has another value: the run would go on without
// it, as if it had not been given.
func refuseUnread(fs *pflag.FlagSet, model string, only []readBy) error {
	for _, o := range only {
		if !fs.Changed(o.flag) {
			continue
		}
		if v := fs.Lookup(o.by).Value.String(); v != o.value {
			run := fmt.Sprintf("this run is --%s %s", o.by, v)
			if o.by == "network" {
				run = "this run's network is " + v
			}
			return fmt.Errorf("%s: --%s is read by --%s %s alone%s, and %s: drop it, or give --%s %s",
				model, o.flag, o.by, o.value, o.why, run, o.by, o.value)
		}
	}
	return nil
}
