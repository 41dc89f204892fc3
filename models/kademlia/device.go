package kademlia

import (
	"math"

	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
)

var _ kernel.DeviceModeler = (*Node)(nil)

// The device model (--simulation-type gpu) relies on the device loop's state saving
// (gpuwarp.Model.SaveState), as the CPU dispatchers rely on periodic state saving: a
// shortlist merge drops its farthest entries, which no reverse handler could restore
// without keeping them. Its handler (deviceSource) is Handle in CUDA, reading the overlay
// from the model's parameters, where deviceParams lays it out once.

// The layout of a node's state words (PackState): the counters, the lookup's key, start
// time and flags, then one word per shortlist entry (K of them).
const (
	wordStarted = iota
	wordCompleted
	wordRequests
	wordServed
	wordStale
	wordHops
	wordLatency // float64 bits
	wordKey
	wordBegin // float64 bits
	wordFlags // Active | InFlight<<8 | Depth<<16 | List.N<<24
	wordList  // entry i: Node | Status<<32 | Depth<<40
)

// DeviceStateWords is the number of state words of a node on the device with bucket size
// k: the counters and the lookup's fields, and a word per shortlist entry.
func DeviceStateWords(k int) int { return wordList + k }

// The layout of the device parameters (deviceParams): the constants, then the overlay's
// arrays, each at the offset its word gives; ids and dir take a word per element, start,
// contacts and dstart two 32-bit elements per word (little-endian, read as 32-bit arrays).
const (
	paramK = iota
	paramAlpha
	paramInterval // LookupInterval's bits
	paramMin      // MinDelay's bits
	paramSpread   // (MeanDelay - MinDelay)'s bits, the exponential part's mean
	paramNodes
	paramIDs
	paramStart
	paramContacts
	paramDStart
	paramDir // bucket b: first contact | index<<32
	paramCount
)

// PackState writes the node's state into dst (DeviceStateWords(K) words) for the device
// loop.
func (n *Node) PackState(dst []uint64) {
	s := &n.S
	dst[wordStarted], dst[wordCompleted], dst[wordRequests] = s.Started, s.Completed, s.Requests
	dst[wordServed], dst[wordStale], dst[wordHops] = s.Served, s.Stale, s.Hops
	dst[wordLatency], dst[wordKey], dst[wordBegin] = math.Float64bits(s.Latency), s.Key, math.Float64bits(s.Begin)
	var active uint64
	if s.Active {
		active = 1
	}
	dst[wordFlags] = active | uint64(s.InFlight)<<8 | uint64(s.Depth)<<16 | uint64(s.List.N)<<24
	for i := range dst[wordList:] {
		dst[wordList+i] = uint64(s.List.Node[i]) | uint64(s.List.Status[i])<<32 | uint64(s.List.Depth[i])<<40
	}
}

// UnpackState sets the node's state from src, as PackState wrote it or the device loop
// left it; shortlist entries beyond K are zero, as they are on the CPU.
func (n *Node) UnpackState(src []uint64) {
	s := &n.S
	f := src[wordFlags]
	*s = State{
		Started: src[wordStarted], Completed: src[wordCompleted], Requests: src[wordRequests],
		Served: src[wordServed], Stale: src[wordStale], Hops: src[wordHops],
		Latency: math.Float64frombits(src[wordLatency]),
		Active:  f&0xff != 0, InFlight: uint8(f >> 8), Depth: uint8(f >> 16),
		Key: src[wordKey], Begin: math.Float64frombits(src[wordBegin]),
	}
	s.List.N = uint8(f >> 24)
	for i, e := range src[wordList:] {
		s.List.Node[i], s.List.Status[i], s.List.Depth[i] = uint32(e), uint8(e>>32), uint8(e>>40)
	}
}

// DeviceModel implements kernel.DeviceModeler: the model's device code, built once for
// all nodes on the first call (the overlay's tables are copied into its parameters, which
// a CPU run never needs).
func (n *Node) DeviceModel() *gpuwarp.Model {
	n.m.deviceOnce.Do(func() { n.m.device = n.m.deviceModel() })
	return n.m.device
}

// deviceModel builds m's device model.
func (m *shared) deviceModel() *gpuwarp.Model {
	return &gpuwarp.Model{
		Name:       "kademlia",
		Source:     deviceSource,
		SaveState:  true,
		StateWords: DeviceStateWords(m.K),
		OutSlots:   m.Alpha, // a start or a reply asks at most Alpha nodes; every other handling sends at most one event
		Words:      true,
		Params:     m.deviceParams(),
	}
}

// deviceParams lays out the constants and the overlay for the device handler (see the
// param constants).
func (m *shared) deviceParams() []uint64 {
	nw := m.net
	p := make([]uint64, paramCount, paramCount+len(nw.ids)+len(nw.dir)+
		(len(nw.start)+len(nw.contacts)+len(nw.dstart))/2+3)
	p[paramK], p[paramAlpha], p[paramNodes] = uint64(m.K), uint64(m.Alpha), uint64(len(nw.ids))
	p[paramInterval], p[paramMin] = math.Float64bits(m.LookupInterval), math.Float64bits(m.MinDelay)
	p[paramSpread] = math.Float64bits(m.MeanDelay - m.MinDelay) // as delay computes it
	p[paramIDs] = uint64(len(p))
	p = append(p, nw.ids...)
	p[paramStart] = uint64(len(p))
	p = appendPairs(p, nw.start)
	p[paramContacts] = uint64(len(p))
	p = appendPairs(p, nw.contacts)
	p[paramDStart] = uint64(len(p))
	p = appendPairs(p, nw.dstart)
	p[paramDir] = uint64(len(p))
	for _, b := range nw.dir {
		p = append(p, uint64(b.first)|uint64(b.index)<<32)
	}
	return p
}

// appendPairs appends a to p two elements per word, the first in the low half, so that the
// device reads the words as an array of 32-bit elements.
func appendPairs(p []uint64, a []uint32) []uint64 {
	for i := 0; i < len(a); i += 2 {
		w := uint64(a[i])
		if i+1 < len(a) {
			w |= uint64(a[i+1]) << 32
		}
		p = append(p, w)
	}
	return p
}
