package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModelMeasuresEveryMethod(t *testing.T) {
	p := DefaultParams()
	p.Horizon = 50_000
	for _, n := range []int{2, 16, 40} {
		p.Ranks = n
		for _, method := range methods {
			r, err := Run(method, p)
			require.NoError(t, err, "%s at %d ranks", method, n)
			require.Positive(t, r.Rounds, "%s at %d ranks", method, n)
			require.Positive(t, r.LagMean, "%s at %d ranks", method, n)
			require.GreaterOrEqual(t, r.LagMax, r.LagMean)
			// Every value needs at least a broadcast or a collective: n-1 messages.
			require.GreaterOrEqual(t, r.MsgsPerRound, float64(n-1), "%s at %d ranks", method, n)
		}
	}
	// The token's round grows with the ring: at 16 ranks its lag exceeds that at 2.
	p.Ranks = 2
	small, err := Run(methodAsync, p)
	require.NoError(t, err)
	p.Ranks = 16
	large, err := Run(methodAsync, p)
	require.NoError(t, err)
	require.Greater(t, large.LagMean, 4*small.LagMean)
	_, err = Run("token", p)
	require.ErrorContains(t, err, `unknown GVT method "token"`)
}

func TestRunPrintsTableAndPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "scale.png")
	var out bytes.Buffer
	require.NoError(t, run([]string{"-ranks", "2,4", "-horizon", "20000", "-plot", png}, &out))
	require.Equal(t, len(methods)*2, strings.Count(out.String(), "\n| ")-1, out.String())
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
	require.ErrorContains(t, run([]string{"-ranks", "1"}, &out), "not a rank count of at least 2")
}
