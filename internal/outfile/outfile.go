// Package outfile writes a command's output files so that none is clobbered or
// half-written. A regular file, or a path that does not exist yet, is written to a
// temporary file in the same directory and renamed into place once complete: a reader
// sees the old contents or the new, never a part, and a failed or interrupted write leaves
// the old file as it was and no temporary file. Anything else (a device such as
// /dev/null, a FIFO, a socket, a symlink to one of these, a path through /proc such as
// /dev/stdout, and "-" for standard output) is written in place, streaming, and never
// replaced. [Check] tells, before a run, whether a path can be written at all (an
// existing file that this process could not write itself is never replaced), and
// [Identify] whether two paths name one file.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stdout is the path that names standard output.
const Stdout = "-"

// File is an output file being written. Write it, then Commit; Abort (safe to defer, and
// after Commit) drops what Commit did not publish.
type File struct {
	path string    // the path as given, for messages
	dst  string    // the path the temporary file is renamed to ("" in place)
	f    *os.File  // the temporary file, or the file written in place (nil for "-")
	w    io.Writer // where Write writes: f, or the writer "-" stands for
	keep bool      // w is standard output: never closed
	mode fs.FileMode
	// owner is the replaced file's owner, given to the new file where this process may
	// (root); otherwise the new file is this process's user's, as a rename makes it.
	owner  *owner
	synced bool // sync ran
	done   bool
	err    error // the first write error
}

// Error is a failure to write an output file: every error of this package is one.
type Error struct {
	Path string // the path as given
	Err  error  // what went wrong, without the path
}

func (e *Error) Error() string { return "cannot write " + e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// fail returns an *Error for path.
func fail(path string, err error) *Error {
	err = UnwrapPath(err)
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		// The file is not at fault, the process's (or the system's) limit is.
		err = fmt.Errorf("%w: raise the limit (ulimit -n), or ask for fewer outputs", err)
	}
	return &Error{Path: path, Err: err}
}

// target is what a path names, as far as writing it goes.
type target struct {
	inPlace bool        // write the path itself, streaming
	dst     string      // the regular file (or new path) to replace, symlinks resolved
	mode    fs.FileMode // the permissions of the file replaced, or 0644
	owner   *owner      // the owner of the file replaced where it is not this process's user
}

// owner is a file's user and group.
type owner struct{ uid, gid int }

// Check reports, as an error naming the path, why path cannot be written: its directory
// is missing or not writable, it is a directory, it lies in /proc or /sys, or it is an
// existing file that this process could not write (read-only to it, immutable or
// append-only). It creates nothing. "-" is always writable.
func Check(path string) error {
	_, err := resolve(path)
	return err
}

// resolve tells how path is to be written, and fails where Check does.
func resolve(path string) (target, error) {
	if path == Stdout {
		return target{inPlace: true}, nil
	}
	if path == "" {
		return target{}, fail(path, errors.New("the path is empty"))
	}
	viaProc, dst, err := follow(path)
	if err != nil {
		return target{}, fail(path, err)
	}
	t := target{dst: dst, mode: 0o644}
	st, serr := os.Stat(path)
	switch {
	case serr == nil && st.IsDir():
		return target{}, fail(path, errors.New("it is a directory"))
	case serr == nil && !st.Mode().IsRegular():
		return target{inPlace: true}, nil // a device, FIFO or socket
	case serr == nil && viaProc:
		return target{inPlace: true}, nil // an open file of this process, /dev/stdout
	case serr == nil:
		// Renaming over a file needs only its directory to be writable, so a file made
		// read-only (or owned by another user) would be replaced all the same: refuse
		// it, as a program that writes in place must.
		if err := writableFile(dst); err != nil {
			return target{}, fail(path, err)
		}
		t.mode = st.Mode().Perm()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid()) {
			// Root writing over a user's file: the file stays theirs, as written in place.
			t.owner = &owner{int(sys.Uid), int(sys.Gid)}
		}
	case !errors.Is(serr, fs.ErrNotExist):
		return target{}, fail(path, serr)
	}
	if err := checkDir(filepath.Dir(dst)); err != nil {
		return target{}, fail(path, err)
	}
	return t, nil
}

// follow resolves the symlinks of path's last element (the directories are left as they
// are: renaming within them is what matters) and reports whether one of them leads
// through a /proc fd directory, where an open file of this process is named.
func follow(path string) (viaProc bool, dst string, err error) {
	p := filepath.Clean(path)
	for range 40 {
		if isProc(p) && filepath.Base(filepath.Dir(p)) == "fd" {
			viaProc = true // an open file (/dev/stdout); /proc/self/status is no output
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return viaProc, p, nil
		}
		if err != nil {
			return false, "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return viaProc, p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return false, "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	return false, "", errors.New("too many levels of symbolic links")
}

// writableFile fails, saying what to do, unless this process could open the existing
// regular file path for writing. It opens it so (without truncating it, and closes it at
// once) rather than asking access(2): one call answers for its permissions, root's
// override of them, an immutable or append-only file (chattr +i or +a on Linux, chflags
// on BSD and macOS, which permissions do not show and which would otherwise fail the
// rename only after the run) and a read-only mount, exactly as a write would. The open
// changes nothing in the file; O_NONBLOCK keeps it from waiting should path have become
// a FIFO since it was looked at.
func writableFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err == nil {
		f.Close()
		return stickyOwner(path)
	}
	switch err = UnwrapPath(err); {
	case errors.Is(err, unix.EACCES):
		return errors.New("the existing file is read-only to this user (permission denied): make it writable, or name another file")
	case errors.Is(err, unix.EPERM):
		return errors.New("the existing file may not be changed (operation not permitted: immutable or append-only?): name another file")
	case errors.Is(err, unix.EROFS):
		return errors.New("it is on a read-only file system: name a file elsewhere")
	}
	return fmt.Errorf("the existing file cannot be opened for writing (%w): name another file", err)
}

// stickyOwner fails where path's directory is sticky (as /tmp is) and neither path nor
// the directory belongs to this process's user: such a file may be written but not
// replaced, so the rename would fail after the run. Root may replace it.
func stickyOwner(path string) error {
	var dir, file unix.Stat_t
	if unix.Stat(filepath.Dir(path), &dir) != nil || unix.Stat(path, &file) != nil {
		return nil // what cannot be looked at is left to the write
	}
	uid := uint32(os.Geteuid())
	if dir.Mode&unix.S_ISVTX == 0 || uid == 0 || file.Uid == uid || dir.Uid == uid {
		return nil
	}
	return errors.New("the existing file belongs to another user in a sticky directory, so it cannot be replaced: name another file")
}

// isProc reports whether p names something under /proc.
func isProc(p string) bool { return p == "/proc" || strings.HasPrefix(p, "/proc/") }

// checkDir fails unless dir exists, is a directory this process may create files in, and
// is not in a pseudo file system.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist", dir)
	}
	if err != nil {
		return UnwrapPath(err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if name := pseudoFS(dir); name != "" {
		return fmt.Errorf("it is in %s, which holds no files", name)
	}
	if err := writable(dir); err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, err)
	}
	return nil
}

// UnwrapPath drops the operation and path of a *fs.PathError, for a message that names
// the path already.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ID is what a path names as a file, so that two outputs (or an output and an input)
// that name one file are refused before a run rather than one silently lost.
type ID struct {
	name string      // the absolute path, symlinks resolved (the directory's too), or "-"
	fi   fs.FileInfo // the existing file, or nil
}

// Identify returns the ID of path. ok is false for what is written in place and may be
// shared by several outputs (a device such as /dev/null, a FIFO, a socket, a path
// through /proc), which no ID stands for; "-" has one, standard output. Problems are
// left to [Check]: a path it cannot look at gets the ID of its cleaned absolute name.
func Identify(path string) (id ID, ok bool) {
	if path == Stdout {
		return ID{name: Stdout}, true
	}
	viaProc, dst, err := follow(path)
	if err != nil {
		dst = filepath.Clean(path)
	}
	fi, err := os.Stat(dst)
	switch {
	case viaProc || err == nil && !fi.Mode().IsRegular():
		return ID{}, false
	case err != nil:
		fi = nil
	}
	// A new file's name is all there is to compare: resolve the symlinks of its
	// directory too (out/x and link-to-out/x are one file).
	dir, base := filepath.Split(dst)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	return ID{name: filepath.Join(dir, base), fi: fi}, true
}

// Same reports whether id and other name one file: by name, or, for existing files, by
// identity (hard links, and paths whose names differ in ways Identify does not resolve).
func (id ID) Same(other ID) bool {
	return id.name == other.name || id.fi != nil && other.fi != nil && os.SameFile(id.fi, other.fi)
}

// IsStdout reports whether id is standard output ("-").
func (id ID) IsStdout() bool { return id.name == Stdout }

// To is where an output path of "-" goes: Stdout, or the process's standard output where
// it is nil (the package's functions). A program that runs a command with writers of its
// own gives its standard output here, so that "-" does not write past it.
type To struct {
	Stdout io.Writer
}

// stdout is the writer "-" stands for.
func (t To) stdout() io.Writer {
	if t.Stdout == nil {
		return os.Stdout
	}
	return t.Stdout
}

// Create opens path for writing (see the package documentation for how).
func Create(path string) (*File, error) { return To{}.Create(path) }

// Create opens path for writing, "-" being t's standard output (see the package
// documentation for how).
func (t To) Create(path string) (*File, error) {
	r, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if path == Stdout {
		return &File{path: path, w: t.stdout(), keep: true}, nil
	}
	if r.inPlace {
		f, err := openInPlace(path, fifoWait)
		if err != nil {
			return nil, fail(path, err)
		}
		return &File{path: path, f: f, w: f}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(r.dst), tempPrefix(r.dst)+"*") // leftover.go
	if err != nil {
		return nil, fail(path, err)
	}
	if !pending.add(f.Name()) {
		f.Close()
		os.Remove(f.Name())
		return nil, fail(path, errEnding)
	}
	return &File{path: path, dst: r.dst, f: f, w: f, mode: r.mode, owner: r.owner}, nil
}

// fifoWait is how long Create waits for a process to open a FIFO output for reading (its
// reader may start just after the run: warped phold --trace f & cat f).
const fifoWait = 10 * time.Second

// openInPlace opens path, a file written where it is (a device, a FIFO), for appending.
// It does not wait in the open for a FIFO's reader, where no stop signal would reach it:
// it tries again every few milliseconds for up to wait, then fails saying so. Opened so,
// writes still wait for the reader to take what it is sent (Go's poller parks the
// goroutine, not a thread in a system call).
func openInPlace(path string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|unix.O_NONBLOCK, 0)
		if !errors.Is(err, unix.ENXIO) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no process opened this FIFO for reading within %v: start its reader first", wait)
		}
		time.Sleep(5 * time.Millisecond) // a reader that is to come: a process, not a goroutine to wake
	}
}

// Write writes p; the first error is kept, and Commit returns it.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	if err != nil {
		f.err = fail(f.path, err)
	}
	return n, f.err
}

// Commit publishes what was written: it closes the file and, for a temporary file,
// renames it into place. After an error nothing is published and no temporary file is
// left.
func (f *File) Commit() error {
	if f.done {
		return f.err
	}
	f.done = true
	if f.keep {
		return f.err
	}
	if f.dst == "" {
		return f.keepErr(f.f.Close())
	}
	return f.publish(func(name string) error { return os.Rename(name, f.dst) })
}

// CommitAside is Commit for what must never replace a file, such as the partial output
// of a failed run: the file is published under its path only if nothing is there, else
// under the first free name of path with ".partial" (then ".partial-2", ...) before its
// extension, in the same directory (run.csv: run.partial.csv). A file written in place
// is closed where it is. It returns the path written: path as given when the file went
// there.
func (f *File) CommitAside() (string, error) {
	if f.dst == "" || f.done {
		return f.path, f.Commit()
	}
	f.done = true
	var shown string
	err := f.publish(func(name string) error {
		i, ok, err := linkFree(name, f.dst, 0)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("%s and %d names beside it are taken", f.dst, maxAside-1)
		case i == 0:
			shown = f.path
		case f.dst != filepath.Clean(f.path):
			shown = asideName(f.dst, i) // through a symlink: name the file where it is
		default:
			shown = asideName(f.path, i)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return shown, nil
}

// linkFree gives the file at name the first free one of dst (i 0) and the names beside it
// (asideName(dst, i), i from 1), trying them from i from, never replacing a file, and
// removes the name it had; it returns the i taken, and ok false when all are taken.
func linkFree(name, dst string, from int) (i int, ok bool, err error) {
	for i = from; i < maxAside; i++ {
		to := dst
		if i > 0 {
			to = asideName(dst, i)
		}
		switch err := linkNew(name, to); {
		case err == nil:
			os.Remove(name) // linked: the old name goes
			return i, true, nil
		case !errors.Is(err, fs.ErrExist):
			return i, false, err
		}
	}
	return 0, false, nil
}

// publish closes the temporary file with its mode, synced (a full disk may show only
// then), and, where nothing failed, calls put to place it under its name, unless a
// signal has ended the process (pending.settle). put leaves no temporary name behind
// (Commit's renames it, CommitAside's links it and removes it); after a failure nothing is
// published and publish removes it. It returns the file's first error.
func (f *File) publish(put func(name string) error) error {
	name := f.f.Name()
	if f.err == nil && f.owner != nil {
		_ = f.f.Chown(f.owner.uid, f.owner.gid) // refused to other users than root: theirs then
	}
	if f.err == nil {
		f.keepErr(f.f.Chmod(f.mode))
	}
	f.sync()
	f.keepErr(f.f.Close())
	if f.err == nil {
		f.keepErr(pending.settle(name, func() error { return put(name) }))
	} else {
		pending.forget(name)
	}
	if f.err != nil {
		os.Remove(name)
	}
	return f.err
}

// sync flushes a temporary file to its disk, once (a full disk may show only then), and
// returns the file's error. A file written in place (a device, a FIFO) has nothing to sync.
func (f *File) sync() error {
	if f.err == nil && !f.synced && f.dst != "" {
		f.synced = true
		f.keepErr(f.f.Sync())
	}
	return f.err
}

// maxAside is how many names CommitAside tries.
const maxAside = 100

// keepErr records err, when it is the file's first, as its error, naming the path, and
// returns the file's error.
func (f *File) keepErr(err error) error {
	if f.err == nil && err != nil {
		f.err = fail(f.path, err)
	}
	return f.err
}

// asideName is path with ".partial" before its extension, and -i after that from the
// second on (i: 1 for the first).
func asideName(path string, i int) string {
	ext := filepath.Ext(path)
	if ext == filepath.Base(path) {
		ext = "" // a name such as .samples is all base
	}
	tag := ".partial"
	if i > 1 {
		tag += "-" + strconv.Itoa(i)
	}
	return strings.TrimSuffix(path, ext) + tag + ext
}

// linkNew gives the file at from the new name to, failing with fs.ErrExist when to is
// taken, never replacing it (a hard link is made or not at once, unlike a check and a
// rename). Where the file system has no hard links, it renames after a check.
func linkNew(from, to string) error {
	err := os.Link(from, to)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(to); serr == nil {
		return fs.ErrExist
	}
	if rerr := os.Rename(from, to); rerr != nil {
		return err
	}
	return nil
}

// Abort drops the file unless Commit ran: a temporary file is removed, a file written in
// place is closed as it is.
func (f *File) Abort() {
	if f == nil || f.done {
		return
	}
	f.done = true
	if f.keep {
		return
	}
	f.f.Close()
	if f.dst != "" {
		pending.forget(f.f.Name())
		os.Remove(f.f.Name())
	}
}
