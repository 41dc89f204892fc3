package core

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// PeakMemory returns the process's peak resident set size in bytes (Linux VmHWM), or the
// memory the Go runtime obtained from the OS where /proc is unavailable.
func PeakMemory() uint64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Bytes()
			if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
				fields := bytes.Fields(rest) // "123456 kB"
				if len(fields) >= 1 {
					if kb, err := strconv.ParseUint(string(fields[0]), 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Sys
}
