package epidemic

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Network names the graph the locations' people travel along.
type Network string

// The networks.
const (
	// WattsStrogatz is a ring lattice whose edges are rewired with probability beta.
	WattsStrogatz Network = "watts-strogatz"
	// BarabasiAlbert is WARPED2's preferential-attachment graph (--variant warped2 only).
	BarabasiAlbert Network = "barabasi-albert"
)

// betaPrecision is WARPED2's BETA_PRECISION (Graph.hpp:7): the rewiring draw is an integer
// in [0, betaPrecision) compared with beta*betaPrecision truncated.
const betaPrecision = 10000

// graph is an undirected simple graph under construction: node i's neighbours, sorted.
type graph [][]uint32

func (g graph) has(a, b uint32) bool {
	_, ok := slices.BinarySearch(g[a], b)
	return ok
}

func (g graph) link(a, b uint32) {
	for _, e := range [2][2]uint32{{a, b}, {b, a}} {
		if i, ok := slices.BinarySearch(g[e[0]], e[1]); !ok {
			g[e[0]] = slices.Insert(g[e[0]], i, e[1])
		}
	}
}

func (g graph) unlink(a, b uint32) {
	for _, e := range [2][2]uint32{{a, b}, {b, a}} {
		if i, ok := slices.BinarySearch(g[e[0]], e[1]); ok {
			g[e[0]] = slices.Delete(g[e[0]], i, i+1)
		}
	}
}

// lists returns the graph as adjacency lists: node i's neighbours are adj[off[i]:off[i+1]].
func (g graph) lists() (adj, off []uint32) {
	off = make([]uint32, len(g)+1)
	for i, nb := range g {
		off[i+1] = off[i] + uint32(len(nb))
	}
	// Sized at once: grown by appends, the list and its copies while growing took up to
	// three times its size beside the graph (the size check counts on its peak).
	adj = make([]uint32, 0, off[len(g)])
	for _, nb := range g {
		adj = append(adj, nb...)
	}
	return adj, off
}

// ringLattice joins each of n nodes to the left nodes before it and the right nodes after it
// on a ring. The edges are undirected, so a node's neighbours are the m = max(left, right)
// nodes on each side of it (the nodes within m of it on the ring, itself left out), which
// it lists in increasing order directly: linking them one by one (sorted insertion) took
// time quadratic in k a node, 8 s for 20000 locations of degree 2000.
func ringLattice(n, left, right int) graph {
	m := max(left, right)
	g := make(graph, n)
	if m == 0 {
		return g
	}
	for x := range n {
		if 2*m+1 >= n { // every other node
			nb := make([]uint32, 0, n-1)
			for v := range n {
				if v != x {
					nb = append(nb, uint32(v))
				}
			}
			g[x] = nb
			continue
		}
		// The ring interval [x-m, x+m] less x, in increasing order: the part that wraps
		// past n-1 to 0 comes first, then the rest, then the part that wraps below 0.
		nb := make([]uint32, 0, 2*m)
		lo, hi := x-m, x+m // as integers, before the ring's wrap
		for v := n; v <= hi; v++ {
			nb = append(nb, uint32(v-n)) // past the end: 0, 1, ...
		}
		for v := max(lo, 0); v <= min(hi, n-1); v++ {
			if v != x {
				nb = append(nb, uint32(v))
			}
		}
		for v := lo; v < 0; v++ {
			nb = append(nb, uint32(v+n)) // below 0: n+lo, ..., n-1
		}
		g[x] = nb
	}
	return g
}

// wattsStrogatz is the stochastic variant's small world: a ring lattice of mean degree k
// (even), then each lattice edge (i, i+j) moved with probability beta to (i, t), t a random
// node that is not i and not already i's neighbour (else the edge stays).
func wattsStrogatz(n, k int, beta float64, seed uint64) (adj, off []uint32) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	g := ringLattice(n, k/2, k/2)
	for i := range n {
		for j := 1; j <= k/2; j++ {
			a, b := uint32(i), uint32((i+j)%n)
			if r.Float64() >= beta || !g.has(a, b) {
				continue
			}
			to := uint32(r.IntN(n))
			if to == a || g.has(a, to) {
				continue
			}
			g.unlink(a, b)
			g.link(a, to)
		}
	}
	return g.lists()
}

// wattsStrogatzWARPED2 is WARPED2's WattsStrogatz (Graph.hpp:44-96): a ring lattice with
// k/2 neighbours on the left and k - k/2 on the right, then for each node i and each node j
// still joined to i, in increasing order, with probability beta (a draw in [0, 10000)
// below beta*10000 truncated) a random node t other than i and j is drawn and the edges
// i-j and i-t are both deleted: WARPED2's rewiring adds no edge. The caller makes sure that
// n >= 3 when beta > 0 (else no t exists and WARPED2 loops forever).
func wattsStrogatzWARPED2(n, k int, beta float64, seed uint64) (adj, off []uint32) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	g := ringLattice(n, k/2, k-k/2)
	precision := uint32(beta * betaPrecision)
	var row []uint32
	for i := range n {
		a := uint32(i)
		row = append(row[:0], g[a]...) // rewiring only deletes: visit what was there
		for _, b := range row {
			if !g.has(a, b) || uint32(r.IntN(betaPrecision)) >= precision {
				continue
			}
			t := uint32(r.IntN(n))
			for t == a || t == b {
				t = uint32(r.IntN(n))
			}
			g.unlink(a, b)
			g.unlink(a, t)
		}
	}
	return g.lists()
}

// barabasiAlbert is WARPED2's BarabasiAlbert (Graph.hpp:99-157): nodes 0 to m fully joined,
// then each later node v makes m attempts: a node i < v uniformly at random, and an edge
// v-i (where there is none yet) only when (degree(i)/total degree)^a is below a uniform
// draw in [0, 1) (WARPED2 skips the edge when p >= r). The caller makes sure m < n.
func barabasiAlbert(n, m int, a float64, seed uint64) (adj, off []uint32) {
	r := rand.New(rand.NewPCG(seed, 0xba))
	g := make(graph, n)
	deg := make([]uint64, n)
	for i := 0; i <= m; i++ {
		for j := 0; j <= m; j++ {
			if i != j {
				g[i] = append(g[i], uint32(j))
			}
		}
		deg[i] = uint64(m)
	}
	total := uint64(m) * uint64(m+1)
	for v := m + 1; v < n; v++ {
		for range m {
			i := r.IntN(v)
			p := math.Pow(float64(deg[i])/float64(total), a)
			if p >= r.Float64() || g.has(uint32(v), uint32(i)) {
				continue
			}
			g.link(uint32(v), uint32(i))
			deg[i]++
			deg[v]++
			total += 2
		}
	}
	return g.lists()
}
