//go:build !mpi

package comm

import "os"

// MPIEnabled reports whether this binary was built with the `mpi` build tag.
const MPIEnabled = false

// CheckLaunch returns a *LaunchError (which wraps ErrNoMPI) when this binary, built
// without MPI, was started by an MPI launcher as more than one rank: each rank would
// otherwise run the whole simulation on its own. It returns nil otherwise, and always
// nil in a build with the `mpi` tag. Call it first thing in main.
func CheckLaunch() error {
	if n := LaunchedRanks(); n > 1 {
		return &LaunchError{Ranks: n}
	}
	return nil
}

// MPI is the MPI transport; in a build without the `mpi` tag it cannot be created.
type MPI struct{}

var _ Transport = (*MPI)(nil)

// NewMPI returns ErrNoMPI in a build without the `mpi` tag.
func NewMPI(opts MPIOptions) (*MPI, error) { return nil, ErrNoMPI }

// Rank returns 0.
func (m *MPI) Rank() int { return 0 }

// Size returns 1.
func (m *MPI) Size() int { return 1 }

// Send returns ErrNoMPI.
func (m *MPI) Send(to int, msg []byte) error { return ErrNoMPI }

// Poll returns ErrNoMPI.
func (m *MPI) Poll() (int, []byte, bool, error) { return 0, nil, false, ErrNoMPI }

// AllGather returns ErrNoMPI.
func (m *MPI) AllGather(b []byte) ([][]byte, error) { return nil, ErrNoMPI }

// Close returns ErrNoMPI.
func (m *MPI) Close() error { return ErrNoMPI }

// Abort exits the process with code (there are no other ranks to stop).
func (m *MPI) Abort(code int) { os.Exit(code) }
