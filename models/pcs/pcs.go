// Package pcs is WARPED2's PCS (personal communication services) cellular network model,
// after Carothers et al., "Distributed Simulation of Large-Scale PCS Networks".
//
// The cells of an X by Y torus are the LPs. Each cell has a number of channels and starts
// with Portables portables. A portable alternates between calls and idle periods and
// moves between cells; each of its events carries the times of its next call, the end of
// its current call and its next move (all integers), and the earliest of them decides the
// next event: NextCall (a call attempt; blocked when no channel is idle), CompleteCall (the
// call ends and frees its channel), MoveCallOut (the portable leaves, freeing its channel if
// it was on a call) and MoveCallIn (it arrives in a neighbouring cell, one hop left, right,
// down or up at random, as WARPED2's random_move; a call in progress is handed off, and
// blocked when the new cell has no idle channel). MaxHops above 1 (--max-hops) moves a
// portable 1 to MaxHops random hops instead, this package's earlier behaviour. Every delay
// is a Poisson draw with the configured mean plus TS_OFFSET = 1, and a move-out adds
// TS_OFFSET to the portable's three times, so that its move-in lands one time unit after
// the move, as in WARPED2. The parameters, their flag names and defaults are WARPED2's (main of
// pcs_sim.cpp): 100 x 100 cells, 15 channels, call interval 200, call duration 50, move
// interval 100, 50 portables per cell.
//
// The results are WARPED2's counts summed over cells: call attempts, channel blocks
// (attempts and hand-offs that found no idle channel) and hand-off blocks. As in WARPED2,
// channel blocks also count the portables that start in a call for which their cell has no
// idle channel, so with the defaults (50 portables, 15 channels) they can exceed the call
// attempts.
//
// Read against wilseypa/warped2-models, models/pcs/pcs_sim.cpp (the revision with
// TS_OFFSET and min_ts; line numbers are that revision's): TS_OFFSET is 1 (line 15), the
// initial events follow initializeObject (lines 30-76: three draws per portable, min_ts,
// complete += next for a portable not on a call), NextCall, CompleteCall and MoveCallIn
// follow receiveEvent (lines 94-128, 130-155, 171 on) and min_ts (ties go to the move).
// That revision's move-out sends the move-in at the move time with the times unchanged
// (lines 157-169); WARPED2's later revision, which this package follows (issue 31), adds
// TS_OFFSET to all three. What remains different from WARPED2:
//
//   - The end time: WARPED2 handles the events at max-sim-time too
//     (wilseypa/warped2, src/SequentialEventDispatcher.cpp:38 and :55); run with
//     --max-sim-time-inclusive (kernel.Config.EndInclusive) to match it.
//   - Random numbers: WARPED2 seeds each cell's std::default_random_engine with the cell's
//     index (pcs_sim.hpp, PcsCell's constructor) and draws with std::poisson_distribution
//     and std::uniform_int_distribution; here each cell's generator comes from --seed and
//     its LP id and draws with package rng. The distributions are the same, the streams are
//     not: runs agree with WARPED2's in distribution, not draw for draw.
//
// The move is random_move's (pcs_sim.cpp, every stored revision; at the TS_OFFSET one,
// random_move and compute_move near its end): one uniform draw of four directions (LEFT,
// RIGHT, DOWN, UP: x-1, x+1, y-1, y+1 on the torus) and one hop. pcs_sim.hpp at 059e660a
// declares random_move(unsigned int index); no stored pcs_sim.cpp defines it otherwise.
//
// Cells implement kernel.Batcher (see batch.go): each of the four event kinds has its own
// batch kernel, CUDA C and a Go twin that shares Handle's code, so that on an offload backend
// the events are handled in batches grouped by kind, with results identical to Handle's.
// They implement kernel.DeviceModeler too (see device.go): one device handler for all four
// kinds and its reverse run the whole time warp on a CUDA device (--simulation-type gpu).
package pcs

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/internal/grid"
	"github.com/warpedgo/warped/partition"
	"github.com/warpedgo/warped/rng"
)

// Config holds the parameters, named as WARPED2's flags.
type Config struct {
	// CellsX and CellsY are the torus's width and height.
	CellsX int `json:"num-cells-x"`
	CellsY int `json:"num-cells-y"`
	// Channels is the number of channels per cell.
	Channels int `json:"channel-cnt"`
	// CallInterval is the mean time between the end of a call and the next call.
	CallInterval int `json:"call-interval"`
	// CallDuration is the mean call duration.
	CallDuration int `json:"call-duration"`
	// MoveInterval is the mean time between moves.
	MoveInterval int `json:"move-interval"`
	// Portables is the number of portables each cell starts with.
	Portables int `json:"portable-count"`
	// MaxHops is the most hops of a move: 1 is WARPED2's one hop in a random direction;
	// above 1 a move takes a uniform 1 to MaxHops hops, each in a random direction.
	MaxHops int `json:"max-hops"`
}

// DefaultConfig returns WARPED2's defaults: 100x100 cells, 15 channels, call interval 200,
// call duration 50, move interval 100, 50 portables per cell, moves of one hop.
func DefaultConfig() Config {
	return Config{CellsX: 100, CellsY: 100, Channels: 15, CallInterval: 200, CallDuration: 50,
		MoveInterval: 100, Portables: 50, MaxHops: 1}
}

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	for _, p := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"num-cells-x", c.CellsX, 1, math.MaxInt}, {"num-cells-y", c.CellsY, 1, math.MaxInt}, {"channel-cnt", c.Channels, 0, 1 << 31},
		{"call-interval", c.CallInterval, 0, grid.MaxDelay}, {"call-duration", c.CallDuration, 0, grid.MaxDelay},
		{"move-interval", c.MoveInterval, 0, grid.MaxDelay}, {"portable-count", c.Portables, 1, 1 << 31},
		{"max-hops", c.MaxHops, 1, MaxHops},
	} {
		switch {
		case p.v < p.min && p.max == math.MaxInt:
			return fmt.Errorf("pcs: --%s must be at least %d, got %d", p.name, p.min, p.v)
		case p.v < p.min || p.v > p.max:
			return fmt.Errorf("pcs: --%s must be in [%d, %d], got %d", p.name, p.min, p.max, p.v)
		}
	}
	if c.CellsX > (1<<31)/c.CellsY {
		return fmt.Errorf("pcs: %d x %d cells is too many (at most 2^31)", c.CellsX, c.CellsY)
	}
	return nil
}

// MaxHops is the most hops a move may take, one by one: a portable walking 2^32 hops held
// the run for minutes, past a signal, and 2^63 overflowed the generator's range.
const MaxHops = 1 << 16

// Method is the kind of a PCS event, carried in Words[0].
type Method uint64

// The event kinds.
const (
	NextCall Method = iota
	CompleteCall
	MoveCallIn
	MoveCallOut
)

// action is what min_ts picks.
type action int

const (
	actNext action = iota
	actComplete
	actMove
)

// State is one cell's state.
type State struct {
	// IdleChannels is the number of channels not in use.
	IdleChannels uint64
	// CallAttempts counts the calls attempted in the cell.
	CallAttempts uint64
	// ChannelBlocks counts the calls and hand-offs that found no idle channel (and the
	// portables that started in a call without one).
	ChannelBlocks uint64
	// HandoffBlocks counts the hand-offs that found no idle channel.
	HandoffBlocks uint64
}

// shared is what all cells of one model read: the configuration, the delay samplers, the
// batch kernels and the device model (built once, see BatchKernels and DeviceModel).
type shared struct {
	Config
	callInterval, callDuration, moveInterval kernel.Poisson
	batch                                    []*gpuoffload.Kernel
	device                                   *gpuwarp.Model
}

// newShared returns the shared part of a model of configuration c, without batch kernels.
func newShared(c Config) *shared {
	return &shared{Config: c, callInterval: kernel.NewPoisson(float64(c.CallInterval)),
		callDuration: kernel.NewPoisson(float64(c.CallDuration)),
		moveInterval: kernel.NewPoisson(float64(c.MoveInterval))}
}

// Cell is one PCS cell.
type Cell struct {
	kernel.Plain[State]
	cfg   *shared
	index uint32
}

// New returns the cells of a PCS model, row by row.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := newShared(c)
	cfg.batch = cfg.kernels()
	cfg.device = cfg.deviceModel()
	n := c.CellsX * c.CellsY
	cells := make([]Cell, n)
	lps := make([]kernel.LogicalProcess, n)
	for i := range cells {
		cells[i] = Cell{cfg: cfg, index: uint32(i)}
		cells[i].S.IdleChannels = uint64(c.Channels)
		lps[i] = &cells[i]
	}
	return lps, nil
}

// Name returns "Cell_<index>".
func (c *Cell) Name() string { return fmt.Sprintf("Cell_%d", c.index) }

// TSOffset is WARPED2's TS_OFFSET: every delay is a Poisson draw plus TSOffset, and a
// move-out adds it to the portable's three times.
const TSOffset = 1

// delay draws a Poisson delay, plus TSOffset.
func delay(g *kernel.RNG, p *kernel.Poisson) uint64 { return p.Draw(g) + TSOffset }

// minTS is WARPED2's min_ts: which of the three times comes first, a move winning ties.
func minTS(complete, next, move uint64) action {
	if complete <= next {
		if complete < move {
			return actComplete
		}
		return actMove
	}
	if next < move {
		return actNext
	}
	return actMove
}

// send schedules a portable event for cell to at time ts.
func send(ctx *kernel.Context, to kernel.LPID, ts uint64, m Method, complete, next, move uint64) {
	ctx.SendWords(to, kernel.Time(ts), kernel.Words{uint64(m), complete, next, move})
}

// Lookahead is TSOffset: a cell sends to another cell only when a portable moves out, and
// the move-in lands TSOffset after the move (step's MoveCallOut); every other event goes
// to the cell itself. The engine's safe bounds then reach a whole time unit past the
// other workers' least events (kernel.Lookahead).
func (c *Cell) Lookahead() kernel.Time { return TSOffset }

// Init places the cell's portables.
func (c *Cell) Init(ctx *kernel.Context) {
	g, s, self := ctx.RNG(), &c.S, ctx.Self()
	for range c.cfg.Portables {
		complete := delay(g, &c.cfg.callDuration)
		move := delay(g, &c.cfg.moveInterval)
		next := delay(g, &c.cfg.callInterval)
		switch minTS(complete, next, move) {
		case actComplete:
			if s.IdleChannels > 0 { // an ongoing call
				s.IdleChannels--
				send(ctx, self, complete, CompleteCall, complete, next, move)
				break
			}
			complete += next
			s.ChannelBlocks++
			if move <= next {
				send(ctx, self, move, MoveCallOut, complete, next, move)
			} else {
				send(ctx, self, next, NextCall, complete, next, move)
			}
		case actMove:
			// Without a channel, complete <= next would look like a call in progress.
			if complete <= next {
				complete += next
			}
			send(ctx, self, move, MoveCallOut, complete, next, move)
		case actNext:
			send(ctx, self, next, NextCall, complete, next, move)
		}
	}
}

// Handle processes one portable event: the body is step, which the batch kernels' Go twins
// share.
func (c *Cell) Handle(ctx *kernel.Context, ev *kernel.Event) {
	to, ts, w := c.cfg.step(ctx.Self(), c.index, &c.S, ctx.RNG(), ev.Words)
	ctx.SendWords(to, kernel.Time(ts), w)
}

// Reverse undoes Handle for reverse computation (kernel.Reverser): the state is counts, so
// Reverse subtracts what Handle added. Which way Handle went follows from the event's words
// and the state after, except for a call or a hand-off that found no idle channel against
// one that took the last: both leave none. Those draw differently (a blocked call draws its
// next call and its duration, a blocked hand-off the next move and a duration), so Reverse
// replays the first draw on a copy of ctx.RNG(), the generator as Handle found it, and
// compares the count with what Handle made (ctx.DrawsMade). That needs the call duration's
// mean above 0 (see Reversible).
func (c *Cell) Reverse(ctx *kernel.Context, ev *kernel.Event) {
	c.cfg.unstep(&c.S, ctx.RNG(), ctx.DrawsMade(), ev.Words)
}

// Reversible reports whether Reverse can undo Handle in this configuration
// (kernel.Reversible): not when the call duration's mean is 0, as its Poisson then makes no
// draws, and a blocked call or hand-off draws as much as one that took the last channel.
func (c *Cell) Reversible() bool { return c.cfg.CallDuration > 0 }

// unstep undoes step on state s for the portable event with words w, given the generator
// g as step found it and the number of draws step made.
func (m *shared) unstep(s *State, g *kernel.RNG, made uint32, w kernel.Words) {
	complete, next := w[1], w[2]
	// only reports whether step made just one Poisson draw from p (it did not block).
	only := func(p *kernel.Poisson) bool {
		h := *g
		p.Draw(&h)
		return rng.Draws(*g, h) == made
	}
	switch Method(w[0]) {
	case NextCall:
		s.CallAttempts--
		if s.IdleChannels > 0 || only(&m.callInterval) {
			s.IdleChannels++
		} else {
			s.ChannelBlocks--
		}
	case CompleteCall:
		s.IdleChannels--
	case MoveCallOut:
		if complete < next {
			s.IdleChannels--
		}
	case MoveCallIn:
		if complete > next { // not on a call: nothing changed
			return
		}
		if s.IdleChannels > 0 || only(&m.moveInterval) {
			s.IdleChannels++
		} else {
			s.HandoffBlocks--
			s.ChannelBlocks--
		}
	default:
		panic(fmt.Sprintf("pcs: unknown event method %d", w[0]))
	}
}

// portable returns the words of a portable event: the kind and the three times.
func portable(m Method, complete, next, move uint64) kernel.Words {
	return kernel.Words{uint64(m), complete, next, move}
}

// step is Handle on a cell's state s and generator g instead of the cell and its context:
// it handles the portable event with words w at the cell with LP id self and torus index
// index, and returns the one event Handle sends (every PCS event causes exactly one): its
// receiver, time and words. It panics on an unknown event kind.
func (m *shared) step(self kernel.LPID, index uint32, s *State, g *kernel.RNG, w kernel.Words) (kernel.LPID, uint64, kernel.Words) {
	complete, next, move := w[1], w[2], w[3]
	switch Method(w[0]) {
	case NextCall:
		s.CallAttempts++
		if s.IdleChannels == 0 { // blocked
			s.ChannelBlocks++
			next += delay(g, &m.callInterval)
			complete = next + delay(g, &m.callDuration)
			if move <= next {
				return self, move, portable(MoveCallOut, complete, next, move)
			}
			return self, next, portable(NextCall, complete, next, move)
		}
		s.IdleChannels--
		next = complete + delay(g, &m.callInterval)
		if complete < move {
			return self, complete, portable(CompleteCall, complete, next, move)
		}
		return self, move, portable(MoveCallOut, complete, next, move)

	case CompleteCall:
		s.IdleChannels++
		complete = next + delay(g, &m.callDuration)
		if minTS(complete, next, move) == actMove {
			return self, move, portable(MoveCallOut, complete, next, move)
		}
		return self, next, portable(NextCall, complete, next, move)

	case MoveCallOut:
		if complete < next { // on a call: free its channel
			s.IdleChannels++
		}
		to := m.randomMove(index, g)
		// WARPED2's move-out adds TS_OFFSET to all three times: the move-in lands one time
		// unit after the move (and the handoff is never at the move's own time).
		complete, next, move = complete+TSOffset, next+TSOffset, move+TSOffset
		return to, move, portable(MoveCallIn, complete, next, move)

	case MoveCallIn:
		move += delay(g, &m.moveInterval)
		act := minTS(complete, next, move)
		if complete > next { // not on a call
			if act == actMove {
				return self, move, portable(MoveCallOut, complete, next, move)
			}
			return self, next, portable(NextCall, complete, next, move)
		}
		if s.IdleChannels == 0 { // hand-off blocked: the call is dropped
			s.HandoffBlocks++
			s.ChannelBlocks++
			complete = next + delay(g, &m.callDuration)
			if next < move {
				return self, next, portable(NextCall, complete, next, move)
			}
			return self, move, portable(MoveCallOut, complete, next, move)
		}
		s.IdleChannels--
		if act == actMove {
			return self, move, portable(MoveCallOut, complete, next, move)
		}
		return self, complete, portable(CompleteCall, complete, next, move)
	}
	panic(fmt.Sprintf("pcs: unknown event method %d", w[0]))
}

// randomMove returns the cell one random hop (left, right, down or up, on the torus) away
// from the cell with the given index, as WARPED2's random_move; with MaxHops above 1, a
// uniform 1 to MaxHops hops away (drawn first, then each hop's direction). One hop draws
// no hop count, so WARPED2's move is one draw.
func (m *shared) randomMove(index uint32, g *kernel.RNG) kernel.LPID {
	nx, ny := uint32(m.CellsX), uint32(m.CellsY)
	x, y := index%nx, index/nx
	hops := uint64(1)
	if m.MaxHops > 1 {
		hops = g.Range(1, uint64(m.MaxHops))
	}
	for ; hops > 0; hops-- {
		switch g.Range(0, 3) {
		case 0:
			x = (x + nx - 1) % nx
		case 1:
			x = (x + 1) % nx
		case 2:
			y = (y + ny - 1) % ny
		default:
			y = (y + 1) % ny
		}
	}
	return kernel.LPID(x + y*nx)
}

// Results are WARPED2's PCS totals over all cells.
type Results struct {
	CallAttempts  uint64 `json:"call_attempts"`
	ChannelBlocks uint64 `json:"channel_blocks"`
	HandoffBlocks uint64 `json:"handoff_blocks"`
}

// Summarize adds up the cells' counts after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	for _, l := range lps {
		s := &l.(*Cell).S
		r.CallAttempts += s.CallAttempts
		r.ChannelBlocks += s.ChannelBlocks
		r.HandoffBlocks += s.HandoffBlocks
	}
	return r
}

// Partitioner returns PCS's own partitioner: the torus cut into rectangular tiles of
// neighbouring cells, one per part, so that most moves stay inside a part (in a run across
// processes, inside a process). With parts = a*b (a the largest factor not above the
// square root), the grid has b tiles along its longer side and a along the other; when
// that does not fit, contiguous blocks of cells (grid.Tiles).
func (c Config) Partitioner() partition.Partitioner { return grid.Tiles{X: c.CellsX, Y: c.CellsY} }
