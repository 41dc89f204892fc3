//go:build linux

package gpuoffload

import (
	"time"
	"unsafe"

	"github.com/warpedgo/warped/rng"
)

// benchResident measures the built-in XORWOW kernel alone: n generators resident on the
// device, each stepped steps times (back when reverse), iters launches. It returns the
// elapsed time of the launches (after one warm-up launch).
func (c *cudaBackend) benchResident(n int, steps uint32, reverse bool, iters int) (time.Duration, error) {
	leave, err := c.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	s := c.rngSlot
	cnt := alignUp(uintptr(24*n), layoutAlign)
	if err := c.ensure(s, cnt+uintptr(4*n)); err != nil {
		return 0, err
	}
	st := view[uint32](s.host, 0, 6*n)
	for i := range n {
		g := rng.New(1, uint64(i))
		st[i] = g.D
		st[n+i], st[2*n+i], st[3*n+i], st[4*n+i], st[5*n+i] = g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
	}
	for i, cs := 0, view[uint32](s.host, cnt, n); i < n; i++ {
		cs[i] = steps
	}
	if err := c.d.check("cuMemcpyHtoDAsync_v2", c.d.cuMemcpyHtoDAsync(s.dptr, s.host, cnt+uintptr(4*n), s.stream)); err != nil {
		return 0, err
	}
	f := c.advance
	if reverse {
		f = c.rewind
	}
	dst, dcnt, nn := s.dptr, s.dptr+uint64(cnt), uint32(n)
	var t0 time.Time
	for i := -1; i < iters; i++ {
		if i == 0 {
			if err := c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(s.stream)); err != nil {
				return 0, err
			}
			t0 = time.Now()
		}
		if err := c.launch(f, n, s.stream, unsafe.Pointer(&dst), unsafe.Pointer(&dcnt), unsafe.Pointer(&nn)); err != nil {
			return 0, err
		}
	}
	if err := c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(s.stream)); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}
