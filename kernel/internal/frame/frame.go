// Package frame is the state behind a kernel.Context: what a dispatcher sets before it
// calls a model's handler and reads after (Frame), the per-LP part a handler changes (the
// generator and the send sequence number, LPState), and what the LPs of a simulation share
// (Shared: the recorded series, the Init flag, the LPs' names for errors).
//
// It sits below package kernel, which defines Context around a Frame and its methods, so
// that go doc shows them where models import them; the dispatchers (kernel/internal/...)
// reach the Frame through kernel/internal/core. It imports nothing of the kernel.
package frame

import (
	"math"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/rng"
)

// Time and LPID are package event's.
type (
	Time  = event.Time
	LPID  = event.LPID
	Words = event.Words
)

// Sink takes the events an LP sends; each dispatcher provides one. The event comes as its
// fields, by value, so that no record has to be built (and no pointer escapes) before the
// dispatcher puts it where it belongs.
type Sink interface {
	Send(to, from LPID, depth uint32, seq uint64, at, now Time, w Words, payload any)
}

// LPState is the kernel's per-LP state that a handler changes: the LP's generator and its
// send sequence number. The dispatchers' LP record embeds it.
type LPState struct {
	RNG rng.XORWOW
	// Seq is the number of events the LP has sent: the next send's sequence number.
	Seq uint64
}

// Namer names LPs, for errors.
type Namer interface {
	// NameOf returns the name of LP id, or a placeholder for an unknown id.
	NameOf(id LPID) string
}

// Shared is what the LPs of a simulation share, as a Context sees it. The dispatchers'
// simulation embeds it.
type Shared struct {
	// InInit is set while the LPs' Init runs.
	InInit bool
	// Series[id] are LP id's recorded points (Config.RecordSeries), or nil when the
	// model's values are not kept.
	Series [][]SeriesRec
	// Names names the LPs for a send's error.
	Names Namer
}

// Frame is the dispatcher's side of a Context: what it sets before it calls a handler and
// reads after.
type Frame struct {
	Now Time
	// Depth is the Depth of the event being handled (0 in Init).
	Depth uint32
	Self  LPID
	LP    *LPState
	Out   Sink
	Sim   *Shared
	// NumLPs is the number of LPs in the simulation.
	NumLPs int
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
	// Lookahead is the simulation's (see kernel.Lookahead): a copy, read on every send.
	Lookahead Time
	// Cause, in a time-warp worker's Context, is the worker's key of the event being
	// handled (for Record), and Coasting the worker's flag that says it re-executes events
	// (Record does nothing then); both nil in the sequential dispatcher's.
	Cause    *event.Key
	Coasting *bool
}

// SeriesRec is a recorded point, its time and the key of the event that recorded it (the
// sequential dispatcher, which never rolls back, records no key).
type SeriesRec struct {
	K      event.Key
	T      Time
	Series string
	Value  float64
}

// InitKey is the key of a point recorded in Init: below every event's, never undone.
func InitKey() event.Key { return event.Key{RecvTime: math.Inf(-1)} }

// UndoSeries drops the points LP id recorded in events with keys at or after k (a rollback
// to k; the LP's owner calls it).
func (s *Shared) UndoSeries(id LPID, k *event.Key) {
	if s.Series == nil {
		return
	}
	r := s.Series[id]
	n := len(r)
	for n > 0 && !event.KeyLess(&r[n-1].K, k) {
		n--
	}
	clear(r[n:])
	s.Series[id] = r[:n]
}
