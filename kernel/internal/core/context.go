package core

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/event"
)

// Sink takes the events an LP sends; each dispatcher provides one. The event comes as its
// fields, by value, so that no record has to be built (and no pointer escapes) before the
// dispatcher puts it where it belongs.
type Sink interface {
	Send(to, from LPID, depth uint32, seq uint64, at, now Time, w Words, payload any)
}

// Context is what a handler sees of the kernel: the current time, its own id, its
// generator, and Send. A Context is only valid during the call it was passed to.
//
// Its state is a Frame, which only the dispatchers reach (FrameOf): a model sees the
// methods alone.
type Context struct {
	f Frame
}

// Frame is the dispatcher's side of a Context: what it sets before it calls a handler and
// reads after.
type Frame struct {
	Now Time
	// Depth is the Depth of the event being handled (0 in Init).
	Depth uint32
	Self  LPID
	LP    *LPRecord
	Out   Sink
	Sim   *Sim
	// Err is the first error of a send (SendError); the dispatcher ends the run with it.
	Err error
	// Reversing is set while a Reverser's Reverse runs: it must not send.
	Reversing bool
	// Committing is set while a Committer's Commit runs: it must not send.
	Committing bool
	// Scratch is the event's scratch words (Context.Scratch), or nil where the dispatcher
	// keeps none; ScratchTouched says that the handler asked for them (the dispatcher
	// zeroes them for the next event).
	Scratch        *Words
	ScratchTouched bool
	// DrawsMade is, while Reverse runs, the number of draws Handle made for the event.
	DrawsMade uint32
	// Lookahead is the simulation's (see Lookahead): a copy, read on every send.
	Lookahead Time
	// Cause, in a time-warp worker's Context, is the worker's key of the event being
	// handled (for Record), and Coasting the worker's flag that says it re-executes events
	// (Record does nothing then); both nil in the sequential dispatcher's.
	Cause    *event.Key
	Coasting *bool
}

// FrameOf returns c's frame, for the dispatcher that owns c.
func FrameOf(c *Context) *Frame { return &c.f }

// Enter prepares c for running LP self (record lp) at time now and depth depth.
func Enter(c *Context, now Time, depth uint32, self LPID, lp *LPRecord) {
	c.f.Now, c.f.Depth, c.f.Self, c.f.LP = now, depth, self, lp
}

// NewContext returns a Context of s whose sends go to out.
func (s *Sim) NewContext(out Sink) Context {
	return Context{f: Frame{Out: out, Sim: s, Lookahead: s.Lookahead}}
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
func (c *Context) NumLPs() int { return len(c.f.Sim.LPs) }

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
// time-warp engine keeps each logged event's in its history log entry. Init has none: a
// call from Init panics, saying so.
func (c *Context) Scratch() *Words {
	if c.f.Scratch == nil || c.f.Sim != nil && c.f.Sim.InInit {
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
		panic(fmt.Sprintf("LP %q sent an event from Reverse; Reverse must not send", c.f.LP.Model.Name()))
	case c.f.Committing:
		panic(fmt.Sprintf("LP %q sent an event from Commit; Commit must not send", c.f.LP.Model.Name()))
	case !(at >= c.f.Now): // also catches NaN
		c.f.Err = &SendError{From: c.f.Self, FromName: c.f.LP.Model.Name(), Now: c.f.Now, To: to,
			ToName: c.f.Sim.NameOf(to), At: at}
		return false
	case int(to) >= len(c.f.Sim.LPs):
		c.f.Err = &SendError{From: c.f.Self, FromName: c.f.LP.Model.Name(), Now: c.f.Now, To: to, At: at,
			NumLPs: len(c.f.Sim.LPs)}
		return false
	case at < c.f.Now+c.f.Lookahead && to != c.f.Self:
		c.f.Err = &SendError{From: c.f.Self, FromName: c.f.LP.Model.Name(), Now: c.f.Now, To: to,
			ToName: c.f.Sim.NameOf(to), At: at, Lookahead: c.f.Lookahead}
		return false
	}
	return true
}

// emit numbers a valid send and hands it to the dispatcher.
func (c *Context) emit(to LPID, at Time, w Words, payload any) {
	var depth uint32
	if at == c.f.Now {
		depth = c.f.Depth + 1
	}
	seq := c.f.LP.Seq
	c.f.LP.Seq++
	c.f.Out.Send(to, c.f.Self, depth, seq, at, c.f.Now, w, payload)
}

// SendError reports a send to an unknown LP, into the past, or at a time that is not a number.
type SendError struct {
	From     LPID
	FromName string
	Now      Time
	To       LPID
	ToName   string
	At       Time
	// NumLPs is set when To is not a valid id.
	NumLPs int
	// Lookahead is set when At is before Now + Lookahead, the lookahead the LPs declare
	// (see the Lookahead interface).
	Lookahead Time
}

func (e *SendError) Error() string {
	if e.NumLPs > 0 {
		return fmt.Sprintf("LP %q (id %d) at time %v sent an event to unknown LP id %d; "+
			"the simulation has %d LPs (ids 0..%d)", e.FromName, e.From, e.Now, e.To, e.NumLPs, e.NumLPs-1)
	}
	if math.IsNaN(e.At) {
		return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at time NaN; "+
			"event times must be numbers", e.FromName, e.From, e.Now, e.ToName, e.To)
	}
	if e.Lookahead > 0 && e.At >= e.Now {
		return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at time %v, "+
			"less than the declared lookahead %v later; send to another LP at or after Now()+lookahead, "+
			"or declare a smaller Lookahead", e.FromName, e.From, e.Now, e.ToName, e.To, e.At, e.Lookahead)
	}
	return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at time %v, "+
		"which is in its past; send at or after Now()", e.FromName, e.From, e.Now, e.ToName, e.To, e.At)
}

// ModelPanicError reports a panic in a model's Init or Handle.
type ModelPanicError struct {
	LP     LPID
	LPName string
	// Time is the receive time of the event being handled (0 in Init).
	Time  Time
	Init  bool
	Value any
	// Stack is the goroutine stack at the panic.
	Stack []byte
}

func (e *ModelPanicError) Error() string {
	where := fmt.Sprintf("handling an event at time %v", e.Time)
	if e.Init {
		where = "in Init"
	}
	return fmt.Sprintf("model panic in LP %q (id %d) %s: %v", e.LPName, e.LP, where, e.Value)
}
