// Package kademlia is a Kademlia peer-to-peer overlay (Maymounkov and Mazières, 2002) doing
// node lookups, the second model of Liu and Andelfinger's "Time Warp on the GPU: design and
// assessment" (PADS 2017), for the CPU dispatchers and the device-resident time warp
// (--simulation-type gpu, device.go).
//
// Each of Nodes nodes is one LP with a 64-bit id (NodeID: distinct, uniformly spread) and
// a routing table of k-buckets: bucket i holds at most K of the nodes at XOR distance
// [2^i, 2^(i+1)). A node starts a lookup of a random 64-bit key after an exponential wait
// of mean LookupInterval, and its next one that long after each lookup ends. A lookup is
// Kademlia's iterative node lookup: the initiator's shortlist starts as the K closest
// contacts of its own table; it keeps up to Alpha FIND_NODE requests in flight, each to
// the closest shortlist node not asked yet; a reply merges the responder's K closest
// contacts into the shortlist (which keeps the K closest seen); the lookup ends when every
// node of the shortlist has replied: the K closest nodes it can learn of are known. A
// message takes MinDelay plus an exponential delay of mean MeanDelay - MinDelay, so the
// model has a lookahead of MinDelay.
//
// The paper's exact parameters for its Kademlia model could not be found through the
// search tools; the defaults are Kademlia's own (k = 20, alpha = 3, from Maymounkov and
// Mazières) with 4096 nodes, ids of 64 bits instead of 160 (so that a request fits an
// event's four inline words), a mean message delay of 50 time units (read as ms) with a
// minimum of 10, and a lookup every 1000 on average per node. The network is static (no
// churn, no failures, so no timeouts): routing tables are built once (buildNetwork) and
// only read, and a reply names its responder, whose K closest contacts the initiator
// reads from the responder's table, the contacts the reply would carry (they do not fit
// four words). That keeps the event pattern: a request to a remote node, which handles it
// and replies.
//
// Every event carries its data in kernel.Words: a start (a node's own timer), a FIND_NODE
// (key, initiator, lookup number, depth) and a reply (key, lookup number, responder,
// depth). The state is fixed-size (State, with a Shortlist of MaxK entries) and the tables
// are flat arrays, which the device handler mirrors; every draw is from the LP's
// generator. Reverse computation is impractical (a merge drops the farthest entries), so
// the model relies on the kernel's periodic state saving, and on the device on the loop's
// state saving (gpuwarp.Model.SaveState).
//
// The results are the lookups started and completed, their mean hops (the most rounds of
// request and reply on a chain from the initiator, Depth) and mean latency (end minus
// start), the FIND_NODE requests sent, and the replies that came after their lookup ended
// (stale). The paper measures the committed event rate, which the kernel reports.
package kademlia

import (
	"fmt"
	"math"
	"sync"

	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
)

// Config holds the model's parameters.
type Config struct {
	// Nodes is the number of nodes (LPs).
	Nodes int `json:"nodes"`
	// K is the bucket size and the number of closest nodes a lookup seeks.
	K int `json:"bucket-size"`
	// Alpha is the number of FIND_NODE requests a lookup keeps in flight.
	Alpha int `json:"alpha"`
	// LookupInterval is the mean time from the end of a node's lookup to its next.
	LookupInterval float64 `json:"lookup-interval"`
	// MeanDelay is a message's mean delay, MinDelay its least.
	MeanDelay float64 `json:"mean-delay"`
	MinDelay  float64 `json:"min-delay"`
	// IDSeed chooses the nodes' ids and which contacts fill a full bucket.
	IDSeed uint64 `json:"id-seed"`
}

// DefaultConfig returns 4096 nodes, Kademlia's k = 20 and alpha = 3, a lookup every 1000
// time units per node, messages taking 50 on average and at least 10, id seed 1.
func DefaultConfig() Config {
	return Config{Nodes: 4096, K: 20, Alpha: 3, LookupInterval: 1000, MeanDelay: 50, MinDelay: 10, IDSeed: 1}
}

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Nodes < 2:
		return fmt.Errorf("kademlia: --nodes must be at least 2 (a lookup needs another node), got %d", c.Nodes)
	case c.Nodes > math.MaxUint32:
		return fmt.Errorf("kademlia: --nodes must be at most %d, got %d", uint32(math.MaxUint32), c.Nodes)
	case c.K < 1 || c.K > MaxK:
		return fmt.Errorf("kademlia: --bucket-size must be in [1, %d], got %d", MaxK, c.K)
	case c.Alpha < 1 || c.Alpha > c.K:
		return fmt.Errorf("kademlia: --alpha must be in [1, --bucket-size %d], got %d", c.K, c.Alpha)
	case !(c.LookupInterval >= 0) || !finite(c.LookupInterval):
		return fmt.Errorf("kademlia: --lookup-interval must be a finite number >= 0, got %v", c.LookupInterval)
	case !(c.MinDelay >= 0) || !finite(c.MinDelay):
		return fmt.Errorf("kademlia: --min-delay must be a finite number >= 0, got %v", c.MinDelay)
	case !(c.MeanDelay >= c.MinDelay) || !finite(c.MeanDelay):
		return fmt.Errorf("kademlia: --mean-delay must be a finite number >= --min-delay (%v), got %v", c.MinDelay, c.MeanDelay)
	}
	return nil
}

// The event kinds, in Words[0].
const (
	// Start begins a node's next lookup (its own timer).
	Start uint64 = iota
	// FindNode asks a node for its closest contacts to a key: Words[1] the key, Words[2]
	// the initiator and the lookup number (high 32 bits), Words[3] the request's depth.
	FindNode
	// Reply answers a FindNode: Words[1] the key, Words[2] the lookup number, Words[3] the
	// responder and the depth (high 32 bits).
	Reply
)

// State is one node's state: its counters and its current (or last) lookup.
type State struct {
	// Started and Completed count the node's lookups.
	Started, Completed uint64
	// Requests counts the FIND_NODE requests the node sent, Served those it answered,
	// Stale the replies that came after their lookup ended.
	Requests, Served, Stale uint64
	// Hops and Latency sum the completed lookups' hops and durations.
	Hops    uint64
	Latency float64
	// Active says whether a lookup is in progress; Key, Begin, InFlight and Depth are
	// its key, start time, requests in flight and the greatest depth of a reply so far.
	Active   bool
	InFlight uint8
	Depth    uint8
	Key      uint64
	Begin    float64
	// List is the lookup's shortlist.
	List Shortlist
}

// shared is what the nodes of one model read: the configuration and the overlay, and the
// device model, built on the first DeviceModel call.
type shared struct {
	Config
	net        *network
	deviceOnce sync.Once
	device     *gpuwarp.Model
}

// Node is one Kademlia node.
type Node struct {
	kernel.Plain[State]
	m     *shared
	index uint32
}

// New returns the nodes of a Kademlia model, building its overlay.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &shared{Config: c, net: buildNetwork(c.Nodes, c.K, c.IDSeed)}
	nodes := make([]Node, c.Nodes)
	lps := make([]kernel.LogicalProcess, c.Nodes)
	for i := range nodes {
		nodes[i] = Node{m: m, index: uint32(i)}
		lps[i] = &nodes[i]
	}
	return lps, nil
}

// Name returns "Node_<index>".
func (n *Node) Name() string { return fmt.Sprintf("Node_%d", n.index) }

// Lookahead returns MinDelay: every message to another node takes at least that
// (kernel.Lookahead).
func (n *Node) Lookahead() kernel.Time { return n.m.MinDelay }

// Init schedules the node's first lookup.
func (n *Node) Init(ctx *kernel.Context) {
	ctx.SendWords(ctx.Self(), ctx.RNG().Exponential(n.m.LookupInterval), kernel.Words{Start})
}

// delay draws a message's delay.
func (m *shared) delay(g *kernel.RNG) kernel.Time {
	return m.MinDelay + g.Exponential(m.MeanDelay-m.MinDelay)
}

// Handle handles a start, a FIND_NODE or a reply.
func (n *Node) Handle(ctx *kernel.Context, ev *kernel.Event) {
	s, m, g, w := &n.S, n.m, ctx.RNG(), ev.Words
	switch w[0] {
	case Start:
		s.Started++
		s.Active, s.InFlight, s.Depth = true, 0, 0
		s.Key = uint64(g.Next())<<32 | uint64(g.Next())
		s.Begin = ctx.Now()
		s.List = Shortlist{}
		var own [MaxK]uint32
		for _, v := range own[:m.net.closest(n.index, s.Key, m.K, &own)] {
			s.List.add(m.net, s.Key, m.K, n.index, v, 1)
		}
		n.ask(ctx)
	case FindNode:
		s.Served++
		from, lookup := kernel.LPID(uint32(w[2])), w[2]>>32
		ctx.SendWords(from, ctx.Now()+m.delay(g), kernel.Words{Reply, w[1], lookup, uint64(n.index) | w[3]<<32})
	case Reply:
		if !s.Active || w[2] != s.Started&math.MaxUint32 || w[1] != s.Key {
			s.Stale++
			return
		}
		responder, depth := uint32(w[3]), uint8(w[3]>>32)
		s.InFlight--
		s.Depth = max(s.Depth, depth)
		if i := s.List.find(responder); i >= 0 {
			s.List.Status[i] = answered
		}
		s.List.merge(m.net, s.Key, m.K, responder, n.index, min(depth, math.MaxUint8-1)+1)
		if s.List.done() {
			s.Active = false
			s.Completed++
			s.Hops += uint64(s.Depth)
			s.Latency += ctx.Now() - s.Begin
			ctx.SendWords(ctx.Self(), ctx.Now()+g.Exponential(m.LookupInterval), kernel.Words{Start})
			return
		}
		n.ask(ctx)
	default:
		panic(fmt.Sprintf("kademlia: unknown event kind %d", w[0]))
	}
}

// ask sends FIND_NODE requests to the closest shortlist nodes not asked yet, until Alpha
// are in flight.
func (n *Node) ask(ctx *kernel.Context) {
	s, m := &n.S, n.m
	for i := 0; i < int(s.List.N) && int(s.InFlight) < m.Alpha; i++ {
		if s.List.Status[i] != unqueried {
			continue
		}
		s.List.Status[i] = asked
		s.InFlight++
		s.Requests++
		ctx.SendWords(kernel.LPID(s.List.Node[i]), ctx.Now()+m.delay(ctx.RNG()),
			kernel.Words{FindNode, s.Key, uint64(n.index) | (s.Started&math.MaxUint32)<<32, uint64(s.List.Depth[i])})
	}
}

// Results are the model's totals over all nodes.
type Results struct {
	Started     uint64  `json:"lookups_started"`
	Completed   uint64  `json:"lookups_completed"`
	MeanHops    float64 `json:"mean_hops"`
	MeanLatency float64 `json:"mean_latency"`
	Requests    uint64  `json:"find_node_requests"`
	Stale       uint64  `json:"stale_replies"`
}

// Summarize adds up the nodes' counts after a run; the means are over completed lookups
// (0 when none completed).
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	var hops uint64
	var latency float64
	for _, l := range lps {
		s := &l.(*Node).S
		r.Started += s.Started
		r.Completed += s.Completed
		r.Requests += s.Requests
		r.Stale += s.Stale
		hops += s.Hops
		latency += s.Latency
	}
	if r.Completed > 0 {
		r.MeanHops = float64(hops) / float64(r.Completed)
		r.MeanLatency = latency / float64(r.Completed)
	}
	return r
}
