package dist

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/event"
)

// Safe events across processes (the argument is in docs/DECISIONS.md, "Safe events across
// processes").
//
// In one process a worker's safe bound comes from the commit horizon's rounds (package
// timewarp's updateSafe).
// Across processes each rank instead keeps, for every other rank x, a bound from[x] below
// every event x can still send it, and with one worker in the rank nothing else can arrive
// at that worker: an event it takes below the least of those bounds (or GVT, when later) is
// safe, committed as it is processed, unlogged.
//
// The bounds come from promises ([comm.Promise]), which each rank sends every other now and
// then. A promise carries a snapshot of its sender: the least time of its worker's pending
// events (and held outputs' causes), taken after the worker took in every event counted
// in the snapshot's received counts, and its own bounds at that instant. The receiver of a
// promise from x combines it with its own latest snapshot and with the least time of what
// each side sent the other beyond what the other had counted (its own send log, and the
// promise's Sent, counted from the receiver's promise that x answers, Echo):
//
//	from[x] >= min(x.Low + L, x.Others + L, mine to x beyond x.Recv + L,
//	               my.Low + 2L, my bounds on the third ranks + 2L, x.Sent + 2L)
//
// with L the lookahead. Each term is one way an event x sends after the promise can come
// about; none depends on the bound it sets, so the bounds follow the ranks' positions, not
// a chain of null messages that each add one lookahead (a promise of min(pending, bounds)
// + L advances one lookahead per message and trails the workers: docs/DECISIONS.md, "Safe
// events across processes"). Without a lookahead the bounds cannot pass the ranks'
// positions, and the feature is off.

// promiseEvery is the least time between two rounds of promises.
const promiseEvery = 20 * time.Microsecond

// safeSnapshot is a reading of the rank's worker: its pending events' least time (and its
// held outputs' causes'), the events it had taken in from each rank, and the rank's bound
// on each rank then.
type safeSnapshot struct {
	id  uint64
	low Time
	n   []uint64
	b   []Time
}

// copyFrom sets s to o, reusing s's slices.
func (s *safeSnapshot) copyFrom(o *safeSnapshot) {
	s.id, s.low = o.id, o.low
	s.n = append(s.n[:0], o.n...)
	s.b = append(s.b[:0], o.b...)
}

// sendLog is the least receive time of the events sent to one rank beyond a count: a
// monotonic queue of (index, time) with rising times, whose front is dropped as the count
// the receiver reported rises.
type sendLog struct {
	idx  []uint64
	t    []Time
	head int
	n    uint64 // events sent so far
}

// push records the next event sent, at time t.
func (l *sendLog) push(t Time) {
	l.n++
	for len(l.t) > l.head && l.t[len(l.t)-1] >= t {
		l.t, l.idx = l.t[:len(l.t)-1], l.idx[:len(l.idx)-1]
	}
	if l.head > 0 && l.head >= len(l.t)/2 && len(l.t) == cap(l.t) {
		k := copy(l.t, l.t[l.head:])
		copy(l.idx, l.idx[l.head:])
		l.t, l.idx, l.head = l.t[:k], l.idx[:k], 0
	}
	l.t = append(l.t, t)
	l.idx = append(l.idx, l.n)
}

// minAfter returns the least time of the events sent after the first k (+Inf for none); k
// never goes down from one call to the next.
func (l *sendLog) minAfter(k uint64) Time {
	for l.head < len(l.t) && l.idx[l.head] <= k {
		l.head++
	}
	if l.head == len(l.t) {
		return math.Inf(1)
	}
	return l.t[l.head]
}

// RemoteSafe is the state of safe events across processes at one rank, shared by the
// manager and the rank's one worker: the manager keeps the bounds from the promises, the
// worker reads them (Bound, ReadBounds, ReadHanded) and publishes its snapshots (Publish).
type RemoteSafe struct {
	la         Time
	rank, size int

	// Shared by the manager (writer) and the worker (reader): the remote bound, as
	// math.Float64bits (the least of from, or GVT when later), stored after the manager
	// handed over what arrived before it; each rank's bound (from, the own rank's +Inf)
	// and the events handed over from each rank (handed).
	bound  atomic.Uint64
	from   []atomic.Uint64
	handed []atomic.Uint64
	// pub is the worker's latest snapshot, guarded by mu.
	mu  sync.Mutex
	pub safeSnapshot

	// Owned by the manager: the snapshot its promises carry and its copy of the latest
	// one, the log of its sends to each rank, and per rank the ID and received count of
	// the latest promise from it and whether one came since the last promise sent to it.
	sent, mine safeSnapshot
	logs       []sendLog
	echo       []uint64
	theirN     []uint64
	answer     []bool
	deaf       []bool // see sentTo
	last       time.Time
	promises   uint64 // promises sent (Stats.PromisesSent)
}

// newRemoteSafe returns the state of safe events across processes at rank of size ranks,
// with lookahead la (the engine decides where they apply: see Engine and New).
func newRemoteSafe(la Time, rank, size int) *RemoteSafe {
	rs := &RemoteSafe{la: la, rank: rank, size: size,
		from: make([]atomic.Uint64, size), handed: make([]atomic.Uint64, size),
		logs: make([]sendLog, size),
		echo: make([]uint64, size), theirN: make([]uint64, size), answer: make([]bool, size),
		deaf: make([]bool, size)}
	for r := range size {
		rs.from[r].Store(math.Float64bits(math.Inf(-1)))
	}
	rs.from[rank].Store(math.Float64bits(math.Inf(1)))
	rs.bound.Store(math.Float64bits(math.Inf(-1)))
	for _, s := range []*safeSnapshot{&rs.pub, &rs.sent, &rs.mine} {
		s.n, s.b = make([]uint64, size), make([]Time, size)
	}
	return rs
}

// Bound returns the remote bound: the least of this rank's bounds on the other ranks, or
// GVT when later. Everything that arrived before it was stored has been handed over.
func (rs *RemoteSafe) Bound() Time { return rs.remoteBound() }

// Ranks returns the number of ranks.
func (rs *RemoteSafe) Ranks() int { return rs.size }

// ReadBounds copies this rank's bound on each rank into b (one per rank).
func (rs *RemoteSafe) ReadBounds(b []Time) {
	for x := range b {
		b[x] = rs.fromRank(x)
	}
}

// ReadHanded copies the number of events handed over from each rank into n (one per rank).
func (rs *RemoteSafe) ReadHanded(n []uint64) {
	for x := range n {
		n[x] = rs.handed[x].Load()
	}
}

// Publish makes the worker's snapshot (the least time of its pending events and held
// outputs' causes low, after taking in the events counted in n, with the bounds b read
// before n) the one the manager's promises carry, unless it equals the latest. Only the
// worker calls it.
func (rs *RemoteSafe) Publish(low Time, n []uint64, b []Time) {
	pub := &rs.pub // only the worker writes it
	if pub.id != 0 && low == pub.low && slices.Equal(n, pub.n) && slices.Equal(b, pub.b) {
		return
	}
	rs.mu.Lock()
	pub.id++
	pub.low = low
	pub.n = append(pub.n[:0], n...)
	pub.b = append(pub.b[:0], b...)
	rs.mu.Unlock()
}

// remoteBound returns the remote bound (see the bound field).
func (rs *RemoteSafe) remoteBound() Time { return math.Float64frombits(rs.bound.Load()) }

// fromRank returns this rank's bound on what rank x can still send it.
func (rs *RemoteSafe) fromRank(x int) Time { return math.Float64frombits(rs.from[x].Load()) }

// raise raises the bound on rank x to b (GVT g at least) and republishes the remote bound;
// it reports whether the remote bound rose.
func (rs *RemoteSafe) raise(x int, b, g Time) bool {
	if b = max(b, g); b > rs.fromRank(x) {
		rs.from[x].Store(math.Float64bits(b))
	}
	all := math.Inf(1)
	for r := range rs.size {
		all = min(all, rs.fromRank(r))
	}
	if all = max(all, g); all > rs.remoteBound() {
		rs.bound.Store(math.Float64bits(all))
		return true
	}
	return false
}

// promise sends a promise to every other rank that has not had the worker's latest
// snapshot or the answer to its own latest promise, at most every promiseEvery. What the
// worker posted is sent first: the snapshot is older, so every event the worker posted
// before it goes out ahead of the promise.
func (m *Driver) promise(now time.Time) {
	rs := m.rs
	if now.Sub(rs.last) < promiseEvery {
		return
	}
	rs.last = now
	fresh := false
	rs.mu.Lock()
	if rs.pub.id > rs.sent.id {
		rs.sent.copyFrom(&rs.pub)
		fresh = true
	}
	rs.mu.Unlock()
	if rs.sent.id == 0 {
		return
	}
	due := false
	for x := range m.size {
		due = due || (x != m.rank && (fresh || rs.answer[x]))
	}
	if !due {
		return
	}
	m.drain()
	m.flush()
	s := &rs.sent
	for x := range m.size {
		if x == m.rank || !(fresh || rs.answer[x]) {
			continue
		}
		rs.answer[x] = false
		others := math.Inf(1)
		for z := range m.size {
			if z != m.rank && z != x {
				others = min(others, s.b[z])
			}
		}
		sent := math.Inf(-1)
		if !rs.deaf[x] {
			sent = rs.logs[x].minAfter(rs.theirN[x])
		}
		m.pbuf = m.codec.AppendPromise(m.pbuf[:0], &comm.Promise{ID: s.id, Low: s.low, Recv: s.n[x],
			Others: others, Echo: rs.echo[x], Sent: sent})
		rs.promises++
		if err := m.sendReused(x, m.pbuf); err != nil {
			m.failComm(fmt.Errorf("send promise to rank %d: %w", x, err))
			return
		}
	}
}

// promised handles promise p from rank x: it raises the bound on what x can still send
// (see RemoteSafe and the argument at the top of safe.go).
func (m *Driver) promised(x int, p *comm.Promise) error {
	rs := m.rs
	if rs == nil {
		return nil // off here (each rank decides alone; see newRemoteSafe)
	}
	if p.ID < rs.echo[x] || p.Recv < rs.theirN[x] || p.Recv > rs.logs[x].n {
		return fmt.Errorf("kernel: rank %d sent promise %d (received %d) after promise %d (received %d) with %d sent to it (remote safe bug)",
			x, p.ID, p.Recv, rs.echo[x], rs.theirN[x], rs.logs[x].n)
	}
	rs.echo[x], rs.theirN[x], rs.answer[x] = p.ID, p.Recv, true
	if rs.deaf[x] {
		return nil
	}
	// This rank's latest snapshot: p.Sent counts from an older one (Echo), whose counts
	// are at most the latest's, so it covers the latest's too.
	rs.mu.Lock()
	rs.mine.copyFrom(&rs.pub)
	rs.mu.Unlock()
	s := &rs.mine
	if s.id == 0 {
		return nil
	}
	m.drain() // the send log must hold everything posted before the snapshot
	la := rs.la
	b := min(p.Low+la, p.Others+la, rs.logs[x].minAfter(p.Recv)+la, s.low+2*la, p.Sent+2*la)
	for z := range m.size {
		if z != m.rank && z != x {
			b = min(b, s.b[z]+2*la)
		}
	}
	if rs.raise(x, b, m.gvt.GVT()) {
		m.e.SafeRose()
	}
	return nil
}

// maxUnanswered is the longest send log kept for a rank that has sent no promise: one
// that has it turned off (each rank decides alone) would never let it shrink.
const maxUnanswered = 1 << 20

// sentTo records an event sent to rank to, at time t. A rank that sent no promise while
// this one sent it maxUnanswered events is taken to have the feature off: its log is
// dropped, and its promises, should any come, are ignored (deaf), as this rank's own
// promises to it can no longer say what it sent beyond a count (their Sent is -Inf).
func (rs *RemoteSafe) sentTo(to int, t Time) {
	l := &rs.logs[to]
	if rs.deaf[to] {
		l.n++
		return
	}
	l.push(t)
	if rs.echo[to] == 0 && len(l.t)-l.head > maxUnanswered {
		rs.deaf[to] = true
		l.t, l.idx, l.head = nil, nil, 0
	}
}

// arrived records that n events from rank from were handed over to the worker.
func (rs *RemoteSafe) arrived(from, n int) { rs.handed[from].Add(uint64(n)) }

// gvtRose raises every bound to GVT g: nothing arrives below GVT. It reports whether the
// remote bound rose.
func (rs *RemoteSafe) gvtRose(g Time) bool {
	rose := false
	for x := range rs.size {
		rose = rs.raise(x, g, g) || rose
	}
	return rose
}

// checkPromise fails when event ev from rank from breaks this rank's bound on that rank.
func (m *Driver) checkPromise(from int, ev *event.Event) error {
	if rs := m.rs; rs != nil && ev.RecvTime < min(rs.fromRank(from), m.end) {
		return fmt.Errorf("kernel: rank %d sent an event at %v below the bound %v on it (remote safe bug)", from, ev.RecvTime, rs.fromRank(from))
	}
	return nil
}
