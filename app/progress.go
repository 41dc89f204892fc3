package app

// The progress line of a run: whether to show it (--progress), and the callback that
// rewrites it.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/warpedgo/warped/kernel"
)

// progressMode is auto, on or off; a bare --progress means on.
type progressMode string

func (p *progressMode) String() string { return string(*p) }
func (p *progressMode) Type() string   { return "mode" }
func (p *progressMode) Set(s string) error {
	switch strings.ToLower(s) {
	case "auto":
		*p = "auto"
	case "on", "true", "1":
		*p = "on"
	case "off", "false", "0":
		*p = "off"
	default:
		return fmt.Errorf("want auto, on or off, got %q", s)
	}
	return nil
}

// showProgress decides whether to print progress.
func showProgress(mode progressMode, w io.Writer) bool {
	switch mode {
	case "on":
		return true
	case "off":
		return false
	}
	return isTerminal(w)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressPrinter returns a kernel progress callback that rewrites one line of w where w
// is a terminal, and otherwise (--progress on into a file or pipe) writes a line each
// time, without the terminal's control sequences. scope follows the events and their rate
// ("": the whole run's; across processes rank 0 prints, and they are its own).
func progressPrinter(w io.Writer, scope string) func(kernel.Progress) {
	start, end := "\r\033[K", ""
	if !isTerminal(w) {
		start, end = "", "\n"
	}
	var lastEvents uint64
	var lastElapsed time.Duration
	return func(p kernel.Progress) {
		rate := 0.0
		if dt := (p.Elapsed - lastElapsed).Seconds(); dt > 0 {
			rate = float64(p.EventsProcessed-lastEvents) / dt
		}
		lastEvents, lastElapsed = p.EventsProcessed, p.Elapsed
		frac := ""
		if f := p.Fraction(); f >= 0 {
			frac = fmt.Sprintf(" (%.1f%%)", 100*f)
		}
		fmt.Fprintf(w, "%ssim time %.6g / %.6g%s, %d events, %.3g M events/s%s, %s elapsed%s",
			start, p.Now, p.EndTime, frac, p.EventsProcessed, rate/1e6, scope, p.Elapsed.Round(time.Second), end)
	}
}
