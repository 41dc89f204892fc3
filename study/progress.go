package study

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// NewProgress returns a Progress that draws a bar with the runs done and the time left
// on w when terminal is true, and otherwise prints a plain line now and then (every
// tenth of the runs, at most every few seconds, and at the end).
func NewProgress(w io.Writer, terminal bool) Progress {
	if terminal {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w, now: time.Now}
}

// barProgress is the terminal's progress bar.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (b *barProgress) Start(total, done int) {
	b.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription("study runs"), progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionShowElapsedTimeOnFinish())
	if done > 0 {
		b.bar.Set(done)
	}
}

func (b *barProgress) Add() { b.bar.Add(1) }

func (b *barProgress) Finish() {
	b.bar.Exit()
	fmt.Fprintln(b.w)
}

// lineProgress prints plain lines, for logs.
type lineProgress struct {
	mu                 sync.Mutex
	w                  io.Writer
	now                func() time.Time
	total, done, start int
	began, last        time.Time
}

func (l *lineProgress) Start(total, done int) {
	l.total, l.done, l.start = total, done, done
	l.began = l.now()
	l.last = l.began
}

func (l *lineProgress) Add() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done++
	t := l.now()
	step := max(1, l.total/10)
	if l.done == l.total || (l.done%step == 0 && t.Sub(l.last) >= 2*time.Second) {
		l.last = t
		eta := ""
		if n := l.done - l.start; n > 0 && l.done < l.total {
			left := time.Duration(float64(t.Sub(l.began)) / float64(n) * float64(l.total-l.done))
			eta = fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
		fmt.Fprintf(l.w, "study: %d/%d runs done%s\n", l.done, l.total, eta)
	}
}

func (l *lineProgress) Finish() {}
