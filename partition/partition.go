// Package partition assigns LPs to parts: to processes (ranks) in a run across processes,
// and, inside one process, to schedule queues. A good partition keeps LPs that exchange
// many events in one part (fewer remote events and rollbacks) and gives the parts similar
// amounts of work.
//
// A Partitioner maps n LPs (dense ids 0..n-1) to parts 0..parts-1. Two are built in:
// RoundRobin (blocks of LPs dealt to the parts in turn) and Blocks (contiguous ranges of
// nearly equal size). A model may supply its own (PCS: tiles of neighbouring cells). The
// result must be a pure function of n and parts, because every rank computes it for itself
// and all must agree.
package partition

import "fmt"

// Partitioner assigns each of n LPs to one of parts parts.
type Partitioner interface {
	// Partition returns, for each LP id in 0..n-1, its part in 0..parts-1. It must be
	// deterministic: every process calls it and all must get the same answer.
	Partition(n, parts int) []int
}

// RoundRobin deals LPs to the parts in blocks of Block consecutive ids (Block <= 1: one LP
// at a time): ids 0..Block-1 go to part 0, the next Block to part 1, and so on, wrapping.
type RoundRobin struct {
	Block int
}

// Partition implements Partitioner.
func (r RoundRobin) Partition(n, parts int) []int {
	b := max(r.Block, 1)
	out := make([]int, n)
	for i := range out {
		out[i] = (i / b) % parts
	}
	return out
}

// Blocks splits the ids into parts contiguous ranges whose sizes differ by at most one
// (the first n mod parts ranges have one more).
type Blocks struct{}

// Partition implements Partitioner.
func (Blocks) Partition(n, parts int) []int {
	out := make([]int, n)
	base, extra := n/parts, n%parts
	i := 0
	for p := range parts {
		size := base
		if p < extra {
			size++
		}
		for range size {
			out[i] = p
			i++
		}
	}
	return out
}

// Names are the partitioners that Named accepts.
func Names() []string { return []string{"blocks", "round-robin"} }

// Named returns the built-in partitioner called name: "blocks" or "round-robin" (one LP at
// a time).
func Named(name string) (Partitioner, error) {
	switch name {
	case "blocks":
		return Blocks{}, nil
	case "round-robin":
		return RoundRobin{Block: 1}, nil
	}
	return nil, fmt.Errorf("unknown partitioning %q (want one of %v)", name, Names())
}

// Check calls p and verifies its answer: one part per LP, each in range. It is what the
// kernel uses, so that a faulty model partitioner is a clear error, not a crash.
func Check(p Partitioner, n, parts int) ([]int, error) {
	if parts < 1 {
		return nil, fmt.Errorf("partition: need at least one part, got %d", parts)
	}
	out := p.Partition(n, parts)
	if len(out) != n {
		return nil, fmt.Errorf("partition: %T returned %d parts for %d LPs", p, len(out), n)
	}
	for i, q := range out {
		if q < 0 || q >= parts {
			return nil, fmt.Errorf("partition: %T put LP %d in part %d, outside [0, %d)", p, i, q, parts)
		}
	}
	return out, nil
}

// Sizes counts the LPs of each part in a partition.
func Sizes(part []int, parts int) []int {
	s := make([]int, parts)
	for _, q := range part {
		s[q]++
	}
	return s
}
