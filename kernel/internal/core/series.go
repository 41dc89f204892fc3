package core

import (
	"cmp"
	"math"
	"slices"

	"github.com/warpedgo/warped/event"
)

// Model time series (Context.Record, Config.RecordSeries).
//
// A point is kept beside its LP, with the key of the event that recorded it, in the order
// the LP processed its events (key order). A rollback to key k drops the LP's points with
// keys at or after k, which are those of the undone events; coast forward and Reverse
// record nothing (the points of the events coast forward re-executes are still there).
// So after the run an LP's points are those of its committed events, in their order, which
// is the sequential run's. Points are kept until the end of the run: a model records a
// series, not a stream.

// SeriesPoint is one value of a model's time series.
type SeriesPoint struct {
	// Time is the virtual time of the event that recorded it (0 in Init).
	Time Time `json:"time"`
	// LP is the LP that recorded it.
	LP LPID `json:"lp"`
	// Series is the series' name.
	Series string `json:"series"`
	// Value is the recorded value.
	Value float64 `json:"value"`
}

// SeriesRec is a recorded point, its time and the key of the event that recorded it (the
// sequential dispatcher, which never rolls back, records no key).
type SeriesRec struct {
	k      event.Key
	t      Time
	series string
	value  float64
}

// Record appends value to the model's time series named series, at the current event's
// time, when Config.RecordSeries is set (else it does nothing). Under time warp only the
// values of events that commit are kept: a rollback drops the values its undone events
// recorded, so Result.Series is the sequential run's. Record in Reverse does nothing.
func (c *Context) Record(series string, value float64) {
	s := c.f.Sim
	if s.Series == nil || c.f.Reversing || (c.f.Coasting != nil && *c.f.Coasting) {
		return
	}
	k := event.Key{RecvTime: math.Inf(-1)} // Init: below every event, never undone
	if !s.InInit && c.f.Cause != nil {
		k = *c.f.Cause
	}
	s.Series[c.f.Self] = append(s.Series[c.f.Self], SeriesRec{k: k, t: c.f.Now, series: series, value: value})
}

// UndoSeries drops the points LP id recorded in events with keys at or after k (a rollback
// to k; the LP's owner calls it).
func (s *Sim) UndoSeries(id LPID, k *event.Key) {
	if s.Series == nil {
		return
	}
	r := s.Series[id]
	n := len(r)
	for n > 0 && !event.KeyLess(&r[n-1].k, k) {
		n--
	}
	clear(r[n:])
	s.Series[id] = r[:n]
}

// CollectSeries returns every LP's points ordered by time, then LP, then recording order.
func (s *Sim) CollectSeries() []SeriesPoint {
	if s.Series == nil {
		return nil
	}
	var out []SeriesPoint
	for id, rs := range s.Series {
		for _, r := range rs {
			out = append(out, SeriesPoint{Time: r.t, LP: LPID(id), Series: r.series, Value: r.value})
		}
	}
	slices.SortStableFunc(out, func(a, b SeriesPoint) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.LP, b.LP))
	})
	return out
}
