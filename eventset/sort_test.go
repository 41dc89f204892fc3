package eventset

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/event"
)

func TestSortSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 2, 3, 15, 16, 17, 100, 1000, 5000} {
		for _, pattern := range []string{"random", "sorted", "reversed", "ties", "nearly"} {
			s := make([]slot, n)
			for i := range s {
				var e event.Event
				switch pattern {
				case "random":
					e.RecvTime = r.Float64()
				case "sorted":
					e.RecvTime = float64(i)
				case "reversed":
					e.RecvTime = float64(n - i)
				case "ties": // on every field of the key in turn
					e.RecvTime = float64(r.IntN(3))
					e.SendTime = float64(r.IntN(2))
					e.Depth = uint32(r.IntN(2))
					e.Sender = uint32(r.IntN(2))
					e.Anti = r.IntN(2) == 0
				case "nearly": // sorted by send time, shuffled within each send time
					e.RecvTime = 100
					e.SendTime = float64(i / 8)
					e.Sender = uint32(r.IntN(50))
				}
				e.Seq = uint64(i)
				r := recordOf(&e)
				s[i] = slotOf(&r)
			}
			sortSlots(s)
			require.True(t, slices.IsSortedFunc(s, func(a, b slot) int {
				if event.KeyLess(ptr(a.e.key()), ptr(b.e.key())) {
					return -1
				}
				return 1
			}), "%d %s", n, pattern)
		}
	}
	// The heapsort fallback on its own.
	s := make([]slot, 300)
	for i := range s {
		e := event.Event{RecvTime: r.Float64(), Seq: uint64(i)}
		r := recordOf(&e)
		s[i] = slotOf(&r)
	}
	heapSlots(s)
	for i := 1; i < len(s); i++ {
		require.True(t, sless(&s[i-1], &s[i]))
	}
}

func recordOf(e *event.Event) record {
	return record{recvTime: e.RecvTime, sendTime: e.SendTime, seq: e.Seq, depth: e.Depth,
		sender: e.Sender, receiver: e.Receiver, anti: e.Anti}
}

func ptr[T any](v T) *T { return &v }

// bucketCase builds the slots of n events of one bucket, their records in recs (event i's
// receiver is i), for sortBucket's cases:
//   - "one send time": zero-delay events (promote's after), sender words spanning span,
//     repeated senders whose sequence numbers come in any order, some anti-messages;
//   - "mixed depths": the same with one event in a hundred a generation deeper (a word
//     span past three bytes: sortSlots' case);
//   - "ascending sends": integer-time events as a bucket of PCS holds them, pushed in send
//     order: a quarter sent one unit before the receive time in random sender order (the
//     move-ins), the rest at earlier integer times, each send time's events in a random
//     order;
//   - "sends out of order": the same with two send times swapped (a rollback's re-sends:
//     sortSlots' case);
//   - "times differ": the same with one event at another receive time (sortSlots' case).
func bucketCase(r *rand.Rand, name string, n int, span uint32) ([]slot, []record) {
	s := make([]slot, n)
	recs := make([]record, n)
	for i := range s {
		e := event.Event{RecvTime: 7, SendTime: 7, Depth: 1,
			Sender: uint32(r.Uint64N(uint64(span))) << 3, Seq: uint64(r.IntN(50)), Receiver: uint32(i)}
		switch name {
		case "mixed depths":
			if i%100 == 50 {
				e.Depth = 2
			}
		case "ascending sends", "sends out of order", "times differ":
			e.RecvTime, e.Depth = 200, 0
			if i < 3*n/4 {
				e.SendTime = float64(80 + 119*i/n) // ascending: 80 .. 169
			} else {
				e.SendTime = 199
			}
			if name == "sends out of order" && i == n/2 {
				e.SendTime = 60
			}
			if name == "times differ" && i == n-1 {
				e.RecvTime = 201
			}
		}
		if e.Anti = r.IntN(4) == 0; !e.Anti {
			e.Seq += 50 // distinct keys: an anti-message has no twin here
		}
		recs[i] = recordOf(&e)
		s[i] = slotOf(&recs[i])
	}
	return s, recs
}

// presort orders the events of a bucket case before sortBucket: "as sent" leaves them,
// "nearly sorted" sorts them but for one swapped pair (sortBucket's insertion sort
// succeeds), "sorted head" sorts the first three quarters, the short runs, so that the
// insertion sort overruns its budget in the run of move-ins (or at the last event) and
// sortRuns takes over from the run where it stopped.
func presort(s []slot, how string) {
	switch how {
	case "nearly sorted":
		sortSlots(s)
		if len(s) > 10 {
			s[3], s[4] = s[4], s[3]
		}
	case "sorted head":
		sortSlots(s[:3*len(s)/4])
	}
}

// TestSortBucket: sortBucket sorts by key, as sortSlots does, whichever path a bucket
// takes: a radix sort of one send time's events (sender words spanning one to three
// bytes), run by run when the send times ascend (from the start, or from where the
// insertion sort stopped), an insertion sort of a nearly sorted bucket, and sortSlots for
// short buckets, words spanning more than three bytes, send times out of order, or receive
// times that differ; and radixSlots, for the same buckets as sent. The result is a
// permutation of the input.
func TestSortBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var tmp []slot
	cases := []string{"one send time", "mixed depths", "ascending sends", "sends out of order", "times differ"}
	for _, name := range cases {
		for _, n := range []int{10, 256, 1000, 3000} {
			for _, span := range []uint32{1, 200, 1 << 12, 1 << 20, 1 << 30} {
				for _, how := range []string{"as sent", "nearly sorted", "sorted head"} {
					s, _ := bucketCase(r, name, n, span)
					presort(s, how)
					sorters := map[string]func(s, tmp []slot) []slot{"sortBucket": sortBucket}
					if how == "as sent" { // as a wave of zero-delay events waits in after
						sorters["radixSlots"] = radixSlots
					}
					for sorter, sort := range sorters {
						s := slices.Clone(s)
						tmp = sort(s, tmp)
						for i := 1; i < len(s); i++ {
							a, b := s[i-1].e.key(), s[i].e.key()
							require.False(t, event.KeyLess(&b, &a), "%s of %s, n %d, span %d, %s: %d out of order",
								sorter, name, n, span, how, i)
						}
						seen := make([]bool, n)
						for i := range s {
							seen[s[i].e.receiver] = true
						}
						require.NotContains(t, seen, false, "%s of %s, n %d, span %d, %s: a permutation",
							sorter, name, n, span, how)
					}
				}
			}
		}
	}
}

// TestSortBucketPaths pins which sort a bucket gets, by whether the radix sort took its
// scratch: a bucket of integer-time events whose send times ascend (PCS's pattern) sorts
// its run of move-ins by radix, also after a sorted stretch of short runs; a nearly sorted
// one needs nothing but the insertion sort; one with send times out of order or receive
// times that differ goes to sortSlots whole.
func TestSortBucketPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name, how string
		radix     bool
	}{
		{"ascending sends", "as sent", true},
		{"ascending sends", "sorted head", true},
		{"ascending sends", "nearly sorted", false},
		{"one send time", "as sent", true},
		{"sends out of order", "as sent", false},
		{"times differ", "as sent", false},
		{"times differ", "sorted head", false},
	} {
		s, _ := bucketCase(r, c.name, 2000, 1<<10)
		presort(s, c.how)
		tmp := sortBucket(s, nil)
		require.Equal(t, c.radix, tmp != nil, "%s, %s: radix sort", c.name, c.how)
	}
}

// BenchmarkSortBucket sorts buckets of 3,000 events as a PCS bucket holds them (the
// "ascending sends" case: the pattern that the run-by-run sort is for), as a zero-delay
// wave holds them ("one send time"), and one whose send times are out of order, which
// goes to sortSlots whole.
func BenchmarkSortBucket(b *testing.B) {
	for _, name := range []string{"ascending sends", "one send time", "sends out of order"} {
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(2, 2))
			const n = 3000
			in, _ := bucketCase(r, name, n, 900)
			s := make([]slot, n)
			var tmp []slot
			b.ReportAllocs()
			for b.Loop() {
				copy(s, in)
				tmp = sortBucket(s, tmp)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
