package epidemic

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/warpedgo/warped/kernel"
)

// Location is one location LP.
type Location struct {
	m      *model
	index  uint32
	people []Person
	stats  Stats
}

// Name returns "Location_<index>".
func (l *Location) Name() string { return fmt.Sprintf("Location_%d", l.index) }

// Lookahead returns 1: people travel at least a time unit, and reports go one unit later.
func (l *Location) Lookahead() kernel.Time { return 1 }

// Snapshot implements kernel.LogicalProcess: it copies the people into dst's slice.
func (l *Location) Snapshot(dst any) any {
	d, _ := dst.(*snapshot)
	if d == nil {
		d = &snapshot{}
	}
	d.People = append(d.People[:0], l.people...)
	d.Stats = l.stats
	d.Counts, d.Reports = d.Counts[:0], d.Reports[:0]
	return d
}

// Restore implements kernel.LogicalProcess.
func (l *Location) Restore(src any) {
	s := src.(*snapshot)
	l.people = append(l.people[:0], s.People...)
	l.stats = s.Stats
}

// AppendState implements kernel.StateAppender: the stats, then every person.
func (l *Location) AppendState(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, l.stats.Infections)
	b = binary.LittleEndian.AppendUint64(b, l.stats.Arrivals)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(l.people)))
	for _, p := range l.people {
		v := uint8(0)
		if p.Vaccinated {
			v = 1
		}
		b = binary.LittleEndian.AppendUint32(b, p.ID)
		b = binary.LittleEndian.AppendUint32(b, p.Since)
		b = binary.LittleEndian.AppendUint32(b, p.Arrival)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Susceptibility))
		b = append(b, uint8(p.State), v)
	}
	return b
}

// Init takes the location's people (the WARPED2 variant: its site's; the stochastic one:
// Population people drawn here, latent with probability InitialInfected and vaccinated
// with probability Vaccinated) and schedules its first update, departure and sample.
func (l *Location) Init(ctx *kernel.Context) {
	c, site := &l.m.Config, &l.m.sites[l.index]
	if c.Variant == WARPED2 {
		l.people = append(make([]Person, 0, len(site.People)+len(site.People)/4+1), site.People...)
	} else {
		g := ctx.RNG()
		l.people = make([]Person, c.Population, c.Population+c.Population/4)
		for i := range l.people {
			p := Person{ID: l.index*uint32(c.Population) + uint32(i), Susceptibility: 1}
			if g.Uniform() <= c.InitialInfected && c.InitialInfected > 0 {
				p.State = Latent
			}
			p.Vaccinated = g.Uniform() <= c.Vaccinated && c.Vaccinated > 0
			l.people[i] = p
		}
	}
	self := ctx.Self()
	ctx.SendWords(self, kernel.Time(c.RefreshInterval), kernel.Words{uint64(DiseaseUpdateTrigger)})
	ctx.SendWords(self, kernel.Time(site.DiffusionInterval), kernel.Words{uint64(DiffusionTrigger)})
	ctx.SendWords(self, kernel.Time(c.SampleInterval), kernel.Words{uint64(Sample)})
}

// Handle processes one event.
func (l *Location) Handle(ctx *kernel.Context, ev *kernel.Event) {
	c, g, now, self := &l.m.Config, ctx.RNG(), ctx.Now(), ctx.Self()
	switch Kind(ev.Words[0] & 0xff) {
	case DiseaseUpdateTrigger:
		if c.Variant == WARPED2 {
			l.reactWARPED2(g, uint32(now))
		} else {
			l.updateStochastic(g, uint32(now))
		}
		ctx.SendWords(self, now+kernel.Time(c.RefreshInterval), ev.Words)
	case DiffusionTrigger:
		l.depart(ctx, g, now)
		ctx.SendWords(self, now+kernel.Time(l.m.sites[l.index].DiffusionInterval), ev.Words)
	case Diffusion:
		w := ev.Words
		p := Person{ID: uint32(w[1]), Since: uint32(w[2]), Arrival: uint32(now),
			Susceptibility: math.Float64frombits(w[3]), State: Disease(w[0] >> 8 & 0xff), Vaccinated: w[0]>>16&1 == 1}
		if c.Variant == WARPED2 { // kept in id order, as WARPED2's map
			i, _ := slices.BinarySearchFunc(l.people, p.ID, func(q Person, id uint32) int { return int(int64(q.ID) - int64(id)) })
			l.people = slices.Insert(l.people, i, p)
		} else {
			l.people = append(l.people, p)
		}
		l.stats.Arrivals++
	case Sample:
		j := uint64(now) / uint64(c.SampleInterval)
		if j >= MaxSamples {
			return
		}
		var n [NumDiseaseStates]uint64
		for _, p := range l.people {
			n[p.State]++
		}
		for s, k := range n {
			ctx.Record(Disease(s).String(), float64(k)) // kept when kernel.Config.RecordSeries is set
		}
		ctx.SendWords(l.m.observer, now+1, kernel.Words{uint64(Report) | j<<8, n[0] | n[1]<<32,
			n[2] | n[3]<<32, n[4] | n[5]<<32})
		ctx.SendWords(self, now+kernel.Time(c.SampleInterval), ev.Words)
	default:
		panic(fmt.Sprintf("epidemic: unknown event kind %d", ev.Words[0]&0xff))
	}
}

// depart sends a random person to a random neighbour. The WARPED2 variant follows
// epidemic.cpp:39-56: the neighbour is drawn first (none: nobody leaves), then, if anyone
// is here, the person (the n-th in id order), who arrives after the two locations' travel
// times to the hub (DiffusionNetwork.hpp:34). The stochastic variant draws only when
// someone is here, takes TravelTime, and keeps no order.
func (l *Location) depart(ctx *kernel.Context, g *kernel.RNG, now kernel.Time) {
	nb := l.m.adj[l.m.off[l.index]:l.m.off[l.index+1]]
	n := len(l.people)
	var to uint32
	var travel kernel.Time
	if l.m.Variant == WARPED2 {
		if len(nb) == 0 {
			return
		}
		to = nb[g.Range(0, uint64(len(nb)-1))]
		if n == 0 {
			return
		}
		travel = kernel.Time(l.m.sites[to].TravelTimeToHub + l.m.sites[l.index].TravelTimeToHub)
	} else {
		if n == 0 || len(nb) == 0 {
			return
		}
		to = nb[g.Range(0, uint64(len(nb)-1))]
		travel = kernel.Time(l.m.TravelTime)
	}
	i := int(g.Range(0, uint64(n-1)))
	p := l.people[i]
	if l.m.Variant == WARPED2 {
		l.people = slices.Delete(l.people, i, i+1)
	} else {
		l.people[i] = l.people[n-1]
		l.people = l.people[:n-1]
	}
	v := uint64(0)
	if p.Vaccinated {
		v = 1
	}
	ctx.SendWords(kernel.LPID(to), now+travel, kernel.Words{uint64(Diffusion) | uint64(p.State)<<8 | v<<16,
		uint64(p.ID), uint64(p.Since), math.Float64bits(p.Susceptibility)})
}
