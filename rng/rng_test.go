package rng

import (
	"math"
	"math/bits"
	"strings"
	"testing"
)

// sm is a splitmix64 stream used to make random test states quickly.
type sm uint64

func (s *sm) next() uint64 {
	*s += golden
	return mix64(uint64(*s))
}

func (s *sm) state() XORWOW {
	a, b, c := s.next(), s.next(), s.next()
	return XORWOW{uint32(a), [5]uint32{uint32(a >> 32), uint32(b), uint32(b >> 32), uint32(c), uint32(c >> 32)}}
}

// stepRef is a literal transcription of curand's step, used to check Next.
func stepRef(s *XORWOW) uint32 {
	t := s.V[0] ^ (s.V[0] >> 2)
	s.V[0] = s.V[1]
	s.V[1] = s.V[2]
	s.V[2] = s.V[3]
	s.V[3] = s.V[4]
	s.V[4] = (s.V[4] ^ (s.V[4] << 4)) ^ (t ^ (t << 1))
	s.D += 362437
	return s.V[4] + s.D
}

func TestWeylInverse(t *testing.T) {
	if Weyl*weylInverse%(1<<32) != 1 {
		t.Fatalf("Weyl*weylInverse mod 2^32 = %d", Weyl*weylInverse%(1<<32))
	}
}

func TestReverseRandomStates(t *testing.T) {
	n := 4_000_000
	if testing.Short() {
		n = 200_000
	}
	r := sm(1)
	for i := 0; i < n; i++ {
		s := r.state()
		g := s
		ref := s
		x := g.Next()
		if y := stepRef(&ref); x != y || g != ref {
			t.Fatalf("Next(%+v) = %#x, %+v; reference %#x, %+v", s, x, g, y, ref)
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
	}
}

func TestAdvanceRewindLong(t *testing.T) {
	const n = 1_000_000
	start := New(2024, 17)
	g := start
	g.Advance(n)
	// Advance must equal n single steps.
	h := start
	for i := 0; i < n; i++ {
		h.Next()
	}
	if g != h {
		t.Fatalf("Advance(%d) = %+v, %d Next calls give %+v", n, g, n, h)
	}
	if d := Draws(start, g); d != n {
		t.Fatalf("Draws after Advance(%d) = %d", n, d)
	}
	g.Rewind(n)
	if g != start {
		t.Fatalf("Rewind(Advance(%d)) = %+v, want %+v", n, g, start)
	}
	// Reverse n times must undo the same.
	for i := 0; i < n; i++ {
		h.Reverse()
	}
	if h != start {
		t.Fatalf("%d Reverse calls = %+v, want %+v", n, h, start)
	}
	// Rewind past the starting point and come back.
	g.Rewind(12345)
	if d := int32(Draws(start, g)); d != -12345 {
		t.Fatalf("int32(Draws) after Rewind(12345) = %d", d)
	}
	g.Advance(12345)
	if g != start {
		t.Fatalf("Advance(Rewind(12345)) = %+v, want %+v", g, start)
	}
	g.Advance(0)
	g.Rewind(0)
	if g != start {
		t.Fatal("Advance(0)/Rewind(0) changed the state")
	}
}

func TestDraws(t *testing.T) {
	r := sm(7)
	for i := 0; i < 1000; i++ {
		s := r.state()
		n := r.next() % 5000
		g := s
		g.Advance(n)
		if got := Draws(s, g); uint64(got) != n {
			t.Fatalf("Draws after %d steps = %d", n, got)
		}
		if got := int32(Draws(g, s)); int64(got) != -int64(n) {
			t.Fatalf("Draws backwards over %d steps = %d", n, got)
		}
	}
	// Huge counts wrap modulo 2^32.
	s := XORWOW{}
	var big uint64 = 3_000_000_000
	g := XORWOW{D: uint32(big * Weyl)}
	if got := Draws(s, g); got != 3_000_000_000 {
		t.Fatalf("Draws for 3e9 steps = %d", got)
	}
}

// draws returns how many draws f takes, and checks that Reverse called that
// many times restores the state.
func checkUndo(t *testing.T, name string, g *XORWOW, f func()) uint32 {
	t.Helper()
	before := *g
	f()
	n := Draws(before, *g)
	for i := uint32(0); i < n; i++ {
		g.Reverse()
	}
	if *g != before {
		t.Fatalf("%s: %d Reverse calls give %+v, want %+v", name, n, *g, before)
	}
	f() // redo, so the next call sees a fresh state
	return n
}

func TestUndoDistributions(t *testing.T) {
	g := New(99, 3)
	for i := 0; i < 10000; i++ {
		if n := checkUndo(t, "Uniform", &g, func() { g.Uniform() }); n != 1 {
			t.Fatalf("Uniform took %d draws", n)
		}
		if n := checkUndo(t, "Exponential", &g, func() { g.Exponential(2.5) }); n != 1 {
			t.Fatalf("Exponential took %d draws", n)
		}
		if n := checkUndo(t, "Range", &g, func() { g.Range(5, 9) }); n != 1 {
			t.Fatalf("Range took %d draws", n)
		}
		if n := checkUndo(t, "Range(lo==hi)", &g, func() { g.Range(7, 7) }); n != 1 {
			t.Fatalf("Range(7, 7) took %d draws", n)
		}
		var k uint64
		n := checkUndo(t, "Poisson", &g, func() { k = g.Poisson(3.7) })
		if uint64(n) != k+1 {
			t.Fatalf("Poisson returned %d after %d draws, want %d draws", k, n, k+1)
		}
	}
	// Rewind after a mixture.
	start := g
	for i := 0; i < 1000; i++ {
		g.Uniform()
		g.Exponential(1)
		g.Range(0, 1<<32-1)
		g.Poisson(12)
	}
	g.Rewind(uint64(Draws(start, g)))
	if g != start {
		t.Fatal("Rewind(Draws) after mixed draws did not restore the state")
	}
}

func TestUniform(t *testing.T) {
	g := New(1, 1)
	const n = 1_000_000
	sum := 0.0
	for i := 0; i < n; i++ {
		u := g.Uniform()
		if !(u > 0 && u <= 1) {
			t.Fatalf("Uniform() = %g, outside (0, 1]", u)
		}
		sum += u
	}
	if m := sum / n; math.Abs(m-0.5) > 0.002 {
		t.Fatalf("Uniform mean = %g, want 0.5", m)
	}
	// Extremes: raw draw 0 gives 2^-32, raw draw 2^32-1 gives exactly 1.
	for _, c := range []struct {
		x    uint32
		want float64
	}{{0, 0x1p-32}, {math.MaxUint32, 1}, {1 << 31, 0.5 + 0x1p-32}} {
		g := withNextOutput(New(5, 5), c.x)
		if u := g.Uniform(); u != c.want {
			t.Errorf("Uniform with draw %#x = %g, want %g", c.x, u, c.want)
		}
	}
}

// withNextOutput returns s with D adjusted so that the next raw draw is x.
func withNextOutput(s XORWOW, x uint32) XORWOW {
	h := s
	h.Next()
	s.D = x - h.V[4] - Weyl
	return s
}

func TestExponential(t *testing.T) {
	g := New(7, 0)
	const n = 1_000_000
	for _, mean := range []float64{1, 0.25, 40} {
		sum := 0.0
		for i := 0; i < n; i++ {
			e := g.Exponential(mean)
			if !(e >= 0 && e <= 22.19*mean) {
				t.Fatalf("Exponential(%g) = %g out of range", mean, e)
			}
			sum += e
		}
		// Standard error of the mean is mean/1000.
		if m := sum / n; math.Abs(m-mean) > 0.01*mean {
			t.Errorf("Exponential(%g) sample mean = %g", mean, m)
		}
	}
	// The draw giving Uniform() == 1 gives +0, not -0.
	h := withNextOutput(New(8, 8), math.MaxUint32)
	if e := h.Exponential(3); e != 0 || math.Signbit(e) {
		t.Errorf("Exponential at u=1 = %g (signbit %v), want +0", e, math.Signbit(e))
	}
	// The smallest draw gives the largest value, 32*ln2*mean.
	h = withNextOutput(New(8, 8), 0)
	if e, want := h.Exponential(1), 32*math.Ln2; math.Abs(e-want) > 1e-14 {
		t.Errorf("Exponential at u=2^-32 = %g, want %g", e, want)
	}
}

func TestPoisson(t *testing.T) {
	g := New(11, 12)
	n := 300_000
	if testing.Short() {
		n = 100_000
	}
	for _, mean := range []float64{0.3, 4.25, 9.99, 10, 30, 50, 200, 1e4} {
		sum, sum2 := 0.0, 0.0
		before := g
		var total uint64
		for i := 0; i < n; i++ {
			k := g.Poisson(mean)
			total += k + 1
			x := float64(k)
			sum += x
			sum2 += x * x
		}
		m := sum / float64(n)
		v := sum2/float64(n) - m*m
		// Tolerances are many standard errors wide.
		if math.Abs(m-mean) > 0.02*mean+0.005 {
			t.Errorf("Poisson(%g) sample mean = %g", mean, m)
		}
		if math.Abs(v-mean) > 0.05*mean+0.01 {
			t.Errorf("Poisson(%g) sample variance = %g", mean, v)
		}
		d := uint64(Draws(before, g))
		switch {
		case mean < PTRSMean && d != total:
			t.Errorf("Poisson(%g): %d draws, want sum(k+1) = %d", mean, d, total)
		case mean >= PTRSMean && (d%2 != 0 || d < 2*uint64(n) || d > 3*uint64(n)):
			t.Errorf("Poisson(%g): %d draws for %d samples, want an even number, about 2.2 per sample", mean, d, n)
		}
	}
	// Non-positive and NaN means take no draw.
	for _, mean := range []float64{0, -1, math.Copysign(0, -1), math.NaN(), math.Inf(-1)} {
		before := g
		if k := g.Poisson(mean); k != 0 || g != before {
			t.Errorf("Poisson(%g) = %d, state changed %v", mean, k, g != before)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Poisson(+Inf) did not panic")
			}
		}()
		g.Poisson(math.Inf(1))
	}()
}

func TestPoissonSamplerMatchesMethod(t *testing.T) {
	for _, mean := range []float64{0, 3, 10, 77.5} {
		g, h := New(5, 6), New(5, 6)
		p := NewPoisson(mean)
		if p.Mean() != mean {
			t.Fatalf("Mean() = %v", p.Mean())
		}
		for range 1000 {
			if a, b := g.Poisson(mean), p.Draw(&h); a != b || g != h {
				t.Fatalf("Poisson(%v): method %d, sampler %d", mean, a, b)
			}
		}
	}
}

func TestLogFactorial(t *testing.T) {
	for k := 0.0; k < 2000; k++ {
		want, _ := math.Lgamma(k + 1)
		if got := LogFactorial(k); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("LogFactorial(%v) = %v, want %v", k, got, want)
		}
	}
}

func TestRange(t *testing.T) {
	g := New(3, 4)
	var seen [11]int
	for i := 0; i < 110_000; i++ {
		x := g.Range(10, 20)
		if x < 10 || x > 20 {
			t.Fatalf("Range(10, 20) = %d", x)
		}
		seen[x-10]++
	}
	for i, c := range seen {
		if c < 9000 || c > 11000 {
			t.Errorf("Range(10, 20) gave %d %d times of 110000", i+10, c)
		}
	}
	// lo == hi: always lo, one draw.
	for _, lo := range []uint64{0, 5, math.MaxUint64} {
		before := g
		if x := g.Range(lo, lo); x != lo {
			t.Errorf("Range(%d, %d) = %d", lo, lo, x)
		}
		if Draws(before, g) != 1 {
			t.Errorf("Range(%d, %d) took %d draws", lo, lo, Draws(before, g))
		}
	}
	// Span 2^32: the raw draw itself, offset by lo.
	for _, lo := range []uint64{0, 1 << 40, math.MaxUint64 - (1<<32 - 1)} {
		h := g
		x := h.Next()
		if got := g.Range(lo, lo+(1<<32-1)); got != lo+uint64(x) {
			t.Errorf("Range(%d, %d+2^32-1) = %d, want %d", lo, lo, got, lo+uint64(x))
		}
	}
	// The extremes of the raw draw map to lo and hi.
	h := withNextOutput(g, 0)
	if x := h.Range(100, 199); x != 100 {
		t.Errorf("Range with draw 0 = %d, want 100", x)
	}
	h = withNextOutput(g, math.MaxUint32)
	if x := h.Range(100, 199); x != 199 {
		t.Errorf("Range with draw 2^32-1 = %d, want 199", x)
	}
	h = withNextOutput(g, math.MaxUint32)
	if x := h.Range(math.MaxUint64-3, math.MaxUint64); x != math.MaxUint64 {
		t.Errorf("Range near MaxUint64 with top draw = %d", x)
	}
	// Invalid ranges panic without drawing.
	for _, c := range [][2]uint64{{5, 4}, {0, 1 << 32}, {0, math.MaxUint64}, {7, 7 + 1<<32}} {
		before := g
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("Range(%d, %d) did not panic", c[0], c[1])
				} else if s, ok := r.(string); !ok || !strings.HasPrefix(s, "rng: Range") {
					t.Errorf("Range(%d, %d) panicked with %v", c[0], c[1], r)
				}
			}()
			g.Range(c[0], c[1])
		}()
		if g != before {
			t.Errorf("Range(%d, %d) drew before panicking", c[0], c[1])
		}
	}
}

func TestSeeding(t *testing.T) {
	// Deterministic.
	if a, b := New(123, 456), New(123, 456); a != b {
		t.Fatal("New is not deterministic")
	}
	if New(123, 456) != FromSeed64(Seed64(123, 456)) {
		t.Fatal("New != FromSeed64(Seed64)")
	}
	// Neighbouring streams and seeds give different states, and their
	// curand seeds and first outputs look unrelated: the mean Hamming
	// distance is close to half the bits.
	const n = 20000
	var hs, ho, hseed, hbit float64
	seen := make(map[XORWOW]bool, 2*n)
	for i := uint64(0); i < n; i++ {
		a, b := New(42, i), New(42, i+1)
		if a == b {
			t.Fatalf("New(42, %d) == New(42, %d)", i, i+1)
		}
		if New(i, 5) == New(i+1, 5) {
			t.Fatalf("New(%d, 5) == New(%d, 5)", i, i+1)
		}
		seen[a] = true
		seen[New(i, 0)] = true
		hs += float64(bits.OnesCount64(Seed64(42, i) ^ Seed64(42, i+1)))
		hseed += float64(bits.OnesCount64(Seed64(i, 9) ^ Seed64(i+1, 9)))
		hbit += float64(bits.OnesCount64(Seed64(i, i) ^ Seed64(i^1<<(i%64), i)))
		x, y := a.Next(), b.Next()
		ho += float64(bits.OnesCount32(x ^ y))
		for _, v := range [][5]uint32{a.V, b.V} {
			if v == [5]uint32{} {
				t.Fatal("all-zero V")
			}
		}
	}
	if len(seen) < 2*n-1 { // New(42, 0)... and New(i, 0) may share one state.
		t.Errorf("only %d distinct states among %d", len(seen), 2*n)
	}
	for _, c := range []struct {
		name       string
		sum, width float64
	}{
		{"Seed64 stream i vs i+1", hs, 64},
		{"Seed64 seed i vs i+1", hseed, 64},
		{"Seed64 one seed bit", hbit, 64},
		{"first output stream i vs i+1", ho, 32},
	} {
		if m := c.sum / n; math.Abs(m-c.width/2) > 0.5 {
			t.Errorf("%s: mean Hamming distance %g of %g bits", c.name, m, c.width)
		}
	}
	// FromSeed64 can never give an all-zero V: V[0] == 0 needs
	// t0 == -123456789 and V[1] == 0 needs t0 == 362436069.
	var zero uint32
	if zero-123456789 == 362436069 {
		t.Fatal("V[0] and V[1] can both be zero")
	}
}

func TestZeroValue(t *testing.T) {
	// The zero value is usable (only the Weyl part moves) and reversible.
	var g XORWOW
	if x := g.Next(); x != Weyl {
		t.Fatalf("zero state Next = %d", x)
	}
	g.Reverse()
	if g != (XORWOW{}) {
		t.Fatalf("zero state Reverse = %+v", g)
	}
}

// TestPoissonPTRS checks the exported transformed-rejection constants: zero where Draw
// counts arrivals, the sampler's own fields where it uses them.
func TestPoissonPTRS(t *testing.T) {
	for _, mean := range []float64{0, 3, PTRSMean - 1e-9, PTRSMean, 200, 1 << 40} {
		p := NewPoisson(mean)
		loglam, a, b, vr, li := p.PTRS()
		got := [5]float64{loglam, a, b, vr, li}
		want := [5]float64{p.loglam, p.a, p.b, p.vr, p.logInvalpha}
		if got != want {
			t.Fatalf("mean %v: PTRS() = %v, fields %v", mean, got, want)
		}
		if (mean >= PTRSMean) != (b != 0) {
			t.Fatalf("mean %v: b = %v, want it set exactly from PTRSMean on", mean, b)
		}
	}
}
