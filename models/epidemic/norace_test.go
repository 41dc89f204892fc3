//go:build !race

package epidemic

const raceEnabled = false
