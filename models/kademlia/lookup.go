package kademlia

// MaxK is the largest bucket size k (Config.K): the shortlist of a lookup is a fixed array
// of MaxK entries, so that a node's state has a fixed size.
const MaxK = 32

// The status of a shortlist entry.
const (
	unqueried uint8 = iota // not asked yet
	asked                  // a FIND_NODE request is in flight
	answered               // it replied
)

// Shortlist is a lookup's candidates: the (at most k) closest nodes to the key it has
// learned, in increasing XOR distance, with each one's status and the depth at which it
// was learned (1 for the initiator's own contacts, d+1 for those in a reply to a request
// of depth d).
type Shortlist struct {
	// N is the number of entries in use.
	N uint8
	// Node, Status and Depth are the entries' node indices, statuses and depths.
	Node   [MaxK]uint32
	Status [MaxK]uint8
	Depth  [MaxK]uint8
}

// find returns the position of node v in the shortlist, or -1.
func (l *Shortlist) find(v uint32) int {
	for i := range int(l.N) {
		if l.Node[i] == v {
			return i
		}
	}
	return -1
}

// add inserts node v, learned at the given depth, in its place by distance to key, when it
// is not the initiator self, not there yet, and among the k closest seen; the farthest
// entry drops out of a full list. It keeps the smaller depth of a node seen twice.
func (l *Shortlist) add(nw *network, key uint64, k int, self, v uint32, depth uint8) {
	if v == self {
		return
	}
	d := nw.dist(v, key)
	n := int(l.N)
	if n == k && d > nw.dist(l.Node[n-1], key) {
		return // full, and v is farther than all
	}
	if i := l.find(v); i >= 0 {
		l.Depth[i] = min(l.Depth[i], depth)
		return
	}
	pos := n
	for pos > 0 && nw.dist(l.Node[pos-1], key) > d {
		pos--
	}
	if pos >= k {
		return // full, and v is farther than all
	}
	if n < k {
		n++
		l.N = uint8(n)
	}
	for i := n - 1; i > pos; i-- {
		l.Node[i], l.Status[i], l.Depth[i] = l.Node[i-1], l.Status[i-1], l.Depth[i-1]
	}
	l.Node[pos], l.Status[pos], l.Depth[pos] = v, unqueried, depth
}

// done reports whether every entry has answered: the lookup knows the k closest nodes it
// can learn of, and has heard from each.
func (l *Shortlist) done() bool {
	for i := range int(l.N) {
		if l.Status[i] != answered {
			return false
		}
	}
	return true
}

// merge adds to l node u's answer to FIND_NODE(key): the k closest contacts to key of u's
// routing table, learned at the given depth, leaving out self.
func (l *Shortlist) merge(nw *network, key uint64, k int, u, self uint32, depth uint8) {
	var reply [MaxK]uint32
	for _, v := range reply[:nw.closest(u, key, k, &reply)] {
		l.add(nw, key, k, self, v, depth)
	}
}
