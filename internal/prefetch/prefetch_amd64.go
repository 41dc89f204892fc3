//go:build amd64

package prefetch

import "unsafe"

// Line asks for the cache line holding p to be loaded into every cache level (PREFETCHT0).
//
//go:noescape
func Line(p unsafe.Pointer)
