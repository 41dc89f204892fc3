package app

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// buildInfo describes the binary: the module version that 'go install ...@version'
// records ("(devel)" for a build from a checkout), the commit and whether the tree had
// changes (recorded when built from a git checkout with -buildvcs), the Go version and
// the build tags (mpi: runs span processes under mpirun).
type buildInfo struct {
	module, version, commit, goVersion, tags string
	modified                                 bool
	// warped is the version of the warped module when the program is another module's
	// (a model's own command), else "".
	warped string
}

// warpedModule is this repository's module path.
const warpedModule = "github.com/warpedgo/warped"

// readBuildInfo returns what the Go toolchain recorded in the binary.
func readBuildInfo() buildInfo {
	b := buildInfo{module: warpedModule, version: "(devel)", goVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if info.Main.Path != "" {
		b.module = info.Main.Path
	}
	if info.Main.Version != "" {
		b.version = info.Main.Version
	}
	if info.GoVersion != "" {
		b.goVersion = info.GoVersion
	}
	for _, d := range info.Deps {
		if d.Path == warpedModule {
			b.warped = d.Version
			if d.Replace != nil {
				b.warped += " => " + d.Replace.Path
			}
		}
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.commit = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		case "-tags":
			b.tags = s.Value
		}
	}
	return b
}

// writeVersion prints the version lines of 'PROGRAM version'.
func writeVersion(w io.Writer, prog string, b buildInfo) {
	commit, tags := commitLabel(b.commit, b.modified), tagsLabel(b.tags)
	if b.commit == "" {
		commit += ": go build -buildvcs=true from a git checkout records it"
	}
	mpi := "no mpi tag: one process only"
	if slices.Contains(strings.Split(b.tags, ","), "mpi") {
		mpi = "runs span processes under mpirun"
	}
	fmt.Fprintf(w, "%s %s\n  module:     %s\n", prog, b.version, b.module)
	if b.warped != "" {
		fmt.Fprintf(w, "  warped:     %s\n", b.warped)
	}
	fmt.Fprintf(w, "  commit:     %s\n  go:         %s %s/%s\n  build tags: %s (%s)\n",
		commit, b.goVersion, runtime.GOOS, runtime.GOARCH, tags, mpi)
}

// commitLabel names the commit a binary was built from, for people ('warped version', the
// report's provenance).
func commitLabel(commit string, modified bool) string {
	switch {
	case commit == "":
		return "unknown (built without VCS information)"
	case modified:
		return commit + " (with uncommitted changes)"
	}
	return commit
}

// tagsLabel names a binary's build tags, for people.
func tagsLabel(tags string) string {
	if tags == "" {
		return "none"
	}
	return tags
}
