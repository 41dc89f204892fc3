package pcs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
)

// TestWARPED2ByHand pins WARPED2's rules on one portable in a 1 x 1 torus (every move comes
// back to the same cell) with all means 0, so that every delay is exactly TS_OFFSET = 1,
// run to end times 1 to 10 inclusively (WARPED2's end rule). Worked out by hand from
// pcs_sim.cpp's initializeLP and receiveEvent:
//
//	Init: complete = move = next = 1; min_ts picks the move (ties go to the move), and not
//	    being on a call complete becomes complete + next = 2: MoveCallOut at 1 (2, 1, 1).
//	1 MoveCallOut: not on a call (2 >= 1); TS_OFFSET on all three: MoveCallIn at 2 (3, 2, 2).
//	2 MoveCallIn: move = 2 + 1 = 3; min_ts(3, 2, 3) is the next call: NextCall at 2.
//	2 NextCall: an attempt. With a channel: next = complete + 1 = 4; complete 3 is not
//	    before move 3, so MoveCallOut at 3 (3, 4, 3), on a call.
//	3 MoveCallOut: frees the channel; MoveCallIn at 4 (4, 5, 4).
//	4 MoveCallIn: move = 5; on a call and a channel idle: CompleteCall at 4.
//	4 CompleteCall: complete = next + 1 = 6; min_ts(6, 5, 5) is the move: MoveCallOut at 5,
//	    and from there the cycle repeats every 4 time units (attempts at 2, 6, 10).
//	Without a channel, 2 NextCall is blocked: next = 3, complete = 4, move 3 <= next:
//	    MoveCallOut at 3 (4, 3, 3), MoveCallIn at 4, NextCall at 4: a blocked attempt every
//	    2 time units (at 2, 4, 6, 8, 10).
//
// Two portables A and B (A first in Init) share one channel; events at one time go in the
// kernel's total order (send time, then A's before B's, as A's causes came first):
//
//	1, 2: as above for both; 2 A's NextCall takes the channel, MoveCallOut at 3 (3, 4, 3);
//	    B's is blocked: next 3, complete 4, MoveCallOut at 3 (4, 3, 3).
//	3: A frees the channel (MoveCallIn at 4 (4, 5, 4)); B was not on a call (5, 4, 4).
//	4: A's MoveCallIn takes the channel (CompleteCall at 4); B's goes to NextCall at 4; A's
//	    CompleteCall frees it (MoveCallOut at 5 (6, 5, 5)), B's NextCall takes it
//	    (MoveCallOut at 5 (5, 6, 5)).
//	5, 6: B frees it and A comes back idle; 6 A's NextCall comes first, B's MoveCallIn took
//	    the channel: A is blocked (next 7, complete 8), B's CompleteCall frees the channel.
//	7: both move out idle with (8, 7, 7): at 8 the state of 2, six units on. Attempts at 2,
//	    2, 4, 6, 8, 8, 10; blocked: B at 2 and 8, A at 6.
func TestWARPED2ByHand(t *testing.T) {
	for _, tc := range []struct {
		name                string
		channels, portables int
		// events[T-1] is the number of events at times up to T.
		events [10]uint64
		res    Results
		idle   uint64
	}{
		{"one channel", 1, 1, [10]uint64{1, 3, 4, 6, 7, 9, 10, 12, 13, 15}, Results{CallAttempts: 3}, 0},
		{"no channel", 0, 1, [10]uint64{1, 3, 4, 6, 7, 9, 10, 12, 13, 15}, Results{CallAttempts: 5, ChannelBlocks: 5}, 0},
		{"two portables, one channel", 1, 2, [10]uint64{2, 6, 8, 12, 14, 18, 20, 24, 26, 30},
			Results{CallAttempts: 7, ChannelBlocks: 3}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{CellsX: 1, CellsY: 1, Channels: tc.channels, Portables: tc.portables, MaxHops: 1}
			for end := 1; end <= 10; end++ {
				lps, err := New(c)
				require.NoError(t, err)
				s, err := dispatch.New(kernel.Config{MaxSimTime: float64(end), EndInclusive: true, Seed: 1}, lps)
				require.NoError(t, err)
				r, err := s.Run(context.Background())
				require.NoError(t, err)
				require.Equal(t, tc.events[end-1], r.EventsCommitted, "events up to %d", end)
				if end == 10 {
					require.EqualValues(t, 10, r.FinalTime)
					require.Equal(t, tc.res, Summarize(lps))
					require.Equal(t, tc.idle, lps[0].(*Cell).S.IdleChannels)
				}
			}
		})
	}
}
