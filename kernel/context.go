package kernel

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/event"
)

// sink takes the events an LP sends; each dispatcher provides one. The event comes as its
// fields, by value, so that no record has to be built (and no pointer escapes) before the
// dispatcher puts it where it belongs.
type sink interface {
	send(to, from LPID, depth uint32, seq uint64, at, now Time, w Words, payload any)
}

// Context is what a handler sees of the kernel: the current time, its own id, its
// generator, and Send. A Context is only valid during the call it was passed to.
type Context struct {
	now Time
	// depth is the Depth of the event being handled (0 in Init).
	depth uint32
	self  LPID
	lp    *lpRecord
	pool  *event.Pool
	out   sink
	sim   *Simulation
	err   error
	// reversing is set while a Reverser's Reverse runs: it must not send.
	reversing bool
	// drawsMade is, while Reverse runs, the number of draws Handle made for the event.
	drawsMade uint32
	// lookahead is the simulation's (see Lookahead): a copy, read on every send.
	lookahead Time
	// cause, in a time-warp worker's Context, is the worker's key of the event being
	// handled (for Record), and coasting the worker's flag that says it re-executes events
	// (Record does nothing then); both nil in the sequential dispatcher's.
	cause    *event.Key
	coasting *bool
}

// newContext returns a Context of s whose sends go to out.
func (s *Simulation) newContext(out sink) Context {
	return Context{out: out, sim: s, lookahead: s.lookahead}
}

// Now returns the current virtual time: the receive time of the event being handled, or 0
// during Init.
func (c *Context) Now() Time { return c.now }

// Self returns the id of the LP being run.
func (c *Context) Self() LPID { return c.self }

// RNG returns the LP's own generator. Its state is saved and restored with the LP.
func (c *Context) RNG() *RNG { return &c.lp.rng }

// DrawsMade returns, while Reverse runs, the number of draws Handle made from ctx.RNG() for
// the event being reversed, and 0 otherwise. Reverse finds out which way Handle went by
// replaying its draws on ctx.RNG(); where Handle chose by the LP's state and the event
// changed that state so that the state after no longer tells (PCS: a call that found no
// idle channel and one that took the last leave both none), the branches often draw
// differently, and a replay's count (rng.Draws) compared with DrawsMade tells them apart.
func (c *Context) DrawsMade() uint32 { return c.drawsMade }

// NumLPs returns the number of LPs in the simulation; valid ids are 0..NumLPs()-1.
func (c *Context) NumLPs() int { return len(c.sim.lps) }

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

// check reports whether a send to LP to at time at is valid, recording the error if not.
func (c *Context) check(to LPID, at Time) bool {
	switch {
	case c.err != nil:
		return false
	case c.reversing:
		panic(fmt.Sprintf("LP %q sent an event from Reverse; Reverse must not send", c.lp.model.Name()))
	case !(at >= c.now): // also catches NaN
		c.err = &SendError{From: c.self, FromName: c.lp.model.Name(), Now: c.now, To: to,
			ToName: c.sim.nameOf(to), At: at}
		return false
	case int(to) >= len(c.sim.lps):
		c.err = &SendError{From: c.self, FromName: c.lp.model.Name(), Now: c.now, To: to, At: at,
			NumLPs: len(c.sim.lps)}
		return false
	case at < c.now+c.lookahead && to != c.self:
		c.err = &SendError{From: c.self, FromName: c.lp.model.Name(), Now: c.now, To: to,
			ToName: c.sim.nameOf(to), At: at, Lookahead: c.lookahead}
		return false
	}
	return true
}

// emit numbers a valid send and hands it to the dispatcher.
func (c *Context) emit(to LPID, at Time, w Words, payload any) {
	var depth uint32
	if at == c.now {
		depth = c.depth + 1
	}
	seq := c.lp.seq
	c.lp.seq++
	c.out.send(to, c.self, depth, seq, at, c.now, w, payload)
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
