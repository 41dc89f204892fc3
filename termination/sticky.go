package termination

// Sticky is one process's part of termination detection between processes: Mattern's
// sticky-flag algorithm on the ring of processes with a dynamic initiator, made safe
// against events in flight by counting them. It is owned by the process's manager
// goroutine.
//
// A process is passive when it has nothing it may process and nothing to send (all its
// workers passive, no pending event below the end time, nothing queued for other
// processes); only events from other processes can make it active again. Its sticky flag
// (dirty) is set whenever it is seen active or receives events, and cleared when the token
// leaves it. The token waits at a process until the process is passive, then (Visit):
//
//   - at a dirty process, a new wave starts there: the process becomes the initiator and
//     the token carries only its own counts;
//   - at a clean process that is not the initiator, the process adds its counts of events
//     sent to and received from other processes;
//   - back at a clean initiator, the run has terminated if the wave's sent and received
//     counts are equal; otherwise a new wave starts there.
//
// Why that is safe: every process of a successful wave was clean from its visit in the
// previous wave (before the wave started) to its visit in this one, so all were passive at
// the wave's start; an event in flight then either reached a process before its visit
// (making it dirty) or after (leaving the wave's received count short of its sent count).
type Sticky struct {
	rank, size int
	sent, recv uint64
	dirty      bool
}

// Token is what the termination token carries around the ring (comm.TermToken on the wire).
type Token struct {
	// Round numbers the waves; Initiator is the rank that started this one.
	Round, Sent, Received uint64
	Initiator             int
}

// NewSticky returns the state of process rank among size; it starts dirty (active).
func NewSticky(rank, size int) *Sticky { return &Sticky{rank: rank, size: size, dirty: true} }

// Active marks the process as seen active (it has work, or sends).
func (s *Sticky) Active() { s.dirty = true }

// Sent counts n events sent to other processes.
func (s *Sticky) Sent(n int) { s.sent += uint64(n) }

// Received counts n events received from other processes; receiving makes a process dirty.
func (s *Sticky) Received(n int) {
	s.recv += uint64(n)
	s.dirty = true
}

// Dirty reports whether the process was seen active or received events since Clear (or
// since the token last left it).
func (s *Sticky) Dirty() bool { return s.dirty }

// Clear clears the sticky flag (the synchronous method, which reads every process at once,
// clears it at each reading).
func (s *Sticky) Clear() { s.dirty = false }

// Counts returns the events sent to and received from other processes.
func (s *Sticky) Counts() (sent, received uint64) { return s.sent, s.recv }

// Visit handles the token at a passive process. It returns the token to pass to the next
// rank (rank+1 mod size), or terminated = true when the run is over.
func (s *Sticky) Visit(t Token) (next Token, terminated bool) {
	switch {
	case s.dirty || t.Initiator < 0:
		t = Token{Round: t.Round + 1, Initiator: s.rank, Sent: s.sent, Received: s.recv}
	case t.Initiator == s.rank:
		if t.Sent == t.Received {
			return t, true
		}
		t = Token{Round: t.Round + 1, Initiator: s.rank, Sent: s.sent, Received: s.recv}
	default:
		t.Sent += s.sent
		t.Received += s.recv
	}
	s.dirty = false
	return t, false
}

// Next returns the rank the token goes to from this process.
func (s *Sticky) Next() int { return (s.rank + 1) % s.size }

// FirstToken is the token that rank 0 holds at the start (no wave yet).
func FirstToken() Token { return Token{Initiator: -1} }
