package timewarp

// Co-hosting: across processes, the manager goroutine (package dist) runs host 0 itself,
// a turn of it between two turns of its own loop, as ROSS's scheduler polls the network
// between events. A manager of its own next to the hosts would be one thread more than the
// hosts' cores: on a machine with as many cores as hosts, it and the workers then take
// turns on the cores at the operating system's pace, and each GVT token's hop waits for
// the manager's thread to get a core (a rank's local GVT round took 1.7 ms on average with
// 2 ranks on 2 cores, docs/PERFORMANCE.md). Co-hosted, the rank has as many threads as
// hosts, the token is passed on within a turn of the host, and the worker's wait for GVT
// is the manager's own loop.
//
// The co-host never blocks and never parks: when its workers may take nothing, its turn
// ends, and the manager backs off on its own thread (dist's idle back-off), polling the
// network meanwhile. Its turns are shorter than a host goroutine's, since the manager's
// work waits for the end of each: the manager chooses how many events its only worker
// takes in one (dist's turn lengths), a few tens of microseconds at PHOLD's rate.

// cohost is host 0 run by the manager goroutine.
type cohost struct {
	h *host
}

// newCohost makes host 0 the co-host.
func (d *timeWarpDispatcher) newCohost() *cohost {
	h := d.hs.hosts[0]
	c := &cohost{h: h}
	h.cohost = c
	h.rest = func(*worker, bool) {} // no idle round to start across processes, no parking
	return c
}

// work runs a turn of the co-host, at most events events of a worker that runs alone; it
// reports whether its workers processed events.
func (c *cohost) work(events int) bool {
	h := c.h
	if h.d.done.Load() {
		return false
	}
	h.turnEvents = events
	before := h.processed()
	defer h.recoverModel()
	h.turn()
	return h.processed() != before
}

// ahead reports whether the co-host's workers hold no event within a quarter of GVT's
// average advance per round of GVT (none at all counts as ahead).
func (c *cohost) ahead() bool {
	g := c.h.d.gvt.GVT()
	for _, w := range c.h.ws {
		if t, ok := w.q.pend.Min(); ok && t-g <= w.q.th.adv/4 {
			return false
		}
	}
	return true
}

// processed is the number of events the host's workers processed.
func (h *host) processed() uint64 {
	n := uint64(0)
	for _, w := range h.ws {
		n += w.stats.processed
	}
	return n
}

// end frees the co-host's workers at the end of the run.
func (c *cohost) end() { c.h.release() }
