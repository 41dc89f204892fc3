package kernel

import (
	"context"
	"fmt"

	"github.com/warpedgo/warped/event"
	"github.com/warpedgo/warped/rng"
)

// TimeWarpInternals is what the tests see of a finished time-warp run besides its Result.
type TimeWarpInternals struct {
	Result
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
	// Partitioned tells whether the run used the partitioned engine (QueueType calendar).
	Partitioned bool
	// Compactions counts the partitioned engine's history log compactions.
	Compactions int
	// CompactPeak is the longest history log compacted.
	CompactPeak int
	// CommittedAtGVT counts the events fossil collection committed at the time of its
	// commit horizon: those below the horizon's key but not before GVT's time.
	CommittedAtGVT int
	Debug          []string
}

// RunTimeWarpInternals builds a simulation from cfg (Type is set to time warp) and lps,
// runs it like Simulation.Run, and reports the dispatcher's internals.
func RunTimeWarpInternals(ctx context.Context, cfg Config, lps []LogicalProcess) (TimeWarpInternals, error) {
	return RunTimeWarpInternalsLogMax(ctx, cfg, lps, 0)
}

// RunTimeWarpInternalsLogMax is RunTimeWarpInternals with the partitioned engine's history
// log bound set to logMax entries (0: the default, partLogMax).
func RunTimeWarpInternalsLogMax(ctx context.Context, cfg Config, lps []LogicalProcess, logMax int) (TimeWarpInternals, error) {
	cfg.Type = TimeWarp
	s, err := New(cfg, lps)
	if err != nil {
		return TimeWarpInternals{}, err
	}
	s.ran = true
	d, err := newTimeWarp(s)
	if err != nil {
		return TimeWarpInternals{}, err
	}
	if logMax > 0 {
		d.logMax = logMax
	}
	st, err := d.run(ctx)
	if err != nil {
		return TimeWarpInternals{}, err
	}
	in := TimeWarpInternals{Result: Result{Stats: st, Digest: s.digest()}, Suppressed: d.suppressed}
	// Records in use: those created, less those waiting in the pools and the depot.
	live := 0
	for _, w := range d.workers {
		live += w.pool.Allocated() - w.pool.Free()
	}
	live -= d.workers[0].pool.Depot.Len()
	for g, p := range d.parts {
		{
			// The partitioned engine keeps events by value; at the end nothing below the
			// end time may wait between workers or for handling. (Events at or after it
			// may: a worker that saw the run end does not take in what another handed
			// over after its last look, and the sequential run leaves them pending too.)
			waiting := [][]event.Event{p.antis, p.in}
			waiting = append(waiting, p.outbox...)
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
				for i := d.plp[id].cancels; i != 0; i = p.cancels[i-1].next {
					if p.cancels[i-1].k.RecvTime < d.end {
						in.Unsettled++
						in.Debug = append(in.Debug, fmt.Sprintf("cancel %+v", p.cancels[i-1]))
					}
				}
			}
			in.Compactions += p.compactions
			in.CompactPeak = max(in.CompactPeak, p.compactPeak)
			in.CommittedAtGVT += p.atGVT
		}
	}
	for _, l := range d.plazy {
		if l != nil {
			in.LazyLPs++
			in.Held += l.Len()
		}
	}
	in.LeakedEvents = live
	in.Partitioned = d.plp != nil
	return in, nil
}

// discardSink counts the sends it is given and drops them.
type discardSink struct{ n int }

func (d *discardSink) send(LPID, LPID, uint32, uint64, Time, Time, Words, any) { d.n++ }

// HandleThenReverse handles ev on lp, as LP self of a simulation of n LPs whose generator
// is g and whose send sequence number is seq, then undoes it exactly as the time-warp
// dispatcher's reverse computation does (lp must implement Reverser). It returns the
// generator and sequence number after Handle and after the rollback, and the number of
// events Handle sent.
func HandleThenReverse(lp LogicalProcess, self LPID, n int, g RNG, seq uint64, ev *Event) (handled, back RNG, seqHandled, seqBack uint64, sends int) {
	sim := &Simulation{lps: make([]lpRecord, n)}
	for i := range sim.lps {
		sim.lps[i].model = lp
	}
	r := &sim.lps[self]
	r.rng, r.seq = g, seq
	out := &discardSink{}
	ctx := Context{now: ev.RecvTime, depth: ev.Depth, self: self, lp: r, out: out, sim: sim}
	lp.Handle(&ctx, ev)
	handled, seqHandled = r.rng, r.seq
	reverseEvent(&ctx, lp.(Reverser), ev, twUndo{draws: rng.Draws(g, r.rng), seq: seq})
	return handled, r.rng, seqHandled, r.seq, out.n
}

// GVTLaps returns the most laps Mattern's GVT token needed in a round that this rank
// started (rank 0 of a run across processes; 0 otherwise).
func (s *Simulation) GVTLaps() uint32 { return s.gvtLaps }
