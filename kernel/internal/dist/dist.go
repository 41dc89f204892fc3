package dist

import (
	"math"
	"sync"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/gvt"
	"github.com/warpedgo/warped/kernel/internal/core"
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
	// crowded is set where the launcher started more ranks on this node than it has CPUs
	// (comm.Crowded), read once in New: safe events across processes are off there unless
	// asked for, and the manager yields its core while ahead (turn.go).
	crowded bool
	// reuse is set where the transport is done with a message when Send returns and
	// Poll's message is valid until the next Poll (comm.Reuser): the aggregator's and the
	// promises' buffers, which they reuse, then go to Send as they are (sendReused). Set
	// in New.
	reuse bool
	// pbuf is the promises' buffer (safe.go).
	pbuf []byte
}

// New returns the driver of this rank (tr) of a run of sim: owner[id] is the rank that
// runs LP id, local this rank's LPs, g the engine's Fujimoto GVT (whose participants are
// the workers and the manager) and passive its count of passive workers. safe turns on safe
// events across processes (see RemoteSafe), where the engine supports them; on a crowded
// node they stay off unless cfg.RemoteSafeCrowded.
func New(sim *core.Sim, cfg core.TimeWarpConfig, tr comm.Transport, owner []int, local []LPID,
	g *gvt.Fujimoto, passive *termination.Workers, safe bool) *Driver {
	m := &Driver{sim: sim, cfg: cfg, end: sim.Cfg.MaxSimTime, gvt: g, workers: passive, local: local,
		tr: tr, rank: tr.Rank(), size: tr.Size(),
		owner: make([]int32, len(owner)), codec: comm.NewCodec(sim.Cfg.Payloads),
		mattern: gvt.NewMattern(), sticky: termination.NewSticky(tr.Rank(), tr.Size()),
		sync: cfg.GVTMethod == core.GVTSynchronous, sent: make([]uint64, tr.Size()), recv: make([]uint64, tr.Size()),
		crowded: comm.Crowded()}
	if r, ok := tr.(comm.Reuser); ok && r.Reuses() {
		m.reuse = true
	}
	if safe && (cfg.RemoteSafeCrowded || !m.crowded) {
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
