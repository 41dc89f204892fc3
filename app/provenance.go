package app

import (
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/warpedgo/warped/kernel"
)

// provenance says where a run's figures came from, so that a figure in a paper can be
// traced to the binary, the machine and the command that made it (the stats file's
// "provenance" object).
type provenance struct {
	Module      string `json:"module"`
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	Modified    bool   `json:"modified"`
	GoVersion   string `json:"go_version"`
	BuildTags   string `json:"build_tags"`
	Time        string `json:"time_utc"`
	Host        string `json:"host"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	CommandLine string `json:"command_line"`
	Dispatcher  string `json:"dispatcher,omitempty"`
	Workers     int    `json:"workers,omitempty"`
	Ranks       int    `json:"ranks"`
	Offload     string `json:"offload,omitempty"`
}

// provenance returns the run's provenance, stamped now.
func (inv *invocation) provenance(now time.Time) provenance {
	p := newProvenance(now, commandLine(inv.c.name, inv.m.Name, inv.args))
	p.Dispatcher = inv.o.simType
	if inv.o.simType == kernel.TimeWarp {
		p.Workers = inv.o.workers
		if p.Workers <= 0 {
			p.Workers = p.GOMAXPROCS
		}
	}
	if inv.tr != nil {
		p.Ranks = inv.tr.Size()
	}
	if inv.be != nil {
		p.Offload = inv.be.Name()
	}
	return p
}

// newProvenance returns what every provenance says, stamped now, for command line cmd:
// the build and the machine (a run adds its dispatcher, workers and ranks; a study's
// summary has its execution beside it).
func newProvenance(now time.Time, cmd string) provenance {
	b := readBuildInfo()
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	p := provenance{Module: b.module, Version: b.version, Commit: b.commit, Modified: b.modified,
		GoVersion: b.goVersion, BuildTags: b.tags, Time: now.UTC().Format(time.RFC3339),
		Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), CommandLine: cmd, Ranks: 1}
	if b.warped != "" {
		p.Version += " (warped " + b.warped + ")"
	}
	return p
}

// commandLine joins the program, model and arguments as a shell would take them back,
// quoting the arguments that need it.
func commandLine(prog, model string, args []string) string {
	parts := []string{prog, model}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
