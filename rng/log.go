package rng

import "math"

// Coefficients of FreeBSD /usr/src/lib/msun/src/e_log.c (fdlibm), as in Go's
// math/log.go.
const (
	ln2Hi = 6.93147180369123816490e-01 /* 3fe62e42 fee00000 */
	ln2Lo = 1.90821492927058770002e-10 /* 3dea39ef 35793c76 */
	logL1 = 6.666666666666735130e-01   /* 3FE55555 55555593 */
	logL2 = 3.999999999940941908e-01   /* 3FD99999 9997FA04 */
	logL3 = 2.857142874366239149e-01   /* 3FD24924 94229359 */
	logL4 = 2.222219843214978396e-01   /* 3FCC71C5 1D8E78AF */
	logL5 = 1.818357216161805012e-01   /* 3FC74664 96CB03DE */
	logL6 = 1.531383769920937332e-01   /* 3FC39A09 D078C69F */
	logL7 = 1.479819860511658591e-01   /* 3FC2F112 DF3E5244 */

	sqrt2Over2Bits = 0x3fe6a09e667f3bcd // math.Float64bits(math.Sqrt2 / 2)
)

// Log returns the natural logarithm of x, computed with portable IEEE-754
// float64 arithmetic only, so that it gives the same bits on every platform
// and on a GPU (see the package documentation).
//
// It is the fdlibm/FreeBSD e_log.c algorithm that Go's pure-Go math.log uses:
// x = 2^k * (1+f) with sqrt(2)/2 <= 1+f < sqrt(2) (obtained from the bits of
// x with integer arithmetic, subnormals first scaled by 2^52), s = f/(2+f), a degree-14 even
// polynomial R(s), and log(x) = k*ln2_hi - ((f*f/2 - (s*(f*f/2+R) +
// k*ln2_lo)) - f). Every product that feeds an addition is explicitly
// rounded, so no fused multiply-add can change the result. The error is
// below 1 ulp; it agrees with math.Log to within 1 ulp (and nearly always
// exactly), except for subnormal x on amd64, where math.Log is wrong
// (golang/go#56600) and Log is right.
//
// Special cases are as for math.Log:
//
//	Log(+Inf) = +Inf
//	Log(0) = -Inf (for +0 and -0)
//	Log(x < 0) = NaN
//	Log(NaN) = NaN
//	Log(1) = +0 exactly
func Log(x float64) float64 {
	b := math.Float64bits(x)
	k := 0
	if b-(1<<52) >= 0x7ff0000000000000-(1<<52) {
		// Not a positive normal number.
		switch {
		case x != x || b == 0x7ff0000000000000: // NaN or +Inf
			return x
		case x < 0:
			return math.NaN()
		case x == 0:
			return math.Inf(-1)
		}
		// Subnormal: scale into the normal range (exact).
		b = math.Float64bits(x * (1 << 52))
		k = -52
	}

	// Reduce: x = f1 * 2^k with sqrt(2)/2 <= f1 < sqrt(2). This is exactly
	// what math.log's Frexp followed by "if f1 < Sqrt2/2 { f1 *= 2; k-- }"
	// gives, without the data-dependent branch: subtracting the bits of
	// sqrt(2)/2 borrows from the exponent field exactly when the mantissa
	// is below that of sqrt(2)/2.
	e := int64(b-sqrt2Over2Bits) >> 52
	k += int(e)
	f1 := math.Float64frombits(b - uint64(e)<<52)
	f := f1 - 1
	kf := float64(k)

	// Compute. The float64() conversions forbid FMA contraction.
	s := f / (2 + f)
	s2 := s * s
	s4 := s2 * s2
	t1 := float64(s2 * (logL1 + float64(s4*(logL3+float64(s4*(logL5+float64(s4*logL7)))))))
	t2 := float64(s4 * (logL2 + float64(s4*(logL4+float64(s4*logL6)))))
	r := t1 + t2
	hfsq := float64(0.5 * f * f)
	return float64(kf*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(kf*ln2Lo))) - f)
}
