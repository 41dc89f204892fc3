//go:build amd64

package prefetch

import "unsafe"

// Line asks for the cache line holding p to be loaded into every cache level (PREFETCHT0).
//
//go:noescape
func Line(p unsafe.Pointer)

// Lines asks for the cache lines holding p and q, as Line does for each: one call where
// two would each cost the caller its spills around an assembly call.
//
//go:noescape
func Lines(p, q unsafe.Pointer)

// Lines3 is Lines for three lines.
//
//go:noescape
func Lines3(p, q, r unsafe.Pointer)
