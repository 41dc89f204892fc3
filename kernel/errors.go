package kernel

import (
	"errors"
	"fmt"
	"math"
)

// PeerError is the error of a rank whose run was stopped because another rank failed; its
// text is that rank's error, prefixed by its rank.
type PeerError struct {
	Msg string // the failed rank's error, "rank N: ..."
}

func (e *PeerError) Error() string { return e.Msg }

// MismatchError says that the ranks of a run across processes were configured
// differently; every rank gets the same one.
type MismatchError struct {
	Key          string // the setting that differs (a flag's name, or a configuration key)
	Mine, Theirs string // its values on Rank and on Other
	Rank, Other  int    // two ranks that differ: Rank has Mine, Other has Theirs
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("configuration differs between ranks: %s is %q on rank %d but %q on rank %d; "+
		"start every rank with the same flags and configuration file", e.Key, e.Mine, e.Rank, e.Theirs, e.Other)
}

// SendError reports a send to an unknown LP, into the past, closer than the declared
// lookahead, at a time that is not a number, or in a loop of zero-delay sends.
type SendError struct {
	From     LPID   // the sending LP
	FromName string // its name
	Now      Time   // its time: the receive time of the event it was handling
	To       LPID   // the LP it sent to
	ToName   string // its name (empty when To is not a valid id)
	At       Time   // the send's receive time
	// NumLPs is set when To is not a valid id.
	NumLPs int
	// Lookahead is set when At is before Now + Lookahead, the lookahead the LPs declare
	// (see the Lookahead interface).
	Lookahead Time
	// Depth is set when the send would be the MaxZeroDelayDepth-th generation of events
	// sent at one time, each by the one before: a loop that never lets time advance.
	Depth uint32
}

// MaxZeroDelayDepth is the most generations of zero-delay sends (an event sent at the time
// of the event that sent it, Event.Depth) that a run allows at one time: a chain that long
// is a loop, which would hold the run at that time forever.
const MaxZeroDelayDepth = 1 << 22

func (e *SendError) Error() string {
	if e.Depth > 0 {
		return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at that same time, the %d-th "+
			"generation of such sends: a loop of zero-delay sends, which holds time still; give a send in the loop "+
			"a positive delay", e.FromName, e.From, e.Now, e.ToName, e.To, e.Depth)
	}
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
	if e.Now >= 1<<53 {
		// Beyond 2^53 a float64 holds no longer every integer: a model that counts time
		// in integers has overflowed there, not chosen the past.
		return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at time %v, "+
			"which is in its past: times beyond 2^53 overflow a model that counts time in integers; give a smaller "+
			"end time (--max-sim-time) or shorter delays", e.FromName, e.From, e.Now, e.ToName, e.To, e.At)
	}
	return fmt.Sprintf("LP %q (id %d) at time %v sent an event to %q (id %d) at time %v, "+
		"which is in its past; send at or after Now()", e.FromName, e.From, e.Now, e.ToName, e.To, e.At)
}

// ModelPanicError reports a panic in a model's code: its Init, or what runs for one of its
// events (Handle, Reverse, Commit, a state's Snapshot or Restore, and the Config's Trace
// hook). errors.Is and errors.As see through it to Value when Value is an error.
type ModelPanicError struct {
	LP     LPID   // the LP whose code panicked
	LPName string // its name
	// Time is the receive time of the LP's event whose code panicked (0 in Init).
	Time  Time
	Init  bool // the panic was in Init, not at an event
	Value any  // the value passed to panic
	// Stack is the goroutine stack at the panic.
	Stack []byte
}

func (e *ModelPanicError) Error() string {
	where := fmt.Sprintf("at its event at time %v", e.Time)
	if e.Init {
		where = "in Init"
	}
	return fmt.Sprintf("model panic in LP %q (id %d) %s: %v", e.LPName, e.LP, where, e.Value)
}

// Unwrap returns the panic's value when it is an error, else nil.
func (e *ModelPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ReportedElsewhere reports whether err, returned by a run on a rank other than 0, is also
// known to rank 0 (another rank's failure, or a configuration mismatch), so that only rank
// 0 needs to show it.
func ReportedElsewhere(err error) bool {
	var p *PeerError
	var m *MismatchError
	return errors.As(err, &p) || errors.As(err, &m)
}
