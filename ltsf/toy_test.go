package ltsf

import (
	"testing"

	"github.com/warpedgo/warped/event"
)

// listQueue is the toy LTSF queue of docs/ARCHITECTURE.md ("A schedule queue"): an
// unsorted list of (key, LP) entries, searched in full. It implements Queue, so a
// Schedule over it is a schedule queue the engine could take from.
type listQueue struct{ a []Entry }

func (l *listQueue) Push(k event.Key, lp event.LPID) { l.a = append(l.a, Entry{k, lp}) }

// least returns the index of the least entry (by key, then LP id), or -1.
func (l *listQueue) least() int {
	m := -1
	for i := range l.a {
		if m < 0 || less(&l.a[i].Key, l.a[i].LP, &l.a[m].Key, l.a[m].LP) {
			m = i
		}
	}
	return m
}

func (l *listQueue) Min() (event.Key, event.LPID, bool) {
	m := l.least()
	if m < 0 {
		return event.Key{}, 0, false
	}
	return l.a[m].Key, l.a[m].LP, true
}

func (l *listQueue) Pop() (event.Key, event.LPID, bool) {
	k, lp, ok := l.Min()
	if ok {
		l.Remove(lp)
	}
	return k, lp, ok
}

func (l *listQueue) Remove(lp event.LPID) bool {
	for i := range l.a {
		if l.a[i].LP == lp {
			l.a = append(l.a[:i], l.a[i+1:]...)
			return true
		}
	}
	return false
}

func (l *listQueue) Len() int { return len(l.a) }

// TestToyQueue follows ARCHITECTURE.md's steps for a new queue: the toy queue, under a
// Schedule, passes the property test every queue type passes. (To offer it to the engine,
// New and Kinds would name it.)
func TestToyQueue(t *testing.T) {
	for _, ties := range []bool{false, true} {
		runEventsProperty(t, NewSchedule(&listQueue{}, 16), 16, ties, 7)
	}
}
