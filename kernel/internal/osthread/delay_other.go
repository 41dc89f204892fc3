//go:build !linux

package osthread

import "time"

// RunDelay cannot be read here: it returns -1.
func RunDelay() time.Duration { return -1 }

// ProcessRunDelay cannot be read here: it returns -1.
func ProcessRunDelay() time.Duration { return -1 }

// IdleTicks cannot be read here: it returns -1.
func IdleTicks() int64 { return -1 }
