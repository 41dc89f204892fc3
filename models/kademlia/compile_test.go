package kademlia

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/internal/ptxcheck"
)

// TestCompilePTX compiles Kademlia's device loop with NVRTC, as a run on a GPU compiles
// it (the tests on the CUDA stand-in build it as host C++), at the defaults and at small
// ones (k sizes the state that the loop saves, alpha the events a handling sends).
func TestCompilePTX(t *testing.T) {
	for _, tc := range [][2]int{{DefaultConfig().K, DefaultConfig().Alpha}, {2, 1}} {
		t.Run(fmt.Sprintf("k %d, alpha %d", tc[0], tc[1]), func(t *testing.T) {
			c := DefaultConfig()
			c.Nodes, c.K, c.Alpha = 64, tc[0], tc[1]
			lps, err := New(c)
			require.NoError(t, err)
			ptxcheck.Device(t, lps[0].(*Node).DeviceModel(), 0)
		})
	}
}
