// Package rng provides the per-LP random number generator of the warped Time
// Warp kernel: a reversible, curand-compatible XORWOW generator and a few
// distributions built on it.
//
// # Purpose
//
// Every logical process (LP) owns one [XORWOW] value. It is a plain value
// (24 bytes, no pointers), so the kernel saves it by copying it together with
// the rest of the LP state and restores it by copying it back. For reverse
// computation the kernel instead rolls the generator back by calling
// [XORWOW.Reverse] once per draw that the forward event handler took;
// [Draws] tells how many draws separate two states.
//
// # curand compatibility
//
// [XORWOW.Next] is exactly curand() for a curandStateXORWOW_t (the d and v[5]
// fields), and [FromSeed64] is exactly the state curand_init(seed, 0, 0, &st)
// produces (subsequence 0, offset 0, so no skip-ahead). [New] derives the
// 64-bit curand seed from (global seed, LP id) with a splitmix64-style mixer
// and then applies [FromSeed64]. A GPU backend that implements the same
// mixer (see [Seed64]) and the same distributions gets bit-identical streams.
//
// The distributions here are NOT curand's (curand_uniform_double,
// curand_log_normal and so on use other formulas); they are defined by this
// package and documented on each method together with the number of raw
// draws each takes.
//
// # Floating-point rule: portable arithmetic, no FMA
//
// Every floating-point result in this package must be reproducible bit for
// bit on a GPU. Therefore:
//
//   - Distributions use only IEEE-754 float64 +, -, *, / (correctly rounded on
//     every platform) and conversions between uint32/uint64/int and float64.
//   - No math.Log, math.Exp or other library transcendental is used: Go's
//     amd64 math.Log is assembly and can differ in the last bit from CUDA's
//     log (it is also wrong for subnormal inputs, golang/go#56600). [Log] is
//     a pure-arithmetic port of the fdlibm/FreeBSD algorithm that Go's
//     portable math.log uses.
//   - No fused multiply-add. The Go specification allows an implementation to
//     fuse x*y+z into one FMA (Go does so for example on arm64, ppc64le,
//     s390x and on amd64 with GOAMD64=v3). An explicit conversion float64(x*y) forces the
//     product to be rounded and forbids the fusion, so every product that
//     feeds an addition or subtraction in this package is wrapped in an
//     explicit float64() conversion. Keep it so when editing. The CUDA side
//     must likewise be compiled with -fmad=false (or use __dmul_rn/__dadd_rn),
//     and C reference code with -ffp-contract=off.
//
// testdata/xorwow_ref.c is a C reference of the generator, the seeding, [Log]
// and the distributions; the known-answer tests were produced with it.
//
// # Reversal
//
// The XORWOW step is a bijection on its state and can be undone from the
// current state alone: the old v[1..4] are the new v[0..3], the xorshift
// terms are inverted with a few shift-xor steps, and d is decremented by
// [Weyl]. [XORWOW.Reverse] undoes one [XORWOW.Next]; [XORWOW.Rewind] undoes n.
// Every distribution method is a deterministic function of the raw draws it
// takes, so undoing a call means calling Reverse once per draw it took.
// Because d advances by exactly [Weyl] per draw, [Draws](before, after)
// recovers that count without any bookkeeping.
//
// Raw draws (Next steps) per call:
//
//	Next, Uniform, Range, Exponential   exactly 1
//	Poisson(mean), mean < PTRSMean       k+1 for a result k (mean+1 on average);
//	                                     0 when mean <= 0 or NaN
//	Poisson(mean), mean >= PTRSMean      2 per attempt, about 2.2 on average
//	Advance(n), Rewind(n)                n forwards, n backwards
//
// Copying the state (save/restore) and Reverse are interchangeable ways of
// rolling back; they give identical states.
package rng

import "math"

// Weyl is the Weyl-sequence increment added to XORWOW.D at each step
// (362437, as in curand).
const Weyl = 362437

// weylInverse is the multiplicative inverse of Weyl modulo 2^32
// (Weyl*weylInverse == 1 mod 2^32).
const weylInverse = 945708813

// XORWOW is the state of one curand-compatible XORWOW generator: the d and
// v[5] fields of curandStateXORWOW_t. It is a plain value: copying it saves it
// and assigning the copy back restores it. The zero value is a valid but poor
// generator state (V all zero makes the xorshift part stay zero); use [New]
// or [FromSeed64], which never produce an all-zero V.
type XORWOW struct {
	// D is the Weyl counter; it advances by Weyl per draw.
	D uint32
	// V is the xorshift state.
	V [5]uint32
}

// splitmix64 constants.
const (
	golden = 0x9e3779b97f4a7c15
	mixM1  = 0xbf58476d1ce4e5b9
	mixM2  = 0x94d049bb133111eb
)

// mix64 is the splitmix64 finalizer (a bijection on uint64 with full
// avalanche).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * mixM1
	z = (z ^ (z >> 27)) * mixM2
	return z ^ (z >> 31)
}

// Seed64 returns the 64-bit curand seed that [New] uses for (seed, stream):
//
//	Seed64(seed, stream) = mix64(mix64(seed + 0x9e3779b97f4a7c15) ^ (stream * 0x9e3779b97f4a7c15))
//
// where mix64 is the splitmix64 finalizer
//
//	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
//	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
//	z = z ^ (z >> 31)
//
// (all arithmetic mod 2^64). For a fixed seed it is a bijection of stream,
// so distinct streams of one seed never share a curand seed, and a one-bit
// change in either input changes about half of the output bits.
func Seed64(seed, stream uint64) uint64 {
	return mix64(mix64(seed+golden) ^ (stream * golden))
}

// New returns the generator of stream (normally the LP id) under the global
// simulation seed: FromSeed64(Seed64(seed, stream)). The same inputs always
// give the same state; neighbouring streams or seeds give unrelated states.
func New(seed, stream uint64) XORWOW {
	return FromSeed64(Seed64(seed, stream))
}

// FromSeed64 returns the state that curand_init(s, 0, 0, &state) gives a
// curandStateXORWOW_t (subsequence 0, offset 0: only the seed scramble, no
// skip-ahead). V is never all zero: V[0] and V[1] cannot both be zero.
func FromSeed64(s uint64) XORWOW {
	s0 := uint32(s) ^ 0xaad26b49
	s1 := uint32(s>>32) ^ 0xf7dcefdd
	t0 := 1099087573 * s0
	t1 := 2591861531 * s1
	return XORWOW{
		D: 6615241 + t1 + t0,
		V: [5]uint32{
			123456789 + t0,
			362436069 ^ t0,
			521288629 + t1,
			88675123 ^ t1,
			5783321 + t0,
		},
	}
}

// Next advances the generator by one step and returns the next 32-bit output.
// It is exactly curand() for curandStateXORWOW_t:
//
//	t = v[0] ^ (v[0] >> 2)
//	v[0..3] = v[1..4]
//	v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))
//	d += 362437
//	return v[4] + d
func (g *XORWOW) Next() uint32 {
	// Written as sequential single-word moves on purpose: this form stays
	// within the inlining budget (cost 80 of 80 with Go 1.26) and, unlike a
	// parallel assignment or copy, is not merged into a 16-byte move whose
	// reload would defeat store forwarding when Next is called in a loop.
	t := g.V[0]
	t ^= t >> 2
	g.V[0] = g.V[1]
	g.V[1] = g.V[2]
	g.V[2] = g.V[3]
	x := g.V[4]
	g.V[3] = x
	x ^= x<<4 ^ t ^ t<<1
	g.V[4] = x
	g.D += Weyl
	return x + g.D
}

// Reverse undoes one call of [XORWOW.Next] (or one draw of any distribution
// method), using only the current state. Reverse after Next restores the
// state exactly, and Next after Reverse does too.
func (g *XORWOW) Reverse() {
	// After Next, V[3] is the old v[4] and V[4] = old4 ^ old4<<4 ^ t ^ t<<1,
	// so u = t ^ t<<1 below. (Kept within the inlining budget: cost 78 of 80
	// with Go 1.26; check with go build -gcflags=-m=2 after editing.)
	u := g.V[4] ^ g.V[3] ^ g.V[3]<<4
	// Invert u = t ^ t<<1: t = u ^ u<<1 ^ u<<2 ^ ... ^ u<<31
	// (shifts 1, 2, 4, 8, 16; a loop is cheaper for the inliner).
	for s := uint(1); s < 32; s += s {
		u ^= u << s
	}
	// Invert t = v0 ^ v0>>2: v0 = t ^ t>>2 ^ t>>4 ^ ... ^ t>>30.
	u ^= u >> 2
	u ^= u >> 4
	u ^= u >> 8
	u ^= u >> 16
	copy(g.V[1:], g.V[:4])
	g.V[0] = u
	g.D -= Weyl
}

// Advance performs n steps, exactly like n calls of [XORWOW.Next] whose
// outputs are discarded. It takes time proportional to n (the state is kept
// in registers, a nanosecond or two per step); there is no skip-ahead.
func (g *XORWOW) Advance(n uint64) {
	v0, v1, v2, v3, v4 := g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
	for i := n; i > 0; i-- {
		t := v0 ^ v0>>2
		v0, v1, v2, v3 = v1, v2, v3, v4
		v4 ^= v4<<4 ^ t ^ t<<1
	}
	g.V = [5]uint32{v0, v1, v2, v3, v4}
	g.D += uint32(n) * Weyl
}

// Rewind undoes n steps, exactly like n calls of [XORWOW.Reverse]. It takes
// time proportional to n.
func (g *XORWOW) Rewind(n uint64) {
	v0, v1, v2, v3, v4 := g.V[0], g.V[1], g.V[2], g.V[3], g.V[4]
	for i := n; i > 0; i-- {
		u := v4 ^ v3 ^ v3<<4
		u ^= u << 1
		u ^= u << 2
		u ^= u << 4
		u ^= u << 8
		u ^= u << 16
		u ^= u >> 2
		u ^= u >> 4
		u ^= u >> 8
		u ^= u >> 16
		v0, v1, v2, v3, v4 = u, v0, v1, v2, v3
	}
	g.V = [5]uint32{v0, v1, v2, v3, v4}
	g.D -= uint32(n) * Weyl
}

// Draws returns the number of steps that lead from state from to state to,
// modulo 2^32, computed from the Weyl counter alone:
// (to.D - from.D) * Weyl^-1 mod 2^32. It does not check that to is actually
// reachable from from. If to lies n steps before from (that is, to was
// reached by n Reverse calls) the result is 2^32-n, so int32(Draws(from, to))
// gives the signed distance for |n| < 2^31.
//
// Typical use in reverse computation: remember before := g when an event
// handler starts (only before.D matters, so storing the 4-byte D and passing
// XORWOW{D: d} works too), and roll back with
// g.Rewind(uint64(Draws(before, g))).
func Draws(from, to XORWOW) uint32 {
	return (to.D - from.D) * weylInverse
}

// Uniform returns a uniform float64 in (0, 1] from exactly one draw x:
//
//	(float64(x) + 1) * 0x1p-32
//
// The result is exact (a multiple of 2^-32); it is never 0, so Log(Uniform())
// is always finite, and it is 1 when x == 0xffffffff.
func (g *XORWOW) Uniform() float64 {
	return toUniform(g.Next())
}

// toUniform maps a raw draw to (0, 1]; exact.
func toUniform(x uint32) float64 {
	return (float64(x) + 1) * 0x1p-32
}

// Range returns a uniform integer in [lo, hi] (both inclusive) from exactly
// one draw x, by the multiply-shift method:
//
//	lo + (uint64(x) * (hi - lo + 1)) >> 32
//
// The span hi-lo+1 must be at least 1 and at most 2^32; Range panics if
// hi < lo or the span exceeds 2^32, so that every call takes exactly one
// draw. With span 2^32 the result is lo + x. The bias of the method is at
// most span/2^32 relative, which is negligible for small spans. lo == hi
// returns lo and still takes one draw.
func (g *XORWOW) Range(lo, hi uint64) uint64 {
	if hi < lo || hi-lo > 1<<32-1 {
		panicRange(lo, hi)
	}
	return lo + (uint64(g.Next())*(hi-lo+1))>>32
}

// panicRange is kept out of line so that Range stays cheap.
//
//go:noinline
func panicRange(lo, hi uint64) {
	if hi < lo {
		panic("rng: Range(lo, hi) with hi < lo")
	}
	panic("rng: Range(lo, hi) span hi-lo+1 exceeds 2^32; use two calls or Next directly")
}

// Exponential returns an exponentially distributed value with the given mean
// from exactly one draw:
//
//	mean * (0 - Log(Uniform()))
//
// The result is in [0, 22.1807*mean] (finite, since Uniform is never 0), and
// +0 when the draw gives Uniform() == 1. A negative mean gives a non-positive
// result; no check is made.
func (g *XORWOW) Exponential(mean float64) float64 {
	// The explicit conversion rounds the product, so that a caller's addition is never
	// fused with it (Go may fuse a*b+c on arm64, ppc64 or GOAMD64=v3; CUDA code is compiled
	// without fusion): draws are bit-identical on every platform and backend.
	return float64(mean * (0 - Log(toUniform(g.Next()))))
}

// PTRSMean is the mean from which Poisson distributions are drawn by transformed
// rejection (PTRS) rather than by counting arrivals.
const PTRSMean = 10

// Poisson returns a Poisson-distributed count with the given mean; see [Poisson] for the
// method and the draw counts. For a mean that is used often, build a [Poisson] sampler
// once with [NewPoisson]: it precomputes what each draw needs.
//
// A mean <= 0 or NaN returns 0 and takes no draw. Poisson panics if mean is +Inf.
func (g *XORWOW) Poisson(mean float64) uint64 {
	if mean >= PTRSMean {
		p := NewPoisson(mean)
		return p.Draw(g)
	}
	return g.poissonCount(mean)
}

// poissonCount counts the arrivals of a unit-rate Poisson process in [0, mean]: with
// E_i = 0 - Log(Uniform()) it returns the largest k such that E_1 + ... + E_k <= mean
// (running sum accumulated left to right in float64). A result k takes k+1 draws.
func (g *XORWOW) poissonCount(mean float64) uint64 {
	if !(mean > 0) {
		return 0
	}
	if math.IsInf(mean, 1) {
		panic("rng: Poisson with infinite mean")
	}
	var k uint64
	sum := 0.0
	for {
		sum = sum - Log(toUniform(g.Next()))
		if sum > mean {
			return k
		}
		k++
	}
}

// Poisson draws from a Poisson distribution of fixed mean.
//
// Below [PTRSMean] it counts arrivals: a result k takes exactly k+1 draws. From
// [PTRSMean] on it uses Hörmann's transformed rejection with squeeze (PTRS; W. Hörmann,
// "The transformed rejection method for generating Poisson random variables", 1993, as
// numpy implements it): each attempt takes exactly 2 draws and about 1.1 attempts are
// needed on average, whatever the mean. Both are deterministic functions of the draws,
// written in the package's portable arithmetic (Log, IEEE sqrt and floor, no fused
// multiply-add), so a CUDA port gives the same results.
type Poisson struct {
	mean float64
	// PTRS constants, set when mean >= PTRSMean.
	loglam, a, b, vr, logInvalpha float64
}

// NewPoisson returns a sampler for the given mean. A mean <= 0 or NaN always gives 0
// without a draw; NewPoisson panics if mean is +Inf.
func NewPoisson(mean float64) Poisson {
	if math.IsInf(mean, 1) {
		panic("rng: Poisson with infinite mean")
	}
	p := Poisson{mean: mean}
	if mean >= PTRSMean {
		slam := math.Sqrt(mean)
		p.loglam = Log(mean)
		p.b = 0.931 + float64(2.53*slam)
		p.a = -0.059 + float64(0.02483*p.b)
		p.vr = 0.9277 - 3.6224/(p.b-2)
		p.logInvalpha = Log(1.1239 + 1.1328/(p.b-3.4))
	}
	return p
}

// Mean returns the sampler's mean.
func (p *Poisson) Mean() float64 { return p.mean }

// PTRS returns the constants of the transformed-rejection method that Draw uses from
// PTRSMean on (all zero below it, where they are unused), for batch kernels that reproduce
// the sampler on other hardware without recomputing them per draw.
func (p *Poisson) PTRS() (loglam, a, b, vr, logInvalpha float64) {
	return p.loglam, p.a, p.b, p.vr, p.logInvalpha
}

// Draw returns one Poisson-distributed count, drawing from g.
func (p *Poisson) Draw(g *XORWOW) uint64 {
	if !(p.mean >= PTRSMean) {
		return g.poissonCount(p.mean)
	}
	for {
		u := toUniform(g.Next()) - 0.5 // (-0.5, 0.5]
		v := toUniform(g.Next())       // (0, 1]
		us := 0.5 - math.Abs(u)        // [0, 0.5)
		if us == 0 {
			continue // u == 0.5 exactly: no k; reject (probability 2^-32)
		}
		k := math.Floor(float64((2*p.a/us+p.b)*u) + p.mean + 0.43)
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		if us >= 0.07 && v <= p.vr {
			return uint64(k)
		}
		lhs := Log(v) + p.logInvalpha - Log(p.a/(us*us)+p.b)
		rhs := -p.mean + float64(k*p.loglam) - LogFactorial(k)
		if lhs <= rhs {
			return uint64(k)
		}
	}
}

// loggamCoef are the Stirling series coefficients of numpy's random_loggam.
var loggamCoef = [10]float64{
	8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
	-5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
	6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
	-1.39243221690590e+00,
}

// LogFactorial returns log(k!) = loggamma(k+1) for a whole number k >= 0, by the Stirling
// series (shifted up to 7 for small k), in portable arithmetic.
// It is exported as the reference for batch kernels that reproduce the Poisson sampler on
// other hardware (for example PCS's CUDA text).
func LogFactorial(k float64) float64 {
	x := k + 1
	if x == 1 || x == 2 {
		return 0
	}
	n := 0.0
	if x < 7 {
		n = 7 - x
	}
	x0 := x + n
	x2 := (1 / x0) * (1 / x0)
	gl0 := loggamCoef[9]
	for i := 8; i >= 0; i-- {
		gl0 = float64(gl0*x2) + loggamCoef[i]
	}
	const halfLog2Pi = 0.5 * 1.8378770664093453
	gl := gl0/x0 + halfLog2Pi + float64((x0-0.5)*Log(x0)) - x0
	for ; n > 0; n-- {
		x0--
		gl -= Log(x0)
	}
	return gl
}
