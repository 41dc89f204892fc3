package ltsf

import (
	"math/bits"

	"github.com/warpedgo/warped/event"
)

// nilNode marks an absent node (child, parent, root or minimum) in the node arenas.
const nilNode = -1

// splayWalk is the longest walk to a new minimum that Pop takes without splaying the node
// it finds. Short walks are constant work; a longer one is paid for by splaying the new
// minimum, which keeps Pop O(log n) amortized.
const splayWalk = 8

// snode is the splay tree node of one LP, with the LP's key inline: comparisons touch
// only the arena.
type snode struct {
	// The links come first, so that they and the receive time, which most comparisons
	// need alone, share a cache line more often.
	left, right, parent int32
	in                  bool // whether the LP has a node in the tree
	k                   event.Key
}

// Splay is a splay-tree schedule queue (as in WARPED2). There is at most one node per LP,
// so the nodes live in an arena indexed by LP id and are reused: nothing is allocated
// after construction. The leftmost (least) node is cached, so Min is O(1); Pop unlinks
// that node without splaying (and splays the next least node only when the walk to it is
// long), and Push of a new least entry attaches it below the old one in O(1).
//
// Push splays the new node only when it was inserted deeper than 2*log2(n)+4: a shallow
// insertion costs O(log n) as it is, and a deep one is paid for by the splay, so every
// operation stays O(log n) amortized while the common shallow insertions skip the
// rotations. Remove splays the node out.
type Splay struct {
	nodes []snode
	root  int32
	min   int32
	n     int
}

var _ Queue = (*Splay)(nil)

// NewSplay returns an empty splay tree for LP ids in [0, numLPs).
func NewSplay(numLPs int) *Splay {
	s := &Splay{nodes: make([]snode, numLPs), root: nilNode, min: nilNode}
	return s
}

// sless reports whether node x of LP xi sorts before node y of LP yi.
func sless(x *snode, xi int32, y *snode, yi int32) bool {
	return less(&x.k, event.LPID(xi), &y.k, event.LPID(yi))
}

// Len returns the number of entries.
func (s *Splay) Len() int { return s.n }

// Min returns the least entry without removing it.
func (s *Splay) Min() (k event.Key, lp event.LPID, ok bool) {
	if s.min < 0 {
		return event.Key{}, 0, false
	}
	return s.nodes[s.min].k, event.LPID(s.min), true
}

// Push adds lp with key k.
func (s *Splay) Push(k event.Key, lp event.LPID) {
	nodes := s.nodes
	x := int32(lp)
	nx := &nodes[x]
	*nx = snode{k: k, left: nilNode, right: nilNode, parent: nilNode, in: true}
	s.n++
	if s.root < 0 {
		s.root, s.min = x, x
		return
	}
	if m := &nodes[s.min]; sless(nx, x, m, s.min) {
		// A new minimum: the old one has no left child, so hang the new one there.
		m.left = x
		nx.parent = s.min
		s.min = x
		return
	}
	p, depth := s.root, 0
	for {
		depth++
		np := &nodes[p]
		if sless(nx, x, np, p) {
			if np.left < 0 {
				np.left = x
				break
			}
			p = np.left
		} else {
			if np.right < 0 {
				np.right = x
				break
			}
			p = np.right
		}
	}
	nx.parent = p
	if depth > 2*bits.Len(uint(s.n))+4 {
		s.splay(x)
	}
}

// Pop removes and returns the least entry.
func (s *Splay) Pop() (k event.Key, lp event.LPID, ok bool) {
	if s.min < 0 {
		return event.Key{}, 0, false
	}
	lp = event.LPID(s.min)
	k = s.nodes[lp].k
	s.popMin()
	return k, lp, true
}

// popMin unlinks the least node, which has no left child, and finds the next one.
func (s *Splay) popMin() {
	nodes := s.nodes
	x := s.min
	nx := &nodes[x]
	r, p := nx.right, nx.parent
	if p < 0 {
		s.root = r
	} else {
		nodes[p].left = r // the leftmost node is a left child or the root
	}
	if r >= 0 {
		nodes[r].parent = p
		m, depth := r, 0
		for nodes[m].left >= 0 {
			m = nodes[m].left
			depth++
		}
		s.min = m
		if depth > splayWalk {
			s.splay(m)
		}
	} else {
		s.min = p
	}
	nx.in = false
	s.n--
}

// Remove removes lp's entry and reports whether there was one.
func (s *Splay) Remove(lp event.LPID) bool {
	x := int32(lp)
	nodes := s.nodes
	nx := &nodes[x]
	if !nx.in {
		return false
	}
	if x == s.min {
		s.popMin()
		return true
	}
	s.splay(x)
	// x is the root now, and it is not the minimum, so it has a left subtree (which
	// holds the minimum, unchanged by the removal of x).
	l, r := nx.left, nx.right
	nodes[l].parent = nilNode
	if r < 0 {
		s.root = l
	} else {
		// Join: splay the greatest node of the left subtree to its top (it then has no
		// right child) and hang the right subtree there.
		m := l
		for nodes[m].right >= 0 {
			m = nodes[m].right
		}
		s.splay(m)
		nodes[m].right = r
		nodes[r].parent = m
	}
	nx.in = false
	s.n--
	return true
}

// rotate moves x above its parent.
func (s *Splay) rotate(x int32) {
	nodes := s.nodes
	nx := &nodes[x]
	p := nx.parent
	np := &nodes[p]
	g := np.parent
	if np.left == x {
		b := nx.right
		np.left = b
		if b >= 0 {
			nodes[b].parent = p
		}
		nx.right = p
	} else {
		b := nx.left
		np.right = b
		if b >= 0 {
			nodes[b].parent = p
		}
		nx.left = p
	}
	np.parent = x
	nx.parent = g
	if g >= 0 {
		if ng := &nodes[g]; ng.left == p {
			ng.left = x
		} else {
			ng.right = x
		}
	}
}

// splay moves x to the top of its tree (bottom-up, with zig, zig-zig and zig-zag steps)
// and makes it the root.
func (s *Splay) splay(x int32) {
	nodes := s.nodes
	for {
		p := nodes[x].parent
		if p < 0 {
			break
		}
		g := nodes[p].parent
		if g < 0 {
			s.rotate(x)
			break
		}
		if (nodes[g].left == p) == (nodes[p].left == x) {
			s.rotate(p)
		} else {
			s.rotate(x)
		}
		s.rotate(x)
	}
	s.root = x
}
