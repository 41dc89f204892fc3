package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/warpedgo/warped/internal/outfile"
	"golang.org/x/sys/unix"
)

// JournalFile is the name of a study's journal in its output directory: one JSON line per
// finished run, appended and synced as the run ends.
const JournalFile = "journal.jsonl"

// journal appends finished runs to the journal file. Each line is written as its run
// finishes, so a killed process loses nothing; the file is synced to disk in groups (at
// most syncEvery apart, and on close), so that an operating-system crash loses at most
// the last moments' runs (they run again on resume) while short runs do not wait for
// the disk one by one.
type journal struct {
	mu    sync.Mutex
	f     *os.File
	dirty bool
	err   error // the first sync error
	stop  chan struct{}
	done  chan struct{}
}

// syncEvery is the longest time a written journal line waits for its sync.
const syncEvery = 200 * time.Millisecond

func newJournal(f *os.File) *journal {
	j := &journal{f: f, stop: make(chan struct{}), done: make(chan struct{})}
	go j.syncLoop()
	return j
}

// syncLoop syncs the file every syncEvery while lines were written, until close.
func (j *journal) syncLoop() {
	defer close(j.done)
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			j.sync()
		}
	}
}

// sync syncs the file if lines were written since the last sync; appends go on
// meanwhile.
func (j *journal) sync() {
	j.mu.Lock()
	dirty := j.dirty
	j.dirty = false
	j.mu.Unlock()
	if !dirty {
		return
	}
	if err := j.f.Sync(); err != nil {
		j.mu.Lock()
		if j.err == nil {
			j.err = fmt.Errorf("journal: %w", err)
		}
		j.mu.Unlock()
	}
}

// entry is one journal line.
type entry struct {
	Key         string `json:"key"`
	Point       int    `json:"point"`
	Replication int    `json:"replication"`
	Seed        uint64 `json:"seed"`
	Outcome
}

// openJournal opens the journal in dir for appending, creating dir, and returns the
// outcomes it holds by run key. The journal is locked (flock) until close: a second study
// on the same directory is refused while the first runs. A torn last line (a crash while
// writing it) is dropped. Without resume, a journal that holds runs is an error.
func openJournal(dir, name string, resume bool) (*journal, map[string]Outcome, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, &SettingsError{fmt.Sprintf("cannot use --out %s: %v", dir, outfile.UnwrapPath(err))}
	}
	path := filepath.Join(dir, name)
	// O_APPEND: every line goes at the end, whatever else writes the file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, &SettingsError{fmt.Sprintf("cannot open the journal in --out %s: %v", dir, outfile.UnwrapPath(err))}
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, &SettingsError{fmt.Sprintf("another study is running in %s (its journal is locked); wait for it to end, or choose another --out", dir)}
		}
		return nil, nil, fmt.Errorf("cannot lock the journal %s: %w", path, err)
	}
	j, done, err := readJournal(f, dir, path, resume)
	if err != nil {
		f.Close() // releases the lock
		return nil, nil, err
	}
	return j, done, nil
}

// readJournal reads the locked journal f (at path, in dir) and drops its torn line.
func readJournal(f *os.File, dir, path string, resume bool) (*journal, map[string]Outcome, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the journal: %w", err)
	}
	if len(data) > 0 && !resume {
		return nil, nil, &SettingsError{fmt.Sprintf("%s already holds a study's journal; add --resume to go on with it, or choose another --out", dir)}
	}
	done := map[string]Outcome{}
	good, err := parseJournal(path, data, done)
	if err != nil {
		return nil, nil, &SettingsError{err.Error()}
	}
	if err := f.Truncate(int64(good)); err != nil {
		return nil, nil, fmt.Errorf("cannot drop the journal's torn line: %w", err)
	}
	return newJournal(f), done, nil
}

// parseJournal adds the entries of journal data (from path) to done and returns the
// length of its whole lines: a torn last line is left out.
func parseJournal(path string, data []byte, done map[string]Outcome) (int, error) {
	good := 0
	for n := 1; good < len(data); n++ {
		i := bytes.IndexByte(data[good:], '\n')
		if i < 0 {
			break // torn last line
		}
		var e entry
		if err := json.Unmarshal(data[good:good+i], &e); err != nil || e.Key == "" {
			return 0, fmt.Errorf("%s: line %d is damaged; remove it to resume", path, n)
		}
		done[e.Key] = e.Outcome
		good += i + 1
	}
	return good, nil
}

// journalName is the journal file of rank: JournalFile for rank 0 (and a study in one
// process), journal.rankN.jsonl for the others.
func journalName(rank int) string {
	if rank == 0 {
		return JournalFile
	}
	return fmt.Sprintf("journal.rank%d.jsonl", rank)
}

// readRankJournals adds the entries of the other ranks' journals in dir to done.
func readRankJournals(dir string, done map[string]Outcome) error {
	paths, err := filepath.Glob(filepath.Join(dir, "journal.rank*.jsonl"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("cannot read the journal: %w", err)
		}
		if _, err := parseJournal(p, data, done); err != nil {
			return err
		}
	}
	return nil
}

// append writes r's outcome as one line; it is synced to disk within syncEvery.
func (j *journal) append(r Run, out Outcome) error {
	b, err := json.Marshal(entry{Key: r.Key(), Point: r.Point, Replication: r.Replication, Seed: r.Seed, Outcome: out})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.dirty = true
	return nil
}

// close syncs what was written and closes the file; it returns the first write-back
// error.
func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	close(j.stop)
	<-j.done
	j.sync()
	j.f.Close()
	j.f = nil
	return j.err
}
