// Package phold is the PHOLD benchmark model with ROSS's parameters and semantics.
//
// Each of LPs logical processes starts with StartEvents events. Handling an event draws a
// uniform u: if u <= Remote the next event goes to a uniformly random LP (possibly itself),
// otherwise back to itself, after a delay of Lookahead plus an exponential draw with mean
// Mean - Lookahead. Grain adds a fixed amount of deterministic busy work per event (that
// many XORWOW steps on a copy of the LP's generator, folded into the state), for studying
// event granularity without changing the event pattern.
//
// PHOLD implements kernel.Reverser, so it runs with reverse computation as well as with
// periodic state saving, and kernel.Batcher (see batch.go), so its events can be handled in
// batches on an offload backend.
package phold

import (
	"fmt"
	"math"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/gpuwarp"
	"github.com/warpedgo/warped/kernel"
)

var (
	_ kernel.Reverser = (*LP)(nil)
	_ kernel.Batcher  = (*LP)(nil)
)

// Config holds PHOLD's parameters.
type Config struct {
	// LPs is the number of logical processes.
	LPs int `json:"lps"`
	// Remote is the probability that an event goes to a random LP instead of the sender.
	Remote float64 `json:"remote"`
	// Mean is the mean delay between an event and the one it causes.
	Mean float64 `json:"mean"`
	// Lookahead is the minimum delay.
	Lookahead float64 `json:"lookahead"`
	// StartEvents is the number of initial events per LP.
	StartEvents int `json:"start-events"`
	// Grain is the number of generator steps of busy work per event.
	Grain int `json:"grain"`
}

// DefaultConfig returns ROSS's benchmark configuration: 16384 LPs, remote 0.25, mean 1.0,
// lookahead 0.1, one start event, no extra work.
func DefaultConfig() Config {
	return Config{LPs: 16384, Remote: 0.25, Mean: 1, Lookahead: 0.1, StartEvents: 1}
}

// Validate reports the first bad parameter.
func (c Config) Validate() error {
	switch {
	case c.LPs < 1:
		return fmt.Errorf("phold: --lps must be at least 1, got %d", c.LPs)
	case c.LPs > math.MaxUint32:
		return fmt.Errorf("phold: --lps must be at most %d, got %d", uint32(math.MaxUint32), c.LPs)
	case !(c.Remote >= 0 && c.Remote <= 1):
		return fmt.Errorf("phold: --remote is a probability in [0, 1], got %v", c.Remote)
	case !(c.Lookahead >= 0) || math.IsInf(c.Lookahead, 0):
		return fmt.Errorf("phold: --lookahead must be a finite number >= 0, got %v", c.Lookahead)
	case !(c.Mean > 0) || math.IsInf(c.Mean, 0):
		return fmt.Errorf("phold: --mean must be a finite number > 0, got %v", c.Mean)
	case c.Mean < c.Lookahead:
		return fmt.Errorf("phold: --mean (%v) must be at least --lookahead (%v): the delay is "+
			"lookahead + exponential(mean - lookahead)", c.Mean, c.Lookahead)
	case c.StartEvents < 1:
		return fmt.Errorf("phold: --start-events must be at least 1, got %d", c.StartEvents)
	case c.Grain < 0 || c.Grain > MaxGrain:
		return fmt.Errorf("phold: --grain must be in [0, %d], got %d", MaxGrain, c.Grain)
	}
	return nil
}

// MaxGrain is the most busy work an event may do, in generator steps (a fraction of a
// second): an event of 2^63 steps never ends, and a signal waits for the event in hand.
const MaxGrain = 1 << 28

// State is one PHOLD LP's state.
type State struct {
	// Events counts the events the LP handled.
	Events uint64
	// Remote counts the events it sent to a randomly chosen LP.
	Remote uint64
	// Work accumulates the busy work so that it cannot be optimised away.
	Work uint32
}

// LP is one PHOLD logical process.
type LP struct {
	kernel.Plain[State]
	cfg *model
	id  kernel.LPID
}

// model is what the LPs of one PHOLD model share: the configuration, the batch kernel
// and the device model (built once, see BatchKernel and DeviceModel).
type model struct {
	Config
	batch  *gpuoffload.Kernel
	device *gpuwarp.Model
}

// New returns the LPs of a PHOLD model.
func New(c Config) ([]kernel.LogicalProcess, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &model{Config: c, batch: BatchKernel(c), device: DeviceModel(c)}
	lps := make([]kernel.LogicalProcess, c.LPs)
	recs := make([]LP, c.LPs)
	for i := range recs {
		recs[i] = LP{cfg: m, id: kernel.LPID(i)}
		lps[i] = &recs[i]
	}
	return lps, nil
}

// Name returns "LP_<id>".
func (lp *LP) Name() string { return fmt.Sprintf("LP_%d", lp.id) }

// Init sends the LP's start events to itself.
func (lp *LP) Init(ctx *kernel.Context) {
	for range lp.cfg.StartEvents {
		ctx.SendWords(ctx.Self(), lp.delay(ctx.RNG()), kernel.Words{})
	}
}

// delay draws the delay to the next event.
func (lp *LP) delay(g *kernel.RNG) kernel.Time {
	return lp.cfg.Lookahead + g.Exponential(lp.cfg.Mean-lp.cfg.Lookahead)
}

// Lookahead returns the configured Lookahead: every delay is at least that
// (kernel.Lookahead), which lets time warp commit events as it processes them.
func (lp *LP) Lookahead() kernel.Time { return lp.cfg.Lookahead }

// Handle does the busy work, then sends one event, remote with probability Remote.
func (lp *LP) Handle(ctx *kernel.Context, _ *kernel.Event) {
	s := &lp.S
	g := ctx.RNG()
	s.Events++
	if n := lp.cfg.Grain; n > 0 {
		s.Work ^= Work(*g, n)
	}
	dest := ctx.Self()
	if g.Uniform() <= lp.cfg.Remote {
		dest = kernel.LPID(g.Range(0, uint64(ctx.NumLPs()-1)))
		s.Remote++
	}
	ctx.SendWords(dest, ctx.Now()+lp.delay(g), kernel.Words{})
}

// Reverse undoes Handle for reverse computation. PHOLD's state is its counters and the work
// fold; it records nothing extra: ctx.RNG() is the generator as Handle found it (the kernel
// rewinds it before Reverse and resets it after), so Reverse replays Handle's draws on it
// to find out whether the event was remote, and XORs the same work again (XOR is its own
// inverse).
func (lp *LP) Reverse(ctx *kernel.Context, _ *kernel.Event) {
	s := &lp.S
	g := ctx.RNG()
	s.Events--
	if n := lp.cfg.Grain; n > 0 {
		s.Work ^= Work(*g, n)
	}
	if g.Uniform() <= lp.cfg.Remote {
		s.Remote--
	}
}

// Work is PHOLD's busy work: n steps of a copy of g, XOR-folded. It leaves the LP's own
// generator alone, so the event pattern does not depend on the grain.
func Work(g kernel.RNG, n int) uint32 {
	var acc uint32
	for range n {
		acc ^= g.Next()
	}
	return acc
}

// Results are PHOLD's totals over all LPs.
type Results struct {
	// Events is the number of events handled (committed).
	Events uint64 `json:"events"`
	// Remote is the number of events sent to a randomly chosen LP.
	Remote uint64 `json:"remote_events"`
}

// Summarize adds up the LPs' states after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	for _, l := range lps {
		s := &l.(*LP).S
		r.Events += s.Events
		r.Remote += s.Remote
	}
	return r
}
