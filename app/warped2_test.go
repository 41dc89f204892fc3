package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpSaysHowModelsStandToWARPED2: 'warped help' of each model after WARPED2's lists
// what remains different from WARPED2's sources, end time first.
func TestHelpSaysHowModelsStandToWARPED2(t *testing.T) {
	for name, cites := range map[string][]string{
		"pcs":     {"pcs_sim.cpp", "TS_OFFSET"},
		"traffic": {"traffic.cpp at 18a8a0e:20-22", "[-99, 100]"},
		"airport": {"--variant warped2", "airport.cpp:19-22"},
	} {
		code, out, _ := warped("help", name)
		require.Equal(t, 0, code)
		require.Contains(t, out, "Against WARPED2 (wilseypa/warped2-models):", name)
		require.Contains(t, out, "use --max-sim-time-inclusive", name)
		for _, c := range cites {
			require.Contains(t, out, c, name)
		}
	}
}

// TestAirportWARPED2Variant: WARPED2's airport runs from the command line without runways,
// and time warp commits its sequential digest; a wrong variant is a usage error.
func TestAirportWARPED2Variant(t *testing.T) {
	args := []string{"airport", "--variant", "warped2", "--num-airports-x", "5", "--num-airports-y", "4",
		"--num-planes", "8", "--max-sim-time", "800", "--max-sim-time-inclusive"}
	code, out, errOut := warped(append(args, "--simulation-type", "sequential")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Runway holds:")
	require.Regexp(t, `Landings: +0\n`, out)
	want := digestOf(t, out)
	code, out, errOut = warped(append(args, "--time-warp-worker-threads", "3", "--time-warp-check-rollbacks")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, digestOf(t, out))

	code, out, _ = warped("airport", "--num-airports-x", "5", "--num-airports-y", "4", "--max-sim-time", "800")
	require.Equal(t, 0, code)
	require.NotEqual(t, want, digestOf(t, out), "the runway variant is another model")

	code, _, errOut = warped("airport", "--variant", "fujimoto")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--variant must be runways or warped2, got "fujimoto"`)
}
