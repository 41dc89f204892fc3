package kernel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/models/pcs"
	"github.com/warpedgo/warped/models/phold"
)

// model builds a fresh set of LPs for one run.
type model struct {
	name  string
	end   float64
	build func() []kernel.LogicalProcess
}

func smallModels(t *testing.T) []model {
	return []model{
		{"phold", 30, func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs = 64
			c.StartEvents = 2
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}},
		{"pcs", 150, func() []kernel.LogicalProcess {
			c := pcs.DefaultConfig()
			c.CellsX, c.CellsY, c.Portables = 4, 4, 8
			c.CallInterval, c.CallDuration, c.MoveInterval = 30, 10, 20
			lps, err := pcs.New(c)
			require.NoError(t, err)
			return lps
		}},
		{"phold-zero-lookahead", 10, func() []kernel.LogicalProcess {
			c := phold.DefaultConfig()
			c.LPs = 32
			c.Lookahead = 0
			c.Remote = 1
			c.StartEvents = 4
			lps, err := phold.New(c)
			require.NoError(t, err)
			return lps
		}},
	}
}

// TestDeterminismMatrix is the core oracle: every time-warp configuration commits exactly
// what the sequential dispatcher commits, digest for digest.
func TestDeterminismMatrix(t *testing.T) {
	queues := []string{"heap", "splay", "ladder"}
	locks := []string{"ticket", "mutex"}
	periods := []int{1, 2, 7, 32}
	for _, m := range smallModels(t) {
		seq := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5}, m.build())
		i := 0
		for _, workers := range []int{1, 2, 3, 4, 8} {
			for _, q := range queues {
				for _, l := range locks {
					i++
					tw := kernel.TimeWarpConfig{
						Workers:           workers,
						Schedulers:        1 + i%workers,
						QueueType:         q,
						LockType:          l,
						StateSavingPeriod: periods[i%len(periods)],
						GVTPeriod:         time.Duration(100+i%3*400) * time.Microsecond,
					}
					if i%3 == 0 {
						tw.OptimismWindow = m.end / 10
					}
					name := fmt.Sprintf("%s/w%d-s%d-%s-%s-p%d-win%v", m.name, workers, tw.Schedulers,
						q, l, tw.StateSavingPeriod, tw.OptimismWindow)
					t.Run(name, func(t *testing.T) {
						r := run(t, kernel.Config{MaxSimTime: m.end, Seed: 5, Type: kernel.TimeWarp, TimeWarp: tw}, m.build())
						require.Equal(t, seq.Digest, r.Digest)
						require.Equal(t, seq.EventsCommitted, r.EventsCommitted)
						require.Equal(t, r.EventsProcessed, r.EventsCommitted+r.EventsRolledBack)
					})
				}
			}
		}
	}
}

// TestRollbacksHappen runs a rollback-heavy configuration (zero lookahead, every event
// remote, more workers than cores) and checks that rollbacks, anti-messages and coast
// forward really occur, and that the result is still the sequential one.
func TestRollbacksHappen(t *testing.T) {
	build := func() []kernel.LogicalProcess {
		c := phold.DefaultConfig()
		c.LPs = 64
		c.Lookahead = 0
		c.Remote = 1
		c.StartEvents = 8
		lps, err := phold.New(c)
		require.NoError(t, err)
		return lps
	}
	seq := run(t, kernel.Config{MaxSimTime: 20, Seed: 9}, build())
	var rolled, anti, coast uint64
	for attempt := 0; attempt < 5 && (rolled == 0 || anti == 0 || coast == 0); attempt++ {
		r := run(t, kernel.Config{MaxSimTime: 20, Seed: 9, Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: 8, Schedulers: 2, StateSavingPeriod: 4}}, build())
		require.Equal(t, seq.Digest, r.Digest)
		rolled += r.EventsRolledBack
		anti += r.AntiMessagesSent
		coast += r.CoastForwardEvents
	}
	require.NotZero(t, rolled, "no rollback happened")
	require.NotZero(t, anti, "no anti-message was sent")
	require.NotZero(t, coast, "no coast forward happened")
}

func TestTimeWarpConfigErrors(t *testing.T) {
	lps := pingPong()
	for _, tc := range []struct {
		tw   kernel.TimeWarpConfig
		want string
	}{
		{kernel.TimeWarpConfig{Workers: -1}, "worker threads must be at least 1"},
		{kernel.TimeWarpConfig{Workers: 2, Schedulers: 3}, "must not exceed the worker threads"},
		{kernel.TimeWarpConfig{QueueType: "fifo"}, `unknown queue type "fifo"`},
		{kernel.TimeWarpConfig{LockType: "spin"}, `unknown lock type "spin"`},
		{kernel.TimeWarpConfig{StateSavingPeriod: -2}, "state-saving period must be at least 1"},
		{kernel.TimeWarpConfig{OptimismWindow: -1}, "optimism window must be >= 0"},
	} {
		_, err := kernel.New(kernel.Config{MaxSimTime: 5, Type: kernel.TimeWarp, TimeWarp: tc.tw}, lps)
		require.ErrorContains(t, err, tc.want)
	}
}
