package outfile

import (
	"errors"
	"os"
	"sync"
)

// The temporary files of the outputs being written, for a process that must end at once.

// pending are the temporary files that Create made and that neither Commit nor Abort has
// settled, by name: what RemovePending removes when the process must end at once. The
// project's one piece of process-wide mutable state, on purpose: the second signal that
// calls RemovePending ends the process, whatever run or study made the files, and no run
// can hand its files to a signal handler it does not know (docs/DECISIONS.md, "Stop
// signals"). Guarded by its own lock.
var pending = &temporaries{names: map[string]bool{}}

// temporaries is a set of temporary files that ends when the process does.
type temporaries struct {
	mu     sync.Mutex
	names  map[string]bool
	ending bool // RemovePending ran: no temporary file is made or renamed any more
}

// add records temporary file name, unless the process is ending.
func (t *temporaries) add(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ending {
		return false
	}
	t.names[name] = true
	return true
}

// settle runs publish (a rename into place), unless the process is ending, and forgets
// name. It holds the lock throughout, so that RemovePending cannot run between the check
// and the rename: once it has run, nothing more is published. It returns errEnding when
// publish did not run.
func (t *temporaries) settle(name string, publish func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.names, name)
	if t.ending {
		return errEnding
	}
	return publish()
}

// forget forgets name, which the caller removes.
func (t *temporaries) forget(name string) {
	t.mu.Lock()
	delete(t.names, name)
	t.mu.Unlock()
}

// errEnding is why no output is created or published after RemovePending.
var errEnding = errors.New("the process is ending")

// RemovePending removes every temporary file that Create made and no Commit or Abort has
// settled, and from then on refuses to create or publish any: for a process that must end
// at once (a second signal), so that it leaves no temporary file and never half an
// output. What Commit published before is left as it is. The caller exits right after.
func RemovePending() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	pending.ending = true
	for name := range pending.names {
		os.Remove(name)
		delete(pending.names, name)
	}
}
