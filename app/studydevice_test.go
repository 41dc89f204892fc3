//go:build linux

package app

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStudyDeviceLoops runs PHOLD, PCS and Kademlia studies with --simulation-type gpu on
// the CUDA stand-in: the runs of each end time share a device loop (more loops with --group-runs),
// and every run's digest and results equal the same study's sequential runs'.
func TestStudyDeviceLoops(t *testing.T) {
	phold := writeSpec(t, "model: phold\nflags: {lps: 24}\nparameters:\n  remote: [0.2, 0.9]\n  max-sim-time: [8, 12]\nreplications: 2\nresults: [events, remote_events]\n")
	pcs := writeSpec(t, "model: pcs\nflags: {num-cells-x: 4, max-sim-time: 50}\nparameters:\n  channel-cnt: [5, 10]\n  num-cells-y: [3, 4]\nseed: 11\n")
	kademlia := writeSpec(t, "model: kademlia\nflags: {nodes: 100, max-sim-time: 300}\nreplications: 3\n")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, spec string
		extra      []string
		loops      string
	}{
		{"phold by end time", phold, nil, "device: 8 runs in 2 device loop(s)"},
		{"phold 3 runs a loop", phold, []string{"--group-runs", "3"}, "device: 8 runs in 4 device loop(s)"},
		{"pcs of several sizes", pcs, nil, "device: 4 runs in 1 device loop(s)"},
		{"kademlia on state saving", kademlia, nil, "device: 3 runs in 1 device loop(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := warped("study", tc.spec, "--out", filepath.Join(dir, tc.name+" seq"), "--progress=off")
			require.Equal(t, 0, code, stderr)
			want := readCSV(t, filepath.Join(dir, tc.name+" seq", "runs.csv"))
			out := filepath.Join(dir, tc.name)
			code, stdout, stderr := warpedStandin(t, "", append([]string{"study", tc.spec, "--out", out, "--progress=off",
				"--simulation-type", "gpu"}, tc.extra...)...)
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, tc.loops)
			got := readCSV(t, filepath.Join(out, "runs.csv"))
			require.Len(t, got, len(want))
			for i := range want {
				// Every column but the wall time (the last).
				require.Equal(t, want[i][:len(want[i])-1], got[i][:len(got[i])-1], "row %d", i)
			}
		})
	}
	t.Run("device out of memory", func(t *testing.T) {
		code, _, stderr := warpedStandin(t, "alloc", "study", phold, "--out", filepath.Join(dir, "oom"), "--progress=off",
			"--simulation-type", "gpu")
		require.Equal(t, exitRun, code)
		require.Regexp(t, `(?m)^warped study: the device loop of runs 0, 1, 4, 5: run failed: .*CUDA_ERROR_OUT_OF_MEMORY.*; 4 runs of 96 LPs in all share this loop: fewer runs a loop may fit \(a study's --group-runs\); the runs finished before are in .*journal.jsonl: mend the cause, then go on with 'warped study .* --resume'$`, stderr)
	})
	t.Run("no device code", func(t *testing.T) {
		spec := writeSpec(t, "model: epidemic\nflags: {watts-strogatz-k: 4, num-locations: 6, population: 20, max-sim-time: 50}\nreplications: 2\nresults: [infections]\n")
		code, _, stderr := warpedStandin(t, "", "study", spec, "--out", filepath.Join(dir, "epi"), "--progress=off",
			"--simulation-type", "gpu")
		require.Equal(t, exitRun, code)
		require.Regexp(t, `^warped study: run 0 \(.*\): LP .* has no device code: --simulation-type gpu runs models whose LPs implement kernel.DeviceModeler .*\n$`, stderr[len("study: 2 runs to do, gpu, several to a device loop (up to 1048576 LPs a loop)\n"):])
	})
}
