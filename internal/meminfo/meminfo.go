// Package meminfo reads the machine's memory figures from /proc/meminfo (Linux): what the
// command checks a run's sizes against and what a study budgets its concurrent runs with;
// and the process's resident memory from /proc/self/statm, which engine samples record, and
// the reset of its peak that lets a study measure its runs one by one.
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
func Resident() uint64 { return statm(1) }

// Virtual returns the process's address space in bytes (VmSize, the first field of
// /proc/self/statm), or 0 when it cannot be read: what the address-space limit (ulimit -v)
// bounds, of which Go's runtime reserves a gigabyte or more before any heap.
func Virtual() uint64 { return statm(0) }

// statm returns field i of /proc/self/statm in bytes, or 0 when it cannot be read.
func statm(i int) uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(data)
	if len(fields) <= i {
		return 0
	}
	pages, err := strconv.ParseUint(string(fields[i]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// Peak returns the process's peak resident set size in bytes (VmHWM in /proc/self/status),
// or 0 when it cannot be read.
func Peak() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			if fields := bytes.Fields(rest); len(fields) >= 1 { // "123456 kB"
				if kb, err := strconv.ParseUint(string(fields[0]), 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// ResetPeak resets the process's peak resident set size (VmHWM, which a run reports as its
// peak memory) to its resident size now, where Linux allows it (/proc/self/clear_refs,
// Linux 4.0 and later); it reports whether it did.
func ResetPeak() bool {
	f, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	_, err = f.WriteString("5")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil
}
