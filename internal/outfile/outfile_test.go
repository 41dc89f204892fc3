package outfile

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileNewAndReplaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := WriteFile(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v, want \"two\" 0600", b, st.Mode().Perm())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("files left: %v", names)
	}
}

func TestSymlinkToRegularKeepsTheLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	os.WriteFile(real, []byte("old"), 0o644)
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(link)
	b, _ := os.ReadFile(real)
	if fi.Mode()&os.ModeSymlink == 0 || string(b) != "new" {
		t.Fatalf("link replaced (%v) or target not written (%q)", fi.Mode(), b)
	}
}

func TestDevicesAreWrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/null", link} {
		if err := WriteFile(p, []byte("x")); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	fi, _ := os.Lstat(link)
	st, _ := os.Stat("/dev/null")
	if fi.Mode()&os.ModeSymlink == 0 || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("replaced: link %v, /dev/null %v", fi.Mode(), st.Mode())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("files left: %v", names)
	}
}

func TestFIFOIsStreamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(p)
		got <- string(b)
	}()
	if err := WriteFile(p, []byte("streamed")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "streamed" {
		t.Fatalf("read %q", s)
	}
	if st, _ := os.Lstat(p); st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v", st.Mode())
	}
}

func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, path, want string }{
		{"missing directory", filepath.Join(dir, "no", "x"), "does not exist"},
		{"a directory", dir, "is a directory"},
		{"proc", "/proc/x", "/proc"},
		{"a file of /proc", "/proc/self/status", "it is in /proc, which holds no files"},
		{"empty", "", "the path is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%q) = %v, want an error with %q", c.path, err, c.want)
			}
			if _, err := Create(c.path); err == nil {
				t.Fatalf("Create(%q) succeeded", c.path)
			}
		})
	}
	for _, p := range []string{"-", "/dev/null", "/dev/stdout", filepath.Join(dir, "new")} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v", p, err)
		}
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	os.WriteFile(p, []byte("old"), 0o644)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort()
	b, _ := os.ReadFile(p)
	if names := entries(t, dir); len(names) != 1 || string(b) != "old" {
		t.Fatalf("files %v, contents %q", names, b)
	}
}

// TestRemovePendingLeavesNoTemporary: a process that must end at once (a second signal)
// removes the temporary files of the outputs it is writing, keeps what it published, and
// publishes nothing after: no temporary file, no half output, the old file as it was.
func TestRemovePendingLeavesNoTemporary(t *testing.T) {
	defer func(p *temporaries) { pending = p }(pending)
	pending = &temporaries{names: map[string]bool{}}
	dir := t.TempDir()
	done, open, old := filepath.Join(dir, "done"), filepath.Join(dir, "open"), filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(done, []byte("whole")); err != nil {
		t.Fatal(err)
	}
	f, err := Create(open)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Create(old)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	g.Write([]byte("new"))
	if n := len(entries(t, dir)); n != 4 {
		t.Fatalf("before: %d files %v, want done, old and two temporary files", n, entries(t, dir))
	}
	RemovePending()
	if names := entries(t, dir); len(names) != 2 || names[0] != "done" || names[1] != "old" {
		t.Fatalf("after RemovePending: files %v, want [done old]", names)
	}
	if err := g.Commit(); err == nil || !strings.Contains(err.Error(), "the process is ending") {
		t.Fatalf("Commit after RemovePending: %v, want the process is ending", err)
	}
	if p, err := f.CommitAside(); err == nil || !strings.Contains(err.Error(), "the process is ending") {
		t.Fatalf("CommitAside after RemovePending: %q, %v, want the process is ending", p, err)
	}
	if _, err := Create(filepath.Join(dir, "later")); err == nil {
		t.Fatal("Create after RemovePending succeeded")
	}
	b, _ := os.ReadFile(old)
	if names := entries(t, dir); len(names) != 2 || string(b) != "old" {
		t.Fatalf("at the end: files %v, old holds %q", names, b)
	}
	if len(pending.names) != 0 {
		t.Fatalf("still recorded: %v", pending.names)
	}
}

func TestFailedWriteIsAnError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	err := WriteFile("/dev/full", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("got %v, want no space left", err)
	}
}

// TestOpenFileThroughProcIsWrittenInPlace: /proc/self/fd/N (what /dev/stdout leads to)
// names a file this process has open, such as the file a shell redirected stdout to:
// written in place after what it holds, never replaced by a new file.
func TestOpenFileThroughProcIsWrittenInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "redirected")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("printed ")
	via := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(via); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	st0, _ := os.Stat(p)
	if err := WriteFile(via, []byte("stats")); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if !os.SameFile(st0, st1) || string(b) != "printed stats" {
		t.Fatalf("replaced (%v) or overwritten: %q", !os.SameFile(st0, st1), b)
	}
}

// TestUnwritableFileIsRefused: an existing file that this process could not write is
// refused by Check and Create, and left as it was, rather than replaced by the rename
// (which needs only the directory). Permissions do not bind root, so as root the mode
// case is skipped and the immutable and append-only ones (chattr, where it works) stand
// for it.
func TestUnwritableFileIsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, p string) // makes p unwritable, or skips
		want string
	}{
		{"mode 0444", func(t *testing.T, p string) {
			if os.Geteuid() == 0 {
				t.Skip("root writes a mode-0444 file all the same")
			}
			if err := os.Chmod(p, 0o444); err != nil {
				t.Fatal(err)
			}
		}, "read-only to this user (permission denied)"},
		{"immutable", func(t *testing.T, p string) { chattr(t, "+i", p) }, "may not be changed"},
		{"append-only", func(t *testing.T, p string) { chattr(t, "+a", p) }, "may not be changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "out.json")
			if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.make(t, p)
			err := Check(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "name another file") {
				t.Fatalf("Check = %v, want an error with %q that says what to do", err, c.want)
			}
			if err := WriteFile(p, []byte("new")); err == nil {
				t.Fatal("WriteFile replaced it")
			}
			if b, _ := os.ReadFile(p); string(b) != "old" {
				t.Fatalf("contents %q, want old", b)
			}
			if names := entries(t, filepath.Dir(p)); len(names) != 1 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
}

// chattr sets the attribute attr (+i, +a) of p with chattr(1), undoing it when the test
// ends (else the temporary directory could not be removed), or skips the test where it
// cannot (no chattr, not root, a file system without attributes).
func chattr(t *testing.T, attr, p string) {
	t.Helper()
	out, err := exec.Command("chattr", attr, p).CombinedOutput()
	if err != nil {
		t.Skipf("chattr %s: %v %s", attr, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-"+attr[1:], p).Run() })
}

// TestIdentify checks which paths name one file: by name (cleaned, absolute, symlinks of
// the file and its directory resolved), by identity for existing files (hard links), and
// "-" for standard output; a device has no ID (outputs may share /dev/null).
func TestIdentify(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("a", []byte("a"), 0o644)
	os.WriteFile("b", []byte("b"), 0o644)
	os.Mkdir("sub", 0o755)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a", "link-a"))
	must(os.Symlink("sub", "link-sub"))
	must(os.Link("a", "hard-a"))
	for _, c := range []struct {
		name string
		x, y string
		same bool
	}{
		{"one name", "a", "a", true},
		{"./ and the absolute path", "./a", filepath.Join(dir, "a"), true},
		{"a symlink to the file", "link-a", "a", true},
		{"a hard link", "hard-a", "a", true},
		{"a new file through a symlinked directory", "link-sub/new", "sub/new", true},
		{"two new files", "sub/new", "sub/other", false},
		{"two files", "a", "b", false},
		{"standard output", "-", "-", true},
		{"standard output and a file", "-", "a", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, okx := Identify(c.x)
			y, oky := Identify(c.y)
			if !okx || !oky {
				t.Fatalf("no ID: %q %v, %q %v", c.x, okx, c.y, oky)
			}
			if x.Same(y) != c.same || y.Same(x) != c.same {
				t.Fatalf("Same(%q, %q) = %v, want %v", c.x, c.y, x.Same(y), c.same)
			}
		})
	}
	if _, ok := Identify("/dev/null"); ok {
		t.Error("/dev/null has an ID: outputs could not share it")
	}
	if id, _ := Identify("-"); !id.IsStdout() {
		t.Error(`"-" is not standard output`)
	}
}

// TestCommitAside checks that a file committed aside goes to its path when that is free,
// else next to it under .partial names, never replacing a file.
func TestCommitAside(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.csv")
	commit := func(data string) string {
		t.Helper()
		f, err := Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(data))
		got, err := f.CommitAside()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i, c := range []struct{ name, want string }{
		{"a new path", p},
		{"over the file", filepath.Join(dir, "run.partial.csv")},
		{"over that too", filepath.Join(dir, "run.partial-2.csv")},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strconv.Itoa(i)
			if got := commit(data); got != c.want {
				t.Fatalf("written to %s, want %s", got, c.want)
			}
			if b, _ := os.ReadFile(c.want); string(b) != data {
				t.Fatalf("%s holds %q, want %q", c.want, b, data)
			}
		})
	}
	if b, _ := os.ReadFile(p); string(b) != "0" {
		t.Fatalf("%s was replaced: %q", p, b)
	}
	if names := entries(t, dir); len(names) != 3 {
		t.Fatalf("files: %v, want the three (no temporary file)", names)
	}
	for path, want := range map[string]string{"x/run": "x/run.partial", "x/.hidden": "x/.hidden.partial",
		"x.d/run.tar.gz": "x.d/run.tar.partial.gz"} {
		if got := asideName(path, 1); got != want {
			t.Errorf("asideName(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestFIFOWithoutReader: a FIFO that no process reads is not waited for in the open (where
// no stop signal reaches the process): Create fails after its wait, saying what to do.
func TestFIFOWithoutReader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	_, err := openInPlace(p, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no process opened this FIFO for reading within 20ms: start its reader first") {
		t.Fatalf("openInPlace(FIFO without a reader) = %v", err)
	}
}

// TestWriteAllOrNone: WriteAll publishes every file or none: where one cannot be written,
// the others are not published, and an earlier file of the same name stays as it was.
func TestWriteAllOrNone(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "missing", "b.csv")
	if err := os.WriteFile(a, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteAll([]Named{{Path: a, Data: []byte("new")}, {Path: b, Data: []byte("new")}}); err == nil {
		t.Fatal("WriteAll into a missing directory succeeded")
	}
	if data, _ := os.ReadFile(a); string(data) != "earlier" {
		t.Fatalf("a.csv is %q after a failed WriteAll, want it as it was", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	paths, err := WriteAll([]Named{{Path: a, Data: []byte("new")}, {Path: filepath.Join(dir, "c.csv"), Data: []byte("c")}})
	if err != nil || len(paths) != 2 {
		t.Fatalf("WriteAll = %v, %v", paths, err)
	}
	if data, _ := os.ReadFile(a); string(data) != "new" {
		t.Fatalf("a.csv is %q, want new", data)
	}
}

// TestTooManyOpenFilesSaysWhatToDo: out of file descriptors, the message names the limit,
// not the file, as what to change.
func TestTooManyOpenFilesSaysWhatToDo(t *testing.T) {
	err := fail("s.csv", &fs.PathError{Op: "open", Path: "s.csv", Err: unix.EMFILE})
	if !errors.Is(err, unix.EMFILE) || !strings.Contains(err.Error(), "cannot write s.csv: too many open files: raise the limit (ulimit -n)") {
		t.Fatalf("fail(EMFILE) = %v", err)
	}
}

// TestReplacedFileKeepsItsOwner: root writing over another user's file leaves it theirs,
// as a write in place would (the rename makes the new file root's otherwise).
func TestReplacedFileKeepsItsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give a file to another user")
	}
	p := filepath.Join(t.TempDir(), "theirs.csv")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Skipf("cannot give the file to nobody: %v", err)
	}
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 65534 || sys.Gid != 65534 || st.Mode().Perm() != 0o640 {
		t.Fatalf("replaced file: owner %d:%d mode %v, want 65534:65534 and -rw-r-----", sys.Uid, sys.Gid, st.Mode().Perm())
	}
}
