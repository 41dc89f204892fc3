package osthread

import "time"

// Since returns the time the process's threads waited for a processor since d0, a
// reading of ProcessRunDelay: 0 where d0 is -1 (it cannot be read) or the sum went down
// (threads that exited took their shares).
func Since(d0 time.Duration) time.Duration {
	if d0 < 0 {
		return 0
	}
	return max(0, ProcessRunDelay()-d0)
}

// ParseRunDelay returns the second field of a schedstat line ("exec_runtime run_delay
// timeslices", in nanoseconds), or -1.
func ParseRunDelay(b []byte) time.Duration {
	field, v, seen := 0, int64(0), false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v, seen = v*10+int64(c-'0'), true
		case seen:
			if field == 1 {
				return time.Duration(v)
			}
			field, v, seen = field+1, 0, false
		}
	}
	return -1
}
