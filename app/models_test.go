package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallRuns are quick command lines of the bundled models other than PHOLD and PCS.
var smallRuns = [][]string{
	{"traffic", "--num-intersections-x", "5", "--num-intersections-y", "4", "--number-of-cars", "5",
		"--mean-interval", "10", "--max-distance", "5", "--max-sim-time", "400"},
	{"epidemic", "--num-locations", "20", "--population", "30", "--max-sim-time", "1500"},
	{"airport", "--num-airports-x", "5", "--num-airports-y", "4", "--num-planes", "8", "--runways", "1",
		"--max-sim-time", "800"},
	{"logic", "--circuit", "multiplier-4", "--num-vectors", "5"},
	{"logic", "--random-gates", "2000", "--num-vectors", "4", "--max-sim-time", "400"},
	{"epidemic", "--variant", "stochastic", "--num-locations", "20", "--population", "30", "--max-sim-time", "1500"},
	{"kademlia", "--nodes", "200", "--bucket-size", "4", "--alpha", "2", "--max-sim-time", "1500"},
}

func TestHelpListsEveryModel(t *testing.T) {
	code, out, _ := warped("help")
	require.Equal(t, 0, code)
	for _, m := range Bundled() {
		require.Contains(t, out, "  "+m.Name+" ")
	}
	for _, name := range []string{"phold", "pcs", "traffic", "epidemic", "airport", "logic", "kademlia"} {
		require.NotNil(t, findModel(name), name)
		code, out, _ := warped("help", name)
		require.Equal(t, 0, code)
		require.Contains(t, out, "Usage: warped "+name+" [flags]")
	}
	_, out, _ = warped("help", "logic")
	require.Contains(t, out, "--random-gates")
	require.Contains(t, out, "(default adder-8)")
	_, out, _ = warped("help", "traffic")
	require.Contains(t, out, "--num-intersections-x")
	_, out, _ = warped("help", "kademlia")
	require.Contains(t, out, "--bucket-size int")
	require.Contains(t, out, "(default 20)")
}

// TestNewModelsMatchSequential: every new model runs from the command line, prints its
// results, and time warp with reverse computation (where the model has it) and with
// periodic state saving commits the sequential digest.
func TestNewModelsMatchSequential(t *testing.T) {
	for _, args := range smallRuns {
		code, out, errOut := warped(append(args, "--simulation-type", "sequential")...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		require.Contains(t, out, "Simulation of "+args[0]+" complete (sequential)")
		require.Contains(t, out, "Results\n")
		want := digestOf(t, out)
		for _, extra := range [][]string{
			{"--time-warp-worker-threads", "2"},
			{"--time-warp-worker-threads", "3", "--time-warp-state-saving-period", "4",
				"--time-warp-cancellation", "lazy", "--time-warp-check-rollbacks"},
		} {
			code, out, errOut = warped(append(append([]string{}, args...), extra...)...)
			require.Equal(t, 0, code, "%v %v: %s", args, extra, errOut)
			require.Equal(t, want, digestOf(t, out), "%v %v", args, extra)
		}
	}
}

func TestNewModelsResults(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		keys []string
	}{
		{smallRuns[0], []string{"cars_arrived", "cars_finished", "average_travel_time", "full_roads"}},
		{smallRuns[1], []string{"final_uninfected", "final_recovered", "infections", "peak_infected"}},
		{smallRuns[2], []string{"arrivals", "landings", "departures", "holds", "average_delay"}},
		{smallRuns[3], []string{"gates", "transitions", "output_value", "transitions_P0"}},
		{smallRuns[6], []string{"lookups_started", "lookups_completed", "mean_hops", "mean_latency", "find_node_requests", "stale_replies"}},
	} {
		stats := filepath.Join(dir, tc.args[0]+".json")
		code, out, errOut := warped(append(tc.args, "--stats-file", stats)...)
		require.Equal(t, 0, code, errOut)
		data, err := os.ReadFile(stats)
		require.NoError(t, err)
		var kv map[string]any
		require.NoError(t, json.Unmarshal(data, &kv))
		require.Equal(t, tc.args[0], kv["model"])
		for _, k := range tc.keys {
			require.Contains(t, kv["results"], k, "%s stats", tc.args[0])
		}
		require.Contains(t, out, "Results\n")
	}

	// The multiplier multiplies: 13 * 11 on the command line.
	code, out, errOut := warped("logic", "--circuit", "multiplier-4", "--vectors", "10110010,10111101",
		"--simulation-type", "sequential")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Output value (bit j = output j): 143\n")

	// The epidemic's time series.
	series := filepath.Join(dir, "series.csv")
	code, _, errOut = warped(append(smallRuns[1], "--time-series", series)...)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(series)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Equal(t, "time,uninfected,latent,incubating,infectious,asymptomatic,recovered", lines[0])
	require.Len(t, lines, 1+1500/100-1)
}

func TestNewModelsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"traffic", "--number-of-cars", "0"}, "traffic: --number-of-cars must be at least 1, got 0"},
		{[]string{"epidemic", "--transmissibility", "2"}, "epidemic: --transmissibility is a probability in [0, 1], got 2"},
		{[]string{"epidemic", "--time-series", "/no/such/dir/s.csv"}, "cannot write --time-series"},
		{[]string{"epidemic", "--variant", "sir"}, `epidemic: --variant must be warped2 or stochastic, got "sir"`},
		{[]string{"epidemic", "--warped2-config", "/no/such.dat"}, "epidemic: --warped2-config: open /no/such.dat"},
		{[]string{"epidemic", "--warped2-config", "x.dat", "--variant", "stochastic"}, "epidemic: --warped2-config needs --variant warped2, got stochastic"},
		{[]string{"epidemic", "--warped2-config", "x.dat", "--transmissibility", "0.1"}, "epidemic: --transmissibility cannot be used with --warped2-config"},
		{[]string{"airport", "--runways", "0"}, "airport: --runways must be at least 1, got 0"},
		{[]string{"logic", "--circuit", "/no/such.bench"}, "logic: --circuit: open /no/such.bench"},
		{[]string{"logic", "--circuit", "adder-4", "--vectors", "01"}, "must be 8 bits"},
		{[]string{"logic", "--gate-delay", "0"}, "--gate-delay must be at least 1"},
	} {
		code, out, errOut := warped(tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, tc.args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		require.Empty(t, out)
	}
}

// TestEpidemicWARPED2Config runs the epidemic from a WARPED2 configuration file written
// here: time warp commits the sequential digest, and a bad line stops the command before
// the run with one line naming the file and line (exit 2, no stats file).
func TestEpidemicWARPED2Config(t *testing.T) {
	code, help, _ := warped("help", "epidemic")
	require.Equal(t, 0, code)
	for _, s := range []string{"Where --variant warped2 (the default) still differs from WARPED2:", "DiseaseModel.hpp:146", "--warped2-config"} {
		require.Contains(t, help, s)
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("Watts-Strogatz,2,0.2\n0.12\n20,0\n10,0.3\n40,1.0\n20,0.5\n0.2,0.9,0.5,0.1,0.3\n5\n2\n")
	pid := 1
	for r := range 2 {
		fmt.Fprintf(&b, "r%d,3\n", r)
		for l := range 3 {
			fmt.Fprintf(&b, "l%d,%d,%d,4\n", l, 3+l, 7+2*l)
			for range 4 {
				fmt.Fprintf(&b, "%d,0.%d,%d,%d\n", pid, pid%10, pid%2, pid%6)
				pid++
			}
		}
	}
	file := filepath.Join(dir, "model.dat")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	args := []string{"epidemic", "--warped2-config", file, "--max-sim-time", "400", "--sample-interval", "50"}
	code, out, errOut := warped(append(args, "--simulation-type", "sequential")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Final uninfected:")
	want := digestOf(t, out)
	code, out, errOut = warped(append(args, "--time-warp-worker-threads", "2", "--time-warp-state-saving-period", "3")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, digestOf(t, out))

	bad := filepath.Join(dir, "bad.dat")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(b.String(), "\n5\n", "\nfive\n", 1)), 0o600))
	stats := filepath.Join(dir, "stats.json")
	code, out, errOut = warped("epidemic", "--warped2-config", bad, "--stats-file", stats)
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	require.Contains(t, errOut, bad+`:8: the location state refresh interval must be an integer from 1 to 2147483647, got "five"`)
	require.NoFileExists(t, stats)
}

// TestEpidemicVariantDefaults: --variant stochastic gives every parameter flag left unset
// its own default, which --dump-config shows; flags given keep their values, before or
// after --variant.
func TestEpidemicVariantDefaults(t *testing.T) {
	dump := func(args ...string) map[string]any {
		code, out, errOut := warped(append([]string{"epidemic", "--dump-config"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var kv map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &kv))
		return kv
	}
	kv := dump()
	require.Empty(t, kv, "defaults are not written: a --config of the dump keeps them")
	kv = dump("--variant", "warped2")
	require.Equal(t, map[string]any{"variant": "warped2"}, kv)
	kv = dump("--variant", "stochastic")
	require.Equal(t, 0.004, kv["transmissibility"])
	require.Equal(t, 4.0, kv["watts-strogatz-k"])
	require.Equal(t, 0.8, kv["prob-ul-u"])
	kv = dump("--transmissibility", "0.3", "--variant", "stochastic", "--watts-strogatz-k", "6")
	require.Equal(t, 0.3, kv["transmissibility"])
	require.Equal(t, 6.0, kv["watts-strogatz-k"])
	require.Equal(t, 0.8, kv["prob-ul-u"])
}

// TestResultKinds: every model's results are counts (uint64) or measures (float64); an
// average is a measure, printed and written with its fraction (airport's average delay is
// the hold time over landings and takeoffs, not that rounded down).
func TestResultKinds(t *testing.T) {
	for _, m := range Bundled() {
		t.Run(m.Name, func(t *testing.T) {
			var rs []Result
			func() {
				defer func() { _ = recover() }() // a model whose results need its LPs
				rs = m.Results(nil, nil)
			}()
			for _, r := range rs {
				require.NotContains(t, statsKeys(), r.Key, "a result key must not hide a kernel statistic in a study")
				switch r.Value.(type) {
				case uint64, float64:
				default:
					t.Fatalf("result %s is a %T: want uint64 or float64", r.Key, r.Value)
				}
			}
		})
	}
	require.Equal(t, "4.90185", Result{Value: 4.901853}.text())
	require.Equal(t, "12", Result{Value: uint64(12)}.text())

	stats := filepath.Join(t.TempDir(), "s.json")
	code, out, errOut := warped("airport", "--num-airports-x", "2", "--num-airports-y", "2", "--num-planes", "4",
		"--runways", "1", "--max-sim-time", "400", "--simulation-type", "sequential", "--stats-file", stats)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var st struct{ Results map[string]float64 }
	require.NoError(t, json.Unmarshal(data, &st))
	kv := st.Results
	want := kv["hold_time"] / (kv["landings"] + kv["departures"])
	require.Positive(t, kv["hold_time"])
	require.InDelta(t, want, kv["average_delay"], 1e-12)
	require.Contains(t, out, "Average delay:             "+strconv.FormatFloat(want, 'g', 6, 64)+"\n")
}
