//go:build !amd64

package spinlock

// pause does nothing on this architecture (see pause_amd64.go).
func pause() {}
