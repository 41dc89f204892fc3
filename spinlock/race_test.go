//go:build race

package spinlock

// raceEnabled reports whether the race detector is on; tests shrink under it.
const raceEnabled = true
