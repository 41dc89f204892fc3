package core

import (
	"cmp"
	"slices"
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

// CollectSeries returns every LP's points ordered by time, then LP, then recording order.
func (s *Sim) CollectSeries() []SeriesPoint {
	if s.Series == nil {
		return nil
	}
	var out []SeriesPoint
	for id, rs := range s.Series {
		for _, r := range rs {
			out = append(out, SeriesPoint{Time: r.T, LP: LPID(id), Series: r.Series, Value: r.Value})
		}
	}
	slices.SortStableFunc(out, func(a, b SeriesPoint) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.LP, b.LP))
	})
	return out
}
