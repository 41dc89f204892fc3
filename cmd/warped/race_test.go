//go:build race

package main

// raceEnabled reports whether the race detector is on (it changes memory use and speed).
const raceEnabled = true
