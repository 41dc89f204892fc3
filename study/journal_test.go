package study

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJournalLockRefusesASecondStudy opens a study's journal twice: the second open is a
// one-line SettingsError while the first holds it, and succeeds once it is closed.
func TestJournalLockRefusesASecondStudy(t *testing.T) {
	dir := t.TempDir()
	j, _, err := openJournal(dir, JournalFile, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = openJournal(dir, JournalFile, true)
	var se *SettingsError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "another study is running in "+dir) {
		t.Fatalf("second open: %v, want a SettingsError saying another study runs", err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	j, _, err = openJournal(dir, JournalFile, true)
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	j.close()
}

// TestJournalSettingsErrors: an --out that is a file and a damaged journal are the
// user's to fix (exit 2), not failed runs.
func TestJournalSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	damaged := filepath.Join(dir, "damaged")
	os.Mkdir(damaged, 0o755)
	os.WriteFile(filepath.Join(damaged, JournalFile), []byte("{not json\n"), 0o644)
	for _, c := range []struct{ name, dir, want string }{
		{"out is a file", file, "cannot use --out"},
		{"damaged journal", damaged, "line 1 is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := openJournal(c.dir, JournalFile, true)
			var se *SettingsError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a SettingsError with %q", err, c.want)
			}
		})
	}
}

// TestJournalAppends: lines written through the journal land at the end of the file
// even when the file grew meanwhile (O_APPEND).
func TestJournalAppends(t *testing.T) {
	dir := t.TempDir()
	j, _, err := openJournal(dir, JournalFile, false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	other.WriteString(`{"key":"a"}` + "\n")
	other.Close()
	if err := j.append(Run{Point: 0}, Outcome{Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	j.close()
	data, _ := os.ReadFile(filepath.Join(dir, JournalFile))
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || lines[0] != `{"key":"a"}` {
		t.Fatalf("journal %q: want the other line kept, then the run's", data)
	}
}
