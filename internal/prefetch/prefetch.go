// Package prefetch asks the processor to start loading a cache line that the caller will
// soon read or write, so that the miss overlaps useful work instead of stalling it. The
// kernel's dispatchers touch a few records at random for every event (the next events'
// calendar records, LP records and model state; the time-warp engine's log slots), and
// those misses otherwise dominate their cost.
//
// It is a hint: on architectures without an implementation it does nothing, and a
// prefetch never faults, whatever the address.
package prefetch
