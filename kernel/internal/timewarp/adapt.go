package timewarp

import (
	"time"

	"github.com/warpedgo/warped/kernel/internal/osthread"
)

// The number of active hosts follows the machine's load. Where other processes take
// cores, a worker whose thread waits for one holds up every GVT round, and the others
// either wait at their bounds or run ahead into rollbacks, where workers hosted on fewer
// threads need no thread that is not running (docs/DECISIONS.md, "Never waits, third
// part"). Host 0 measures, every loadWindow, how long the process's threads waited for a
// processor (the kernel's run delay, summed over the threads) as a share of the window
// times the active hosts: above busyShare, one host fewer runs workers; below it, after
// probeFirst windows, one more is tried, and kept unless the share rises above busyShare
// in the next window (then the wait before the next try doubles, up to probeMax windows).
// One more host is tried only where a core sat idle (probeIdle, /proc/stat): beside a
// process that keeps the other cores busy a try can only fail, and it costs the run its
// window at two hosts that wait for each other (docs/PERFORMANCE.md, "Beside a CPU hog:
// no tries into a full machine"). The first window is looked at early too (earlyLook):
// a share well above busyShare after a quarter of it takes a host off at once. Where the
// run delay cannot be read (not Linux), every host stays active; where the idle time
// cannot, tries follow the waits alone.

const (
	// loadWindow is the span over which the waits are measured.
	loadWindow = 100 * time.Millisecond
	// busyShare is the share of their time that the active hosts' threads spend waiting
	// for a processor above which they are too many for the cores they get.
	busyShare = 0.2
	// probeFirst and probeMax bound the time before one more host is tried, in windows.
	// One window: a try needs a core that sat idle (probeIdle), so on a full machine none
	// is made however soon it is due, and where a core has come free it follows at once.
	probeFirst = 1
	probeMax   = 80
	// earlyLook and earlyShare are the first window's early look: after loadWindow/earlyLook,
	// a share above earlyShare takes a host off at once. Beside a CPU hog the first 25 ms
	// measured 0.32 – 0.71 (13 of 16 runs above 0.4), on the idle machine 0.006 – 0.34
	// (20 runs); the window at two hosts that wait for each other costs a short run most.
	earlyLook  = 4
	earlyShare = 0.4
	// loadCheck is the number of host turns between two looks at the clock.
	loadCheck = 16
	// probeIdle is the mean number of idle CPUs over a window below which no host is added:
	// half a core free. /proc/stat counts in 10 ms ticks: 0.1 CPU over a 100 ms window.
	probeIdle = 0.5
)

// adaptState is host 0's measure of the load and record of its decisions.
type adaptState struct {
	on        bool           // adapting (several hosts, and the run delay can be read or is given)
	early     bool           // the first window's early look is to come (earlyLook)
	turns     int            // host 0's turns since its last look at the clock
	waits     osthread.Waits // the process's threads' waits, window by window
	idle      osthread.Idle  // the machine's idle CPUs, window by window (off: tries follow waits alone)
	since     time.Time      // the start of the current window, where a test gives the load (hostLoad)
	probing   bool           // the last change added a host, to be judged in the next window
	gap       int            // the wait before the next try of one more host, in windows
	nextProbe time.Time
	changes   int // changes of the number of active hosts, for tests
}

// startAdapt begins measuring, before the hosts start.
func (hs *hostSet) startAdapt(d *timeWarpDispatcher) {
	st := &hs.adapt
	if len(hs.hosts) < 2 {
		return
	}
	now := time.Now()
	if d.hostLoad == nil && !st.waits.Start(osthread.ProcessRunDelay, now) {
		return // the run delay cannot be read here
	}
	if d.hostLoad == nil {
		st.idle.Start(osthread.IdleTicks, now) // off where it cannot be read
		st.early = true
	}
	st.on, st.since = true, now
}

// adapt is host 0's look at the load after a turn: every loadWindow it measures the share
// of the window the active hosts' threads spent waiting for a processor, and decides how
// many hosts run workers.
func (h *host) adapt() {
	d := h.d
	st := &d.hs.adapt
	if h.id != 0 || !st.on {
		return
	}
	if st.turns++; st.turns < d.loadCheck {
		return
	}
	st.turns = 0
	now := time.Now()
	k := int(d.hs.active.Load())
	var share float64
	if f := d.hostLoad; f != nil {
		if now.Sub(st.since) < d.loadWindow {
			return
		}
		share, st.since = f(), now
	} else {
		var ok bool
		if st.early {
			if share, ok = st.waits.Share(now, d.loadWindow/earlyLook, k); !ok {
				return
			}
			st.early = false
			if share <= earlyShare {
				return // not clear yet: the window goes on (Share began the next one)
			}
		} else if share, ok = st.waits.Share(now, d.loadWindow, k); !ok {
			return
		}
	}
	idle := st.idle.CPUs(now) // -1: not known
	if f := d.hostIdle; f != nil {
		idle = f()
	}
	d.hs.decide(now, d.loadWindow, k, share, idle)
}

// decide is host 0's decision on the number of active hosts (k now), from share, the share
// of the last window their threads spent waiting for a processor, and idle, the mean
// number of idle CPUs over it (negative: not known).
func (hs *hostSet) decide(now time.Time, window time.Duration, k int, share, idle float64) {
	st := &hs.adapt
	busy := share > busyShare
	coreFree := idle < 0 || idle >= probeIdle
	switch {
	case st.probing:
		st.probing = false
		if busy {
			hs.setActive(now, k-1)
			st.gap = min(2*st.gap, probeMax)
		} else {
			st.gap = probeFirst
		}
		st.nextProbe = now.Add(time.Duration(st.gap) * window)
	case busy && k > 1:
		hs.setActive(now, k-1)
		if st.gap == 0 {
			st.gap = probeFirst
		}
		st.nextProbe = now.Add(time.Duration(st.gap) * window)
	case !busy && k < len(hs.hosts) && !now.Before(st.nextProbe) && coreFree:
		hs.setActive(now, k+1)
		st.probing = true
	}
}

// setActive makes the first k hosts the active ones from now on, and wakes every host and
// worker so that each follows at once.
func (hs *hostSet) setActive(now time.Time, k int) {
	hs.countThreads(now)
	hs.active.Store(int32(k))
	hs.adapt.changes++
	hs.wakeHosts()
	hs.hosts[0].d.wakeAll()
}

// countThreads adds the active hosts' time since the last change (or the start) to
// threadTime.
func (hs *hostSet) countThreads(now time.Time) {
	hs.threadTime += time.Duration(hs.active.Load()) * now.Sub(hs.threadsSince)
	hs.threadsSince = now
}

// meanThreads returns the mean number of active hosts from the start (start) to now,
// weighted by time (Stats.WorkerThreads). Host 0 has ended.
func (hs *hostSet) meanThreads(start, now time.Time) float64 {
	hs.countThreads(now)
	if el := now.Sub(start); el > 0 {
		return float64(hs.threadTime) / float64(el)
	}
	return float64(hs.active.Load())
}

// wakeHosts wakes the hosts that wait without workers (host.idle).
func (hs *hostSet) wakeHosts() {
	for _, h := range hs.hosts {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}
