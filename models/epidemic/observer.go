package epidemic

import (
	"encoding/binary"
	"fmt"

	"github.com/warpedgo/warped/kernel"
)

// Observer is the LP that collects the locations' counts into the time series.
//
// Its state is the Series, 14 KiB, of which a run fills the rows of the samples reached so
// far (50 by the default end time). Rows at and above used are zero, so Snapshot copies
// only the rows below it and Restore clears the rows between the saved and the current
// bound: the observer takes a report from every location at every sample, and under
// periodic state saving a full copy of the arrays every few reports was most of the bytes
// the epidemic's saves copied.
type Observer struct {
	// S is the observer's state.
	S Series
	m *model
	// used bounds the rows of S in use: every row at or above it is zero. Handle raises it;
	// Reverse leaves it (a bound, not the least one).
	used int
}

// Series is the time series: at sample j (time j*SampleInterval), Counts[j] are the people
// in each disease state summed over the Reports[j] locations that reported (people
// travelling at that time are not counted).
type Series struct {
	Counts  [MaxSamples][NumDiseaseStates]uint64
	Reports [MaxSamples]uint32
}

// Name returns "Observer".
func (o *Observer) Name() string { return "Observer" }

// Init does nothing: the locations send.
func (o *Observer) Init(*kernel.Context) {}

// Lookahead returns 1 (the observer sends nothing).
func (o *Observer) Lookahead() kernel.Time { return 1 }

// Handle adds a location's report.
func (o *Observer) Handle(_ *kernel.Context, ev *kernel.Event) {
	w := ev.Words
	j := w[0] >> 8
	c := &o.S.Counts[j]
	for s := range NumDiseaseStates {
		c[s] += w[1+s/2] >> (32 * (s % 2)) & 0xffffffff
	}
	o.S.Reports[j]++
	o.used = max(o.used, int(j)+1)
}

// Snapshot implements kernel.LogicalProcess: it copies the rows of the series in use into
// dst's slices (see Observer).
func (o *Observer) Snapshot(dst any) any {
	d, _ := dst.(*snapshot)
	if d == nil {
		d = &snapshot{}
	}
	d.Counts = append(d.Counts[:0], o.S.Counts[:o.used]...)
	d.Reports = append(d.Reports[:0], o.S.Reports[:o.used]...)
	d.People, d.Stats = d.People[:0], Stats{}
	return d
}

// Restore implements kernel.LogicalProcess.
func (o *Observer) Restore(src any) {
	s := src.(*snapshot)
	n := len(s.Counts)
	copy(o.S.Counts[:n], s.Counts)
	copy(o.S.Reports[:n], s.Reports)
	if o.used > n {
		clear(o.S.Counts[n:o.used])
		clear(o.S.Reports[n:o.used])
	}
	o.used = n
}

// AppendState implements kernel.StateAppender: the series' arrays in encoding/binary's
// little-endian form, as kernel.Plain writes a plain struct.
func (o *Observer) AppendState(b []byte) []byte {
	out, err := binary.Append(b, binary.LittleEndian, &o.S)
	if err != nil {
		panic(fmt.Sprintf("epidemic: encoding the observer's series: %v", err)) // fixed-size arrays: cannot fail
	}
	return out
}

// Reverse undoes Handle (the observer is reversible; the locations are not).
func (o *Observer) Reverse(_ *kernel.Context, ev *kernel.Event) {
	w := ev.Words
	j := w[0] >> 8
	c := &o.S.Counts[j]
	for s := range NumDiseaseStates {
		c[s] -= w[1+s/2] >> (32 * (s % 2)) & 0xffffffff
	}
	o.S.Reports[j]--
}

// Point is one sample of the time series.
type Point struct {
	Time   uint64
	Counts [NumDiseaseStates]uint64
}

// Results are the model's totals.
type Results struct {
	// Final counts the people in each disease state at the end, over all locations
	// (people travelling at the end are not counted).
	Final [NumDiseaseStates]uint64
	// Infections counts the infections during the run.
	Infections uint64
	// Moves counts the people who arrived at another location.
	Moves uint64
	// PeakInfected is the most people infected but not recovered in one sample, and
	// PeakTime that sample's time.
	PeakInfected, PeakTime uint64
	// Series is the time series of the samples every location reported.
	Series []Point
}

// Summarize collects the results after a run.
func Summarize(lps []kernel.LogicalProcess) Results {
	var r Results
	var obs *Observer
	for _, lp := range lps {
		switch l := lp.(type) {
		case *Location:
			for _, p := range l.people {
				r.Final[p.State]++
			}
			r.Infections += l.stats.Infections
			r.Moves += l.stats.Arrivals
		case *Observer:
			obs = l
		}
	}
	if obs == nil {
		return r
	}
	for j := range MaxSamples {
		if j == 0 || obs.S.Reports[j] != uint32(obs.m.Locations) {
			continue
		}
		p := Point{Time: uint64(j) * uint64(obs.m.SampleInterval), Counts: obs.S.Counts[j]}
		r.Series = append(r.Series, p)
		if inf := p.Counts[Latent] + p.Counts[Incubating] + p.Counts[Infectious] + p.Counts[Asymptomatic]; inf > r.PeakInfected {
			r.PeakInfected, r.PeakTime = inf, p.Time
		}
	}
	return r
}

// CSV returns the time series as CSV with a header line.
func (r Results) CSV() []byte {
	b := []byte("time")
	for s := range NumDiseaseStates {
		b = append(b, ',')
		b = append(b, s.String()...)
	}
	b = append(b, '\n')
	for _, p := range r.Series {
		b = fmt.Appendf(b, "%d", p.Time)
		for _, c := range p.Counts {
			b = fmt.Appendf(b, ",%d", c)
		}
		b = append(b, '\n')
	}
	return b
}
