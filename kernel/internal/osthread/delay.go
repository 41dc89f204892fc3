package osthread

import "time"

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
