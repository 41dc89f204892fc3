package core

import (
	"runtime"

	"github.com/warpedgo/warped/internal/meminfo"
)

// PeakMemory returns the process's peak resident set size in bytes (Linux VmHWM), or the
// memory the Go runtime obtained from the OS where /proc is unavailable.
func PeakMemory() uint64 {
	if p := meminfo.Peak(); p > 0 {
		return p
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Sys
}
