package kademlia

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

// TestDevicePackState checks that UnpackState reads back what PackState wrote, a full
// shortlist of k entries included, and that the device model has a word per entry.
func TestDevicePackState(t *testing.T) {
	c := small()
	lps, err := New(c)
	require.NoError(t, err)
	n := lps[0].(*Node)
	want := State{Started: 9, Completed: 7, Requests: 50, Served: 41, Stale: 2, Hops: 19, Latency: 1234.5,
		Active: true, InFlight: 2, Depth: 3, Key: 0xdeadbeefcafef00d, Begin: 977.25}
	want.List.N = uint8(c.K)
	for i := range c.K {
		want.List.Node[i], want.List.Status[i], want.List.Depth[i] = uint32(100+i), uint8(i%3), uint8(i+1)
	}
	n.S = want
	words := make([]uint64, DeviceStateWords(c.K))
	n.PackState(words)
	n.S = State{}
	n.UnpackState(words)
	require.Equal(t, want, n.S)
	require.Equal(t, DeviceStateWords(c.K), n.DeviceModel().StateWords)
}

// TestDeviceModelBuiltOnce checks that every node returns the one device model, on state
// saving, with Alpha output slots, and that its parameters hold the overlay: every id and
// every routing table, read back as the device reads them.
func TestDeviceModelBuiltOnce(t *testing.T) {
	c := small()
	lps, err := New(c)
	require.NoError(t, err)
	m := lps[0].(kernel.DeviceModeler).DeviceModel()
	for _, l := range lps {
		require.Same(t, m, l.(kernel.DeviceModeler).DeviceModel())
	}
	require.True(t, m.SaveState, "a merge cannot be reversed: the model needs state saving")
	require.Equal(t, c.Alpha, m.OutSlots)
	require.True(t, m.Words)
	p := m.Params
	nw := lps[0].(*Node).m.net
	// u32 reads element i of the 32-bit table at offset word off, as kad_u32 does.
	u32 := func(off int, i int) uint32 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], p[int(p[off])+i/2])
		return binary.LittleEndian.Uint32(b[4*(i%2):])
	}
	require.Equal(t, uint64(c.Nodes), p[paramNodes])
	for u := range c.Nodes {
		require.Equal(t, nw.ids[u], p[int(p[paramIDs])+u])
		require.Equal(t, nw.start[u+1], u32(paramStart, u+1))
		require.Equal(t, nw.dstart[u+1], u32(paramDStart, u+1))
		for j := nw.start[u]; j < nw.start[u+1]; j++ {
			require.Equal(t, nw.contacts[j], u32(paramContacts, int(j)))
		}
	}
	for b, d := range nw.dir {
		require.Equal(t, uint64(d.first)|uint64(d.index)<<32, p[int(p[paramDir])+b])
	}
	require.Equal(t, int(p[paramDir])+len(nw.dir), len(p), "the directory is the last table")
}
