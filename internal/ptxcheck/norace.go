//go:build !race

package ptxcheck

// raceEnabled is set under the race detector (see race.go).
const raceEnabled = false
