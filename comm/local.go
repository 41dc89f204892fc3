package comm

import "fmt"

// Local is the transport of a run in one process: a single rank (0), no other process to
// talk to. A message sent to rank 0 comes back from Poll, in order; AllGather returns the
// caller's own contribution. The kernel runs a simulation whose transport has one rank
// exactly as one without a transport.
type Local struct {
	queue  [][]byte
	closed bool
}

var _ Transport = (*Local)(nil)

// NewLocal returns the single-rank transport.
func NewLocal() *Local { return &Local{} }

// Rank returns 0.
func (l *Local) Rank() int { return 0 }

// Size returns 1.
func (l *Local) Size() int { return 1 }

// Send queues msg for rank 0, the only rank.
func (l *Local) Send(to int, msg []byte) error {
	if l.closed {
		return ErrClosed
	}
	if to != 0 {
		return fmt.Errorf("comm: send to rank %d: the local transport has only rank 0", to)
	}
	l.queue = append(l.queue, msg)
	return nil
}

// Poll returns the oldest message sent to rank 0, if any.
func (l *Local) Poll() (int, []byte, bool, error) {
	if l.closed {
		return 0, nil, false, ErrClosed
	}
	if len(l.queue) == 0 {
		return 0, nil, false, nil
	}
	msg := l.queue[0]
	l.queue[0] = nil
	l.queue = l.queue[1:]
	return 0, msg, true, nil
}

// AllGather returns a copy of b: the contributions of every rank (one).
func (l *Local) AllGather(b []byte) ([][]byte, error) {
	if l.closed {
		return nil, ErrClosed
	}
	return [][]byte{append([]byte(nil), b...)}, nil
}

// Close releases the transport; later calls return ErrClosed.
func (l *Local) Close() error {
	if l.closed {
		return ErrClosed
	}
	l.closed, l.queue = true, nil
	return nil
}
