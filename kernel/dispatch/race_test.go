//go:build race

package dispatch_test

// raceEnabled reports whether the race detector is on: the heaviest tests then run
// shorter (underRace).
const raceEnabled = true
