package outputmgr

import (
	"math/rand/v2"
	"testing"

	"github.com/warpedgo/warped/event"
)

// logModel is the reference for a Log: the sends in the log (identified by Seq) with the
// absolute index of the first.
type logModel struct {
	base int64
	seqs []uint64
}

// checkLog checks every send of l, and its contents when kept, against m.
func checkLog(t *testing.T, step int, l *Log, m *logModel, contents bool) {
	t.Helper()
	if l.Len() != len(m.seqs) || l.Base() != m.base || l.Next() != m.base+int64(len(m.seqs)) {
		t.Fatalf("step %d: len %d base %d next %d, want len %d base %d", step, l.Len(), l.Base(), l.Next(), len(m.seqs), m.base)
	}
	for j, seq := range m.seqs {
		i := m.base + int64(j)
		s := l.At(i)
		if s.Seq != seq || s.RecvTime != float64(seq) || s.Receiver != uint32(seq%7) {
			t.Fatalf("step %d: send %d is %+v, want seq %d", step, i, *s, seq)
		}
		if contents {
			if c := l.ContentsAt(i); c.Words[0] != seq || c.Payload != seq {
				t.Fatalf("step %d: contents of send %d are %+v, want seq %d", step, i, *c, seq)
			}
		}
	}
}

// TestLogAgainstSlice pushes, drops and compacts at random, with and without contents, and
// checks indexes and sends against a slice.
func TestLogAgainstSlice(t *testing.T) {
	for _, contents := range []bool{false, true} {
		r := rand.New(rand.NewPCG(3, 4))
		var l Log
		m := &logModel{}
		seq := uint64(0)
		for step := range 20000 {
			switch op := r.IntN(10); {
			case op < 6: // push
				seq++
				*l.Push() = Sent{RecvTime: float64(seq), SendTime: 1, Seq: seq, Receiver: uint32(seq % 7)}
				if contents {
					*l.PushContents() = Contents{Words: event.Words{seq}, Payload: seq}
				}
				m.seqs = append(m.seqs, seq)
			case op < 8: // drop the head
				n := r.IntN(len(m.seqs) + 1)
				l.DropTo(m.base + int64(n))
				m.base += int64(n)
				m.seqs = m.seqs[n:]
			default: // compact: keep runs of sends, one in three left out
				newBase := l.Next()
				l.BeginCompact()
				var kept []uint64
				for j := 0; j < len(m.seqs); {
					n := 1 + r.IntN(3)
					n = min(n, len(m.seqs)-j)
					if m.seqs[j]%3 != 0 {
						from := m.base + int64(j)
						nf, nt := l.Keep(from, from+int64(n))
						if want := newBase + int64(len(kept)); nf != want || nt != want+int64(n) {
							t.Fatalf("step %d: Keep(%d, %d) = [%d, %d), want [%d, %d)", step, from, from+int64(n), nf, nt, want, want+int64(n))
						}
						kept = append(kept, m.seqs[j:j+n]...)
					}
					j += n
				}
				l.EndCompact()
				m.base, m.seqs = newBase, kept
			}
			checkLog(t, step, &l, m, contents)
		}
		if contents && len(m.seqs) > 0 {
			i := m.base
			e := l.Event(i)
			if e.Seq != m.seqs[0] || e.Payload != m.seqs[0] || e.Words[0] != m.seqs[0] || e.Anti {
				t.Fatalf("Event(%d) = %+v, want seq %d with its contents", i, e, m.seqs[0])
			}
			if l.ContentsAt(i).Payload != nil {
				t.Fatalf("Event(%d) kept the log's payload", i)
			}
			a := l.At(i).Anti()
			if !a.Anti || a.Seq != e.Seq || a.Receiver != e.Receiver || a.RecvTime != e.RecvTime || a.Payload != nil {
				t.Fatalf("Anti() = %+v for %+v", a, e)
			}
		}
	}
}

// TestDroppedPayloadsAreLetGo checks that dropping and compacting clear the payloads of
// the contents they drop.
func TestDroppedPayloadsAreLetGo(t *testing.T) {
	var l Log
	for i := range 8 {
		*l.Push() = Sent{Seq: uint64(i)}
		*l.PushContents() = Contents{Payload: i}
	}
	l.DropTo(2)
	for j := range 2 {
		if p := l.contents.Buf[j].Payload; p != nil {
			t.Fatalf("slot %d of a dropped send holds payload %v", j, p)
		}
	}
	l.BeginCompact()
	l.Keep(4, 5) // send 4 moves to slot 2, the first after the head
	l.EndCompact()
	if l.Len() != 1 || l.ContentsAt(l.Base()).Payload != 4 {
		t.Fatalf("after compaction: %d sends, payload %v; want 1, 4", l.Len(), l.ContentsAt(l.Base()).Payload)
	}
	for j := 3; j < 8; j++ {
		if p := l.contents.Buf[j].Payload; p != nil {
			t.Fatalf("slot %d, not kept, holds payload %v", j, p)
		}
	}
}

// TestLogAllocatesNothingInSteadyState checks that pushing and dropping allocates nothing
// once the rings have their working size.
func TestLogAllocatesNothingInSteadyState(t *testing.T) {
	var l Log
	for range 2048 {
		l.Push()
		l.PushContents()
	}
	l.DropTo(l.Next())
	allocs := testing.AllocsPerRun(100, func() {
		for range 512 {
			*l.Push() = Sent{Seq: 1}
			*l.PushContents() = Contents{Words: event.Words{1}}
		}
		l.DropTo(l.Next())
	})
	if allocs != 0 {
		t.Fatalf("steady state allocates %v times a run", allocs)
	}
}

// BenchmarkLogPushDrop: four sends an event, fossil collection every 64 events.
func BenchmarkLogPushDrop(b *testing.B) {
	var l Log
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		*l.Push() = Sent{RecvTime: float64(n / 4), Seq: uint64(n), Receiver: 3}
		if n%256 == 0 {
			l.DropTo(l.Next() - 128)
		}
	}
}
