//go:build !amd64

package prefetch

import "unsafe"

// Line does nothing on this architecture (see the package comment).
func Line(p unsafe.Pointer) {}

// Lines does nothing on this architecture (see the package comment).
func Lines(p, q unsafe.Pointer) {}

// Lines3 does nothing on this architecture (see the package comment).
func Lines3(p, q, r unsafe.Pointer) {}
