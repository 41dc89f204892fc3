//go:build mpi && mpich && !mpicustom

package comm

// MPICH's compiler and linker flags (libmpich-dev); see mpi.go.

// #cgo pkg-config: mpich
import "C"
