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
// from the record asked for before), and the model state of the next (its address is read
// from the LP record asked for before). It returns the second event's receiver when cal
// knows it without a search, for the caller's own per-LP records.
func PrefetchNext(cal *eventset.Calendar, lps []LPRecord) (LPID, bool) {
	cal.PrefetchUpcoming(2)
	if id, ok := cal.Upcoming(0); ok {
		prefetch.Line(ModelData(&lps[id]))
	}
	id, ok := cal.Upcoming(1)
	if ok {
		r := &lps[id]
		prefetch.Line(unsafe.Pointer(r))
		prefetch.Line(unsafe.Pointer(&r.Seq))
	}
	return id, ok
}

// ModelData returns the data word of r's model: for the usual pointer to a model's LP
// value, the address of its state. It reads the interface's layout (type word, data
// word), which is the runtime's; it is only for prefetching, which never faults.
func ModelData(r *LPRecord) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&r.Model))[1]
}
