package gpuoffload

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/warpedgo/warped/rng"
)

// cpuBackend runs the Go twins and package rng on goroutines.
type cpuBackend struct {
	workers int
	// limit is how many batches may be in flight (MaxInFlight for each lane).
	limit    int32
	inFlight atomic.Int32
	closed   atomic.Bool
}

// NewCPU returns the CPU backend: it runs each kernel's Go twin, and rng's Advance and
// Rewind, with the elements split among workers goroutines (workers <= 0: GOMAXPROCS). It
// cannot fail and needs nothing but the CPU.
func NewCPU(workers int) Backend { return newCPU(workers, 1) }

// newCPU is NewCPU accepting MaxInFlight batches in flight for each of lanes goroutines.
func newCPU(workers, lanes int) *cpuBackend {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &cpuBackend{workers: workers, limit: int32(MaxInFlight * max(lanes, 1))}
}

// Name returns "cpu".
func (c *cpuBackend) Name() string { return "cpu" }

// minChunk is the fewest elements worth a goroutine of their own.
const minChunk = 256

// parallel calls f over [0, n) split into contiguous chunks, one goroutine per chunk, and
// returns the first error f returned or the panic it raised.
func (c *cpuBackend) parallel(n int, f func(lo, hi int) error) error {
	w := min(c.workers, (n+minChunk-1)/minChunk)
	if w <= 1 {
		return protect(0, n, f)
	}
	chunk := (n + w - 1) / w
	errs := make([]error, w)
	var wg sync.WaitGroup
	for j := range w {
		lo, hi := j*chunk, min((j+1)*chunk, n)
		wg.Go(func() { errs[j] = protect(lo, hi, f) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// protect calls f(lo, hi) and turns a panic into an error.
func protect(lo, hi int, f func(lo, hi int) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gpuoffload: panic in elements [%d, %d): %v", lo, hi, r)
		}
	}()
	return f(lo, hi)
}

// Advance implements Backend.
func (c *cpuBackend) Advance(states []rng.XORWOW, counts []uint32) error {
	return c.step(states, counts, (*rng.XORWOW).Advance)
}

// Reverse implements Backend.
func (c *cpuBackend) Reverse(states []rng.XORWOW, counts []uint32) error {
	return c.step(states, counts, (*rng.XORWOW).Rewind)
}

// step applies move(states[i], counts[i]) to every generator, in parallel.
func (c *cpuBackend) step(states []rng.XORWOW, counts []uint32, move func(*rng.XORWOW, uint64)) error {
	if err := c.ready(); err != nil {
		return err
	}
	if err := checkStates(states, counts); err != nil {
		return err
	}
	return c.parallel(len(states), func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			move(&states[i], uint64(counts[i]))
		}
		return nil
	})
}

// Prepare implements Backend: it only validates k.
func (c *cpuBackend) Prepare(k *Kernel) error {
	if err := c.ready(); err != nil {
		return err
	}
	return k.Validate()
}

// Run implements Backend.
func (c *cpuBackend) Run(k *Kernel, b *Batch) error {
	if err := c.ready(); err != nil {
		return err
	}
	return c.run(k, b)
}

// run checks k and b and runs the Go twin over b.
func (c *cpuBackend) run(k *Kernel, b *Batch) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := b.check(k); err != nil {
		return err
	}
	err := c.parallel(b.N, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			k.Go(b, i)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gpuoffload: kernel %s (Go twin): %w", k.Name, err)
	}
	return nil
}

// Submit implements Backend: the batch runs on its own goroutine.
func (c *cpuBackend) Submit(k *Kernel, b *Batch) (Pending, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	if c.inFlight.Add(1) > c.limit {
		c.inFlight.Add(-1)
		return nil, ErrBusy
	}
	p := &cpuPending{done: make(chan struct{}), c: c}
	go func() {
		p.err = c.run(k, b)
		close(p.done)
	}()
	return p, nil
}

// cpuPending is a batch running on the CPU backend.
type cpuPending struct {
	done chan struct{}
	err  error
	c    *cpuBackend
	once sync.Once
}

// Wait implements Pending.
func (p *cpuPending) Wait() error {
	<-p.done
	p.once.Do(func() { p.c.inFlight.Add(-1) })
	return p.err
}

// Close implements Backend.
func (c *cpuBackend) Close() error {
	if c.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

// ready returns ErrClosed after Close.
func (c *cpuBackend) ready() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}
