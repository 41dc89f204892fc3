//go:build linux

package gpuwarp_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/gpuoffload/standin"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
)

// The device loop's tests run on a GPU where there is a driver, else on the CUDA
// stand-in (package gpuoffload/standin), which TestMain builds with the system C++
// compiler; without either they skip, saying why.

// why says why no CUDA library is available, or "".
var why string

func TestMain(m *testing.M) { standin.Main(m.Run, &why) }

func need(t *testing.T) {
	t.Helper()
	if why != "" {
		t.Skip(why)
	}
}

// run runs PHOLD c to end with the dispatcher typ and returns the result and PHOLD's.
func run(t *testing.T, c phold.Config, end float64, typ string, g kernel.GPUConfig) (kernel.Result, phold.Results) {
	t.Helper()
	lps, err := phold.New(c)
	require.NoError(t, err)
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: 7, Type: typ, GPU: g}, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, phold.Summarize(lps)
}

// TestPHOLDDigest checks that the device loop gives the sequential digest and results in
// configurations that roll back a lot (unbounded optimism, remote events), overflow the
// lists (4 slots), and run several executions per iteration.
func TestPHOLDDigest(t *testing.T) {
	need(t)
	for _, tc := range []struct {
		name string
		lps  int
		end  float64
		mod  func(*phold.Config)
		gpu  kernel.GPUConfig
	}{
		{"defaults", 256, 20, nil, kernel.GPUConfig{}},
		{"unbounded", 256, 20, nil, kernel.GPUConfig{Bound: math.Inf(1)}},
		{"tight bound", 128, 20, nil, kernel.GPUConfig{Bound: 0.05}},
		{"all remote, 3 executions", 200, 15, func(c *phold.Config) { c.Remote = 1 }, kernel.GPUConfig{Executions: 3, Bound: 4}},
		{"4 slots, 4 start events", 64, 15, func(c *phold.Config) { c.StartEvents = 4; c.Remote = 0.5 }, kernel.GPUConfig{Slots: 4, Bound: math.Inf(1)}},
		{"8 slots, zero lookahead, grain", 100, 15, func(c *phold.Config) { c.Lookahead = 0; c.Grain = 7; c.StartEvents = 3 }, kernel.GPUConfig{Slots: 8, Executions: 2}},
		{"one LP", 1, 50, nil, kernel.GPUConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := phold.DefaultConfig()
			c.LPs = tc.lps
			if tc.mod != nil {
				tc.mod(&c)
			}
			want, wantRes := run(t, c, tc.end, kernel.Sequential, kernel.GPUConfig{})
			got, gotRes := run(t, c, tc.end, kernel.GPU, tc.gpu)
			require.Equal(t, want.Digest, got.Digest)
			require.Equal(t, wantRes, gotRes)
			require.Equal(t, want.Stats.EventsCommitted, got.Stats.EventsCommitted)
			require.Equal(t, want.Stats.FinalTime, got.Stats.FinalTime)
			t.Logf("%d committed, %d processed, %d rolled back", got.Stats.EventsCommitted, got.Stats.EventsProcessed,
				got.Stats.EventsRolledBack)
		})
	}
}

// TestStateBytes checks the state saving area's size: a copy of the state per slot, none
// for a model with a reverse handler.
func TestStateBytes(t *testing.T) {
	m := &gpuwarp.Model{StateWords: 30, SaveState: true}
	require.Equal(t, int64(4096*32*30*8), m.StateBytes(4096, 32))
	require.Equal(t, int64(1<<20)*32*30*8, m.StateBytes(1<<20, 32), "no int overflow at the paper's sizes")
	m.SaveState = false
	require.Zero(t, m.StateBytes(4096, 32))
}
