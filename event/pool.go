package event

// slabSize is how many Event records the pool allocates at once.
const slabSize = 512

// Pool recycles Event records so that the hot path allocates nothing in steady state.
// A Pool is not safe for concurrent use: each dispatcher or worker owns one.
type Pool struct {
	free []*Event
	// live counts records handed out and not yet returned.
	live int
	// peak is the largest live seen.
	peak int
}

// Get returns a zeroed Event record.
func (p *Pool) Get() *Event {
	n := len(p.free)
	if n == 0 {
		slab := make([]Event, slabSize)
		for i := range slab {
			p.free = append(p.free, &slab[i])
		}
		n = len(p.free)
	}
	e := p.free[n-1]
	p.free = p.free[:n-1]
	p.live++
	if p.live > p.peak {
		p.peak = p.live
	}
	return e
}

// Put returns e to the pool. The caller must hold no other reference to it.
func (p *Pool) Put(e *Event) {
	*e = Event{}
	p.free = append(p.free, e)
	p.live--
}

// Live returns how many records are handed out and not yet returned.
func (p *Pool) Live() int { return p.live }

// Peak returns the largest number of records that were live at once.
func (p *Pool) Peak() int { return p.peak }
