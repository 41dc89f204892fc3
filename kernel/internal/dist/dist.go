// Package dist is the driver of a time-warp run across processes (kernel.Config.Transport
// with more than one rank): the manager goroutine of each rank, which moves events between
// the ranks, computes GVT between them and detects the end. It drives the rank's time-warp
// engine (package timewarp) through the [Engine] interface and the engine's GVT object.
//
// Every rank builds the whole model, runs the LPs that the partition gives it, and has one
// manager goroutine (the goroutine that called Run, locked to its OS thread, the only one
// that calls the transport). Workers hand events for LPs of other ranks to the manager
// ([Driver.Post]); the manager aggregates them per destination ([comm.Aggregator], at most
// MaxAggregate events a message, flushed when the workers go idle and at least every
// flushEvery), polls the transport, and delivers the events that arrive through the
// engine's worker of its own ([Engine.Deliver]), so rollbacks and cancellation are those
// of a run in one process. safe.go: safe events across processes (promises).
//
// The engine calls the driver: [New] in its constructor, [Driver.Agree] after Init,
// [Driver.Manage] in place of its own manager loop, [Driver.Gather] at the end; its workers
// call [Driver.Post], [Driver.IsLocal] and the [RemoteSafe]'s methods, all concrete. The
// driver calls the engine through Engine (from the manager goroutine only) and through
// the engine's [gvt.Fujimoto] and [termination.Workers], which New gets.
//
// GVT: Mattern's algorithm between processes ([gvt.Mattern]; rank 0 starts a round every
// GVTPeriod), and inside each process a Fujimoto round whose participants are the workers
// and the manager. A process's reading for the token is taken when the token is there:
// the manager sends what it aggregated with the white colour, passes the cut, sends what
// the workers had queued (now red), starts a local round and reports in it at once,
// reading its white counter at that same instant; the local round's result is the local
// minimum. The GVT a round finds is broadcast by rank 0; it drives fossil collection and
// the progress line. With GVTMethod synchronous, every rank takes the same reading every
// GVTPeriod and an all-gather combines them, repeated until no white event is in flight.
// With GVTMethod tq (TQ-GVT, [gvt.TQ]), every rank ends a quantum of its own every
// GVTPeriod (sooner when its workers want GVT, but at most tqEagerness times a period): it
// passes a cut as for a token (what it aggregated goes out with the old quantum's tag, what
// the workers queued with the new one), starts a local round, and when that is over sends
// its report to rank 0, the master ([gvt.TQMaster]), which broadcasts GVT each time it
// combines a boundary that every rank reported. A rank ends no quantum while tqLead of its
// boundaries wait to be combined, so the ranks' quanta stay in step. Above tqFlatRanks
// ranks the masters form a tree: groups of about the square root of the rank count report
// to their first rank, which merges their reports ([gvt.TQRelay]) and sends rank 0 one
// report a boundary, and passes the GVT broadcast on to its group.
//
// The manager's goroutine also runs host 0 of the rank's workers (Engine.Work), a turn of
// them between two turns of its own loop, so that a rank has no busy thread more than it
// has hosts.
//
// Termination: Mattern's sticky flags ([termination.Sticky]). A rank is passive when its
// workers are all passive, no schedule queue holds an event below the end time and nothing
// waits to be sent; the token waits at a rank until it is. When a wave succeeds, its
// initiator tells every rank to stop; every rank then sends every other rank the final
// state of its LPs and its statistics (one all-gather), so all ranks end with the same
// Result. A rank that fails tells every other rank, which stop with its error.
package dist

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gvt"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/kernel/internal/osthread"
	"github.com/warpedgo/warped/termination"
)

// flushEvery is the longest an aggregated event waits before it is sent.
const flushEvery = 200 * time.Microsecond

// Driver is the state of a run across processes at one rank; the manager goroutine owns
// all of it except out, which the workers fill under outMu (Post).
type Driver struct {
	e          Engine // set by Manage
	sim        *core.Sim
	cfg        core.TimeWarpConfig
	end        Time
	gvt        *gvt.Fujimoto
	workers    *termination.Workers // the engine's count of passive workers
	local      []LPID
	tr         comm.Transport
	rank, size int
	owner      []int32
	codec      *comm.Codec
	agg        *comm.Aggregator
	mattern    *gvt.Mattern
	sticky     *termination.Sticky
	sync       bool // GVTMethod synchronous
	// GVTMethod tq: this rank's quanta, the local round of the reading under way (0 when
	// none), and at rank 0 the master. tqRecv is the report's reusable list of counts.
	tq       *gvt.TQ
	tqLocal  uint64
	tqMaster *gvt.TQMaster
	tqRecv   [][2]uint64
	// tqDone is the number of boundaries the master has combined, as this rank last heard
	// (a GVT broadcast's Round; the master's own count at rank 0).
	tqDone uint64
	// tqWaiting is the most boundaries the master held waiting for some rank's report.
	tqWaiting int
	// A tree of masters: the group size (0: none, every rank reports to rank 0), this
	// rank's group leader, and at a leader the relay that merges its group's reports.
	tqFan    int
	tqLeader int
	tqRelay  *gvt.TQRelay

	outMu sync.Mutex
	out   []*event.Event // guarded by outMu: events for other ranks, in the order posted
	spare []*event.Event // the manager's swap buffer

	// The asynchronous GVT token at this rank, while the rank takes its reading.
	tok      *gvt.Token
	tokRound uint64 // the local Fujimoto round of the reading
	tokWhite int64  // the white counter read with it
	// Rank 0: a round is under way, and when the last one started.
	gvtRunning bool
	lastGVT    time.Time
	// The termination token, while it waits here for the rank to be passive.
	term *termination.Token
	// Synchronous GVT: the lap under way.
	syncRound  uint64
	syncLap    bool   // a round is under way (its cut passed)
	syncLocal  uint64 // its local Fujimoto round, 0 when none
	syncWhite  int64
	lastFlush  time.Time
	peerFailed bool // the run failed on another rank: do not tell the others again
	laps       uint32
	// Messages sent to and received from each rank, for the final settle.
	sent, recv []uint64
	// rs is the state of safe events across processes (safe.go), or nil.
	rs *RemoteSafe
}

// New returns the driver of this rank (tr) of a run of sim: owner[id] is the rank that
// runs LP id, local this rank's LPs, g the engine's Fujimoto GVT (whose participants are
// the workers and the manager) and passive its count of passive workers. safe turns on safe
// events across processes (see RemoteSafe), where the engine supports them.
func New(sim *core.Sim, cfg core.TimeWarpConfig, tr comm.Transport, owner []int, local []LPID,
	g *gvt.Fujimoto, passive *termination.Workers, safe bool) *Driver {
	m := &Driver{sim: sim, cfg: cfg, end: sim.Cfg.MaxSimTime, gvt: g, workers: passive, local: local,
		tr: tr, rank: tr.Rank(), size: tr.Size(),
		owner: make([]int32, len(owner)), codec: comm.NewCodec(sim.Cfg.Payloads),
		mattern: gvt.NewMattern(), sticky: termination.NewSticky(tr.Rank(), tr.Size()),
		sync: cfg.GVTMethod == core.GVTSynchronous, sent: make([]uint64, tr.Size()), recv: make([]uint64, tr.Size())}
	if safe {
		m.rs = newRemoteSafe(sim.Lookahead, m.rank, m.size)
	}
	for i, r := range owner {
		m.owner[i] = int32(r)
	}
	m.agg = comm.NewAggregator(m.codec, m.size, cfg.MaxAggregate, 0)
	if cfg.GVTMethod == core.GVTTQ {
		m.tq = gvt.NewTQ()
		processes := m.size
		if m.size > tqFlatRanks {
			m.tqFan = int(math.Ceil(math.Sqrt(float64(m.size))))
			m.tqLeader = m.rank / m.tqFan * m.tqFan
			processes = (m.size + m.tqFan - 1) / m.tqFan
			if m.rank == m.tqLeader {
				m.tqRelay = gvt.NewTQRelay(min(m.tqFan, m.size-m.rank))
			}
		}
		if m.rank == 0 {
			m.tqMaster = gvt.NewTQMaster(processes)
		}
	}
	if m.rank == 0 {
		t := termination.FirstToken()
		m.term = &t
	}
	return m
}

// Rank returns this rank.
func (m *Driver) Rank() int { return m.rank }

// Safe returns the state of safe events across processes, or nil where they are off.
func (m *Driver) Safe() *RemoteSafe { return m.rs }

// IsLocal reports whether this rank runs LP id.
func (m *Driver) IsLocal(id LPID) bool { return int(m.owner[id]) == m.rank }

// Post hands event e, for an LP of another rank, to the manager, which gives the record
// back to the engine (Engine.Recycle) once it is sent. Any goroutine may call it.
func (m *Driver) Post(e *event.Event) {
	m.outMu.Lock()
	m.out = append(m.out, e)
	m.outMu.Unlock()
}

// Agree compares the configuration of every rank and adds up the initial events (made,
// this rank's count). Every rank gets the same answer, so all stop on a mismatch.
func (m *Driver) Agree(made int) (int, error) {
	b, err := comm.EncodeAgreement(&comm.Agreement{Made: int64(made), Settings: m.settings()})
	if err != nil {
		return 0, err
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		return 0, fmt.Errorf("compare configurations across processes: %w", err)
	}
	total := 0
	var base [][2]string // rank 0's settings: every rank compares every rank with them
	for r, theirs := range all {
		var a comm.Agreement
		if err := comm.DecodeAgreement(theirs, &a); err != nil {
			return 0, fmt.Errorf("rank %d sent a malformed configuration: %w", r, err)
		}
		total += int(a.Made)
		if r == 0 {
			base = a.Settings
			continue
		}
		if key, a, b, ok := firstDifference(base, a.Settings); ok {
			return 0, &core.MismatchError{Key: key, Mine: a, Theirs: b, Rank: 0, Other: r}
		}
	}
	return total, nil
}

// settings are the (name, value) pairs every rank must share, sorted by name.
func (m *Driver) settings() [][2]string {
	s := m.sim
	tw := m.cfg
	kv := map[string]string{
		"max-sim-time":                          strconv.FormatFloat(s.Cfg.MaxSimTime, 'g', -1, 64),
		"seed":                                  strconv.FormatUint(s.Cfg.Seed, 10),
		"number of LPs":                         strconv.Itoa(len(s.LPs)),
		"ranks":                                 strconv.Itoa(m.size),
		"partitioning":                          fmt.Sprintf("%T", s.Cfg.Partition),
		"time-warp-gvt-calculation-method":      tw.GVTMethod,
		"time-warp-cancellation":                tw.Cancellation,
		"time-warp-state-saving-type":           tw.StateSaving,
		"time-warp-optimism-window":             strconv.FormatFloat(tw.OptimismWindow, 'g', -1, 64),
		"time-warp-check-rollbacks":             strconv.FormatBool(tw.CheckRollbacks),
		"time-warp-communication-max-aggregate": strconv.Itoa(tw.MaxAggregate),
		"time-warp-gvt-calculation-period (ms)": strconv.FormatFloat(float64(tw.GVTPeriod)/1e6, 'g', -1, 64),
	}
	for k, v := range s.Cfg.Agree {
		kv[k] = v
	}
	out := make([][2]string, 0, len(kv))
	for k, v := range kv {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// firstDifference finds the first name whose value differs between mine and theirs
// (both sorted by name), or that only one side has.
func firstDifference(mine, theirs [][2]string) (key, a, b string, ok bool) {
	other := make(map[string]string, len(theirs))
	for _, kv := range theirs {
		other[kv[0]] = kv[1]
	}
	for _, kv := range mine {
		v, has := other[kv[0]]
		if !has {
			return kv[0], kv[1], "<unset>", true
		}
		if v != kv[1] {
			return kv[0], kv[1], v, true
		}
		delete(other, kv[0])
	}
	for k, v := range other {
		return k, "<unset>", v, true
	}
	return "", "", "", false
}

// Manage is the manager goroutine's loop, on the goroutine that called Run: it returns
// when the run is over or failed (e's Stopped).
func (m *Driver) Manage(ctx context.Context, start time.Time, e Engine) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m.e = e
	s := m.sim
	m.lastGVT, m.lastFlush = start, start
	lastProgress := start
	var idleSince time.Time // when the manager's turns began to find nothing to do
	clk := e.Phases()       // engine sampling's time split: nil when off
	// The back-off's ways to give the core away (see backOff): through the Go scheduler,
	// or, for a manager that runs workers itself on a thread of its own, the thread's.
	yield, sleep := runtime.Gosched, time.Sleep
	var tl turns // turn.go: measured only on a thread of the manager's own
	if tb, ok := m.tr.(comm.ThreadBound); ok && tb.ThreadBound() && e.Hosting() {
		yield, sleep = osthread.Yield, osthread.Sleep
		tl.start(start)
		tl.crowded = comm.Crowded()
	}
	for !e.Stopped() {
		if clk != nil {
			clk.Comm()
		}
		busy := m.receive()
		if m.drain() {
			busy = true
		}
		now := time.Now()
		if m.workers.AllPassive() || now.Sub(m.lastFlush) >= flushEvery {
			m.flush()
			m.lastFlush = now
		}
		if m.rs != nil {
			m.promise(now) // safe.go
		}
		if clk != nil {
			clk.GVT()
		}
		switch {
		case m.sync:
			m.stepSync(now)
		case m.tq != nil:
			m.stepTQ(now)
			m.stepTermination()
		default:
			m.stepGVT(now)
			m.stepTermination()
		}
		if err := ctx.Err(); err != nil {
			e.Fail(err)
		}
		if s.Cfg.Progress != nil && m.rank == 0 && now.Sub(lastProgress) >= s.Cfg.ProgressInterval {
			lastProgress = now
			s.Cfg.Progress(core.Progress{Now: m.gvt.GVT(), EndTime: m.end, EventsProcessed: e.ProcessedSoFar(), Elapsed: now.Sub(start)})
		}
		e.Tick(now)
		if clk != nil {
			clk.Idle() // the workers' turn, when hosting, is in their own time split
		}
		if e.Work(tl.events(now)) {
			busy = true
		}
		if busy {
			idleSince = time.Time{}
			if tl.crowded && tl.contended && e.Ahead() {
				osthread.Yield() // turn.go: the core to a rank beside it that holds GVT back
			}
			continue
		}
		if idleSince.IsZero() {
			idleSince = now
		}
		m.backOff(now.Sub(idleSince), yield, sleep)
	}
	err := e.Err()
	if err != nil && !m.peerFailed && m.sync {
		// The others meet this rank only in all-gathers: tell them there.
		b, _ := comm.EncodeSyncReading(&comm.SyncReading{Err: fmt.Sprintf("rank %d: %v", m.rank, err)})
		_, _ = m.tr.AllGather(b)
	} else if err != nil && !m.peerFailed {
		// Tell the others why this rank stops, so that they stop too and show it.
		msg := m.codec.AppendTerminate(nil, &comm.Terminate{Err: fmt.Sprintf("rank %d: %v", m.rank, err)})
		for r := range m.size {
			if r != m.rank {
				_ = m.send(r, msg)
			}
		}
	}
}

// Back-off when the manager's turn found nothing to do for idle: it gives its core to the
// workers, and only once it has found nothing for spinFor, and GVT does not wait on it
// (urgent), it sleeps, longer the longer it has been idle, up to 500 µs. Remote events
// come every few microseconds while the ranks run: a manager that slept after a few idle
// turns let them wait, and the ranks with nothing to do waited with them.
const spinFor = 2 * time.Millisecond

// nap is the back-off's sleep after idle.
func nap(idle time.Duration) time.Duration {
	return min(max(idle/16, 10*time.Microsecond), 500*time.Microsecond)
}

// backOff is the manager's back-off after its turns found nothing to do for idle: it
// yields, and sleeps (nap) only past spinFor while GVT does not wait on it. A manager with
// a goroutine of its own, or one not locked to its thread (the ranks of a loopback run
// share one process's processors), yields and sleeps through the Go scheduler, so that
// the other goroutines get its processor; one that runs workers itself
// (Engine.Hosting) on a thread of its own (comm.ThreadBound: MPI's) yields and sleeps the
// thread itself, since through the Go scheduler a locked thread would hand its processor
// to another thread and back each time.
func (m *Driver) backOff(idle time.Duration, yield func(), sleep func(time.Duration)) {
	if idle < spinFor || m.urgent() {
		yield()
		return
	}
	sleep(nap(idle))
}

// fail ends the run with err on this rank and tells the others.
func (m *Driver) fail(err error) { m.e.Fail(err) }

// failReasonWait bounds how long a rank whose transport failed waits for the message that
// tells why another rank left.
const failReasonWait = 500 * time.Millisecond

// failComm ends the run after the transport failed with err. A transport usually fails
// because another rank failed and left, so the messages still waiting are searched for
// that rank's reason, which is the error to show.
// The reason may still be on its way (a transport may deliver it later than the failed
// rank's departure shows), so this waits for it up to failReasonWait.
func (m *Driver) failComm(err error) {
	deadline := time.Now().Add(failReasonWait)
	for range 1 << 20 {
		_, msg, ok, perr := m.tr.Poll()
		if perr != nil {
			break
		}
		if !ok {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
			continue
		}
		if k, v, derr := m.codec.Decode(msg); derr == nil && k == comm.KindTerminate {
			if e := v.(*comm.Terminate).Err; e != "" {
				m.peerFailed = true
				m.e.Fail(&core.PeerError{Msg: e})
				return
			}
		}
	}
	m.e.Fail(err)
}

// receive handles the messages waiting in the transport; it reports whether there were any.
func (m *Driver) receive() bool {
	got := false
	for range 256 {
		from, msg, ok, err := m.tr.Poll()
		if err != nil {
			m.failComm(fmt.Errorf("receive from other processes: %w", err))
			return got
		}
		if !ok {
			return got
		}
		got = true
		m.recv[from]++
		if err := m.handle(from, msg); err != nil {
			m.fail(err)
			return got
		}
		if m.e.Stopped() {
			return got
		}
	}
	return got
}

// handle acts on one message from rank from.
func (m *Driver) handle(from int, msg []byte) error {
	k, v, err := m.codec.Decode(msg)
	if err != nil {
		return fmt.Errorf("message from rank %d: %w", from, err)
	}
	switch k {
	case comm.KindEvents:
		b := v.(*comm.Batch)
		if m.tq != nil {
			m.tq.Received(b.Colour, len(b.Events))
		} else {
			m.mattern.Received(uint8(b.Colour), len(b.Events))
		}
		m.sticky.Received(len(b.Events))
		for i := range b.Events {
			ev := &b.Events[i]
			if !m.IsLocal(ev.Receiver) {
				return fmt.Errorf("rank %d sent an event for LP %d, which rank %d runs", from, ev.Receiver, m.owner[ev.Receiver])
			}
			if m.rs != nil { // safe.go (not inlined: called only where it is on)
				if err := m.checkPromise(from, ev); err != nil {
					return err
				}
			}
			m.e.Deliver(ev)
			*ev = event.Event{}
		}
		if m.rs != nil {
			m.rs.arrived(from, len(b.Events)) // after they were handed over
		}
	case comm.KindGVTToken:
		t := v.(*comm.GVTToken)
		tok := gvt.Token{Round: t.Round, Lap: t.Lap, Count: t.Count, Min: t.Min, RedMin: t.RedMin}
		if m.rank == 0 {
			g, done := m.mattern.Returned(&tok)
			if done {
				m.laps = max(m.laps, tok.Lap+1)
				m.gvtRunning = false
				m.setGVT(g)
				msg := m.codec.AppendGVTValue(nil, &comm.GVTValue{Round: tok.Round, GVT: g})
				for r := 1; r < m.size; r++ {
					if err := m.send(r, msg); err != nil {
						m.failComm(fmt.Errorf("send GVT to rank %d: %w", r, err))
						return nil
					}
				}
				return nil
			}
		}
		m.beginReading(&tok)
	case comm.KindGVTValue:
		g := v.(*comm.GVTValue)
		if m.tqRelay != nil {
			m.tqForward(msg) // a leader passes the master's GVT on to its group
		}
		m.tqDone = max(m.tqDone, g.Round)
		m.setGVT(g.GVT)
	case comm.KindTQReport:
		if m.tqMaster == nil && m.tqRelay == nil {
			return fmt.Errorf("rank %d sent a TQ-GVT report to rank %d, which is not a master", from, m.rank)
		}
		r := v.(*comm.TQReport)
		rep := gvt.TQReport{Quantum: r.Quantum, Sent: r.Sent, SentMin: r.SentMin, Local: r.Local, NextMin: r.NextMin,
			Recv: make([]gvt.TQCount, len(r.Recv))}
		for i, c := range r.Recv {
			rep.Recv[i] = gvt.TQCount{Tag: c[0], N: c[1]}
		}
		m.tqReceived(from, &rep)
	case comm.KindPromise:
		return m.promised(from, v.(*comm.Promise))
	case comm.KindTermToken:
		t := v.(*comm.TermToken)
		m.term = &termination.Token{Round: t.Round, Sent: t.Sent, Received: t.Received, Initiator: t.Initiator}
	case comm.KindTerminate:
		if e := v.(*comm.Terminate).Err; e != "" {
			m.peerFailed = true
			m.e.Fail(&core.PeerError{Msg: e})
			return nil
		}
		m.e.Stop()
	default:
		return fmt.Errorf("rank %d sent an unexpected %s message", from, k)
	}
	return nil
}

// setGVT installs a GVT agreed on by the processes.
func (m *Driver) setGVT(g Time) {
	if err := m.gvt.SetGVT(g); err != nil {
		m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
	}
	if m.rs != nil && m.rs.gvtRose(g) { // nothing arrives below GVT
		m.e.SafeRose()
	}
}

// drain moves the events the workers posted into the aggregator; it reports whether
// there were any.
func (m *Driver) drain() bool {
	m.outMu.Lock()
	out := m.out
	m.out = m.spare[:0]
	m.outMu.Unlock()
	if len(out) == 0 {
		m.spare = out
		return false
	}
	var colour uint64
	if m.tq != nil {
		colour = m.tq.Tag()
	} else {
		colour = uint64(m.mattern.Colour())
	}
	for i, e := range out {
		to := int(m.owner[e.Receiver])
		if err := m.agg.Add(to, colour, e, m.emit); err != nil {
			m.fail(err)
		}
		if m.rs != nil {
			m.rs.sentTo(to, e.RecvTime)
		}
		if m.tq != nil {
			m.tq.Sent(e.RecvTime)
		} else {
			m.mattern.Sent(e.RecvTime)
		}
		m.sticky.Sent(1)
		m.e.Recycle(e)
		out[i] = nil
	}
	m.spare = out[:0]
	return true
}

// send sends msg to rank to, counted for settle.
func (m *Driver) send(to int, msg []byte) error {
	m.sent[to]++
	return m.tr.Send(to, msg)
}

// emit sends one message to rank to.
func (m *Driver) emit(to int, msg []byte) {
	if err := m.send(to, msg); err != nil {
		m.failComm(fmt.Errorf("send to rank %d: %w", to, err))
	}
}

// flush sends every aggregated batch.
func (m *Driver) flush() { m.agg.FlushAll(m.emit) }

// cutAt passes the cut of round: what was aggregated white goes out first, then the
// events the workers queued go out red.
func (m *Driver) cutAt(round uint64) {
	if m.mattern.Epoch() >= round {
		return
	}
	m.flush()
	m.mattern.Cut(round)
	m.drain()
	m.flush()
}

// read starts this rank's reading for a GVT round: a local Fujimoto round in which the
// manager reports at once, with the white counter read at the same instant. It returns
// the local round to wait for.
func (m *Driver) read(round uint64) (local uint64, white int64) {
	for !m.gvt.Start() {
		// A round of ours is still running (cannot happen: the manager waits for each).
		runtime.Gosched()
	}
	local = m.gvt.Round()
	white = m.mattern.WhiteCount(round)
	m.gvt.Report(local, m.e.TakeLocal(local))
	return local, white
}

// beginReading takes this rank's reading for the token tok (keeping the token until the
// local round ends; see stepGVT).
func (m *Driver) beginReading(tok *gvt.Token) {
	m.cutAt(tok.Round)
	m.tok = tok
	m.tokRound, m.tokWhite = m.read(tok.Round)
}

// stepGVT advances the asynchronous GVT protocol: rank 0 starts rounds, and a rank whose
// reading is complete adds it to the token and passes it on.
func (m *Driver) stepGVT(now time.Time) {
	// A round starts every GVT period, or sooner when a worker of rank 0 asked for one: a
	// worker takes at most its ahead bound of events per GVT round (package timewarp), so
	// waiting for the period would cap it at that many per period, and the round rate would
	// be the event rate (docs/PERFORMANCE.md, "Time warp across processes").
	if m.rank == 0 && !m.gvtRunning && m.tok == nil &&
		(now.Sub(m.lastGVT) >= m.cfg.GVTPeriod || m.e.GVTWanted()) {
		m.gvtRunning = true
		m.lastGVT = now
		tok := m.mattern.Start()
		m.beginReading(&tok) // passes the round's cut like every other rank
	}
	if m.tok == nil {
		return
	}
	local, ok := m.gvt.Result(m.tokRound)
	if !ok {
		return
	}
	tok := m.tok
	m.tok = nil
	m.mattern.Add(tok, m.tokWhite, local)
	next := (m.rank + 1) % m.size
	msg := m.codec.AppendGVTToken(nil, &comm.GVTToken{Round: tok.Round, Lap: tok.Lap,
		Colour: uint8((tok.Round - 1) & 1), Count: tok.Count, Min: tok.Min, RedMin: tok.RedMin})
	if err := m.send(next, msg); err != nil {
		m.failComm(fmt.Errorf("send GVT token to rank %d: %w", next, err))
	}
}

// urgent reports whether GVT waits on this manager, so that its idle back-off must not
// sleep: it holds the token (its local reading is due), a round it started is in flight
// (rank 0 forwards the token when it returns), its TQ-GVT reading is under way, a worker
// asked for a round where this rank starts them (rank 0, or every rank under TQ-GVT), or
// its workers are all passive holding events (they wait at the optimism bound for the next
// GVT, which needs this rank's reading when the token comes). A back-off sleep at each hop
// would add up over the ring, so that the token's round trip, not the workers, set the
// pace of a run across processes. Elsewhere the workers' request is not cleared (only
// the ranks that start rounds take it), so it does not count there.
func (m *Driver) urgent() bool {
	return m.tok != nil || m.gvtRunning || m.tqLocal != 0 ||
		(m.tq != nil || m.rank == 0 && !m.sync) && m.e.GVTWaiting() ||
		m.workers.AllPassive() && m.e.LocalWork()
}

// tqFlatRanks is the most ranks that report to rank 0 directly under TQ-GVT; above it the
// masters form a tree (see the package documentation).
const tqFlatRanks = 16

// tqEagerness bounds how often a rank whose workers want GVT ends a TQ-GVT quantum: at
// most this many times per GVT period.
const tqEagerness = 8

// tqLead is the most boundaries of a rank that may wait to be combined: a rank ends no
// quantum while the master has not combined all but tqLead-1 of its boundaries. Without
// it, a rank whose workers want GVT ends quanta faster than a rank whose workers do not,
// its quantum numbers run away from the others', and since the master combines boundary q
// only once every rank reported it, the GVT it finds comes from that rank's reading of
// ever longer ago: its workers wait at the optimism bound for a GVT that advances less and
// less (the run's rate fell from 0.19 to 0.004 M events/s, docs/PERFORMANCE.md). With the
// bound, the rank that reads least often sets the pace, and a reading is at most tqLead
// quanta old. Above 1, so that a rank may end its next quantum while its last one is
// combined (no barrier at each boundary).
const tqLead = 2

// stepTQ advances TQ-GVT at this rank: it ends a quantum every GVT period (or sooner, when
// its workers want GVT), and reports a quantum's reading once its local round is over.
func (m *Driver) stepTQ(now time.Time) {
	if m.tqLocal == 0 {
		since := now.Sub(m.lastGVT)
		if since < m.cfg.GVTPeriod && (since < m.cfg.GVTPeriod/tqEagerness || !m.e.GVTWanted()) ||
			m.tq.Tag() >= m.tqDone+tqLead {
			return
		}
		m.lastGVT = now
		// The cut: what was aggregated goes out with the quantum's tag, then the quantum
		// ends and what the workers queued goes out with the next one. The local round
		// starts, and the manager reports in it, at the same instant as End.
		m.flush()
		m.tq.End()
		m.drain()
		m.flush()
		for !m.gvt.Start() {
			runtime.Gosched() // cannot happen: the manager waits for each round
		}
		m.tqLocal = m.gvt.Round()
		m.gvt.Report(m.tqLocal, m.e.TakeLocal(m.tqLocal))
		return
	}
	local, ok := m.gvt.Result(m.tqLocal)
	if !ok {
		return
	}
	m.tqLocal = 0
	m.tqReceived(m.rank, m.tq.Report(local))
}

// tqReceived handles the TQ-GVT report r that rank from (this one, a member of this
// rank's group, or at rank 0 the leader of a group) sent: a leader merges its group's, and
// the master combines.
func (m *Driver) tqReceived(from int, r *gvt.TQReport) {
	if m.tqFan > 0 && (from != m.rank || m.tqRelay != nil) && (m.rank != 0 || from < m.tqFan) {
		// A report of a member of this rank's group (maybe itself): merge it.
		merged, ok, err := m.tqRelay.Add(from-m.rank, r)
		if err != nil {
			m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
			return
		}
		if !ok {
			return
		}
		r, from = merged, m.rank
	}
	if m.tqMaster == nil {
		m.sendTQReport(m.tqLeader, r)
		return
	}
	process := from
	if m.tqFan > 0 {
		process = from / m.tqFan
	}
	g, _, err := m.tqMaster.Add(process, r)
	m.tqWaiting = max(m.tqWaiting, m.tqMaster.Waiting())
	if err != nil {
		m.fail(fmt.Errorf("kernel: %w (GVT protocol bug)", err))
		return
	}
	if m.tqMaster.Boundaries() == m.tqDone {
		return // the boundary waits for other ranks' reports
	}
	// Every combined boundary is broadcast, also one that leaves GVT where it was: the
	// ranks count them (tqLead).
	m.tqDone = m.tqMaster.Boundaries()
	m.setGVT(g)
	m.tqForward(m.codec.AppendGVTValue(nil, &comm.GVTValue{Round: m.tqDone, GVT: g}))
}

// sendTQReport sends report r to rank to, a master (rank 0) or this rank's group leader.
func (m *Driver) sendTQReport(to int, r *gvt.TQReport) {
	if to == m.rank {
		to = 0 // a leader's merged report goes to the master
	}
	m.tqRecv = m.tqRecv[:0]
	for _, c := range r.Recv {
		m.tqRecv = append(m.tqRecv, [2]uint64{c.Tag, c.N})
	}
	msg := m.codec.AppendTQReport(nil, &comm.TQReport{Quantum: r.Quantum, Sent: r.Sent, SentMin: r.SentMin,
		Recv: m.tqRecv, Local: r.Local, NextMin: r.NextMin})
	if err := m.send(to, msg); err != nil {
		m.failComm(fmt.Errorf("send TQ-GVT report to rank %d: %w", to, err))
	}
}

// tqForward sends the GVT message msg on down the tree: from rank 0 to every other rank
// (no tree) or to its group and the other leaders; from a leader to its group.
func (m *Driver) tqForward(msg []byte) {
	send := func(to int) bool {
		if err := m.send(to, msg); err != nil {
			m.failComm(fmt.Errorf("send GVT to rank %d: %w", to, err))
			return false
		}
		return true
	}
	if m.tqFan == 0 {
		for to := 1; to < m.size; to++ {
			if !send(to) {
				return
			}
		}
		return
	}
	for to := m.rank + 1; to < min(m.rank+m.tqFan, m.size); to++ {
		if !send(to) {
			return
		}
	}
	if m.rank == 0 {
		for to := m.tqFan; to < m.size; to += m.tqFan {
			if !send(to) {
				return
			}
		}
	}
}

// passive reports whether this rank has nothing to do and nothing to send: every worker
// passive, no schedule queue holding an event below the end time, nothing posted or
// aggregated, and no worker woke up while it looked.
func (m *Driver) passive() bool {
	wakes := m.workers.Wakes()
	if !m.workers.AllPassive() {
		return false
	}
	m.outMu.Lock()
	posted := len(m.out)
	m.outMu.Unlock()
	if posted > 0 {
		return false
	}
	for to := range m.size {
		if m.agg.Pending(to) > 0 {
			return false
		}
	}
	if m.e.LocalWork() {
		return false
	}
	return m.workers.Wakes() == wakes
}

// stepTermination passes the termination token on once this rank is passive, or ends the
// run when a wave succeeded here.
func (m *Driver) stepTermination() {
	if m.term == nil {
		return
	}
	if !m.passive() {
		m.sticky.Active()
		return
	}
	next, done := m.sticky.Visit(*m.term)
	m.term = nil
	if done {
		msg := m.codec.AppendTerminate(nil, &comm.Terminate{})
		for r := range m.size {
			if r != m.rank {
				if err := m.send(r, msg); err != nil {
					m.failComm(fmt.Errorf("send terminate to rank %d: %w", r, err))
					return
				}
			}
		}
		m.e.Stop()
		return
	}
	msg := m.codec.AppendTermToken(nil, &comm.TermToken{Round: next.Round, Sent: next.Sent,
		Received: next.Received, Sticky: true, Initiator: next.Initiator})
	if err := m.send(m.sticky.Next(), msg); err != nil {
		m.failComm(fmt.Errorf("send termination token: %w", err))
	}
}

// stepSync runs the synchronous GVT method: every GVTPeriod every rank passes the next
// cut and takes its reading; once the local round is over, an all-gather combines the
// readings. A lap whose white counters add up to zero gives GVT; otherwise the ranks read
// again. Termination is decided in the same all-gather: every rank passive and clean since
// the previous lap, and as many events received as sent.
func (m *Driver) stepSync(now time.Time) {
	if m.syncLocal == 0 {
		if !m.syncLap {
			// A new round: wait for the period, then pass its cut.
			if now.Sub(m.lastGVT) < m.cfg.GVTPeriod {
				return
			}
			m.lastGVT = now
			m.syncRound = m.mattern.Epoch() + 1
			m.cutAt(m.syncRound)
			m.syncLap = true
		}
		m.syncLocal, m.syncWhite = m.read(m.syncRound)
		return
	}
	local, ok := m.gvt.Result(m.syncLocal)
	if !ok {
		return
	}
	m.syncLocal = 0
	r := comm.SyncReading{White: m.syncWhite, Min: local, RedMin: m.mattern.RedMin()}
	r.Sent, r.Recv = m.sticky.Counts()
	clean := m.passive() && !m.sticky.Dirty()
	r.Passive = clean
	m.sticky.Clear()
	b, err := comm.EncodeSyncReading(&r)
	if err != nil {
		m.fail(err)
		return
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		m.fail(fmt.Errorf("synchronous GVT: %w", err))
		return
	}
	var white int64
	var sent, recv uint64
	g := math.Inf(1)
	done := true
	for rank, rb := range all {
		var x comm.SyncReading
		if err := comm.DecodeSyncReading(rb, &x); err != nil {
			m.fail(fmt.Errorf("synchronous GVT: reading of rank %d: %w", rank, err))
			return
		}
		if x.Err != "" {
			m.peerFailed = true
			m.fail(&core.PeerError{Msg: x.Err})
			return
		}
		white += x.White
		g = min(g, x.Min, x.RedMin)
		sent += x.Sent
		recv += x.Recv
		done = done && x.Passive
	}
	if white == 0 {
		m.setGVT(g)
		m.syncLap = false
	}
	if done && sent == recv {
		m.e.Stop()
	}
}

// Gather sends every rank the final state of this rank's LPs and its statistics (mine),
// installs the others' LPs, and returns the totals over all ranks.
func (m *Driver) Gather(mine core.Stats) (core.Stats, error) {
	s := m.sim
	if m.rs != nil {
		mine.PromisesSent = m.rs.promises
	}
	fr := comm.FinalRank[core.Stats]{Stats: mine, Peak: core.PeakMemory(), Rounds: m.gvt.Rounds(), Sent: m.sent}
	var buf []byte
	for _, id := range m.local {
		r := &s.LPs[id]
		snap, err := comm.EncodeSnapshot(r.Model.Snapshot(nil))
		if err != nil {
			return core.Stats{}, fmt.Errorf("encode the final state of LP %q for the other ranks: %w", r.Model.Name(), err)
		}
		buf = s.AppendDigest(buf[:0], id)
		fr.LPs = append(fr.LPs, comm.FinalLP{ID: id, RNG: [6]uint32{r.RNG.D, r.RNG.V[0], r.RNG.V[1], r.RNG.V[2], r.RNG.V[3], r.RNG.V[4]},
			Seq: r.Seq, Snap: snap, Digest: slices.Clone(buf)})
	}
	b, err := comm.EncodeFinalRank(&fr)
	if err != nil {
		return core.Stats{}, err
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		return core.Stats{}, fmt.Errorf("gather final results: %w", err)
	}
	var st core.Stats
	want := make([]uint64, m.size) // messages each rank sent this one
	for rank, rb := range all {
		var x comm.FinalRank[core.Stats]
		if err := comm.DecodeFinalRank(rb, &x); err != nil {
			return core.Stats{}, fmt.Errorf("final results of rank %d: %w", rank, err)
		}
		if len(x.Sent) != m.size {
			return core.Stats{}, fmt.Errorf("final results of rank %d: message counts for %d ranks, not %d", rank, len(x.Sent), m.size)
		}
		want[rank] = x.Sent[m.rank]
		addStats(&st, &x.Stats)
		st.PeakMemoryBytes += x.Peak
		st.GVTCycles = max(st.GVTCycles, x.Rounds)
		if rank == m.rank {
			continue
		}
		for _, f := range x.LPs {
			if int(f.ID) >= len(s.LPs) || int(m.owner[f.ID]) != rank {
				return core.Stats{}, fmt.Errorf("rank %d sent the final state of LP %d, which it does not run", rank, f.ID)
			}
			if err := install(s, f, &buf); err != nil {
				return core.Stats{}, err
			}
		}
	}
	if err := m.settle(want); err != nil {
		return core.Stats{}, err
	}
	s.Laps = m.laps
	s.TQWaiting = m.tqWaiting
	st.StateSaving = mine.StateSaving // the same on every rank: the configurations agree
	st.ScheduleQueues = mine.ScheduleQueues
	if n := st.PrimaryRollbacks + st.SecondaryRollbacks; n > 0 {
		st.AverageRollbackLength = float64(st.EventsRolledBack) / float64(n)
	}
	return st, nil
}

// settleWait bounds how long settle waits for a message that another rank has sent.
const settleWait = 30 * time.Second

// settle receives, after the run, what the other ranks sent this one and it has not
// received yet (want[r]: the messages rank r sent it), so that nothing is left unmatched
// when the transport closes: MPI requires every message to be received before
// MPI_Finalize (MPICH's UCX layer warns of one left). Only control messages can be left
// after termination, a GVT token or value or a termination token, which are dropped; an
// event left would be a termination bug, and is an error.
func (m *Driver) settle(want []uint64) error {
	deadline := time.Now().Add(settleWait)
	for r := 0; r < m.size; {
		if r == m.rank || m.recv[r] >= want[r] {
			r++
			continue
		}
		from, msg, ok, err := m.tr.Poll()
		if err != nil {
			return fmt.Errorf("receive the last messages from other processes: %w", err)
		}
		if !ok {
			if time.Now().After(deadline) {
				return fmt.Errorf("rank %d sent %d messages to rank %d, which got %d after waiting %v",
					r, want[r], m.rank, m.recv[r], settleWait)
			}
			runtime.Gosched()
			continue
		}
		m.recv[from]++
		k, _, err := m.codec.Decode(msg)
		if err != nil {
			return fmt.Errorf("message from rank %d: %w", from, err)
		}
		if k == comm.KindEvents {
			return fmt.Errorf("kernel: events from rank %d arrived at rank %d after the run ended (termination bug)", from, m.rank)
		}
	}
	return nil
}

// addStats adds the counters of o to st (FinalTime: the later).
func addStats(st, o *core.Stats) {
	st.EventsProcessed += o.EventsProcessed
	st.EventsCommitted += o.EventsCommitted
	st.EventsRolledBack += o.EventsRolledBack
	st.CoastForwardEvents += o.CoastForwardEvents
	st.SafeEvents += o.SafeEvents
	st.PromisesSent += o.PromisesSent
	st.PrimaryRollbacks += o.PrimaryRollbacks
	st.SecondaryRollbacks += o.SecondaryRollbacks
	st.AntiMessagesSent += o.AntiMessagesSent
	st.SuppressedSends += o.SuppressedSends
	st.CancelledEvents += o.CancelledEvents
	st.PeakPendingEvents += o.PeakPendingEvents
	st.BatchedEvents += o.BatchedEvents
	st.OffloadBatches += o.OffloadBatches
	if st.OffloadNote == "" {
		st.OffloadNote = o.OffloadNote
	}
	st.FinalTime = max(st.FinalTime, o.FinalTime)
}

// install sets LP f.ID's final state in s from another rank and checks that it restored what
// that rank digested.
func install(s *core.Sim, f comm.FinalLP, buf *[]byte) error {
	r := &s.LPs[f.ID]
	r.RNG.D = f.RNG[0]
	copy(r.RNG.V[:], f.RNG[1:])
	r.Seq = f.Seq
	snap, err := comm.DecodeSnapshot(f.Snap, r.Model.Snapshot(nil))
	if err != nil {
		return fmt.Errorf("decode the final state of LP %q from another rank: %w", r.Model.Name(), err)
	}
	r.Model.Restore(snap)
	*buf = s.AppendDigest((*buf)[:0], f.ID)
	if !slices.Equal(*buf, f.Digest) {
		return fmt.Errorf("the final state of LP %q does not survive the trip between processes: its Snapshot "+
			"value must encode with msgpack (exported fields, or msgpack's Marshaler/Unmarshaler)", r.Model.Name())
	}
	return nil
}
