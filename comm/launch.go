package comm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// This file has no build tag: it holds what both builds share (the options of the MPI
// transport and the detection of an MPI launcher, which reads only the environment and
// never calls MPI).

// MPIComm names the MPI communicator the kernel runs on. The zero value is
// MPI_COMM_WORLD. Communicators cross language and package boundaries as Fortran
// handles (MPI_Fint), the one portable integer form of a handle: a C host program passes
// MPI_Comm_c2f(comm), a Fortran one its INTEGER communicator, mpi4py comm.py2f().
type MPIComm struct {
	fortran int32
	set     bool
}

// CommFromFortran wraps the Fortran handle of a communicator (see MPIComm).
func CommFromFortran(handle int32) MPIComm { return MPIComm{fortran: handle, set: true} }

// CommWorld is MPI_COMM_WORLD, the default (the zero MPIComm). Read only.
var CommWorld = MPIComm{}

// IsWorld reports whether c is MPI_COMM_WORLD (the zero value).
func (c MPIComm) IsWorld() bool { return !c.set }

// Fortran returns the Fortran handle given to CommFromFortran; ok is false for CommWorld.
func (c MPIComm) Fortran() (handle int32, ok bool) { return c.fortran, c.set }

// MPIOptions configures NewMPI.
type MPIOptions struct {
	// Comm is the communicator to run on; the zero value is MPI_COMM_WORLD. NewMPI
	// duplicates it (MPI_Comm_dup), so the kernel's traffic never mixes with the
	// host program's.
	Comm MPIComm
}

// ErrNoMPI is returned by NewMPI in a binary built without the `mpi` build tag; the
// error from CheckLaunch wraps it.
var ErrNoMPI = errors.New("comm: this program was built without MPI support; rebuild it with -tags mpi " +
	"(go build -tags mpi ./cmd/warped for warped, or your own command's package; needs libopenmpi-dev or libmpich-dev)")

// LaunchError says that a binary built without MPI was started as several ranks by an
// MPI launcher. errors.Is(err, ErrNoMPI) holds for it.
type LaunchError struct {
	Ranks int // the number of ranks the launcher started
}

func (e *LaunchError) Error() string {
	return fmt.Sprintf("this program was built without MPI support but was started as %d ranks by an MPI launcher; "+
		"rebuild it with -tags mpi (go build -tags mpi ./cmd/warped for warped, or your own command's package; "+
		"needs libopenmpi-dev or libmpich-dev)", e.Ranks)
}

func (e *LaunchError) Unwrap() error { return ErrNoMPI }

// launchSizeVars are the environment variables in which MPI launchers announce the size
// of the job, most specific first: Open MPI's mpirun, MVAPICH2, PMI (MPICH's hydra,
// Intel MPI, Slurm's srun --mpi=pmi2) and, last, MPICH's count of the ranks on this node
// (a lower bound of the size).
var launchSizeVars = []string{
	"OMPI_COMM_WORLD_SIZE",
	"MV2_COMM_WORLD_SIZE",
	"PMI_SIZE",
	"MPI_LOCALNRANKS",
}

// launchLocalVars are the environment variables in which MPI launchers announce the
// number of ranks started on this node: Open MPI's mpirun, MVAPICH2 and MPICH's hydra.
var launchLocalVars = []string{
	"OMPI_COMM_WORLD_LOCAL_SIZE",
	"MV2_COMM_WORLD_LOCAL_SIZE",
	"MPI_LOCALNRANKS",
}

// launchRankVars are the environment variables in which MPI launchers announce this
// process's rank, as launchSizeVars.
var launchRankVars = []string{
	"OMPI_COMM_WORLD_RANK",
	"MV2_COMM_WORLD_RANK",
	"PMI_RANK",
}

// LaunchedRank returns this process's rank as an MPI launcher announces it in the
// environment, before MPI is opened; 0 when no launcher says (rank 0, or one process).
func LaunchedRank() int {
	for _, v := range launchRankVars {
		if s, ok := os.LookupEnv(v); ok {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				return n
			}
		}
	}
	return 0
}

// LaunchedAlike reports whether an MPI launcher says it started every rank from one
// command line: a single application context (Open MPI's OMPI_APP_CTX_NUM_PROCS holds
// one count). It is false where no launcher says so, as in a launch of several programs
// or argument lists (mpirun -np 1 a : -np 3 b), whose ranks may find different errors in
// their arguments.
func LaunchedAlike() bool {
	s, ok := os.LookupEnv("OMPI_APP_CTX_NUM_PROCS")
	return ok && len(strings.Fields(s)) == 1
}

// LocalRanks returns the number of ranks an MPI launcher says it started on this node, read
// from the environment; 0 when no launcher says.
func LocalRanks() int { return envCount(launchLocalVars) }

// NodeCPUs returns the number of CPUs online on this node (/sys/devices/system/cpu/online),
// which the ranks started on it share, or, where that cannot be read, the CPUs this
// process may use. Not runtime.NumCPU alone: a rank that the launcher bound to one core
// sees one CPU, while the ranks beside it have cores of their own.
func NodeCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if n := parseCPUList(strings.TrimSpace(string(b))); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// parseCPUList returns the number of CPUs in a kernel CPU list ("0-3,6,8-9"), or 0 when it
// is malformed.
func parseCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// Crowded reports whether an MPI launcher started more ranks on this node than it has
// CPUs: the ranks then take turns on the cores.
func Crowded() bool { return LocalRanks() > NodeCPUs() }

// idleYieldVar is Open MPI's parameter for giving the core away (sched_yield) in a poll
// that finds nothing to do, which Open MPI turns on by itself where it starts more ranks
// on a node than the node has slots.
const idleYieldVar = "OMPI_MCA_mpi_yield_when_idle"

// quietIdleYields turns Open MPI's idle yields off before MPI_Init on a crowded node
// (Crowded), unless the user set the parameter: the kernel's manager yields there itself,
// once a turn, after a receive that found nothing (package dist). A yield inside an MPI
// call is one inside a cgo call, which lets the Go runtime hand the thread's processor to
// another thread while the rank waits for its core, and the thread must then wake that
// one and take the processor back; Open MPI also yields up to twice a poll (completing
// sends, probing). At -np 4 and -np 8 on 2 cores the kernel's own yields raised the rate
// by 10% (docs/PERFORMANCE.md, "Session 32"). Other MPI libraries ignore the variable.
// It reports whether it turned them off: the transport's own blocking calls then wait
// yielding (wp_mpi_waitall), or a rank that waits in a collective would spin through its
// time slices while the ranks it waits for wait for its core.
func quietIdleYields() bool {
	if !Crowded() {
		return false
	}
	if _, set := os.LookupEnv(idleYieldVar); set {
		return false
	}
	return os.Setenv(idleYieldVar, "0") == nil
}

// LaunchedRanks returns the number of ranks an MPI launcher (mpirun, mpiexec, srun with
// PMI) says this process was started among, read from the environment without calling
// MPI; 0 when no launcher's variables are set.
func LaunchedRanks() int { return envCount(launchSizeVars) }

// envCount returns the positive count in the first of vars that is set to one, or 0.
func envCount(vars []string) int {
	for _, v := range vars {
		if s, ok := os.LookupEnv(v); ok {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}
