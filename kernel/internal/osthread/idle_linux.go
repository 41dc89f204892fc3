package osthread

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// IdleTicks returns the idle time (idle and iowait, in ticks of 1/100 s) of the CPUs this
// process may run on, summed, from /proc/stat; -1 when it cannot be read.
func IdleTicks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	var mine unix.CPUSet
	if unix.SchedGetaffinity(0, &mine) != nil || mine.Count() == 0 {
		return parseIdleTicks(b, func(int) bool { return true }) // the mask unknown: every CPU
	}
	return parseIdleTicks(b, mine.IsSet)
}

// parseIdleTicks sums the idle and iowait fields (the fourth and fifth numbers) of the
// "cpuN" lines of a /proc/stat text for the CPUs N that mine accepts; -1 when there is none.
func parseIdleTicks(b []byte, mine func(cpu int) bool) int64 {
	var sum int64
	found := false
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if !bytes.HasPrefix(line, []byte("cpu")) || len(line) < 4 || line[3] < '0' || line[3] > '9' {
			continue
		}
		fields := bytes.Fields(line)
		cpu, ok := number(fields[0][3:])
		if !ok || len(fields) < 6 || !mine(int(cpu)) {
			continue
		}
		idle, ok1 := number(fields[4])
		iowait, ok2 := number(fields[5])
		if !ok1 || !ok2 {
			continue
		}
		sum += idle + iowait
		found = true
	}
	if !found {
		return -1
	}
	return sum
}

// number parses a decimal number without sign.
func number(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}
