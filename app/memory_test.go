package app

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// TestHelperProcess is not a test: it lets other tests run the command in a fresh process
// (peak memory is a property of the process). It runs only with WARPED_HELPER_ARGS set.
func TestHelperProcess(t *testing.T) {
	args := os.Getenv("WARPED_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process for other tests")
	}
	os.Exit(run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr))
}

// runInProcess runs the command with args in a fresh process and returns its stats file.
func runInProcess(t *testing.T, args ...string) map[string]any {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "WARPED_HELPER_ARGS="+strings.Join(append(args, "--stats-file", stats), " "))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var kv map[string]any
	require.NoError(t, json.Unmarshal(data, &kv))
	return kv
}

// TestMemoryIsBoundedUnderTimeWarp: a PHOLD run ten times longer in simulated time keeps
// to well under twice the peak memory of the shorter one, because fossil collection
// reclaims everything below GVT and a full history log is compacted. (Measured: 1.01 -
// 1.06 times, 23 - 25 MiB, with other test packages competing for the two cores, as under
// go test ./...; before compaction a starved worker's log could grow to 65536 slots there,
// 57 MiB against 22.)
func TestMemoryIsBoundedUnderTimeWarp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two simulations in child processes")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes peak memory meaningless; plain go test checks it")
	}
	base := []string{"phold", "--lps", "4096", "--time-warp-worker-threads", "2",
		"--time-warp-state-saving-period", "4"}
	short := runInProcess(t, append(base, "--max-sim-time", "100")...)
	long := runInProcess(t, append(base, "--max-sim-time", "1000")...)
	s, l := short["peak_memory_bytes"].(float64), long["peak_memory_bytes"].(float64)
	t.Logf("peak memory: end 100 %.1f MiB (%v events), end 1000 %.1f MiB (%v events)",
		s/(1<<20), short["events_committed"], l/(1<<20), long["events_committed"])
	require.Greater(t, long["events_committed"].(float64), 9*short["events_committed"].(float64))
	require.Less(t, l, 1.75*s, "peak memory must not grow with the run length")
}

// TestMemoryRefusedBeforeTheRun: sizes that cannot fit are one line and exit 2, naming the
// need and the machine's memory, before anything is built (the row 6).
func TestMemoryRefusedBeforeTheRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"phold", "--lps", "2000000000"}, "--lps 2000000000 --start-events 1 needs about 1 TiB"},
		{[]string{"traffic", "--number-of-cars", "2000000000"}, "--number-of-cars 2000000000 needs about"},
		{[]string{"logic", "--random-gates", "1073741824"}, "--random-gates 1073741824 needs about 512 GiB"},
		{[]string{"pcs", "--num-cells-x", "40000", "--num-cells-y", "40000"}, "needs about"},
		{[]string{"kademlia", "--nodes", "2000000000"}, "--nodes 2000000000 --alpha 3 --bucket-size 20 needs about 9.08 TiB"},
	} {
		code, out, errOut := warped(tc.args...)
		if machineMemory().bytes > 1<<40 {
			t.Skip("this machine has over a TiB")
		}
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, strings.Replace(errOut, "1.51 TiB", "1 TiB", 1), tc.want)
		require.Contains(t, errOut, machineMemory().String())
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		require.Empty(t, out)
	}
}

// TestMemoryCountsCircuitsAndNetworks: a shipped logic circuit (multiplier-4096 built for
// minutes to 24 GB before it was killed) and the epidemic's network (edges: locations x k,
// which crashed Go under ulimit -v) are in the estimate: one line, exit 2, naming the flags,
// before anything is built. Each case is skipped where this machine has the memory.
func TestMemoryCountsCircuitsAndNetworks(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the largest multiplier", []string{"logic", "--circuit", "multiplier-4096", "--max-memory", "4GiB", "--max-sim-time", "10"},
			"warped logic: --circuit multiplier-4096 needs about 60 GiB for its sizes; "},
		{"a Watts-Strogatz network of degree 100000", []string{"epidemic", "--watts-strogatz-k", "100000", "--num-locations", "200000"},
			"warped epidemic: --num-locations 200000 --population 100 --watts-strogatz-k 100000 --barabasi-albert-m 4 needs about 250 GiB; "},
		{"a Barabasi-Albert network of m 150000", []string{"epidemic", "--network", "barabasi-albert", "--barabasi-albert-m", "150000", "--num-locations", "200000"},
			"--watts-strogatz-k 8 --barabasi-albert-m 150000 needs about 498 GiB; "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := parsed(t, tc.args[0], tc.args[1:]...)
			if need := memoryNeed(inv.m, inv.fs).total; float64(machineMemory().bytes) >= need {
				t.Skipf("%s, more than the %s needed", machineMemory(), formatBytes(need))
			}
			code, out, errOut := warped(tc.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Contains(t, errOut, tc.want)
			require.Contains(t, errOut, runLimit(&inv.o.maxMemory).String()+": give smaller sizes")
			require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
			require.Empty(t, out)
		})
	}
}

// TestMemoryAcceptsNormalSizes: a mid-size multiplier and an epidemic of a larger degree
// than the default run as before.
func TestMemoryAcceptsNormalSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"multiplier-32", []string{"logic", "--circuit", "multiplier-32", "--num-vectors", "3", "--max-sim-time", "300"}},
		{"an epidemic of degree 16", []string{"epidemic", "--num-locations", "200", "--population", "20", "--watts-strogatz-k", "16", "--max-sim-time", "300"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := warped(append(tc.args, "--gpu", "off")...)
			require.Equal(t, 0, code, errOut)
			require.Empty(t, errOut)
			digestOf(t, out)
		})
	}
}

// TestMemoryEstimates: what the estimate counts, for sizes that are refused and sizes that
// are accepted, against a limit of 512 MiB: circuits by their signals, the network by its
// degree, time-warp workers up to one per LP; nonsense that the build refuses with its
// reason is left to it.
func TestMemoryEstimates(t *testing.T) {
	limit := memoryLimit{512 << 20, "the address-space limit (ulimit -v) is"}
	for _, tc := range []struct {
		name string
		args []string
		want string // "": accepted
	}{
		{"the default adder", []string{"logic"}, ""},
		{"multiplier-256 (0.39 M signals, 200 MiB measured)", []string{"logic", "--circuit", "multiplier-256"}, ""},
		{"multiplier-512 (1.57 M signals, 761 MiB measured)", []string{"logic", "--circuit", "multiplier-512"},
			"--circuit multiplier-512 needs about 991 MiB; the address-space limit (ulimit -v) is 512 MiB: give smaller sizes"},
		{"multiplier-5000, which the build refuses", []string{"logic", "--circuit", "multiplier-5000"}, ""},
		{"a random circuit", []string{"logic", "--random-gates", "2000000"},
			"--circuit adder-8 --random-gates 2000000 needs about 1009 MiB; the address-space limit (ulimit -v) is 512 MiB: give smaller sizes"},
		{"the default epidemic", []string{"epidemic"}, ""},
		{"an epidemic of degree 1000 (220 MiB measured)", []string{"epidemic", "--num-locations", "20000", "--population", "1", "--watts-strogatz-k", "1000"}, ""},
		{"an epidemic of degree 2000 (355 MiB measured)", []string{"epidemic", "--num-locations", "20000", "--population", "1", "--watts-strogatz-k", "2000"},
			"--num-locations 20000 --population 1 --watts-strogatz-k 2000 --barabasi-albert-m 4 needs about 552 MiB; the address-space limit (ulimit -v) is 512 MiB: give smaller sizes"},
		{"k not below the locations", []string{"epidemic", "--num-locations", "20000", "--watts-strogatz-k", "20000"}, ""},
		{"4000 workers", []string{"phold", "--time-warp-worker-threads", "4000"},
			"--lps 16384 --start-events 1 --time-warp-worker-threads 4000 needs about 795 MiB; the address-space limit (ulimit -v) is 512 MiB: give fewer workers"},
		{"4000 workers and too many LPs", []string{"phold", "--lps", "1000000", "--time-warp-worker-threads", "4000"},
			"--lps 1000000 --start-events 1 --time-warp-worker-threads 4000 needs about 1.54 GiB; the address-space limit (ulimit -v) is 512 MiB: give smaller sizes or fewer workers"},
		{"too many LPs, and 4 workers", []string{"phold", "--lps", "1000000", "--time-warp-worker-threads", "4"},
			"--lps 1000000 --start-events 1 needs about 826 MiB; the address-space limit (ulimit -v) is 512 MiB: give smaller sizes"},
		{"1000 workers", []string{"phold", "--time-warp-worker-threads", "1000"}, ""},
		{"4000 workers, sequential", []string{"phold", "--time-warp-worker-threads", "4000", "--simulation-type", "sequential"}, ""},
		{"4000 workers for 64 LPs", []string{"phold", "--lps", "64", "--time-warp-worker-threads", "4000"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "--time-warp-worker-threads") {
				// The default is the machine's CPUs, which the estimate counts: on another
				// machine (or go test -cpu 4) a need would read 992 MiB, not 991.
				args = append(slices.Clone(args), "--time-warp-worker-threads", "2")
			}
			inv := parsed(t, args[0], args[1:]...)
			err := checkMemoryAgainst(inv.m, inv.fs, limit)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			var f *failure
			require.ErrorAs(t, err, &f)
			require.Equal(t, exitUsage, f.status)
		})
	}
	t.Run("a model that does not say its sizes", func(t *testing.T) {
		m := &Model{Name: "bare", EndTime: 1, Flags: func(*pflag.FlagSet) func() ([]kernel.LogicalProcess, partition.Partitioner, error) {
			return nil
		}}
		inv := &invocation{c: testCommand(), m: m}
		require.NoError(t, inv.parseFlags([]string{"--time-warp-worker-threads", "4000"}))
		require.EqualError(t, checkMemoryAgainst(m, inv.fs, limit),
			"--time-warp-worker-threads 4000 needs about 782 MiB; the address-space limit (ulimit -v) is 512 MiB: give fewer workers")
	})
}

// TestMemoryRefusesTheWorkers: on this machine, a PHOLD whose LPs fit beside one worker is
// refused with 4096 workers, naming them: exit 2, one line, nothing built.
func TestMemoryRefusesTheWorkers(t *testing.T) {
	mem := float64(machineMemory().bytes)
	if mem == 0 || mem > 1<<40 {
		t.Skipf("%s", machineMemory())
	}
	// The LPs and their events take all but 384 MiB; 4096 workers take 768 MiB.
	lps := strconv.Itoa(int((mem - bytesBase - 384<<20) / (bytesPerLP + bytesPerEvent)))
	args := []string{"phold", "--lps", lps, "--time-warp-worker-threads", "4096"}
	one := parsed(t, "phold", "--lps", lps, "--time-warp-worker-threads", "1")
	require.NoError(t, checkMemory(one.m, one.fs), "fits with one worker")
	many := parsed(t, args[0], args[1:]...)
	require.Error(t, checkMemory(many.m, many.fs), "refused before the command would build it")
	code, out, errOut := warped(args...)
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "warped phold: --lps "+lps+" --start-events 1 --time-warp-worker-threads 4096 needs about ")
	require.Contains(t, errOut, machineMemory().String()+": give fewer workers;")
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	require.Empty(t, out)
}

// TestWorkersBounded: more workers than kernel.MaxWorkers are refused at once, whatever
// the memory (100000 filled a machine's memory while still being set up).
func TestWorkersBounded(t *testing.T) {
	code, out, errOut := warped("phold", "--time-warp-worker-threads", "100000")
	require.Equal(t, exitUsage, code, errOut)
	require.Equal(t, "warped phold: --time-warp-worker-threads must be at most 4096 (workers beyond the CPUs take turns on them), got 100000; run 'warped help phold' for the flags\n", errOut)
	require.Empty(t, out)
}

// TestWorkersFitTheLPs: workers beyond the LPs would have none; the run keeps one per LP,
// with a note when they were asked for, commits what it would with fewer, and says in its
// stats file how many ran. The default (the CPUs) is fitted without a note.
func TestWorkersFitTheLPs(t *testing.T) {
	dir := t.TempDir()
	base := []string{"phold", "--lps", "4", "--max-sim-time", "100", "--gpu", "off"}
	code, out, errOut := warped(append(base, "--time-warp-worker-threads", "4")...)
	require.Equal(t, 0, code, errOut)
	want := digestOf(t, out)
	stats := filepath.Join(dir, "s.json")
	code, out, errOut = warped(append(base, "--time-warp-worker-threads", "8", "--time-warp-scheduler-count", "6", "--stats-file", stats)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "warped phold: --time-warp-worker-threads 8 is more than the model's 4 LPs: running 4 workers (a worker without LPs would have nothing to do)\n", errOut)
	require.Equal(t, want, digestOf(t, out))
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var kv struct {
		Config     map[string]any `json:"config"`
		Provenance struct {
			Workers int `json:"workers"`
		} `json:"provenance"`
	}
	require.NoError(t, json.Unmarshal(data, &kv))
	require.Equal(t, 4, kv.Provenance.Workers)
	require.EqualValues(t, 4, kv.Config["time-warp-worker-threads"])
	require.EqualValues(t, 4, kv.Config["time-warp-scheduler-count"])

	inv := parsed(t, "logic", "--circuit", "full-adder")
	inv.o.workers = 16 // as the default on 16 CPUs
	require.Empty(t, inv.fitWorkers(8))
	require.Equal(t, 8, inv.o.workers)
	seq := parsed(t, "phold", "--simulation-type", "sequential", "--time-warp-worker-threads", "8")
	require.Empty(t, seq.fitWorkers(4))
	require.Equal(t, 8, seq.o.workers, "a sequential run has no workers to fit")
}

// TestMaxMemoryStopsTheRun: a run over --max-memory stops with one line and exit 1,
// writing nothing. (PHOLD without its sizes, so that the size check lets it start.)
func TestMaxMemoryStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	unsized := *findModel("phold")
	unsized.Size = nil
	var out, stderr strings.Builder
	code := New("warped", &unsized).Run(context.Background(), []string{"phold", "--lps", "64", "--start-events", "2000",
		"--max-sim-time", "1e9", "--gpu", "off", "--max-memory", "1MiB", "--stats-file", filepath.Join(dir, "s.json")}, &out, &stderr)
	errOut := stderr.String()
	require.Equal(t, exitRun, code, errOut)
	require.Contains(t, errOut, "warped phold: stopped: the run's memory reached")
	require.Contains(t, errOut, "over its limit of 1 MiB (--max-memory)")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestMaxMemoryRefusesWhatCannotFit: sizes whose estimate is over --max-memory are
// refused before the model is built (it would pass the limit while being built, before
// the watcher starts), with one line that names both; without --max-memory the machine's
// memory is the limit.
func TestMaxMemoryRefusesWhatCannotFit(t *testing.T) {
	code, _, errOut := warped("phold", "--lps", "2000000", "--max-memory", "256MiB", "--max-sim-time", "1")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--lps 2000000 --start-events 1 needs about 1.55 GiB for its sizes; --max-memory is 256 MiB: give smaller sizes, or a higher --max-memory")
	require.Equal(t, memoryLimit{256 << 20, maxMemoryIs}, runLimit(&maxMemory{set: true, bytes: 256 << 20}))
	require.Equal(t, machineMemory(), runLimit(&maxMemory{}), "auto: the machine's")
	require.Equal(t, machineMemory(), runLimit(&maxMemory{set: true}), "0: no limit")
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "1024": 1024, "4GiB": 4 << 30, "512M": 512 << 20, "1.5 KiB": 1536, "2t": 2 << 40} {
		got, err := parseBytes(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "-1", "lots", "1e30GiB", "NaN", "0.5"} {
		_, err := parseBytes(s)
		require.Error(t, err, s)
	}
}

// TestUnderPressure checks the memory watcher's pressure band: set above 80% of the limit,
// kept down to 70%, cleared below.
func TestUnderPressure(t *testing.T) {
	for _, c := range []struct {
		name      string
		used      uint64
		was, want bool
	}{
		{"low", 50, false, false},
		{"at the band's top", 80, false, false},
		{"above it", 81, false, true},
		{"kept in the band", 75, true, true},
		{"kept at its foot", 70, true, true},
		{"cleared below it", 69, true, false},
		{"over the limit", 120, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := underPressure(c.used, 100, c.was); got != c.want {
				t.Fatalf("underPressure(%d of 100, was %v) = %v, want %v", c.used, c.was, got, c.want)
			}
		})
	}
}
