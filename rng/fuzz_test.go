package rng

import "testing"

// FuzzReverse checks, for arbitrary states, that Reverse undoes Next, that
// Next undoes Reverse, and that Rewind/Advance agree with them.
//
//	go test -run XXX -fuzz FuzzReverse ./rng/
func FuzzReverse(f *testing.F) {
	f.Add(uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint8(1))
	f.Add(uint32(6615241), uint32(123456789), uint32(362436069), uint32(521288629), uint32(88675123), uint32(5783321), uint8(10))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), uint8(255))
	f.Add(uint32(1), uint32(0x80000000), uint32(1), uint32(0x80000000), uint32(1), uint32(0x80000000), uint8(3))
	f.Fuzz(func(t *testing.T, d, v0, v1, v2, v3, v4 uint32, n uint8) {
		s := XORWOW{d, [5]uint32{v0, v1, v2, v3, v4}}
		g := s
		ref := s
		if x, y := g.Next(), stepRef(&ref); x != y || g != ref {
			t.Fatalf("Next(%+v) = %#x %+v, reference %#x %+v", s, x, g, y, ref)
		}
		g.Reverse()
		if g != s {
			t.Fatalf("Reverse(Next(%+v)) = %+v", s, g)
		}
		g.Reverse()
		g.Next()
		if g != s {
			t.Fatalf("Next(Reverse(%+v)) = %+v", s, g)
		}
		h := s
		for i := uint8(0); i < n; i++ {
			h.Next()
		}
		g.Advance(uint64(n))
		if g != h {
			t.Fatalf("Advance(%d) from %+v = %+v, want %+v", n, s, g, h)
		}
		if Draws(s, g) != uint32(n) {
			t.Fatalf("Draws = %d, want %d", Draws(s, g), n)
		}
		for i := uint8(0); i < n; i++ {
			h.Reverse()
		}
		g.Rewind(uint64(n))
		if g != s || h != s {
			t.Fatalf("Rewind(%d) = %+v, Reverse x%d = %+v, want %+v", n, g, n, h, s)
		}
	})
}
