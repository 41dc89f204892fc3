package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSignalStopsTheRunCleanly runs a model under a context that a signal ended, as
// main's handler does: one line naming the signal, exit 1, and no output file written.
func TestSignalStopsTheRunCleanly(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want string
	}{
		{os.Interrupt, "interrupted by SIGINT"},
		{syscall.SIGTERM, "interrupted by SIGTERM"},
		{syscall.SIGHUP, "interrupted by SIGHUP"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&interruption{tc.sig})
			var out, errOut bytes.Buffer
			code := run(ctx, []string{"phold", "--lps", "16", "--max-sim-time", "50", "--gpu", "off",
				"--stats-file", filepath.Join(dir, "s.json"), "--report", filepath.Join(dir, "r.html"),
				"--series-file", filepath.Join(dir, "series.csv")}, &out, &errOut)
			require.Equal(t, exitRun, code)
			require.Equal(t, "warped phold: "+tc.want+"\n", errOut.String())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "an interrupted run writes nothing")
		})
	}
}
