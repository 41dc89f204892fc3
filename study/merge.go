package study

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/rng"
)

// Merger is an offload backend shared by the concurrent runs of a study (external
// parallelism): each run gets its own View, and the batches of the same kernel (same
// name, source, sizes and parameters) that different runs submit while the backend is
// busy are merged into one call of the inner backend, their results copied back. Batch
// elements are independent, so every run's results are those it has alone.
type Merger struct {
	inner gpuoffload.Backend

	mu    sync.Mutex
	queue []*request
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}

	merged gpuoffload.Batch // reused by the dispatcher
	group  []*request

	calls, batches, elements atomic.Uint64
}

// NewMerger returns a merger over inner, which it owns (Close closes it).
func NewMerger(inner gpuoffload.Backend) *Merger {
	m := &Merger{inner: inner, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go m.loop()
	return m
}

// Stats returns the inner backend calls made, the batches submitted to the views, and
// their elements.
func (m *Merger) Stats() (calls, batches, elements uint64) {
	return m.calls.Load(), m.batches.Load(), m.elements.Load()
}

// Close stops the merger and closes the inner backend; the views must be done.
func (m *Merger) Close() error {
	close(m.stop)
	<-m.done
	return m.inner.Close()
}

// request is one submitted batch.
type request struct {
	k    *gpuoffload.Kernel
	key  string
	b    *gpuoffload.Batch
	err  error
	done chan struct{}
	v    *view
}

// Wait implements gpuoffload.Pending.
func (r *request) Wait() error {
	<-r.done
	err := r.err
	r.v.release(r)
	return err
}

// loop runs the queued batches, merging those of one kernel, until Close.
func (m *Merger) loop() {
	defer close(m.done)
	var work []*request
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		}
		for {
			m.mu.Lock()
			work, m.queue = m.queue, work[:0]
			m.mu.Unlock()
			if len(work) == 0 {
				break
			}
			for i, r := range work {
				if r == nil {
					continue
				}
				m.group = append(m.group[:0], r)
				for j := i + 1; j < len(work); j++ {
					if s := work[j]; s != nil && s.key == r.key {
						m.group = append(m.group, s)
						work[j] = nil
					}
				}
				m.run(m.group)
			}
			clear(work)
		}
	}
}

// run runs a group of batches of one kernel as one call and signals each.
func (m *Merger) run(g []*request) {
	m.calls.Add(1)
	if len(g) == 1 {
		r := g[0]
		r.err = m.inner.Run(r.k, r.b)
		r.done <- struct{}{}
		return
	}
	k := g[0].k
	n := 0
	for _, r := range g {
		n += r.b.N
	}
	mb := &m.merged
	mb.Reset(n, k)
	sw, os, w := k.StateWords, k.OutSlots, gpuoffload.EventWords
	off := 0
	for _, r := range g {
		b, bn := r.b, r.b.N
		copy(mb.LP[off:], b.LP)
		copy(mb.Time[off:], b.Time)
		copy(mb.EvWords[w*off:], b.EvWords)
		copy(mb.State[sw*off:], b.State)
		for j := range 6 {
			copy(mb.RNG[j*n+off:], b.RNG[j*bn:(j+1)*bn])
		}
		off += bn
	}
	err := m.inner.Run(k, mb)
	off = 0
	for _, r := range g {
		b, bn := r.b, r.b.N
		if err == nil {
			copy(b.State, mb.State[sw*off:sw*(off+bn)])
			for j := range 6 {
				copy(b.RNG[j*bn:(j+1)*bn], mb.RNG[j*n+off:])
			}
			copy(b.OutCount, mb.OutCount[off:off+bn])
			copy(b.Overflow, mb.Overflow[off:off+bn])
			copy(b.OutTo, mb.OutTo[os*off:os*(off+bn)])
			copy(b.OutTime, mb.OutTime[os*off:os*(off+bn)])
			copy(b.OutWords, mb.OutWords[w*os*off:w*os*(off+bn)])
		}
		r.err = err
		r.done <- struct{}{}
		off += bn
	}
}

// View returns a backend for one run: Run and Submit go through the merger, at most
// gpuoffload.MaxInFlight batches of the run at once; Advance, Reverse and Prepare go to
// the inner backend. Closing the view does not close the merger. Each Pending that
// Submit returns must be waited for exactly once (as the kernel does).
func (m *Merger) View() gpuoffload.Backend {
	return &view{m: m, keys: map[*gpuoffload.Kernel]string{}}
}

// view is one run's side of a Merger.
type view struct {
	m        *Merger
	mu       sync.Mutex
	free     []*request
	keys     map[*gpuoffload.Kernel]string
	inFlight int
	closed   bool
}

func (v *view) Name() string { return v.m.inner.Name() + ", batches merged across runs" }

func (v *view) Advance(states []rng.XORWOW, counts []uint32) error {
	return v.m.inner.Advance(states, counts)
}

func (v *view) Reverse(states []rng.XORWOW, counts []uint32) error {
	return v.m.inner.Reverse(states, counts)
}

func (v *view) Prepare(k *gpuoffload.Kernel) error { return v.m.inner.Prepare(k) }

func (v *view) Run(k *gpuoffload.Kernel, b *gpuoffload.Batch) error {
	r, err := v.enqueue(k, b, false)
	if err != nil {
		return err
	}
	return r.Wait()
}

func (v *view) Submit(k *gpuoffload.Kernel, b *gpuoffload.Batch) (gpuoffload.Pending, error) {
	r, err := v.enqueue(k, b, true)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (v *view) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return gpuoffload.ErrClosed
	}
	v.closed = true
	return nil
}

// enqueue queues b for the merger; limited says whether the in-flight limit applies.
func (v *view) enqueue(k *gpuoffload.Kernel, b *gpuoffload.Batch, limited bool) (*request, error) {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, gpuoffload.ErrClosed
	}
	if limited && v.inFlight >= gpuoffload.MaxInFlight {
		v.mu.Unlock()
		return nil, gpuoffload.ErrBusy
	}
	v.inFlight++
	key, ok := v.keys[k]
	if !ok {
		key = kernelKey(k)
		v.keys[k] = key
	}
	var r *request
	if n := len(v.free); n > 0 {
		r, v.free = v.free[n-1], v.free[:n-1]
	} else {
		r = &request{done: make(chan struct{}, 1), v: v}
	}
	v.mu.Unlock()
	r.k, r.key, r.b, r.err = k, key, b, nil
	m := v.m
	m.batches.Add(1)
	m.elements.Add(uint64(b.N))
	m.mu.Lock()
	m.queue = append(m.queue, r)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return r, nil
}

// release returns a finished request to its view.
func (v *view) release(r *request) {
	v.mu.Lock()
	v.inFlight--
	r.k, r.b = nil, nil
	v.free = append(v.free, r)
	v.mu.Unlock()
}

// kernelKey is what batches must share to be merged: a hash of the kernel's name,
// source, sizes and parameters (the Go twin computes what the source does).
func kernelKey(k *gpuoffload.Kernel) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d %d", k.Name, k.Source, k.StateWords, k.OutSlots)
	for _, p := range k.Params {
		fmt.Fprintf(h, " %x", p)
	}
	return string(h.Sum(nil))
}
