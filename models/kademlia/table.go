package kademlia

import (
	"math/bits"
	"slices"
	"sort"
)

// NodeID returns the 64-bit Kademlia id of node i for the given id seed: SplitMix64's
// finalizer of i plus a multiple of the seed. The finalizer is a bijection of 64-bit words,
// so the ids of distinct nodes differ, and they look uniformly random.
func NodeID(i uint32, seed uint64) uint64 {
	z := uint64(i) + seed*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// network is the overlay, built once per model and only read during a run: every node's
// id and its routing table (its k-buckets), in compressed rows: node i's contacts are
// contacts[start[i]:start[i+1]], as node indices, bucket by bucket from the highest; its
// non-empty buckets are dir[dstart[i]:dstart[i+1]], each with its index and the position
// of its first contact. A node's table is static: with no churn,
// Kademlia's bucket updates on received messages would only move contacts within their
// buckets, which a lookup's result does not depend on. The flat arrays are what the device
// handler reads from device memory (deviceParams lays them out).
type network struct {
	ids      []uint64
	start    []uint32
	contacts []uint32
	dstart   []uint32
	dir      []bucket
}

// bucket is a non-empty k-bucket of a routing table: its index and where its contacts
// begin in network.contacts (they end where the next bucket of the table begins).
type bucket struct {
	index uint8
	first uint32
}

// buildNetwork returns the overlay of n nodes with ids from seed and k-buckets of at most k
// contacts: bucket i of node u holds every node of u's XOR distance [2^i, 2^(i+1)) when
// there are at most k of them, else k of them, consecutive in id order from a position
// drawn by hashing (u, i) (a deterministic stand-in for which nodes a bucket happened to
// learn first; Kademlia keeps the longest-lived).
func buildNetwork(n, k int, seed uint64) *network {
	// A table has about log2(n/k) full buckets and a few partial ones below them, about
	// log2(n) non-empty ones in all; sizing the arrays for that up front saves the copies of
	// growing them (at 2^20 nodes, 1.4 GB of contacts: copying it as it grew took most of
	// the build).
	full, buckets := bits.Len(uint(n/k))+2, bits.Len(uint(n))+2
	nw := &network{ids: make([]uint64, n), start: make([]uint32, n+1), dstart: make([]uint32, n+1),
		contacts: make([]uint32, 0, n*k*full), dir: make([]bucket, 0, n*buckets)}
	for i := range n {
		nw.ids[i] = NodeID(uint32(i), seed)
	}
	// byID lists the nodes in increasing id order; the nodes of one bucket of any table
	// are a contiguous run of it (they share the owner's bits above the bucket's bit and
	// differ from it at that bit).
	byID := make([]uint32, n)
	for i := range byID {
		byID[i] = uint32(i)
	}
	slices.SortFunc(byID, func(a, b uint32) int {
		if nw.ids[a] < nw.ids[b] {
			return -1
		}
		return 1 // ids are distinct
	})
	for u := range n {
		x := nw.ids[u]
		// [lo, hi) of byID is the run of nodes sharing x's bits above bit i, u among them.
		lo, hi := 0, n
		for i := 63; i >= 0 && hi-lo > 1; i-- {
			// The first node of the run whose bit i is set.
			mid := lo + sort.Search(hi-lo, func(j int) bool { return nw.ids[byID[lo+j]]>>uint(i)&1 == 1 })
			blo, bhi := mid, hi // the bucket: the half without u
			if x>>uint(i)&1 == 1 {
				blo, bhi, lo = lo, mid, mid
			} else {
				hi = mid
			}
			m := bhi - blo
			if m == 0 {
				continue
			}
			nw.dir = append(nw.dir, bucket{index: uint8(i), first: uint32(len(nw.contacts))})
			if m <= k {
				nw.contacts = append(nw.contacts, byID[blo:bhi]...)
				continue
			}
			first := int(NodeID(uint32(u), seed^uint64(i+1)) % uint64(m))
			for j := range k {
				nw.contacts = append(nw.contacts, byID[blo+(first+j)%m])
			}
		}
		nw.start[u+1] = uint32(len(nw.contacts))
		nw.dstart[u+1] = uint32(len(nw.dir))
	}
	return nw
}

// dist is the XOR distance between node v's id and key.
func (nw *network) dist(v uint32, key uint64) uint64 { return nw.ids[v] ^ key }

// closest writes the (at most k) contacts of node u's table closest to key into out, in
// increasing distance, and returns their number. The buckets' contacts lie in disjoint
// ranges of distance to key, so it visits whole buckets nearest range first and stops once
// k are found: with t = id(u) XOR key and j its highest bit, bucket j (distances below
// 2^j); then the buckets i < j where t has bit i set, highest first (distance t with bit i
// cleared and lower bits changed), then those where it is clear, lowest first; then the
// buckets above j, lowest first (distances from 2^i). A key equal to u's id has j = -1.
func (nw *network) closest(u uint32, key uint64, k int, out *[MaxK]uint32) int {
	t := nw.ids[u] ^ key
	j := 63 - bits.LeadingZeros64(t)
	dir := nw.dir[nw.dstart[u]:nw.dstart[u+1]] // highest bucket first
	var dist [MaxK]uint64
	n := 0
	take := func(b int) bool { // inserts the contacts of dir[b]; reports whether k are found
		end := nw.start[u+1]
		if b+1 < len(dir) {
			end = dir[b+1].first
		}
		for _, v := range nw.contacts[dir[b].first:end] {
			d := nw.ids[v] ^ key
			if n == k && d >= dist[n-1] {
				continue // distinct ids: never equal to another contact's distance
			}
			if n < k {
				n++
			}
			i := n - 1
			for ; i > 0 && dist[i-1] > d; i-- {
				dist[i], out[i] = dist[i-1], out[i-1]
			}
			dist[i], out[i] = d, v
		}
		return n == k
	}
	for b := range dir {
		if int(dir[b].index) == j && take(b) {
			return n
		}
	}
	for b := range dir { // highest first
		if i := int(dir[b].index); i < j && t>>uint(i)&1 == 1 && take(b) {
			return n
		}
	}
	for b := len(dir) - 1; b >= 0; b-- { // lowest first
		if i := int(dir[b].index); i < j && t>>uint(i)&1 == 0 && take(b) {
			return n
		}
	}
	for b := len(dir) - 1; b >= 0; b-- {
		if int(dir[b].index) > j && take(b) {
			return n
		}
	}
	return n
}
