package dist

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/warpedgo/warped/comm"
	"github.com/warpedgo/warped/kernel/internal/core"
)

// Gather sends every rank the final state of this rank's LPs and its statistics (mine),
// installs the others' LPs, and returns the totals over all ranks.
func (m *Driver) Gather(mine core.Stats) (core.Stats, error) {
	s := m.sim
	if m.rs != nil {
		mine.PromisesSent = m.rs.promises
	}
	fr := comm.FinalRank[core.Stats]{Stats: mine, Peak: core.PeakMemory(), Rounds: m.gvt.Rounds(), Sent: m.sent}
	var buf []byte
	for _, id := range m.local {
		r := &s.LPs[id]
		snap, err := comm.EncodeSnapshot(r.Model.Snapshot(nil))
		if err != nil {
			return core.Stats{}, fmt.Errorf("encode the final state of LP %q for the other ranks: %w", r.Model.Name(), err)
		}
		buf = s.AppendDigest(buf[:0], id)
		fr.LPs = append(fr.LPs, comm.FinalLP{ID: id, RNG: [6]uint32{r.RNG.D, r.RNG.V[0], r.RNG.V[1], r.RNG.V[2], r.RNG.V[3], r.RNG.V[4]},
			Seq: r.Seq, Snap: snap, Digest: slices.Clone(buf)})
	}
	b, err := comm.EncodeFinalRank(&fr)
	if err != nil {
		return core.Stats{}, err
	}
	all, err := m.tr.AllGather(b)
	if err != nil {
		return core.Stats{}, fmt.Errorf("gather final results: %w", err)
	}
	var st core.Stats
	want := make([]uint64, m.size) // messages each rank sent this one
	for rank, rb := range all {
		var x comm.FinalRank[core.Stats]
		if err := comm.DecodeFinalRank(rb, &x); err != nil {
			return core.Stats{}, fmt.Errorf("final results of rank %d: %w", rank, err)
		}
		if len(x.Sent) != m.size {
			return core.Stats{}, fmt.Errorf("final results of rank %d: message counts for %d ranks, not %d", rank, len(x.Sent), m.size)
		}
		want[rank] = x.Sent[m.rank]
		addStats(&st, &x.Stats)
		st.PeakMemoryBytes += x.Peak
		st.GVTCycles = max(st.GVTCycles, x.Rounds)
		if rank == m.rank {
			continue
		}
		for _, f := range x.LPs {
			if int(f.ID) >= len(s.LPs) || int(m.owner[f.ID]) != rank {
				return core.Stats{}, fmt.Errorf("rank %d sent the final state of LP %d, which it does not run", rank, f.ID)
			}
			if err := install(s, f, &buf); err != nil {
				return core.Stats{}, err
			}
		}
	}
	if err := m.settle(want); err != nil {
		return core.Stats{}, err
	}
	s.Laps = m.laps
	s.TQWaiting = m.tqWaiting
	st.StateSaving = mine.StateSaving // the same on every rank: the configurations agree
	st.ScheduleQueues = mine.ScheduleQueues
	if n := st.PrimaryRollbacks + st.SecondaryRollbacks; n > 0 {
		st.AverageRollbackLength = float64(st.EventsRolledBack) / float64(n)
	}
	return st, nil
}

// settleWait bounds how long settle waits for a message that another rank has sent.
const settleWait = 30 * time.Second

// settle receives, after the run, what the other ranks sent this one and it has not
// received yet (want[r]: the messages rank r sent it), so that nothing is left unmatched
// when the transport closes: MPI requires every message to be received before
// MPI_Finalize (MPICH's UCX layer warns of one left). Only control messages can be left
// after termination, a GVT token or value or a termination token, which are dropped; an
// event left would be a termination bug, and is an error.
func (m *Driver) settle(want []uint64) error {
	deadline := time.Now().Add(settleWait)
	for r := 0; r < m.size; {
		if r == m.rank || m.recv[r] >= want[r] {
			r++
			continue
		}
		from, msg, ok, err := m.tr.Poll()
		if err != nil {
			return fmt.Errorf("receive the last messages from other processes: %w", err)
		}
		if !ok {
			if time.Now().After(deadline) {
				return fmt.Errorf("rank %d sent %d messages to rank %d, which got %d after waiting %v",
					r, want[r], m.rank, m.recv[r], settleWait)
			}
			runtime.Gosched()
			continue
		}
		m.recv[from]++
		k, _, err := m.codec.Decode(msg)
		if err != nil {
			return fmt.Errorf("message from rank %d: %w", from, err)
		}
		if k == comm.KindEvents {
			return fmt.Errorf("kernel: events from rank %d arrived at rank %d after the run ended (termination bug)", from, m.rank)
		}
	}
	return nil
}

// addStats adds the counters of o to st (FinalTime: the later).
func addStats(st, o *core.Stats) {
	st.EventsProcessed += o.EventsProcessed
	st.EventsCommitted += o.EventsCommitted
	st.EventsRolledBack += o.EventsRolledBack
	st.CoastForwardEvents += o.CoastForwardEvents
	st.SafeEvents += o.SafeEvents
	st.PromisesSent += o.PromisesSent
	st.PrimaryRollbacks += o.PrimaryRollbacks
	st.SecondaryRollbacks += o.SecondaryRollbacks
	st.AntiMessagesSent += o.AntiMessagesSent
	st.SuppressedSends += o.SuppressedSends
	st.CancelledEvents += o.CancelledEvents
	st.PeakPendingEvents += o.PeakPendingEvents
	st.BatchedEvents += o.BatchedEvents
	st.OffloadBatches += o.OffloadBatches
	if st.OffloadNote == "" {
		st.OffloadNote = o.OffloadNote
	}
	st.FinalTime = max(st.FinalTime, o.FinalTime)
	st.CPUWaitSeconds += o.CPUWaitSeconds
	st.WorkerThreads += o.WorkerThreads
}

// install sets LP f.ID's final state in s from another rank and checks that it restored what
// that rank digested.
func install(s *core.Sim, f comm.FinalLP, buf *[]byte) error {
	r := &s.LPs[f.ID]
	r.RNG.D = f.RNG[0]
	copy(r.RNG.V[:], f.RNG[1:])
	r.Seq = f.Seq
	snap, err := comm.DecodeSnapshot(f.Snap, r.Model.Snapshot(nil))
	if err != nil {
		return fmt.Errorf("decode the final state of LP %q from another rank: %w", r.Model.Name(), err)
	}
	r.Model.Restore(snap)
	*buf = s.AppendDigest((*buf)[:0], f.ID)
	if !slices.Equal(*buf, f.Digest) {
		return fmt.Errorf("the final state of LP %q does not survive the trip between processes: its Snapshot "+
			"value must encode with msgpack (exported fields, or msgpack's Marshaler/Unmarshaler)", r.Model.Name())
	}
	return nil
}
