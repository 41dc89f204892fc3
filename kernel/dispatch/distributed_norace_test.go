//go:build !race

package dispatch_test

// raceEnabled reports whether the race detector is on (it slows runs across many ranks).
const raceEnabled = false
