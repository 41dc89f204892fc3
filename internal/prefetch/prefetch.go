// Package prefetch asks the processor to start loading a cache line that the caller will
// soon read or write, so that the miss overlaps useful work instead of stalling it. The
// time-warp engine's hot path touches a few records at random (the next event's LP, the
// next history log slot) whose misses otherwise dominate its cost.
//
// It is a hint: on architectures without an implementation it does nothing, and a
// prefetch never faults, whatever the address.
package prefetch
