package cqn_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"example.com/queues/cqn"
	"github.com/warpedgo/warped/app"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// libraryDigest runs the network with the kernel alone, sequentially: the oracle.
func libraryDigest(t *testing.T, c cqn.Config, end float64, seed uint64) string {
	t.Helper()
	lps, err := cqn.New(c)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := dispatch.New(kernel.Config{MaxSimTime: end, Seed: seed, Type: kernel.Sequential}, lps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res.Digest
}

// command runs the model's own command, as its main does, and returns the exit status
// and output.
func command(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := app.New("queues", cqn.Command()).Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var digestLine = regexp.MustCompile(`(?m)^digest: ([0-9a-f]{64})$`)

// TestRunAndReport: the model's command, under time warp with its report and stats file,
// commits the library's sequential digest; its float results are printed as such.
func TestRunAndReport(t *testing.T) {
	c := cqn.Config{Stations: 16, Jobs: 3, Service: 1, Transit: 0.5}
	want := libraryDigest(t, c, 200, 5)
	dir := t.TempDir()
	report, stats := filepath.Join(dir, "r.html"), filepath.Join(dir, "s.json")
	for _, typ := range []string{"sequential", "time-warp"} {
		code, out, errOut := command("cqn", "--stations", "16", "--jobs", "3", "--max-sim-time", "200", "--seed", "5",
			"--simulation-type", typ, "--time-warp-worker-threads", "2", "--gpu", "off", "--report", report, "--stats-file", stats)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", typ, code, errOut)
		}
		m := digestLine.FindStringSubmatch(out)
		if m == nil || m[1] != want {
			t.Fatalf("%s: digest %v, library %s\n%s", typ, m, want, out)
		}
		if !regexp.MustCompile(`(?m)^  Completions \(max over LPs\): +\d+$`).MatchString(out) {
			t.Fatalf("%s: no per-station reduction in\n%s", typ, out)
		}
		if !regexp.MustCompile(`(?m)^  Mean queue length: +\d+\.\d+$`).MatchString(out) {
			t.Fatalf("%s: no float result line in\n%s", typ, out)
		}
		page, err := os.ReadFile(report)
		if err != nil || !strings.Contains(string(page), want) {
			t.Fatalf("%s: the report lacks the digest (%v)", typ, err)
		}
	}
	code, help, _ := command("help", "cqn")
	if code != 0 || !strings.Contains(help, "Model flags:\n  --stations int") || !strings.Contains(help, "Usage: queues cqn") {
		t.Fatalf("help: exit %d\n%s", code, help)
	}
}

// TestStudy: a study of the model's own command gives every run the library's digest and
// summarises the model's float results and a kernel statistic.
func TestStudy(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(spec, []byte("model: cqn\nflags: {stations: 8, max-sim-time: 100}\nparameters:\n  jobs: [1, 3]\n"+
		"replications: 2\nresults: [throughput, mean_queue, efficiency]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, errOut := command("study", spec, "--out", out, "--progress", "off", "--jobs", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "mean_queue") {
		t.Fatalf("no summary:\n%s", stdout)
	}
	f, err := os.Open(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		jobs, _ := strconv.Atoi(row[col["jobs"]])
		seed, _ := strconv.ParseUint(row[col["seed"]], 10, 64)
		want := libraryDigest(t, cqn.Config{Stations: 8, Jobs: jobs, Service: 1, Transit: 0.5}, 100, seed)
		if row[col["digest"]] != want {
			t.Fatalf("run %v: digest %s, library %s", row, row[col["digest"]], want)
		}
	}
}
