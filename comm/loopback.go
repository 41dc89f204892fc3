package comm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// ErrPeerClosed is returned by a loopback Send to a rank that has closed its transport,
// and by AllGather when another rank has closed: the collective can never complete.
var ErrPeerClosed = errors.New("comm: peer rank has closed its transport")

// LoopbackOptions injects faults into a loopback network. The zero value delivers every
// message at the receiver's next Poll, oldest first. Faults never break the one promise
// of a Transport: messages of one (sender, receiver) pair arrive in the order sent.
type LoopbackOptions struct {
	// Seed seeds the random choices of the fault injection. Each receiver draws from its
	// own generator, so a run whose calls happen in the same order makes the same choices;
	// goroutine scheduling still varies between runs.
	Seed uint64
	// MaxDelay delays each message by a random 0..MaxDelay Poll calls of its receiver
	// before the receiver can see it. A message never overtakes an earlier one of the
	// same pair: its delay is extended to its predecessor's where needed.
	MaxDelay int
	// Reorder makes Poll deliver, among the senders whose next message is deliverable, a
	// randomly chosen one, instead of the one sent first.
	Reorder bool
	// Slow maps a rank to extra Poll calls that every message to it waits, on top of
	// MaxDelay: a slow receiver.
	Slow map[int]int
	// SlowPairs maps a (sender, receiver) pair to extra Poll calls of the receiver that
	// every message of that pair waits: a slow link, which messages on other paths
	// overtake (for example a token that goes round the ring).
	SlowPairs map[[2]int]int
	// Reuse makes each rank's transport treat its caller's buffers as MPI's does
	// (Reuser): Send copies msg, and Poll returns a message valid only until the next
	// Poll, a copy in a buffer the rank overwrites then, so that a caller that keeps either
	// fails its tests.
	Reuse bool
}

// NewLoopback returns size transports, one per rank, connected in memory. Each is used
// by one goroutine (its rank's), as with every Transport; Send never blocks and Poll
// never blocks. Messages are handed over without copying, so a sender that changes a
// message after Send is a data race that go test -race reports. It panics if size < 1.
func NewLoopback(size int, opts LoopbackOptions) []Transport {
	if size < 1 {
		panic(fmt.Sprintf("comm: NewLoopback: %d ranks; need at least 1", size))
	}
	n := &loopNet{size: size, opts: opts, anyClosed: make(chan struct{})}
	n.round = newGatherRound(size)
	n.ranks = make([]*loopback, size)
	ts := make([]Transport, size)
	for r := range size {
		n.ranks[r] = &loopback{
			net:   n,
			rank:  r,
			from:  make([]queue, size),
			rng:   rand.New(rand.NewPCG(opts.Seed, uint64(r)+0x9e3779b97f4a7c15)),
			extra: int64(opts.Slow[r]),
		}
		ts[r] = n.ranks[r]
	}
	return ts
}

// loopNet is the state the ranks of one loopback network share.
type loopNet struct {
	size  int
	opts  LoopbackOptions
	ranks []*loopback
	seq   atomic.Uint64 // global send order, for oldest-first delivery

	gmu       sync.Mutex
	round     *gatherRound
	closeOnce sync.Once
	anyClosed chan struct{} // closed when the first rank closes
}

// gatherRound is one AllGather collective in progress.
type gatherRound struct {
	contrib [][]byte
	arrived int
	done    chan struct{} // closed when every rank has contributed
}

func newGatherRound(size int) *gatherRound {
	return &gatherRound{contrib: make([][]byte, size), done: make(chan struct{})}
}

// loopback is one rank's Transport.
type loopback struct {
	net    *loopNet
	rank   int
	closed atomic.Bool

	mu    sync.Mutex // guards the fields below, written by senders and the receiver
	from  []queue    // messages waiting, per sender
	polls int64      // Poll calls so far
	rng   *rand.Rand
	extra int64 // Slow delay
	// rbuf is the buffer Poll returns messages in with Reuse (only Poll's goroutine, the
	// rank's, touches it).
	rbuf []byte
}

// queue is the FIFO of one (sender, receiver) pair.
type queue struct {
	msgs []queued
	head int
	last int64 // ready time of the newest message
}

type queued struct {
	msg   []byte
	ready int64  // deliverable once the receiver's poll count reaches this
	seq   uint64 // global send order
}

func (l *loopback) Rank() int { return l.rank }
func (l *loopback) Size() int { return l.net.size }

// Send queues msg for rank to. Sending to oneself is allowed.
func (l *loopback) Send(to int, msg []byte) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if to < 0 || to >= l.net.size {
		return fmt.Errorf("comm: send from rank %d to rank %d: out of range [0, %d)", l.rank, to, l.net.size)
	}
	dst := l.net.ranks[to]
	if dst.closed.Load() {
		return fmt.Errorf("send from rank %d to rank %d: %w", l.rank, to, ErrPeerClosed)
	}
	if l.net.opts.Reuse {
		msg = append([]byte(nil), msg...) // the caller may reuse its buffer at once
	}
	seq := l.net.seq.Add(1)
	dst.mu.Lock()
	defer dst.mu.Unlock()
	ready := dst.polls + 1 + dst.extra + int64(l.net.opts.SlowPairs[[2]int{l.rank, to}])
	if d := l.net.opts.MaxDelay; d > 0 {
		ready += dst.rng.Int64N(int64(d) + 1)
	}
	q := &dst.from[l.rank]
	ready = max(ready, q.last) // never overtake the pair's previous message
	q.last = ready
	q.msgs = append(q.msgs, queued{msg: msg, ready: ready, seq: seq})
	return nil
}

// Poll returns a deliverable message, if any, without blocking.
func (l *loopback) Poll() (int, []byte, bool, error) {
	if l.closed.Load() {
		return 0, nil, false, ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.polls++
	pick, count := -1, 0
	for s := range l.from {
		q := &l.from[s]
		if q.head == len(q.msgs) || q.msgs[q.head].ready > l.polls {
			continue
		}
		count++
		switch {
		case l.net.opts.Reorder:
			if l.rng.IntN(count) == 0 { // reservoir sampling: uniform among the ready
				pick = s
			}
		case pick < 0 || q.msgs[q.head].seq < l.from[pick].msgs[l.from[pick].head].seq:
			pick = s
		}
	}
	if pick < 0 {
		return 0, nil, false, nil
	}
	q := &l.from[pick]
	msg := q.msgs[q.head].msg
	q.msgs[q.head] = queued{}
	q.head++
	if q.head == len(q.msgs) {
		q.msgs, q.head = q.msgs[:0], 0
	} else if q.head >= 64 && q.head*2 >= len(q.msgs) {
		q.msgs = q.msgs[:copy(q.msgs, q.msgs[q.head:])]
		q.head = 0
	}
	if l.net.opts.Reuse {
		l.rbuf = append(l.rbuf[:0], msg...)
		msg = l.rbuf
	}
	return pick, msg, true, nil
}

// Reuses reports whether the network was made with LoopbackOptions.Reuse (comm.Reuser).
func (l *loopback) Reuses() bool { return l.net.opts.Reuse }

// AllGather blocks until every rank has called it, then returns every rank's
// contribution in rank order (copies that belong to the caller). It returns ErrClosed
// when this rank has closed, and an error wrapping ErrPeerClosed as soon as another rank
// has closed without contributing, rather than waiting forever. Messages in flight do not
// matter to it: Send never blocks.
func (l *loopback) AllGather(b []byte) ([][]byte, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	n := l.net
	n.gmu.Lock()
	select {
	case <-n.anyClosed:
		n.gmu.Unlock()
		return nil, fmt.Errorf("all-gather on rank %d: %w", l.rank, ErrPeerClosed)
	default:
	}
	r := n.round
	r.contrib[l.rank] = append([]byte{}, b...)
	r.arrived++
	if r.arrived == n.size {
		close(r.done)
		n.round = newGatherRound(n.size)
	}
	n.gmu.Unlock()

	select {
	case <-r.done:
	case <-n.anyClosed:
		select {
		case <-r.done: // completed after all
		default:
			return nil, fmt.Errorf("all-gather on rank %d: %w", l.rank, ErrPeerClosed)
		}
	}
	out := make([][]byte, n.size)
	for i, c := range r.contrib {
		out[i] = append([]byte{}, c...)
	}
	return out, nil
}

// Close closes this rank's transport: later calls return ErrClosed (a second Close
// too), messages waiting for it are dropped, later sends to it fail with ErrPeerClosed,
// and AllGather calls waiting on other ranks return ErrPeerClosed.
func (l *loopback) Close() error {
	if l.closed.Swap(true) {
		return ErrClosed
	}
	l.mu.Lock()
	l.from = make([]queue, l.net.size)
	l.mu.Unlock()
	n := l.net
	n.gmu.Lock()
	n.closeOnce.Do(func() { close(n.anyClosed) })
	n.gmu.Unlock()
	return nil
}

// LoopbackWaiting returns the number of messages sent to the loopback rank t and not yet
// received, and how many of them are event messages (KindEvents): what an omniscient
// observer of a test sees in flight. It returns -1, -1 for a transport that is not a
// loopback rank.
func LoopbackWaiting(t Transport) (all, events int) {
	l, ok := t.(*loopback)
	if !ok {
		return -1, -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.from {
		for _, q := range l.from[s].msgs[l.from[s].head:] {
			all++
			if k, err := PeekKind(q.msg); err == nil && k == KindEvents {
				events++
			}
		}
	}
	return all, events
}
