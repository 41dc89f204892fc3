package core

import (
	"unsafe"

	"github.com/warpedgo/warped/eventset"
	"github.com/warpedgo/warped/internal/prefetch"
)

// PrefetchNext asks the processor for what handling the coming events will touch, so
// that the cache misses overlap the handling of the event just popped from cal, in three
// stages, each relying on what the one before asked for an event earlier: the calendar
// record of the third event from now, the LP record of the second (its receiver is read
// from the record asked for before) with the caller's own record of that LP in side (one
// per LP, by id; none when side is empty), and the model state of the next (its address
// is read from the LP record asked for before). The LP's records are asked for in one
// call: each call to assembly costs the caller its spills.
func PrefetchNext[S any](cal *eventset.Calendar, lps []LPRecord, side []S) {
	cal.PrefetchUpcoming(2)
	if id, ok := cal.Upcoming(0); ok {
		prefetch.Line(ModelData(&lps[id]))
	}
	if id, ok := cal.Upcoming(1); ok {
		r := &lps[id]
		if int(id) < len(side) {
			prefetch.Lines3(unsafe.Pointer(r), unsafe.Pointer(&r.Seq), unsafe.Pointer(&side[id]))
		} else {
			prefetch.Lines(unsafe.Pointer(r), unsafe.Pointer(&r.Seq))
		}
	}
}

// ModelData returns the data word of r's model: for the usual pointer to a model's LP
// value, the address of its state. It reads the interface's layout (type word, data
// word), which is the runtime's; it is only for prefetching, which never faults.
func ModelData(r *LPRecord) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&r.Model))[1]
}
