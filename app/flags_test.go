package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGNUFlagForms: every kind of flag takes --flag value and --flag=value, a boolean
// also the word after it or nothing, and a single dash still works.
func TestGNUFlagForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		check func(*testing.T, *invocation)
	}{
		{"int spaced", []string{"--time-warp-worker-threads", "3"}, func(t *testing.T, inv *invocation) { require.Equal(t, 3, inv.o.workers) }},
		{"int equals", []string{"--time-warp-worker-threads=3"}, func(t *testing.T, inv *invocation) { require.Equal(t, 3, inv.o.workers) }},
		{"int one dash", []string{"-time-warp-worker-threads", "3"}, func(t *testing.T, inv *invocation) { require.Equal(t, 3, inv.o.workers) }},
		{"float negative value", []string{"--time-warp-optimism-window", "-1"}, func(t *testing.T, inv *invocation) { require.Equal(t, -1.0, inv.o.window) }},
		{"string spaced", []string{"--simulation-type", "sequential"}, func(t *testing.T, inv *invocation) { require.Equal(t, "sequential", inv.o.simType) }},
		{"bool false spaced", []string{"--time-warp-remote-safe", "false"}, func(t *testing.T, inv *invocation) { require.False(t, inv.o.remoteSafe) }},
		{"bool off spaced", []string{"--time-warp-remote-safe", "off"}, func(t *testing.T, inv *invocation) { require.False(t, inv.o.remoteSafe) }},
		{"bool equals", []string{"--time-warp-remote-safe=false"}, func(t *testing.T, inv *invocation) { require.False(t, inv.o.remoteSafe) }},
		{"bool alone", []string{"--max-sim-time-inclusive", "--seed", "4"}, func(t *testing.T, inv *invocation) {
			require.True(t, inv.o.inclusive)
			require.Equal(t, uint64(4), inv.o.seed)
		}},
		{"bool on spaced", []string{"--max-sim-time-inclusive", "on"}, func(t *testing.T, inv *invocation) { require.True(t, inv.o.inclusive) }},
		{"progress on", []string{"--progress", "on"}, func(t *testing.T, inv *invocation) { require.Equal(t, progressMode("on"), inv.o.progress) }},
		{"progress off", []string{"--progress", "off"}, func(t *testing.T, inv *invocation) { require.Equal(t, progressMode("off"), inv.o.progress) }},
		{"progress alone", []string{"--progress", "--lps", "8"}, func(t *testing.T, inv *invocation) { require.Equal(t, progressMode("on"), inv.o.progress) }},
		{"size", []string{"--max-memory", "2GiB"}, func(t *testing.T, inv *invocation) { require.Equal(t, uint64(2<<30), inv.o.maxMemory.limit()) }},
		{"model flag", []string{"--lps", "8", "--remote=0.5"}, func(t *testing.T, inv *invocation) {
			require.Equal(t, "8", inv.fs.Lookup("lps").Value.String())
			require.Equal(t, "0.5", inv.fs.Lookup("remote").Value.String())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, parsed(t, "phold", tc.args...)) })
	}
}

// TestHelpGroups: 'warped help MODEL' lists the model's flags first, then the kernel's,
// time warp's, the GPU's and output's, each flag under its group.
func TestHelpGroups(t *testing.T) {
	code, out, _ := warped("help", "pcs")
	require.Equal(t, 0, code)
	var at []int
	for _, h := range []string{"\nModel flags:\n", "\nKernel flags:\n", "\nTime warp flags:\n",
		"\nGPU flags (--gpu offload under time warp; --simulation-type gpu):\n", "\nOutput flags:\n"} {
		i := strings.Index(out, h)
		require.GreaterOrEqual(t, i, 0, h)
		at = append(at, i)
	}
	require.IsIncreasing(t, at)
	for flag, group := range map[string]int{"--num-cells-x int": 0, "--channel-cnt int": 0, "--seed uint64": 1,
		"--time-warp-remote-safe\n": 2, "--gpu string": 3, "--gpu-slots int": 3, "--stats-file string": 4, "--progress\n": 4} {
		i := strings.Index(out, "  "+flag)
		require.Greater(t, i, at[group], flag)
		if group+1 < len(at) {
			require.Less(t, i, at[group+1], flag)
		}
	}
}

var stateSavingLine = regexp.MustCompile(`(?m)^  State saving: +(.*)$`)

// TestDumpConfigReproducesRun: --dump-config writes the flags that were set and nothing
// else, and a --config of it is the same run: the same digest and the same state-saving
// kind (a written default period would turn auto's reverse computation into periodic
// state saving; a written worker count would pin this machine's CPUs).
func TestDumpConfigReproducesRun(t *testing.T) {
	args := []string{"phold", "--lps", "32", "--max-sim-time", "15", "--seed", "9", "--time-warp-worker-threads", "2",
		"--time-warp-remote-safe", "false"}
	code, dump, errOut := warped(append(args, "--dump-config")...)
	require.Equal(t, 0, code, errOut)
	var kv map[string]any
	require.NoError(t, json.Unmarshal([]byte(dump), &kv))
	require.Equal(t, map[string]any{"lps": 32.0, "max-sim-time": 15.0, "seed": 9.0, "time-warp-worker-threads": 2.0,
		"time-warp-remote-safe": false}, kv)
	cfg := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(cfg, []byte(dump), 0o644))

	code, direct, errOut := warped(args...)
	require.Equal(t, 0, code, errOut)
	code, again, errOut := warped("phold", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, digestOf(t, direct), digestOf(t, again))
	want := stateSavingLine.FindStringSubmatch(direct)
	require.NotNil(t, want, direct)
	require.Contains(t, want[1], "reverse", "phold's LPs reverse their events under auto")
	require.Equal(t, want, stateSavingLine.FindStringSubmatch(again))

	// The stats file records the same, less the outputs' paths: its config reproduces the
	// run too, and a run from it writes over none of the first run's outputs.
	dir := t.TempDir()
	stats, trace := filepath.Join(dir, "s.json"), filepath.Join(dir, "t.csv")
	code, _, errOut = warped("phold", "--config", cfg, "--stats-file", stats, "--trace", trace, "--trace-every", "100")
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(stats)
	require.NoError(t, err)
	var st struct{ Config json.RawMessage }
	require.NoError(t, json.Unmarshal(data, &st))
	var recorded map[string]any
	require.NoError(t, json.Unmarshal(st.Config, &recorded))
	kv["trace-every"] = 100.0 // not a path: kept
	require.Equal(t, kv, recorded, "the flags without stats-file and trace")
	rerun := filepath.Join(dir, "rerun.json")
	require.NoError(t, os.WriteFile(rerun, st.Config, 0o644))
	code, again, errOut = warped("phold", "--config", rerun)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, digestOf(t, direct), digestOf(t, again))
	after, err := os.ReadFile(stats)
	require.NoError(t, err)
	require.Equal(t, data, after, "the rerun left the first run's stats file alone")
}

// TestVersion: 'warped version' prints the module, its version, the commit (or why there
// is none), the Go version and the build tags.
func TestVersion(t *testing.T) {
	var b strings.Builder
	writeVersion(&b, "warped", buildInfo{module: "github.com/warpedgo/warped", version: "v1.2.3", commit: "abc123",
		modified: true, goVersion: "go1.26.8", tags: "mpi"})
	out := b.String()
	for _, s := range []string{"warped v1.2.3\n", "abc123 (with uncommitted changes)", "go1.26.8", "build tags: mpi (runs span processes under mpirun)"} {
		require.Contains(t, out, s)
	}
	b.Reset()
	writeVersion(&b, "warped", buildInfo{module: "github.com/warpedgo/warped", version: "(devel)", goVersion: "go1.26.8"})
	require.Contains(t, b.String(), "commit:     unknown")
	require.Contains(t, b.String(), "build tags: none")
}
