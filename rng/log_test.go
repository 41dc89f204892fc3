package rng

import (
	"math"
	"testing"
)

// ulps returns the distance in units in the last place between two finite
// float64 values of the same sign.
func ulps(a, b float64) uint64 {
	x, y := math.Float64bits(a), math.Float64bits(b)
	if (x^y)>>63 != 0 && a != b { // different signs: count through zero
		return (x &^ (1 << 63)) + (y &^ (1 << 63))
	}
	if x > y {
		return x - y
	}
	return y - x
}

// refLog is math.Log, except for subnormal x, where Go's amd64 math.Log is
// wrong (it does not normalize them; golang/go#56600). There it computes
// log(x) = log(m) + e*ln2 with x = m*2^e, m in [1, 2), ln2 split in two.
func refLog(x float64) float64 {
	if x >= 0x1p-1022 || x <= 0 {
		return math.Log(x)
	}
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [0.5, 1)
	m, e := frac*2, float64(exp-1)
	return float64(e*ln2Hi) + (float64(e*ln2Lo) + math.Log(m))
}

func checkLogULP(t *testing.T, x float64, exact *int) {
	t.Helper()
	got, want := Log(x), refLog(x)
	if got == want {
		*exact++
		return
	}
	if d := ulps(got, want); d > 1 {
		t.Fatalf("Log(%g [%#016x]) = %g [%#016x], reference = %g [%#016x]: %d ulp",
			x, math.Float64bits(x), got, math.Float64bits(got), want, math.Float64bits(want), d)
	}
}

func TestLogMatchesMathLog(t *testing.T) {
	n := 600_000 // 5 cases each
	if testing.Short() {
		n = 100_000
	}
	r := sm(3)
	exact, total := 0, 0
	for i := 0; i < n; i++ {
		w := r.next()
		// Any positive finite float64 (bit patterns below +Inf), including
		// subnormals.
		checkLogULP(t, math.Float64frombits(w%0x7ff0000000000000+1), &exact)
		// The values Uniform produces.
		checkLogULP(t, toUniform(uint32(w)), &exact)
		// Subnormals.
		checkLogULP(t, math.Float64frombits(w>>12|1), &exact)
		// Uniform in (0, 1] with full mantissa, and close to 1, where the
		// result is tiny.
		checkLogULP(t, float64(w>>11+1)*0x1p-53, &exact)
		checkLogULP(t, 1+float64(int64(w)>>30)*0x1p-52, &exact)
		total += 5
	}
	t.Logf("Log == reference exactly in %d of %d cases (rest within 1 ulp)", exact, total)
}

func TestLogSpecial(t *testing.T) {
	if l := Log(1); l != 0 || math.Signbit(l) {
		t.Errorf("Log(1) = %g, want +0", l)
	}
	if l := Log(math.Inf(1)); !math.IsInf(l, 1) {
		t.Errorf("Log(+Inf) = %g", l)
	}
	for _, x := range []float64{0, math.Copysign(0, -1)} {
		if l := Log(x); !math.IsInf(l, -1) {
			t.Errorf("Log(%g) = %g, want -Inf", x, l)
		}
	}
	for _, x := range []float64{-1, -math.SmallestNonzeroFloat64, math.Inf(-1), math.NaN()} {
		if l := Log(x); !math.IsNaN(l) {
			t.Errorf("Log(%g) = %g, want NaN", x, l)
		}
	}
	for _, c := range []struct{ x, want float64 }{
		{math.E, 1},
		{2, math.Ln2},
		{0.5, -math.Ln2},
		{math.SmallestNonzeroFloat64, -744.4400719213812},
		{math.MaxFloat64, 709.782712893384},
	} {
		if l := Log(c.x); ulps(l, c.want) > 1 {
			t.Errorf("Log(%g) = %.17g, want %.17g", c.x, l, c.want)
		}
	}
	// Exact powers of two give k*ln2 with ln2 split in two.
	for k := -1074; k <= 1023; k++ {
		x := math.Ldexp(1, k)
		if l, m := Log(x), refLog(x); ulps(l, m) > 1 {
			t.Fatalf("Log(2^%d) = %.17g, reference = %.17g", k, l, m)
		}
	}
}
