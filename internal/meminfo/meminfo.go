// Package meminfo reads the machine's memory figures from /proc/meminfo (Linux): what the
// command checks a run's sizes against and what a study budgets its concurrent runs with;
// and the process's resident memory from /proc/self/statm, which engine samples record.
package meminfo

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Bytes returns the /proc/meminfo line named key (for example "MemTotal:" or
// "MemAvailable:") in bytes, or 0 when it cannot be read.
func Bytes(key string) uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == key {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// Resident returns the process's resident set size in bytes (the second field of
// /proc/self/statm, in pages), or 0 when it cannot be read. One read costs a few
// microseconds: a sampler reads it once per set of rows, not per row.
func Resident() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
