package kernel

import (
	"fmt"

	"github.com/warpedgo/warped/kernel/internal/frame"
)

// Context is what a handler sees of the kernel: the current time, its own id, its
// generator, and Send. A Context is only valid during the call it was passed to.
//
// Its state is the dispatcher's (kernel/internal/frame): a model sees the methods alone.
type Context struct {
	f frame.Frame // the only field: the dispatchers reach it through a *Context (core.FrameOf)
}

// Now returns the current virtual time: the receive time of the event being handled, or 0
// during Init.
func (c *Context) Now() Time { return c.f.Now }

// Self returns the id of the LP being run.
func (c *Context) Self() LPID { return c.f.Self }

// RNG returns the LP's own generator. Its state is saved and restored with the LP.
func (c *Context) RNG() *RNG { return &c.f.LP.RNG }

// DrawsMade returns, while Reverse runs, the number of draws Handle made from ctx.RNG() for
// the event being reversed, and 0 otherwise. Reverse finds out which way Handle went by
// replaying its draws on ctx.RNG(); where Handle chose by the LP's state and the event
// changed that state so that the state after no longer tells (PCS: a call that found no
// idle channel and one that took the last leave both none), the branches often draw
// differently, and a replay's count (rng.Draws) compared with DrawsMade tells them apart.
func (c *Context) DrawsMade() uint32 { return c.f.DrawsMade }

// NumLPs returns the number of LPs in the simulation; valid ids are 0..NumLPs()-1.
func (c *Context) NumLPs() int { return c.f.NumLPs }

// Send schedules an event with the given payload for LP to at virtual time at, which must
// not be before Now(). A send to an unknown LP or into the past is an error that ends the
// run when the handler returns; the handler itself carries on.
func (c *Context) Send(to LPID, at Time, payload any) {
	if c.check(to, at) {
		c.emit(to, at, Words{}, payload)
	}
}

// SendWords is Send with an inline payload of four words instead of a Go value. It never
// allocates, so it is the way to send on a hot path.
func (c *Context) SendWords(to LPID, at Time, w Words) {
	if c.check(to, at) {
		c.emit(to, at, w, nil)
	}
}

// Scratch returns the event's scratch words: space for reverse computation (ROSS's bit
// field and saved values). Handle may write there what it overwrote or decided, and
// Reverse, called for the same event, reads it back. They are zero when Handle starts
// (and when coast forward re-executes an event), and Commit (Committer) may read what
// Handle left. The sequential dispatcher keeps one set (Reverse never runs there); the
// time-warp engine keeps each logged event's beside its history log entry. Init has none: a
// call from Init panics, saying so.
func (c *Context) Scratch() *Words {
	if c.f.Scratch == nil || c.f.Sim.InInit {
		panic("Context.Scratch called outside an event: scratch words exist in Handle, Reverse and Commit only")
	}
	c.f.ScratchTouched = true
	return c.f.Scratch
}

// check reports whether a send to LP to at time at is valid, recording the error if not.
func (c *Context) check(to LPID, at Time) bool {
	switch {
	case c.f.Err != nil:
		return false
	case c.f.Reversing:
		panic(fmt.Sprintf("LP %q sent an event from Reverse; Reverse must not send", c.nameOf(c.f.Self)))
	case c.f.Committing:
		panic(fmt.Sprintf("LP %q sent an event from Commit; Commit must not send", c.nameOf(c.f.Self)))
	case !(at >= c.f.Now): // also catches NaN
		c.f.Err = &SendError{From: c.f.Self, FromName: c.nameOf(c.f.Self), Now: c.f.Now, To: to,
			ToName: c.nameOf(to), At: at}
		return false
	case int(to) >= c.f.NumLPs:
		c.f.Err = &SendError{From: c.f.Self, FromName: c.nameOf(c.f.Self), Now: c.f.Now, To: to, At: at,
			NumLPs: c.f.NumLPs}
		return false
	case at < c.f.Now+c.f.Lookahead && to != c.f.Self:
		c.f.Err = &SendError{From: c.f.Self, FromName: c.nameOf(c.f.Self), Now: c.f.Now, To: to,
			ToName: c.nameOf(to), At: at, Lookahead: c.f.Lookahead}
		return false
	}
	return true
}

// emit numbers a valid send and hands it to the dispatcher.
func (c *Context) emit(to LPID, at Time, w Words, payload any) {
	var depth uint32
	if at == c.f.Now {
		if depth = c.f.Depth + 1; depth >= MaxZeroDelayDepth {
			c.f.Err = &SendError{From: c.f.Self, FromName: c.nameOf(c.f.Self), Now: c.f.Now, To: to,
				ToName: c.nameOf(to), At: at, Depth: depth}
			return
		}
	}
	seq := c.f.LP.Seq
	c.f.LP.Seq++
	c.f.Out.Send(to, c.f.Self, depth, seq, at, c.f.Now, w, payload)
}

// Record appends value to the model's time series named series, at the current event's
// time, when Config.RecordSeries is set (else it does nothing). Under time warp only the
// values of events that commit are kept: a rollback drops the values its undone events
// recorded, so Result.Series is the sequential run's. Record in Reverse does nothing.
func (c *Context) Record(series string, value float64) {
	s := c.f.Sim
	if s.Series == nil || c.f.Reversing || (c.f.Coasting != nil && *c.f.Coasting) {
		return
	}
	k := frame.InitKey()
	if !s.InInit && c.f.Cause != nil {
		k = *c.f.Cause
	}
	s.Series[c.f.Self] = append(s.Series[c.f.Self], frame.SeriesRec{K: k, T: c.f.Now, Series: series, Value: value})
}

// nameOf returns the name of LP id, for an error.
func (c *Context) nameOf(id LPID) string {
	if c.f.Sim.Names == nil {
		return fmt.Sprintf("<LP %d>", id)
	}
	return c.f.Sim.Names.NameOf(id)
}
