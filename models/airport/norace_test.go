//go:build !race

package airport

const raceEnabled = false
