// Package eventset keeps the events of each logical process: the pending (unprocessed)
// events of one LP in the total order of package event, and, for the time-warp
// dispatcher, the processed events that a rollback may return to the pending set.
//
// The dispatchers keep each LP's earliest pending event in a schedule queue (package
// ltsf) and the rest here, so a schedule queue holds one event per LP and stays small
// however many events each LP has pending.
package eventset

import "github.com/warpedgo/warped/event"

// Pending is one LP's pending events: a binary min-heap in the total order. Each entry
// keeps the event's key inline, so ordering never touches the event records. Not safe for
// concurrent use.
type Pending struct {
	a []entry
}

type entry struct {
	k  event.Key
	ev *event.Event
}

func less(x, y *entry) bool { return event.KeyLess(&x.k, &y.k) }

// Carve gives each of ps an initial capacity of per events, all from one allocation, so
// that a model with many LPs does not allocate per LP as their queues first grow.
func Carve(ps []Pending, per int) {
	slab := make([]entry, len(ps)*per)
	for i := range ps {
		ps[i].a = slab[i*per : i*per : (i+1)*per]
	}
}

// Len returns the number of pending events.
func (p *Pending) Len() int { return len(p.a) }

// MinKey returns the key of the least pending event; ok is false when there is none.
func (p *Pending) MinKey() (k event.Key, ok bool) {
	if len(p.a) == 0 {
		return k, false
	}
	return p.a[0].k, true
}

// Min returns the least pending event, or nil.
func (p *Pending) Min() *event.Event {
	if len(p.a) == 0 {
		return nil
	}
	return p.a[0].ev
}

// Push adds e.
func (p *Pending) Push(e *event.Event) { p.PushKey(event.KeyOf(e), e) }

// PushKey adds e, whose key k the caller already has.
func (p *Pending) PushKey(k event.Key, e *event.Event) {
	p.a = append(p.a, entry{k, e})
	p.up(len(p.a) - 1)
}

// PopMin removes and returns the least pending event, or nil.
func (p *Pending) PopMin() *event.Event {
	if len(p.a) == 0 {
		return nil
	}
	return p.removeAt(0)
}

// Take removes and returns the pending event with key k, or nil when there is none. It
// searches the LP's entries, so it is for the rare case of a cancellation.
func (p *Pending) Take(k event.Key) *event.Event {
	for i := range p.a {
		if p.a[i].k == k {
			return p.removeAt(i)
		}
	}
	return nil
}

func (p *Pending) removeAt(i int) *event.Event {
	a := p.a
	e := a[i].ev
	last := len(a) - 1
	if i != last {
		a[i] = a[last]
	}
	a[last] = entry{}
	p.a = a[:last]
	if i < last {
		if !p.down(i) {
			p.up(i)
		}
	}
	return e
}

func (p *Pending) up(i int) {
	a := p.a
	x := a[i]
	for i > 0 {
		q := (i - 1) / 2
		if !less(&x, &a[q]) {
			break
		}
		a[i] = a[q]
		i = q
	}
	a[i] = x
}

func (p *Pending) down(i0 int) bool {
	a := p.a
	n := len(a)
	x := a[i0]
	i := i0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && less(&a[r], &a[c]) {
			c = r
		}
		if !less(&a[c], &x) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = x
	return i > i0
}
