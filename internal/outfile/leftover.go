package outfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A process killed at once (SIGKILL, the out-of-memory killer, a batch system's end of
// time) settles none of its temporary files: they stay, hidden, beside the outputs they
// were to become. Their names say which host and process wrote them (tempPrefix), so that
// a later run on that host can tell those of ended processes (Leftovers) and keep them
// where a reader finds them (KeepAside), or remove them.

// tempPrefix is the start of the name of a temporary file for the output file dst:
// hidden, then the host and the process id (what Leftovers reads back).
func tempPrefix(dst string) string {
	return leftoverStem(dst) + hostTag() + "-" + strconv.Itoa(os.Getpid()) + "-"
}

// leftoverStem is the part of a temporary file's name that names its output dst.
func leftoverStem(dst string) string { return "." + filepath.Base(dst) + ".tmp-" }

// hostTag is this host's name as temporary files carry it: without dashes (the name's
// separator) or path separators.
func hostTag() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return strings.NewReplacer("-", "_", "/", "_").Replace(h)
}

// Leftovers returns the temporary files (their paths) that ended processes of this host
// left for the output path, oldest first. A path written in place has none.
func Leftovers(path string) ([]string, error) {
	t, err := resolve(path)
	if err != nil || t.inPlace {
		return nil, err
	}
	dir, stem, host := filepath.Dir(t.dst), leftoverStem(t.dst), hostTag()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fail(path, err)
	}
	type leftover struct {
		path string
		mod  int64
	}
	var out []leftover
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stem)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		// host-pid-random, the host without dashes.
		parts := strings.Split(rest, "-")
		if len(parts) != 3 || parts[0] != host {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, leftover{filepath.Join(dir, e.Name()), info.ModTime().UnixNano()})
	}
	slices.SortFunc(out, func(a, b leftover) int { return int(a.mod - b.mod) })
	paths := make([]string, len(out))
	for i, l := range out {
		paths[i] = l.path
	}
	return paths, nil
}

// alive reports whether process pid exists (a process of another user counts: EPERM).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// KeepAside gives leftover name the first free name beside output path that CommitAside
// would give it (run.csv: run.partial.csv, run.partial-2.csv, ...), never replacing a
// file, with a new output's mode (0644, not the temporary file's 0600), and returns that
// name.
func KeepAside(name, path string) (string, error) {
	if err := os.Chmod(name, 0o644); err != nil {
		return "", fail(path, err)
	}
	i, ok, err := linkFree(name, path, 1)
	switch {
	case err != nil:
		return "", fail(path, err)
	case !ok:
		return "", fail(path, fmt.Errorf("%d names beside it are taken", maxAside-1))
	}
	return asideName(path, i), nil
}
