package comm

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// clearLaunchEnv removes every launcher variable for the test's duration.
func clearLaunchEnv(t *testing.T) {
	for _, v := range launchSizeVars {
		t.Setenv(v, "") // restores the old value after the test
		os.Unsetenv(v)
	}
}

func TestLaunchedRanks(t *testing.T) {
	clearLaunchEnv(t)
	if err := CheckLaunch(); err != nil {
		t.Fatalf("CheckLaunch() = %v with no launcher, want nil", err)
	}
	checkEnvCount(t, "LaunchedRanks", LaunchedRanks, launchSizeVars, "PMI_SIZE", "junk")
}

func TestLocalRanks(t *testing.T) {
	for _, v := range launchLocalVars {
		t.Setenv(v, "") // restores the old value after the test
		os.Unsetenv(v)
	}
	checkEnvCount(t, "LocalRanks", LocalRanks, launchLocalVars, "MPI_LOCALNRANKS", "-2")
}

// checkEnvCount checks a count read from launcher variables (all unset on entry): 0 with
// none set, each of vars read alone, and 0 with variable badVar set to the malformed bad.
func checkEnvCount(t *testing.T, name string, count func() int, vars []string, badVar, bad string) {
	t.Helper()
	if n := count(); n != 0 {
		t.Fatalf("%s() = %d with no launcher variables, want 0", name, n)
	}
	for _, v := range vars {
		t.Setenv(v, "3")
		if n := count(); n != 3 {
			t.Errorf("%s() = %d with %s=3, want 3", name, n, v)
		}
		os.Unsetenv(v)
	}
	t.Setenv(badVar, bad)
	if n := count(); n != 0 {
		t.Errorf("%s() = %d with %s=%s, want 0", name, n, badVar, bad)
	}
}

func TestQuietIdleYields(t *testing.T) {
	cases := []struct {
		name    string
		local   string // the launcher's ranks on this node
		user    string // the user's idleYieldVar; "-" for unset
		want    bool   // quietIdleYields's answer
		wantVar string // idleYieldVar after it; "-" for unset
	}{
		{"crowded, unset: off", "100000", "-", true, "0"},
		{"crowded, the user's 1 stays", "100000", "1", false, "1"},
		{"crowded, the user's 0 stays", "100000", "0", false, "0"},
		{"a core each: untouched", "1", "-", false, "-"},
		{"no launcher: untouched", "-", "-", false, "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range append([]string{idleYieldVar}, launchLocalVars...) {
				t.Setenv(v, "") // restores the old value after the test
				os.Unsetenv(v)
			}
			if c.local != "-" {
				t.Setenv("OMPI_COMM_WORLD_LOCAL_SIZE", c.local)
			}
			if c.user != "-" {
				t.Setenv(idleYieldVar, c.user)
			}
			if got := quietIdleYields(); got != c.want {
				t.Errorf("quietIdleYields() = %v, want %v", got, c.want)
			}
			v, set := os.LookupEnv(idleYieldVar)
			if !set {
				v = "-"
			}
			if v != c.wantVar {
				t.Errorf("%s = %q after, want %q", idleYieldVar, v, c.wantVar)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		list string
		want int
	}{
		{"0", 1}, {"0-1", 2}, {"0-3,6,8-9", 7}, {"", 0}, {"3-1", 0}, {"a-b", 0}, {"0-", 0},
	}
	for _, c := range cases {
		if got := parseCPUList(c.list); got != c.want {
			t.Errorf("parseCPUList(%q) = %d, want %d", c.list, got, c.want)
		}
	}
	if n := NodeCPUs(); n < 1 {
		t.Errorf("NodeCPUs() = %d, want at least 1", n)
	}
}

func TestCheckLaunch(t *testing.T) {
	clearLaunchEnv(t)
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1")
	if err := CheckLaunch(); err != nil {
		t.Fatalf("CheckLaunch() = %v for one rank, want nil", err)
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	err := CheckLaunch()
	if MPIEnabled {
		if err != nil {
			t.Fatalf("CheckLaunch() = %v in an mpi build, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatal("CheckLaunch() = nil for 4 ranks without MPI, want an error")
	}
	want := "this program was built without MPI support but was started as 4 ranks by an MPI launcher; " +
		"rebuild it with -tags mpi (go build -tags mpi ./cmd/warped for warped, or your own command's package; " +
		"needs libopenmpi-dev or libmpich-dev)"
	if err.Error() != want {
		t.Errorf("CheckLaunch() = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrNoMPI) {
		t.Error("CheckLaunch's error does not wrap ErrNoMPI")
	}
}

func TestNewMPIWithoutTag(t *testing.T) {
	if MPIEnabled {
		t.Skip("built with -tags mpi: TestMPI covers NewMPI")
	}
	m, err := NewMPI(MPIOptions{})
	if m != nil || !errors.Is(err, ErrNoMPI) || !strings.Contains(err.Error(), "-tags mpi") {
		t.Fatalf("NewMPI() = %v, %v; want nil, ErrNoMPI", m, err)
	}
}

func TestCommFromFortran(t *testing.T) {
	if !CommWorld.IsWorld() || !(MPIOptions{}).Comm.IsWorld() {
		t.Fatal("the zero MPIComm is not MPI_COMM_WORLD")
	}
	c := CommFromFortran(0)
	if h, ok := c.Fortran(); c.IsWorld() || !ok || h != 0 {
		t.Fatalf("CommFromFortran(0) = %+v", c)
	}
}

// TestLaunchedRank: this process's rank from each launcher's variable, 0 where none says
// or the value is malformed.
func TestLaunchedRank(t *testing.T) {
	for _, v := range launchRankVars {
		t.Setenv(v, "") // restores the old value after the test
		os.Unsetenv(v)
	}
	if r := LaunchedRank(); r != 0 {
		t.Fatalf("LaunchedRank() = %d with no launcher, want 0", r)
	}
	for i, v := range launchRankVars {
		t.Setenv(v, strconv.Itoa(3+i))
		if r := LaunchedRank(); r != 3+i {
			t.Fatalf("LaunchedRank() = %d with %s=%d, want %d", r, v, 3+i, 3+i)
		}
		os.Unsetenv(v)
	}
	t.Setenv("PMI_RANK", "x")
	if r := LaunchedRank(); r != 0 {
		t.Fatalf("LaunchedRank() = %d with PMI_RANK=x, want 0", r)
	}
}

// TestLaunchedAlike: one command line for every rank only where Open MPI says there is one
// application context.
func TestLaunchedAlike(t *testing.T) {
	t.Setenv("OMPI_APP_CTX_NUM_PROCS", "")
	os.Unsetenv("OMPI_APP_CTX_NUM_PROCS")
	if LaunchedAlike() {
		t.Fatal("LaunchedAlike() with no launcher's word")
	}
	for _, c := range []struct {
		name, ctx string
		want      bool
	}{{"one program", "4", true}, {"two programs", "1 3", false}, {"empty", "", false}} {
		t.Setenv("OMPI_APP_CTX_NUM_PROCS", c.ctx)
		if got := LaunchedAlike(); got != c.want {
			t.Errorf("%s: LaunchedAlike() with OMPI_APP_CTX_NUM_PROCS=%q = %v, want %v", c.name, c.ctx, got, c.want)
		}
	}
}
