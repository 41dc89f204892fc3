package kademlia

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/internal/modeltest"
)

func small() Config {
	c := DefaultConfig()
	c.Nodes, c.K, c.Alpha = 300, 4, 2
	return c
}

func run(t *testing.T, c Config, end float64, seed uint64, wrap func(*Node) kernel.LogicalProcess) (kernel.Result, Results, []kernel.LogicalProcess) {
	t.Helper()
	lps, err := New(c)
	require.NoError(t, err)
	run := lps
	if wrap != nil {
		run = make([]kernel.LogicalProcess, len(lps))
		for i, l := range lps {
			run[i] = wrap(l.(*Node))
		}
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed}, run)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r, Summarize(lps), lps
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"one node", func(c *Config) { c.Nodes = 1 }, "--nodes must be at least 2"},
		{"too many nodes", func(c *Config) { c.Nodes = 1 << 33 }, "--nodes must be at most"},
		{"k zero", func(c *Config) { c.K = 0 }, "--bucket-size must be in [1, 32], got 0"},
		{"k too big", func(c *Config) { c.K = 33 }, "--bucket-size must be in [1, 32], got 33"},
		{"alpha zero", func(c *Config) { c.Alpha = 0 }, "--alpha must be in [1, --bucket-size 20], got 0"},
		{"alpha above k", func(c *Config) { c.Alpha = 21 }, "--alpha must be in [1, --bucket-size 20]"},
		{"negative interval", func(c *Config) { c.LookupInterval = -1 }, "--lookup-interval must be a finite number >= 0"},
		{"negative min delay", func(c *Config) { c.MinDelay = -1 }, "--min-delay must be a finite number >= 0"},
		{"mean below min", func(c *Config) { c.MeanDelay = 5 }, "--mean-delay must be a finite number >= --min-delay (10), got 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			_, err := New(c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, DefaultConfig().Validate())
}

// TestNetworkBuckets checks every routing table against its definition on a small
// network: node u's contacts in bucket i are at XOR distance [2^i, 2^(i+1)) from u, and a
// bucket holds min(k, the nodes at that distance) distinct contacts, u never among them.
func TestNetworkBuckets(t *testing.T) {
	for _, tc := range []struct {
		name string
		n, k int
	}{{"k 1", 50, 1}, {"k 4", 300, 4}, {"k larger than the network", 20, 32}} {
		t.Run(tc.name, func(t *testing.T) {
			nw := buildNetwork(tc.n, tc.k, 7)
			ids := map[uint64]bool{}
			for u := range uint32(tc.n) {
				ids[nw.ids[u]] = true
				var want, got [64]int
				for v := range uint32(tc.n) {
					if v != u {
						want[bucketOf(nw.ids[u], nw.ids[v])]++
					}
				}
				seen := map[uint32]bool{}
				for _, v := range nw.table(u) {
					require.NotEqual(t, u, v)
					require.False(t, seen[v], "node %d listed twice", v)
					seen[v] = true
					got[bucketOf(nw.ids[u], nw.ids[v])]++
				}
				for i := range 64 {
					require.Equal(t, min(want[i], tc.k), got[i], "node %d bucket %d", u, i)
				}
			}
			require.Len(t, ids, tc.n, "ids are distinct")
		})
	}
	require.Equal(t, 0, bucketOf(6, 7))
	require.Equal(t, 63, bucketOf(0, 1<<63))
}

// bruteClosest returns the k nodes closest to key by XOR distance, leaving out self.
func bruteClosest(nw *network, key uint64, k int, self uint32) []uint32 {
	var all []uint32
	for v := range uint32(len(nw.ids)) {
		if v != self {
			all = append(all, v)
		}
	}
	sort.Slice(all, func(a, b int) bool { return nw.dist(all[a], key) < nw.dist(all[b], key) })
	return all[:min(k, len(all))]
}

// checking wraps a node and checks each lookup as it completes against a brute-force
// search of all nodes.
type checking struct {
	*Node
	t       *testing.T
	checked *int
}

func (c *checking) Handle(ctx *kernel.Context, ev *kernel.Event) {
	before := c.S.Completed
	c.Node.Handle(ctx, ev)
	if c.S.Completed == before {
		return
	}
	*c.checked++
	want := bruteClosest(c.m.net, c.S.Key, c.m.K, c.index)
	got := c.S.List.Node[:c.S.List.N]
	require.Equal(c.t, want[0], got[0], "node %d key %x: the closest node", c.index, c.S.Key)
	require.Equal(c.t, want, slices.Clone(got), "node %d key %x: the k closest nodes", c.index, c.S.Key)
}

// TestLookupsFindTheClosest runs lookups on small networks (a few buckets deep, so that
// lookups take several hops) and checks every completed lookup against a brute-force search:
// it found the node closest to its key, and the k closest in order.
func TestLookupsFindTheClosest(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n, k, alpha  int
		minMeanHops  float64
		minCompleted uint64
	}{
		{"k 4 alpha 2", 300, 4, 2, 1.5, 200},
		{"k 2 alpha 1", 500, 2, 1, 2, 200},
		{"k 8 alpha 3", 1000, 8, 3, 1.2, 500},
		{"k 20 alpha 3 (Kademlia's)", 2000, 20, 3, 1, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Nodes, c.K, c.Alpha = tc.n, tc.k, tc.alpha
			checked := 0
			_, res, _ := run(t, c, 1500, 3, func(n *Node) kernel.LogicalProcess {
				return &checking{Node: n, t: t, checked: &checked}
			})
			require.Equal(t, int(res.Completed), checked)
			require.GreaterOrEqual(t, res.Completed, tc.minCompleted)
			require.GreaterOrEqual(t, res.MeanHops, tc.minMeanHops)
			t.Logf("%+v", res)
		})
	}
}

// TestResultsAndInvariants checks the totals' relations: a node runs one lookup at a time,
// requests are answered at most once, latencies and hops lie in their plausible ranges,
// and every committed event is a start, a request or a reply.
func TestResultsAndInvariants(t *testing.T) {
	c := small()
	r, res, lps := run(t, c, 3000, 5, nil)
	require.Greater(t, res.Completed, uint64(500))
	require.LessOrEqual(t, res.Completed, res.Started)
	require.LessOrEqual(t, res.Started-res.Completed, uint64(c.Nodes), "a node runs one lookup at a time")
	var served, inFlight uint64
	for _, l := range lps {
		s := &l.(*Node).S
		served += s.Served
		inFlight += uint64(s.InFlight)
	}
	require.LessOrEqual(t, served, res.Requests)
	// Latency: at least one round trip of two minimal delays, and more on average.
	require.GreaterOrEqual(t, res.MeanLatency, 2*c.MinDelay)
	require.Less(t, res.MeanLatency, 20*c.MeanDelay)
	require.GreaterOrEqual(t, res.MeanHops, 1.0)
	require.Less(t, res.MeanHops, float64(bits.Len(uint(c.Nodes))))
	require.GreaterOrEqual(t, r.EventsCommitted, res.Started+served+res.Completed, "starts, requests and the replies that ended lookups")
	require.LessOrEqual(t, r.EventsCommitted, res.Started+served+res.Requests, "a reply per request at most")
	require.LessOrEqual(t, inFlight, uint64(c.Nodes*c.Alpha))
}

func TestSeedDeterminism(t *testing.T) {
	a, ra, _ := run(t, small(), 1000, 1, nil)
	b, rb, _ := run(t, small(), 1000, 1, nil)
	c, _, _ := run(t, small(), 1000, 2, nil)
	require.Equal(t, a.Digest, b.Digest)
	require.Equal(t, ra, rb)
	require.NotEqual(t, a.Digest, c.Digest)
	d := small()
	d.IDSeed = 2
	e, _, _ := run(t, d, 1000, 1, nil)
	require.NotEqual(t, a.Digest, e.Digest, "the id seed changes the overlay")
}

func TestDeterminismMatrix(t *testing.T) {
	c := small()
	want := modeltest.Matrix(t, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(t, err)
			return lps
		},
		End: 800, Seed: 9, Short: raceEnabled,
	})
	require.Greater(t, want.EventsCommitted, uint64(2000))
}

// BenchmarkRun runs the default model to time 2000 sequentially and under time warp with
// 1 and 2 workers (see modeltest.Bench).
func BenchmarkRun(b *testing.B) {
	c := DefaultConfig()
	modeltest.Bench(b, modeltest.Model{
		Build: func() []kernel.LogicalProcess {
			lps, err := New(c)
			require.NoError(b, err)
			return lps
		},
		End: 2000, Seed: 1,
	})
}

// TestClosestMatchesSorting checks the bucket-ordered search of a routing table against
// sorting the whole table by distance, on random keys, keys equal to the owner's id and
// keys one bit away from it.
func TestClosestMatchesSorting(t *testing.T) {
	nw := buildNetwork(700, 5, 3)
	r := rand.New(rand.NewPCG(1, 2))
	for u := range uint32(700) {
		keys := []uint64{nw.ids[u], nw.ids[u] ^ 1, nw.ids[u] ^ 1<<63}
		for range 20 {
			keys = append(keys, r.Uint64())
		}
		for _, key := range keys {
			for _, k := range []int{1, 5, 17} {
				table := slices.Clone(nw.table(u))
				sort.Slice(table, func(a, b int) bool { return nw.dist(table[a], key) < nw.dist(table[b], key) })
				var out [MaxK]uint32
				n := nw.closest(u, key, k, &out)
				require.Equal(t, table[:min(k, len(table))], out[:n], "node %d key %x k %d", u, key, k)
			}
		}
	}
}

// bucketOf returns the k-bucket that id b falls into in the routing table of id a: the
// index of the highest bit in which they differ (bucket i holds the ids at XOR distance
// [2^i, 2^(i+1))). a and b must differ.
func bucketOf(a, b uint64) int { return 63 - bits.LeadingZeros64(a^b) }

// table returns node u's contacts.
func (nw *network) table(u uint32) []uint32 { return nw.contacts[nw.start[u]:nw.start[u+1]] }
