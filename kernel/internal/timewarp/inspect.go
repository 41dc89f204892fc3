package timewarp

import (
	"context"
	"fmt"
	"time"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/kernel/internal/core"
	"github.com/warpedgo/warped/rng"
)

// Hooks for the tests of package kernel, which run the engine through the public API and
// check its internals at the end (kernel/dispatch's export_test.go wraps them). They are not used
// otherwise.

// Internals is what the tests see of a finished time-warp run besides its totals.
type Internals struct {
	// Suppressed counts the sends that lazy cancellation suppressed.
	Suppressed uint64
	// LazyLPs counts the LPs that have a lazy-cancellation holder.
	LazyLPs int
	// Held counts the outputs still held at the end (must be 0).
	Held int
	// Unsettled counts the LPs that are still owned, marked as holding outputs, or queued
	// while nothing is pending or the reverse, at the end (must be 0).
	Unsettled int
	// LeakedEvents is the number of event records handed out by the workers' pools minus
	// those the LPs still reference (pending or processed); 0 unless a record leaked.
	LeakedEvents int
	// Compactions counts the engine's history log compactions.
	Compactions int
	// CompactPeak is the longest history log compacted.
	CompactPeak int
	// CommittedAtGVT counts the events fossil collection committed at the time of its
	// commit horizon: those below the horizon's key but not before GVT's time.
	CommittedAtGVT int
	// Parks counts the times a worker parked (park.go).
	Parks int
	// HostChanges counts the changes of the number of hosts that run workers (adapt.go).
	HostChanges int
	Debug       []string
}

// Tuning sets the engine's internal bounds for a test run (0: the default).
type Tuning struct {
	// LogMax bounds a worker's history log (logMaxDefault).
	LogMax int
	// ParkAfter is how long an idle worker spins before it parks (parkAfter).
	ParkAfter time.Duration
	// HostLoad, when set, stands for the share of their time that the active hosts'
	// threads waited for a processor in the last window (adapt.go).
	HostLoad func() float64
	// HostIdle, when set, stands for the mean number of idle CPUs over the last window
	// (adapt.go); unset, with HostLoad set, it is not known.
	HostIdle func() float64
	// LoadWindow is the span of the load measure (loadWindow); set, the load is also
	// looked at after every turn of host 0 (not every loadCheck turns).
	LoadWindow time.Duration
}

// RunInternals is Run with the engine's bounds set by tu, which also reports the
// dispatcher's internals.
func RunInternals(ctx context.Context, s *core.Sim, tu Tuning) (core.Stats, Internals, error) {
	d, err := newTimeWarp(s)
	if err != nil {
		return core.Stats{}, Internals{}, err
	}
	if tu.LogMax > 0 {
		d.logMax = tu.LogMax
	}
	if tu.ParkAfter > 0 {
		d.parkAfter = tu.ParkAfter
	}
	d.hostLoad, d.hostIdle = tu.HostLoad, tu.HostIdle
	if tu.LoadWindow > 0 {
		// A window that short is one look at the load every host turn.
		d.loadWindow, d.loadCheck = tu.LoadWindow, 1
	}
	st, err := d.run(ctx)
	if err != nil {
		return core.Stats{}, Internals{}, err
	}
	in := Internals{Suppressed: d.suppressed}
	if d.hs != nil {
		in.HostChanges = d.hs.adapt.changes
	}
	for _, w := range d.workers {
		in.Parks += w.pk.parks
	}
	// Records in use: those created, less those waiting in the pools and the depot.
	live := 0
	for _, w := range d.workers {
		live += w.pool.Allocated() - w.pool.Free()
	}
	live -= d.workers[0].pool.Depot.Len()
	for g, q := range d.queues {
		{
			// The engine keeps events by value; at the end nothing below the
			// end time may wait between workers or for handling. (Events at or after it
			// may: a worker that saw the run end does not take in what another handed
			// over after its last look, and the sequential run leaves them pending too.)
			waiting := [][]event.Event{q.antis, q.in}
			waiting = append(waiting, q.outbox...)
			for _, evs := range waiting {
				for i := range evs {
					if evs[i].RecvTime < d.end {
						in.Unsettled++
						in.Debug = append(in.Debug, fmt.Sprintf("waiting %+v", evs[i]))
					}
				}
			}
			// A cancelled event below the end time would have been taken and dropped.
			for _, id := range d.local {
				if int(d.owner[id]) != g {
					continue
				}
				for i := d.lps[id].firstCancel(); i != 0; i = q.cancels[i-1].next {
					if q.cancels[i-1].k.RecvTime < d.end {
						in.Unsettled++
						in.Debug = append(in.Debug, fmt.Sprintf("cancel %+v", q.cancels[i-1]))
					}
				}
			}
			in.Compactions += q.compactions
			in.CompactPeak = max(in.CompactPeak, q.compactPeak)
			in.CommittedAtGVT += q.atGVT
		}
	}
	for _, l := range d.lazies {
		if l != nil {
			in.LazyLPs++
			in.Held += l.Len()
		}
	}
	in.LeakedEvents = live
	return st, in, nil
}

// discardSink counts the sends it is given and drops them.
type discardSink struct{ n int }

// Send counts a send.
func (d *discardSink) Send(LPID, LPID, uint32, uint64, Time, Time, Words, any) { d.n++ }

// HandleThenReverse handles ev on lp, as LP self of a simulation of n LPs whose generator
// is g and whose send sequence number is seq, then undoes it exactly as the time-warp
// dispatcher's reverse computation does (lp must implement Reverser). It returns the
// generator and sequence number after Handle and after the rollback, and the number of
// events Handle sent.
func HandleThenReverse(lp core.LogicalProcess, self LPID, n int, g rng.XORWOW, seq uint64, ev *event.Event) (handled, back rng.XORWOW, seqHandled, seqBack uint64, sends int) {
	sim := &core.Sim{LPs: make([]core.LPRecord, n)}
	sim.Names = sim // a send's error names the LPs
	for i := range sim.LPs {
		sim.LPs[i].Model = lp
	}
	r := &sim.LPs[self]
	r.RNG, r.Seq = g, seq
	out := &discardSink{}
	ctx := sim.NewContext(out)
	var scratch event.Words // the event's, from Handle to Reverse
	core.FrameOf(&ctx).Scratch = &scratch
	core.Enter(&ctx, ev.RecvTime, ev.Depth, self, r)
	lp.Handle(&ctx, ev)
	handled, seqHandled = r.RNG, r.Seq
	reverseEvent(&ctx, lp.(core.Reverser), ev, twUndo{draws: rng.Draws(g, r.RNG), seq: seq})
	return handled, r.RNG, seqHandled, r.Seq, out.n
}
