package app

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// parsed returns an invocation of model name whose flags were parsed from args.
func parsed(t *testing.T, name string, args ...string) *invocation {
	t.Helper()
	m := findModel(name)
	require.NotNil(t, m)
	var out, errOut bytes.Buffer
	inv := &invocation{c: testCommand(), m: m, stdout: &out, stderr: &errOut}
	require.NoError(t, inv.parseFlags(args))
	return inv
}

func TestParseFlagsStep(t *testing.T) {
	m := findModel("phold")
	inv := &invocation{c: testCommand(), m: m}
	require.ErrorIs(t, inv.parseFlags([]string{"--help"}), pflag.ErrHelp)

	err := (&invocation{c: testCommand(), m: m}).parseFlags([]string{"--lps", "4", "stray"})
	var f *failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, exitUsage, f.status)
	require.True(t, f.hint)
	require.EqualError(t, err, `unexpected argument "stray"`)

	// The config file fills what the command line leaves unset.
	path := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"seed": 7, "max-sim-time": 30, "lps": 9}`), 0o644))
	inv = parsed(t, "phold", "--config", path, "--seed", "3")
	require.Equal(t, uint64(3), inv.o.seed)
	require.Equal(t, 30.0, inv.o.maxSimTime)
	lps, _, err := inv.buildModel()
	require.NoError(t, err)
	require.Len(t, lps, 9)
}

func TestCheckOptionsStep(t *testing.T) {
	valid := func() options {
		return options{workers: 2, period: 1, maxAggregate: 1, gvtPeriodMS: 2, gpu: "off"}
	}
	o := valid()
	require.NoError(t, checkOptions(&o))
	for _, tc := range []struct {
		change func(*options)
		want   string
	}{
		{func(o *options) { o.workers = 0 }, "--time-warp-worker-threads must be at least 1, got 0"},
		{func(o *options) { o.workers = kernel.MaxWorkers + 1 }, "--time-warp-worker-threads must be at most 4096 (workers beyond the CPUs take turns on them), got 4097"},
		{func(o *options) { o.period = -2 }, "--time-warp-state-saving-period must be at least 1, got -2"},
		{func(o *options) { o.maxAggregate = 0 }, "--time-warp-communication-max-aggregate must be at least 1, got 0"},
		{func(o *options) { o.schedulers = -1 }, "--time-warp-scheduler-count must be at least 1"},
		{func(o *options) { o.gvtPeriodMS = 0 }, "--time-warp-gvt-calculation-period must be a positive number of milliseconds, at most 3.6e+06 (an hour), got 0"},
		{func(o *options) { o.gpu = "maybe" }, `--gpu: unknown mode "maybe"`},
		{func(o *options) { o.gpuBatchSize = kernel.MaxBatchSize + 1 }, "--gpu-batch-size must be in"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			err := checkOptions(&o)
			require.ErrorContains(t, err, tc.want)
			var f *failure
			require.ErrorAs(t, err, &f)
			require.Equal(t, exitUsage, f.status)
		})
	}
}

func TestConfigStep(t *testing.T) {
	// Without a period on the command line, the kernel's default applies.
	inv := parsed(t, "phold", "--time-warp-worker-threads", "3", "--time-warp-gvt-calculation-period", "0.5",
		"--time-warp-queue-type", "calendar", "--seed", "5")
	part := partition.RoundRobin{}
	cfg := inv.config(part)
	require.Equal(t, 0, cfg.TimeWarp.StateSavingPeriod)
	require.Equal(t, 3, cfg.TimeWarp.Workers)
	require.Equal(t, 500*time.Microsecond, cfg.TimeWarp.GVTPeriod)
	require.Equal(t, "calendar", cfg.TimeWarp.QueueType)
	require.Equal(t, uint64(5), cfg.Seed)
	require.Equal(t, partition.Partitioner(part), cfg.Partition)
	require.Nil(t, cfg.Transport)
	require.Equal(t, "5", cfg.Agree["--seed"], "the seed must agree across ranks")
	require.NotContains(t, cfg.Agree, "--time-warp-worker-threads", "workers may differ between ranks")

	// A period given asks for it, even the default value.
	cfg = parsed(t, "phold", "--time-warp-state-saving-period", "16").config(nil)
	require.Equal(t, 16, cfg.TimeWarp.StateSavingPeriod)
}

func TestOffloadStep(t *testing.T) {
	inv := parsed(t, "phold", "--simulation-type", "sequential", "--gpu", "on")
	var cfg kernel.Config
	note, err := inv.openOffload(&cfg, nil)
	require.NoError(t, err, "a sequential run opens no backend")
	require.Empty(t, note)
	require.Nil(t, inv.be)

	inv = parsed(t, "phold", "--gpu", "cpu", "--gpu-batch-size", "64")
	lps, _, err := inv.buildModel()
	require.NoError(t, err)
	note, err = inv.openOffload(&cfg, lps)
	require.NoError(t, err)
	require.Empty(t, note)
	require.NotNil(t, inv.be)
	require.Equal(t, inv.be, cfg.TimeWarp.Offload)
	require.Equal(t, 64, cfg.TimeWarp.BatchSize)
	require.False(t, cfg.TimeWarp.OffloadAuto)
	inv.close()
}

func TestOutputsCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, flag, path, want string }{
		{"missing directory", "--stats-file", filepath.Join(dir, "no", "s.json"), "cannot write --stats-file " + filepath.Join(dir, "no", "s.json") + ": directory"},
		{"proc", "--report", "/proc/x", "cannot write --report /proc/x: it is in /proc"},
		{"a directory", "--series-file", dir, "it is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parsed(t, "phold", tc.flag, tc.path).checkOutputs()
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, exitUsage, err.(*failure).status)
		})
	}
	require.NoError(t, parsed(t, "phold", "--stats-file", "/dev/null").checkOutputs())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "checking creates nothing")
}

// TestOutputsNamingOneFileAreRefused: two outputs that would write one file (by name,
// through a symlink or a hard link, standard output twice), or an output that would
// replace the --config file or a file the model reads, are refused before the run, naming
// both; across processes
// the files compared are those each rank writes (FILE-rankN).
func TestOutputsNamingOneFileAreRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("cc.json", []byte(`{"lps": 8}`), 0o644))
	require.NoError(t, os.WriteFile("old.out", []byte("old"), 0o644))
	require.NoError(t, os.Symlink("old.out", "link.out"))
	require.NoError(t, os.Link("old.out", "hard.out"))
	require.NoError(t, os.WriteFile("w2.txt", []byte("1,2"), 0o644))
	require.NoError(t, os.WriteFile("c.bench", []byte("INPUT(a)\nOUTPUT(b)\nb = NOT(a)\n"), 0o644))
	for _, tc := range []struct {
		name  string
		ranks string // OMPI_COMM_WORLD_SIZE, as mpirun sets it ("": one process)
		model string
		args  []string
		want  string // "": no refusal
	}{
		{"stats and report", "", "phold", []string{"--stats-file", "same.out", "--report", "same.out"},
			"--stats-file same.out and --report same.out name one file; give each output its own file"},
		{"stats and samples", "", "phold", []string{"--stats-file", "x", "--sample-file", "x"},
			"--stats-file x and --sample-file x name one file"},
		{"./ and the same name", "", "phold", []string{"--sample-file", "./x", "--trace", "x"},
			"--sample-file ./x and --trace x name one file"},
		{"a symlink", "", "phold", []string{"--stats-file", "link.out", "--series-file", "old.out"},
			"--stats-file link.out and --series-file old.out name one file"},
		{"a hard link", "", "phold", []string{"--report", "hard.out", "--trace", "old.out"},
			"--report hard.out and --trace old.out name one file"},
		{"the model's own output", "", "epidemic", []string{"--series-file", "e.csv", "--time-series", "e.csv"},
			"--series-file e.csv and --time-series e.csv name one file"},
		{"standard output twice", "", "phold", []string{"--stats-file", "-", "--report", "-"},
			"--stats-file - and --report - both write to standard output"},
		{"the config file", "", "phold", []string{"--config", "cc.json", "--stats-file", "cc.json"},
			"--stats-file cc.json would replace the --config file cc.json; name another output file"},
		{"the config file by another name", "", "phold", []string{"--config", "cc.json", "--report", filepath.Join(dir, "cc.json")},
			"would replace the --config file cc.json"},
		{"the model's input file", "", "epidemic", []string{"--warped2-config", "w2.txt", "--stats-file", "w2.txt"},
			"--stats-file w2.txt would replace the --warped2-config file w2.txt; name another output file"},
		{"a circuit file", "", "logic", []string{"--circuit", "c.bench", "--report", "c.bench"},
			"--report c.bench would replace the --circuit file c.bench"},
		{"a shipped circuit's name is no file", "", "logic", []string{"--circuit", "adder-4", "--report", "adder-4"}, ""},
		{"devices may be shared", "", "phold", []string{"--stats-file", "/dev/null", "--report", "/dev/null", "--trace", "/dev/null"}, ""},
		{"across processes: rank files beside the stats file", "2", "phold", []string{"--stats-file", "x.csv", "--sample-file", "x.csv"}, ""},
		{"across processes: a rank's file", "2", "phold", []string{"--stats-file", "x-rank1.csv", "--sample-file", "x.csv"},
			"--stats-file x-rank1.csv and --sample-file x.csv (rank 1's x-rank1.csv) name one file"},
		{"across processes: two ranks' files", "3", "phold", []string{"--series-file", "x.csv", "--trace", "x.csv"},
			"--series-file x.csv (rank 0's x-rank0.csv) and --trace x.csv (rank 0's x-rank0.csv) name one file"},
		{"across processes: standard output for a rank's file", "2", "phold", []string{"--sample-file", "-"},
			"--sample-file - writes to standard output, which the ranks of a run across processes share: give a file"},
		{"across processes: the stats file on standard output", "2", "phold", []string{"--stats-file", "-"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ranks != "" {
				t.Setenv("OMPI_COMM_WORLD_SIZE", tc.ranks)
			}
			err := parsed(t, tc.model, tc.args...).checkOutputs()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, exitUsage, err.(*failure).status)
		})
	}
	// Through the command: one line, exit 2, nothing written, the config file intact.
	code, out, errOut := warped("phold", "--config", "cc.json", "--max-sim-time", "5", "--stats-file", "cc.json", "--report", "r.html")
	require.Equal(t, exitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "warped phold: --stats-file cc.json would replace the --config file cc.json; name another output file; "+
		"run 'warped help phold' for the flags\n", errOut)
	b, err := os.ReadFile("cc.json")
	require.NoError(t, err)
	require.Equal(t, `{"lps": 8}`, string(b))
	names, err := os.ReadDir(".")
	require.NoError(t, err)
	require.Len(t, names, 6, "nothing written: cc.json, old.out and its two links, w2.txt, c.bench")
}

// TestUnwritableOutputRefusedBeforeTheRun: an existing output file that the process could
// not write (mode 0444; as root, who writes it all the same, an immutable file) is
// refused with exit 2 before the run, and left as it was, where the rename would have
// replaced it (or, immutable, failed after the whole run).
func TestUnwritableOutputRefusedBeforeTheRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	want := "read-only to this user (permission denied): make it writable, or name another file"
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			t.Skipf("as root only an immutable file is unwritable, and chattr +i failed: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
		want = "may not be changed (operation not permitted: immutable or append-only?): name another file"
	} else {
		require.NoError(t, os.Chmod(p, 0o444))
	}
	code, out, errOut := warped("phold", "--lps", "8", "--max-sim-time", "5", "--gpu", "off", "--stats-file", p)
	require.Equal(t, exitUsage, code, errOut)
	require.Empty(t, out, "refused before the run")
	require.Equal(t, "warped phold: cannot write --stats-file "+p+": the existing file "+want+
		"; run 'warped help phold' for the flags\n", errOut)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
}

func TestExitStep(t *testing.T) {
	var errOut bytes.Buffer
	inv := &invocation{c: testCommand(), m: findModel("pcs"), stderr: &errOut}
	for _, tc := range []struct {
		err    error
		status int
		want   string
	}{
		{nil, exitOK, ""},
		{usageFailure("--x must be %d", 1), exitUsage, "warped pcs: --x must be 1; run 'warped help pcs' for the flags\n"},
		{usageFailure("pcs: --x must be %d", 1), exitUsage, "warped pcs: --x must be 1; run 'warped help pcs' for the flags\n"}, // the model's own name once
		{usageFailure("pcsx: --x must be %d", 1), exitUsage, "warped pcs: pcsx: --x must be 1; run 'warped help pcs' for the flags\n"},
		{runFailure(errors.New("pcs: boom")), exitRun, "warped pcs: boom\n"},
		{runFailure(errors.New("boom")), exitRun, "warped pcs: boom\n"},
		{errors.New("plain"), exitRun, "warped pcs: plain\n"},
		{&failure{err: errors.New("shown by rank 0"), status: exitRun, quiet: true}, exitRun, ""},
		{&failure{err: errors.New("run failed: panic"), status: exitRun, detail: "stack\n"}, exitRun, "warped pcs: run failed: panic\nstack\n"},
	} {
		errOut.Reset()
		require.Equal(t, tc.status, inv.exit(tc.err))
		require.Equal(t, tc.want, errOut.String())
	}
}

// TestCrowdNote: the note on more ranks than CPUs comes only where the launcher started more
// ranks on this node than it has CPUs.
func TestCrowdNote(t *testing.T) {
	two := comm.NewLoopback(2, comm.LoopbackOptions{})
	defer func() {
		for _, tr := range two {
			_ = tr.Close()
		}
	}()
	cases := []struct {
		name       string
		tr         comm.Transport
		local, cpu int
		want       string
	}{
		{"one process", nil, 8, 2, ""},
		{"unknown local count", two[0], 0, 2, ""},
		{"a rank a CPU", two[0], 2, 2, ""},
		{"four ranks on two CPUs", two[0], 4, 2, "4 ranks share this node's 2 CPUs"},
	}
	for _, c := range cases {
		got := crowdNote(c.tr, c.local, c.cpu)
		if c.want == "" {
			require.Empty(t, got, c.name)
		} else {
			require.Contains(t, got, c.want, c.name)
			require.Contains(t, got, "start at most 2 ranks a node", c.name)
		}
	}
}

// TestTotalsSayWhereTimeWent checks the totals' lines that say where a run's time went: the
// CPU wait with its share of the wall time for every run, and the threads that ran the
// workers for a time-warp run only.
func TestTotalsSayWhereTimeWent(t *testing.T) {
	find := func(lines [][2]string, label string) (string, bool) {
		for _, l := range lines {
			if l[0] == label {
				return l[1], true
			}
		}
		return "", false
	}
	for _, c := range []struct {
		name, simType string
		st            kernel.Stats
		wait, threads string // "" where the line is absent
	}{
		{"time warp beside a hog", kernel.TimeWarp, kernel.Stats{WallSeconds: 2, CPUWaitSeconds: 0.5, WorkerThreads: 1.25},
			"0.500 s, 25% of the wall time (threads ready to run, waiting for a processor)", "1.25 (mean over the run)"},
		{"sequential, idle", kernel.Sequential, kernel.Stats{WallSeconds: 1, CPUWaitSeconds: 0.01},
			"0.010 s, 1% of the wall time (threads ready to run, waiting for a processor)", ""},
		{"no wall time", kernel.Sequential, kernel.Stats{}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := totals(c.simType, "", kernel.Result{Stats: c.st})
			wait, ok := find(lines, "CPU wait")
			require.Equal(t, c.wait != "", ok)
			require.Equal(t, c.wait, wait)
			threads, ok := find(lines, "Worker threads")
			require.Equal(t, c.threads != "", ok)
			require.Equal(t, c.threads, threads)
		})
	}
}
