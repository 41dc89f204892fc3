package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
	"github.com/warpedgo/warped/kernel/dispatch"
	"github.com/warpedgo/warped/models/phold"
)

// pinger sends one event to its partner per event it handles, one time unit later.
type pinger struct {
	kernel.Plain[pingState]
	id, partner kernel.LPID
	start       bool
}

type pingState struct {
	Handled uint64
	LastAt  float64
}

func (p *pinger) Name() string { return fmt.Sprintf("ping%d", p.id) }
func (p *pinger) Init(ctx *kernel.Context) {
	if p.start {
		ctx.Send(p.partner, 1, nil)
	}
}
func (p *pinger) Handle(ctx *kernel.Context, ev *kernel.Event) {
	p.S.Handled++
	p.S.LastAt = ctx.Now()
	ctx.Send(p.partner, ctx.Now()+1, nil)
}

func pingPong() []kernel.LogicalProcess {
	return []kernel.LogicalProcess{
		&pinger{id: 0, partner: 1, start: true},
		&pinger{id: 1, partner: 0},
	}
}

func run(t *testing.T, cfg kernel.Config, lps []kernel.LogicalProcess) kernel.Result {
	t.Helper()
	s, err := dispatch.New(cfg, lps)
	require.NoError(t, err)
	r, err := s.Run(context.Background())
	require.NoError(t, err)
	return r
}

func TestPingPongByHand(t *testing.T) {
	lps := pingPong()
	r := run(t, kernel.Config{MaxSimTime: 10}, lps)
	// Events at 1..9 (10 is not before the end time): LP1 gets the odd ones, LP0 the even.
	require.EqualValues(t, 9, r.EventsProcessed)
	require.EqualValues(t, 9, r.EventsCommitted)
	require.EqualValues(t, 1, r.Efficiency)
	require.EqualValues(t, 9, r.FinalTime)
	require.Equal(t, pingState{Handled: 4, LastAt: 8}, lps[0].(*pinger).S)
	require.Equal(t, pingState{Handled: 5, LastAt: 9}, lps[1].(*pinger).S)
	require.Len(t, r.Digest, 64)
	require.Greater(t, r.PeakMemoryBytes, uint64(0))
}

func TestDigestDependsOnSeedOnly(t *testing.T) {
	digest := func(seed uint64) string {
		c := phold.DefaultConfig()
		c.LPs = 64
		lps, err := phold.New(c)
		require.NoError(t, err)
		return run(t, kernel.Config{MaxSimTime: 50, Seed: seed}, lps).Digest
	}
	a := digest(7)
	require.Equal(t, a, digest(7), "same seed, same digest")
	require.NotEqual(t, a, digest(8), "different seed, different digest")
}

// zeroDelay: LP1's Init sends to LP0 at time 0; LP0 forwards to LP2 at time 0. The forwarded
// event has a lower sender than its cause, so only the depth keeps it after its cause.
type zeroDelay struct {
	kernel.Plain[struct{ Got uint64 }]
	id  kernel.LPID
	log *[]string
}

func (z *zeroDelay) Name() string { return fmt.Sprintf("z%d", z.id) }
func (z *zeroDelay) Init(ctx *kernel.Context) {
	if z.id == 1 {
		ctx.Send(0, 0, nil)
	}
}
func (z *zeroDelay) Handle(ctx *kernel.Context, ev *kernel.Event) {
	z.S.Got++
	*z.log = append(*z.log, fmt.Sprintf("%s@%v depth %d", z.Name(), ctx.Now(), ev.Depth))
	if z.id == 0 {
		ctx.Send(2, 0, nil)
	}
}

func TestZeroDelayEventsFollowTheirCause(t *testing.T) {
	var log []string
	lps := []kernel.LogicalProcess{&zeroDelay{id: 0, log: &log}, &zeroDelay{id: 1, log: &log}, &zeroDelay{id: 2, log: &log}}
	r := run(t, kernel.Config{MaxSimTime: 1}, lps)
	require.EqualValues(t, 2, r.EventsProcessed)
	require.Equal(t, []string{"z0@0 depth 1", "z2@0 depth 2"}, log)
}

// misbehaving LPs for the error tests.
type bad struct {
	kernel.Plain[struct{}]
	name   string
	init   func(ctx *kernel.Context)
	handle func(ctx *kernel.Context)
}

func (b *bad) Name() string { return b.name }
func (b *bad) Init(ctx *kernel.Context) {
	if b.init != nil {
		b.init(ctx)
	}
}
func (b *bad) Handle(ctx *kernel.Context, ev *kernel.Event) {
	if b.handle != nil {
		b.handle(ctx)
	}
}

func runErr(t *testing.T, lps ...kernel.LogicalProcess) error {
	t.Helper()
	s, err := dispatch.New(kernel.Config{MaxSimTime: 100}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.Error(t, err)
	return err
}

func selfAt(at float64) func(*kernel.Context) {
	return func(ctx *kernel.Context) { ctx.Send(ctx.Self(), at, nil) }
}

func TestSendIntoThePast(t *testing.T) {
	err := runErr(t, &bad{name: "a", init: selfAt(5), handle: func(ctx *kernel.Context) { ctx.Send(1, 4, nil) }},
		&bad{name: "b"})
	var se *kernel.SendError
	require.ErrorAs(t, err, &se)
	require.Equal(t, `LP "a" (id 0) at time 5 sent an event to "b" (id 1) at time 4, which is in its past; send at or after Now()`, err.Error())
}

// ahead is a bad LP that declares a lookahead (kernel.Lookahead).
type ahead struct {
	bad
	la kernel.Time
}

func (a *ahead) Lookahead() kernel.Time { return a.la }

// TestLookahead: the simulation's lookahead is the least the LPs declare (none when one
// declares none), a send to another LP before Now()+lookahead is an error in either
// dispatcher while one to self is not, and a declared lookahead must be a number >= 0.
func TestLookahead(t *testing.T) {
	send := func(to kernel.LPID, d float64) func(*kernel.Context) {
		return func(ctx *kernel.Context) { ctx.Send(to, ctx.Now()+d, nil) }
	}
	for _, typ := range []string{kernel.Sequential, kernel.TimeWarp} {
		cfg := kernel.Config{MaxSimTime: 100, Type: typ, TimeWarp: kernel.TimeWarpConfig{Workers: 1}}
		runs := func(lps ...kernel.LogicalProcess) error {
			s, err := dispatch.New(cfg, lps)
			require.NoError(t, err)
			_, err = s.Run(context.Background())
			return err
		}
		// b declares 1, a 0.5: 0.75 to another LP is fine, and 0.25 to self.
		require.NoError(t, runs(&ahead{bad{name: "a", init: selfAt(1), handle: send(1, 0.75)}, 0.5},
			&ahead{bad{name: "b", handle: send(1, 0.25)}, 1}), typ)
		err := runs(&ahead{bad{name: "a", init: selfAt(5), handle: send(1, 0.25)}, 0.5},
			&ahead{bad{name: "b"}, 1})
		var se *kernel.SendError
		require.ErrorAs(t, err, &se, typ)
		require.Equal(t, `LP "a" (id 0) at time 5 sent an event to "b" (id 1) at time 5.25, less than the declared `+
			`lookahead 0.5 later; send to another LP at or after Now()+lookahead, or declare a smaller Lookahead`, err.Error())
		// An LP without Lookahead makes the lookahead 0.
		require.NoError(t, runs(&ahead{bad{name: "a", init: selfAt(5), handle: send(1, 0.25)}, 0.5}, &bad{name: "b"}), typ)
	}
	for _, la := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := dispatch.New(kernel.Config{MaxSimTime: 1}, []kernel.LogicalProcess{&ahead{bad{name: "a"}, la}})
		require.EqualError(t, err, fmt.Sprintf(`LP "a" (id 0) declares lookahead %v; a lookahead must be a finite number >= 0`, la))
	}
}

func TestSendToUnknownLP(t *testing.T) {
	err := runErr(t, &bad{name: "a", init: func(ctx *kernel.Context) { ctx.SendWords(7, 1, kernel.Words{}) }})
	require.EqualError(t, err, `LP "a" (id 0) at time 0 sent an event to unknown LP id 7; the simulation has 1 LPs (ids 0..0)`)
}

func TestSendAtNaN(t *testing.T) {
	err := runErr(t, &bad{name: "a", init: selfAt(math.NaN())})
	require.ErrorContains(t, err, "at time NaN; event times must be numbers")
}

func TestModelPanicIsReported(t *testing.T) {
	err := runErr(t, &bad{name: "boom", init: selfAt(2.5), handle: func(*kernel.Context) { panic("kaput") }})
	var mp *kernel.ModelPanicError
	require.ErrorAs(t, err, &mp)
	require.Equal(t, `model panic in LP "boom" (id 0) at its event at time 2.5: kaput`, err.Error())
	require.Contains(t, string(mp.Stack), "dispatch_test.go", "the stack names the model's code")

	errNo := errors.New("no")
	err = runErr(t, &bad{name: "early", init: func(*kernel.Context) { panic(fmt.Errorf("wrapped: %w", errNo)) }})
	require.EqualError(t, err, `model panic in LP "early" (id 0) in Init: wrapped: no`)
	require.ErrorIs(t, err, errNo, "the panic's error is unwrapped")
}

func TestNoInitialEvents(t *testing.T) {
	err := runErr(t, &bad{name: "idle"})
	require.ErrorContains(t, err, "no initial events")
}

func TestNewRejectsBadInput(t *testing.T) {
	ok := []kernel.LogicalProcess{&bad{name: "a", init: selfAt(1)}}
	for _, tc := range []struct {
		cfg  kernel.Config
		lps  []kernel.LogicalProcess
		want string
	}{
		{kernel.Config{MaxSimTime: 0}, ok, "max simulation time must be positive"},
		{kernel.Config{MaxSimTime: -1}, ok, "max simulation time must be positive"},
		{kernel.Config{MaxSimTime: math.NaN()}, ok, "max simulation time must be positive"},
		{kernel.Config{MaxSimTime: 1, Type: "optimistic"}, ok, `unknown simulation type "optimistic"`},
		{kernel.Config{MaxSimTime: 1}, nil, "no logical processes"},
		{kernel.Config{MaxSimTime: 1}, []kernel.LogicalProcess{&bad{name: "x"}, &bad{name: "x"}}, `duplicate LP name "x" (ids 0 and 1)`},
		{kernel.Config{MaxSimTime: 1}, []kernel.LogicalProcess{&sliceState{}}, "cannot be saved by copying"},
		{kernel.Config{MaxSimTime: 1}, []kernel.LogicalProcess{nil}, "LP 0 is nil"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := dispatch.New(tc.cfg, tc.lps)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

type sliceState struct {
	kernel.Plain[struct{ Log []int }]
}

func (*sliceState) Name() string                          { return "s" }
func (*sliceState) Init(*kernel.Context)                  {}
func (*sliceState) Handle(*kernel.Context, *kernel.Event) {}

func TestRunOnceAndCancel(t *testing.T) {
	s, err := dispatch.New(kernel.Config{MaxSimTime: 5}, pingPong())
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	require.ErrorContains(t, err, "already ran")

	c := phold.DefaultConfig()
	c.LPs = 16
	lps, err := phold.New(c)
	require.NoError(t, err)
	s, err = dispatch.New(kernel.Config{MaxSimTime: kernel.Infinity}, lps)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestProgressIsReported(t *testing.T) {
	c := phold.DefaultConfig()
	c.LPs = 256
	lps, err := phold.New(c)
	require.NoError(t, err)
	var calls []kernel.Progress
	// One goroutine: nothing for the race detector to check, so a shorter run under it.
	cfg := kernel.Config{MaxSimTime: underRace(2000.0, 200), ProgressInterval: 1, // every check
		Progress: func(p kernel.Progress) { calls = append(calls, p) }}
	run(t, cfg, lps)
	require.NotEmpty(t, calls)
	for i, p := range calls {
		require.Greater(t, p.Fraction(), 0.0)
		require.LessOrEqual(t, p.Fraction(), 1.0)
		if i > 0 {
			require.GreaterOrEqual(t, p.Now, calls[i-1].Now)
			require.Greater(t, p.EventsProcessed, calls[i-1].EventsProcessed)
		}
	}
}

// TestSteadyStateAllocatesNothing compares the allocations of a PHOLD run and a ten times
// longer one, sequential and under time warp: once every LP's queues have warmed up, extra
// events allocate (next to) nothing. What remains is a rare LP's queue growing on a deeper
// burst than it saw before, which is logarithmic in the run length, not proportional to it.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  kernel.Config
	}{
		{"sequential", kernel.Config{}},
		{"time warp, 1 worker, reverse", kernel.Config{Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: 1, StateSaving: kernel.StateSavingReverse}}},
		{"time warp, 2 workers, reverse", kernel.Config{Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingReverse}}},
		{"time warp, 2 workers, periodic", kernel.Config{Type: kernel.TimeWarp,
			TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: kernel.StateSavingPeriodic}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mallocs := func(end float64) (uint64, uint64) {
				p := phold.DefaultConfig()
				p.LPs = underRace(1024, 256) // fewer under the race detector, which is slower
				lps, err := phold.New(p)
				require.NoError(t, err)
				cfg := c.cfg
				cfg.MaxSimTime = end
				s, err := dispatch.New(cfg, lps)
				require.NoError(t, err)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				r, err := s.Run(context.Background())
				runtime.ReadMemStats(&after)
				require.NoError(t, err)
				return after.Mallocs - before.Mallocs, r.EventsCommitted
			}
			shortAllocs, shortEvents := mallocs(100)
			longAllocs, longEvents := mallocs(1000)
			require.Greater(t, longEvents, 9*shortEvents)
			extra := float64(longAllocs) - float64(shortAllocs)
			t.Logf("%.5f allocations per extra event", extra/float64(longEvents-shortEvents))
			// An allocation an event would show as 1 or more; what remains (0.003 under the
			// race detector) is a queue or log growing on a deeper burst, and the rounds
			// of a slower run, which no load makes one in fifty events.
			require.Less(t, extra/float64(longEvents-shortEvents), 0.02,
				"allocations per extra event (short %d, long %d allocations)", shortAllocs, longAllocs)
		})
	}
}

// TestSendIntoThePastUnderTheCheck: under the rollback check with reverse computation, a
// send into the past is the run's error (the check does not run the failed event again).
func TestSendIntoThePastUnderTheCheck(t *testing.T) {
	lps := []kernel.LogicalProcess{
		&reversibleBad{bad{name: "a", init: selfAt(5), handle: func(ctx *kernel.Context) {
			ctx.Send(1, 6, nil) // a good send first: run again with the error set, the sends would differ
			ctx.Send(1, 4, nil)
		}}},
		// b's own events below a's keep a's event from being safe (committed unlogged,
		// which the check does not run twice).
		&reversibleBad{bad{name: "b", init: selfAt(1), handle: func(ctx *kernel.Context) { ctx.Send(1, ctx.Now()+1, nil) }}},
	}
	s, err := dispatch.New(kernel.Config{MaxSimTime: 100, Type: kernel.TimeWarp,
		TimeWarp: kernel.TimeWarpConfig{Workers: 2, StateSaving: "reverse", CheckRollbacks: true}}, lps)
	require.NoError(t, err)
	_, err = s.Run(context.Background())
	var se *kernel.SendError
	require.ErrorAs(t, err, &se)
}

// reversibleBad is a bad LP with reverse computation (its handler changes no state).
type reversibleBad struct{ bad }

func (*reversibleBad) Reverse(*kernel.Context, *kernel.Event) {}

// slow is an LP whose events take a while once its run has a reason to stop (each sleeps
// 1 ms after stopAt events in all): a model of coarse events, on which the sequential
// dispatcher must still see a cancel, and report progress, within a few events.
type slow struct {
	kernel.Plain[struct{ N uint64 }]
	id      int
	handled *atomic.Int64
	stopAt  int64
	stop    func()
}

func (s *slow) Name() string             { return fmt.Sprintf("slow%d", s.id) }
func (s *slow) Init(ctx *kernel.Context) { ctx.Send(ctx.Self(), 1, nil) }
func (s *slow) Handle(ctx *kernel.Context, _ *kernel.Event) {
	s.S.N++
	if n := s.handled.Add(1); n == s.stopAt {
		s.stop()
	} else if n > s.stopAt {
		time.Sleep(time.Millisecond) // the event's work, not a wait for anything
	}
	ctx.Send(ctx.Self(), ctx.Now()+1, nil)
}

// TestSequentialStopsWithinAFewCoarseEvents: a cancel, and a progress interval, are seen
// within a few events however long an event takes (they were looked at every 16384
// events: 16 s of these). The bounds allow the goroutine that flags them a second to run,
// while the loop sleeps.
func TestSequentialStopsWithinAFewCoarseEvents(t *testing.T) {
	build := func(handled *atomic.Int64, stopAt int64, stop func()) []kernel.LogicalProcess {
		return []kernel.LogicalProcess{&slow{handled: handled, stopAt: stopAt, stop: stop}}
	}
	t.Run("cancel", func(t *testing.T) {
		var handled atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := dispatch.New(kernel.Config{MaxSimTime: kernel.Infinity}, build(&handled, 100, cancel))
		require.NoError(t, err)
		_, err = s.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, handled.Load(), int64(100+1000), "events handled after the cancel")
	})
	t.Run("progress", func(t *testing.T) {
		var handled atomic.Int64
		var calls atomic.Int64
		var at int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := kernel.Config{MaxSimTime: kernel.Infinity, ProgressInterval: time.Millisecond,
			Progress: func(p kernel.Progress) {
				if calls.Add(1) == 1 {
					at = int64(p.EventsProcessed)
					cancel()
				}
			}}
		s, err := dispatch.New(cfg, build(&handled, 0, func() {}))
		require.NoError(t, err)
		_, err = s.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Positive(t, at)
		require.Less(t, at, int64(1000), "events handled before the first progress report")
	})
}
