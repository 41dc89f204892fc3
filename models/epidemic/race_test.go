//go:build race

package epidemic

const raceEnabled = true
