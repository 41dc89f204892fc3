// Package meminfo reads the machine's memory figures from /proc/meminfo (Linux): what the
// command checks a run's sizes against and what a study budgets its concurrent runs with.
package meminfo

import (
	"bufio"
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
