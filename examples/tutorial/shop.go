package main

import (
	"fmt"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/partition"
)

// Step 1: the state. A shop's state is a plain struct (no pointers, slices or maps), so
// that embedding kernel.Plain[ShopState] gives the LP state saving and the digest.
type ShopState struct {
	Visits  uint64 // customers who came in
	Sales   uint64 // customers who bought
	Revenue uint64 // what they paid
}

// Step 2: the events. A customer walks from shop to shop; the event that brings them
// carries a Go value, registered by name (step 3) so that it can cross processes.
type Customer struct {
	ID     uint64
	Budget uint64
}

// Config holds the model's parameters.
type Config struct {
	X, Y      int     // the shops stand on an X by Y grid (a torus)
	Customers int     // customers starting at each shop
	BuyProb   float64 // probability that a customer buys
	Walk      float64 // least time to walk to the next shop: the lookahead
	MeanWalk  float64 // mean walking time
}

// Shop is one LP.
type Shop struct {
	kernel.Plain[ShopState]
	cfg *Config
	id  kernel.LPID
}

// NewShops returns the model's LPs, row by row.
func NewShops(c Config) ([]kernel.LogicalProcess, error) {
	if c.X < 1 || c.Y < 1 || c.Customers < 1 || !(c.BuyProb >= 0 && c.BuyProb <= 1) ||
		!(c.Walk > 0) || !(c.MeanWalk >= c.Walk) {
		return nil, fmt.Errorf("tutorial: bad configuration %+v", c)
	}
	lps := make([]kernel.LogicalProcess, c.X*c.Y)
	for i := range lps {
		lps[i] = &Shop{cfg: &c, id: kernel.LPID(i)}
	}
	return lps, nil
}

// Step 4: Name, Init and Handle. Name identifies the shop to people; names must be unique.
func (s *Shop) Name() string { return fmt.Sprintf("shop%d", s.id) }

// Init sends the first events: each starting customer walks in after one walk.
func (s *Shop) Init(ctx *kernel.Context) {
	for i := range s.cfg.Customers {
		c := Customer{ID: uint64(s.id)*1000 + uint64(i), Budget: 1 + ctx.RNG().Range(0, 99)}
		ctx.Send(s.id, s.walk(ctx.RNG()), c)
	}
}

// walk draws a walking time: at least Walk, exponential above it (one draw).
func (s *Shop) walk(g *kernel.RNG) kernel.Time {
	return s.cfg.Walk + g.Exponential(s.cfg.MeanWalk-s.cfg.Walk)
}

// Handle processes one customer: the visit is counted, the customer buys with
// probability BuyProb, and walks on to a random neighbouring shop.
func (s *Shop) Handle(ctx *kernel.Context, ev *kernel.Event) {
	c := ev.Payload.(Customer)
	g := ctx.RNG()
	s.S.Visits++
	if g.Uniform() <= s.cfg.BuyProb {
		s.S.Sales++
		s.S.Revenue += c.Budget
	}
	next := s.neighbour(g.Range(0, 3))
	ctx.Send(next, ctx.Now()+s.walk(g), c)
}

// neighbour returns the shop left, right, below or above this one (d = 0..3).
func (s *Shop) neighbour(d uint64) kernel.LPID {
	x, y := int(s.id)%s.cfg.X, int(s.id)/s.cfg.X
	switch d {
	case 0:
		x = (x + s.cfg.X - 1) % s.cfg.X
	case 1:
		x = (x + 1) % s.cfg.X
	case 2:
		y = (y + s.cfg.Y - 1) % s.cfg.Y
	default:
		y = (y + 1) % s.cfg.Y
	}
	return kernel.LPID(x + y*s.cfg.X)
}

// Step 5: Reverse undoes what Handle did to the state. ctx.RNG() is the generator as Handle
// found it, so replaying Handle's first draw tells whether the customer bought. The kernel
// rewinds the generator and the send count itself; Reverse must not send.
func (s *Shop) Reverse(ctx *kernel.Context, ev *kernel.Event) {
	c := ev.Payload.(Customer)
	s.S.Visits--
	if ctx.RNG().Uniform() <= s.cfg.BuyProb {
		s.S.Sales--
		s.S.Revenue -= c.Budget
	}
}

// Step 6: the lookahead. Every event a shop sends to another shop is at least Walk later.
func (s *Shop) Lookahead() kernel.Time { return s.cfg.Walk }

// Step 7: a partitioner. Customers walk to neighbours, so bands of whole rows keep most
// walks inside one part (one worker's queue, or one process under mpirun).
type Rows struct{ X, Y int }

// Partition returns the part of each of n LPs: the rows are cut into parts bands (with
// more parts than rows, or LPs that are not the grid, contiguous blocks).
func (r Rows) Partition(n, parts int) []int {
	if parts > r.Y || n != r.X*r.Y {
		return partition.Blocks{}.Partition(n, parts)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = (i / r.X) * parts / r.Y
	}
	return out
}

// Step 8: results, summed over the shops after the run.
type Results struct {
	Visits, Sales, Revenue uint64
}

// Summarize adds up the shops' states.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	for _, lp := range lps {
		s := lp.(*Shop).S
		r.Visits += s.Visits
		r.Sales += s.Sales
		r.Revenue += s.Revenue
	}
	return r
}

// Payloads registers the model's payload types (step 3).
func Payloads() *kernel.Registry {
	reg := kernel.NewRegistry()
	if err := reg.Register("tutorial.Customer", Customer{}); err != nil {
		panic(err) // a programming error: the name and type are fixed
	}
	return reg
}
