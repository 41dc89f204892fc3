//go:build amd64

package spinlock

// pause tells the processor that the caller is spinning (PAUSE): it slows the loop down,
// which leaves a hyperthread sibling, perhaps the lock's holder, more of the core.
//
//go:noescape
func pause()
