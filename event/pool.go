package event

import "sync"

// slabSize is how many Event records the pool allocates at once.
const slabSize = 512

// Pool recycles Event records so that the hot path allocates nothing in steady state.
// A Pool is not safe for concurrent use: each dispatcher or worker owns one. Pools that
// share a Depot pass records to each other through it (see Depot).
type Pool struct {
	free []*Event
	// allocated counts the records this pool created.
	allocated int
	// Depot, when set, balances free records with other pools.
	Depot *Depot
}

// depotBatch is the number of records a pool hands to or takes from a depot at once.
const depotBatch = 256

// Depot balances event records among the pools of several workers. Records are often
// freed by another worker than the one that allocated them (the receiver's, not the
// sender's), so without balancing one pool's free list would grow while another kept
// allocating. A pool holding more than two batches of free records hands one batch to
// the depot; a pool that runs dry takes a batch before allocating. Safe for concurrent use.
type Depot struct {
	mu      sync.Mutex
	batches [][]*Event
	// empty are batch slices emptied by take's callers, for give's callers to fill
	// (spare, back): records pass between workers without a slice allocated a batch.
	empty [][]*Event
}

// spare returns an empty batch slice of capacity depotBatch.
func (d *Depot) spare() []*Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.empty)
	if n == 0 {
		return make([]*Event, 0, depotBatch)
	}
	b := d.empty[n-1]
	d.empty[n-1] = nil
	d.empty = d.empty[:n-1]
	return b
}

// back returns a batch slice whose records the caller took, cleared, for spare.
func (d *Depot) back(b []*Event) {
	clear(b)
	d.mu.Lock()
	d.empty = append(d.empty, b[:0])
	d.mu.Unlock()
}

func (d *Depot) give(b []*Event) {
	d.mu.Lock()
	d.batches = append(d.batches, b)
	d.mu.Unlock()
}

func (d *Depot) take() []*Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.batches)
	if n == 0 {
		return nil
	}
	b := d.batches[n-1]
	d.batches[n-1] = nil
	d.batches = d.batches[:n-1]
	return b
}

// Get returns an Event record whose contents are unspecified (a recycled record keeps what
// it held): the caller overwrites the whole record.
func (p *Pool) Get() *Event {
	n := len(p.free)
	if n == 0 && p.Depot != nil {
		if b := p.Depot.take(); b != nil {
			p.free = append(p.free, b...)
			n = len(p.free)
			p.Depot.back(b)
		}
	}
	if n == 0 {
		slab := make([]Event, slabSize)
		for i := range slab {
			p.free = append(p.free, &slab[i])
		}
		p.allocated += slabSize
		n = len(p.free)
	}
	e := p.free[n-1]
	p.free = p.free[:n-1]
	return e
}

// Put returns e to the pool. The caller must hold no other reference to it. Put does not
// clear the record: it is usually cold in the cache by the time it is freed (a processed
// event dropped by fossil collection), and clearing it cost a cache miss per event. A free
// record's payload stays reachable until the record is reused, so what a pool retains is
// bounded by its peak number of records.
func (p *Pool) Put(e *Event) {
	p.free = append(p.free, e)
	if n := len(p.free); p.Depot != nil && n >= 2*depotBatch {
		b := p.Depot.spare()[:depotBatch]
		copy(b, p.free[n-depotBatch:])
		clear(p.free[n-depotBatch:])
		p.free = p.free[:n-depotBatch]
		p.Depot.give(b)
	}
}

// Allocated returns the number of records this pool created.
func (p *Pool) Allocated() int { return p.allocated }

// Free returns the number of records waiting in this pool.
func (p *Pool) Free() int { return len(p.free) }

// Len returns the number of records waiting in the depot.
func (d *Depot) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, b := range d.batches {
		n += len(b)
	}
	return n
}
