//go:build mpi && !mpich && !mpicustom

package comm

// Open MPI's compiler and linker flags (libopenmpi-dev); see mpi.go.

// #cgo pkg-config: ompi-c
import "C"
