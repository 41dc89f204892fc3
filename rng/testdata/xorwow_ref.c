/*
 * Reference implementation used to produce the known-answer values in
 * rng/kat_test.go. It is NOT part of the Go build (testdata is ignored by
 * the go tool). Regenerate with:
 *
 *   gcc -O2 -std=c99 -ffp-contract=off -o /tmp/xorwow_ref rng/testdata/xorwow_ref.c -lm
 *   /tmp/xorwow_ref
 *
 * The XORWOW step and the seed scramble are copied from curand_kernel.h
 * (curand() for curandStateXORWOW_t and _curand_init_scratch with
 * subsequence 0 and offset 0). The distributions and the logarithm are the
 * portable definitions used by package rng (fdlibm/FreeBSD e_log.c as in
 * Go's pure-Go math.log), written so that no step can be fused: compile
 * with -ffp-contract=off (gcc) or -fmad=false / __dmul_rn/__dadd_rn (nvcc).
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef struct { uint32_t d; uint32_t v[5]; } xorwow;

static uint32_t next(xorwow *s) {
	uint32_t t;
	t = (s->v[0] ^ (s->v[0] >> 2));
	s->v[0] = s->v[1];
	s->v[1] = s->v[2];
	s->v[2] = s->v[3];
	s->v[3] = s->v[4];
	s->v[4] = (s->v[4] ^ (s->v[4] << 4)) ^ (t ^ (t << 1));
	s->d += 362437;
	return s->v[4] + s->d;
}

static xorwow from_seed64(uint64_t seed) {
	xorwow s;
	uint32_t s0 = ((uint32_t)seed) ^ 0xaad26b49UL;
	uint32_t s1 = (uint32_t)(seed >> 32) ^ 0xf7dcefddUL;
	uint32_t t0 = 1099087573UL * s0;
	uint32_t t1 = 2591861531UL * s1;
	s.d = 6615241 + t1 + t0;
	s.v[0] = 123456789UL + t0;
	s.v[1] = 362436069UL ^ t0;
	s.v[2] = 521288629UL + t1;
	s.v[3] = 88675123UL ^ t1;
	s.v[4] = 5783321UL + t0;
	return s;
}

/* Seed64 and New of package rng: splitmix64 finalizer, mixed twice. */
static uint64_t mix64(uint64_t z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
static uint64_t seed64(uint64_t seed, uint64_t stream) {
	return mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ (stream * 0x9e3779b97f4a7c15ULL));
}
static xorwow new_xorwow(uint64_t seed, uint64_t stream) { return from_seed64(seed64(seed, stream)); }

static uint64_t bits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
static double frombits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }

/* Natural logarithm, fdlibm e_log.c as in Go's math.log; no FMA. */
static double port_log(double x) {
	const double Ln2Hi = 6.93147180369123816490e-01;
	const double Ln2Lo = 1.90821492927058770002e-10;
	const double L1 = 6.666666666666735130e-01;
	const double L2 = 3.999999999940941908e-01;
	const double L3 = 2.857142874366239149e-01;
	const double L4 = 2.222219843214978396e-01;
	const double L5 = 1.818357216161805012e-01;
	const double L6 = 1.531383769920937332e-01;
	const double L7 = 1.479819860511658591e-01;
	uint64_t b = bits(x);
	int64_t e, ki = 0;
	double f1, f, k, s, s2, s4, t1, t2, R, hfsq;
	if (b - (1ULL << 52) >= 0x7FF0000000000000ULL - (1ULL << 52)) {
		/* not a positive normal number */
		if (x != x || b == 0x7FF0000000000000ULL) return x;   /* NaN, +Inf */
		if (x < 0) return frombits(0x7FF8000000000001ULL);     /* NaN */
		if (x == 0) return frombits(0xFFF0000000000000ULL);    /* -Inf */
		x *= 4503599627370496.0; /* subnormal: times 2^52, exact */
		b = bits(x);
		ki = -52;
	}
	/* x = f1 * 2^ki with sqrt(2)/2 <= f1 < sqrt(2), branch-free; the same as
	 * frexp followed by "if (f1 < sqrt(2)/2) { f1 *= 2; ki--; }". */
	e = (int64_t)(b - 0x3FE6A09E667F3BCDULL) >> 52; /* arithmetic shift */
	ki += e;
	f1 = frombits(b - ((uint64_t)e << 52));
	f = f1 - 1;
	k = (double)ki;
	s = f / (2 + f);
	s2 = s * s;
	s4 = s2 * s2;
	t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
	t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
	R = t1 + t2;
	hfsq = 0.5 * f * f;
	return k * Ln2Hi - ((hfsq - (s * (hfsq + R) + k * Ln2Lo)) - f);
}

static double uniform(xorwow *s) { return ((double)next(s) + 1.0) * 0x1p-32; }
static uint64_t range(xorwow *s, uint64_t lo, uint64_t hi) {
	return lo + (((uint64_t)next(s) * (hi - lo + 1)) >> 32);
}
static double exponential(xorwow *s, double mean) { return mean * (0.0 - port_log(uniform(s))); }
static uint64_t poisson(xorwow *s, double mean) {
	uint64_t k = 0;
	double sum = 0;
	if (!(mean > 0)) return 0;
	for (;;) {
		sum = sum - port_log(uniform(s));
		if (sum > mean) return k;
		k++;
	}
}

/* PTRS (Hoermann 1993) for mean >= 10, as rng.Poisson.Draw. */
static const double loggam_coef[10] = {
	8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
	-5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
	6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
	-1.39243221690590e+00 };
static double log_factorial(double k) {
	double x = k + 1, n = 0, x0, x2, gl0, gl;
	int i;
	if (x == 1 || x == 2) return 0;
	if (x < 7) n = 7 - x;
	x0 = x + n;
	x2 = (1 / x0) * (1 / x0);
	gl0 = loggam_coef[9];
	for (i = 8; i >= 0; i--) gl0 = gl0 * x2 + loggam_coef[i];
	gl = gl0 / x0 + 0.5 * 1.8378770664093453 + (x0 - 0.5) * port_log(x0) - x0;
	for (; n > 0; n--) { x0 -= 1; gl -= port_log(x0); }
	return gl;
}
static uint64_t poisson_ptrs(xorwow *s, double mean) {
	double slam = sqrt(mean), loglam = port_log(mean);
	double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
	double vr = 0.9277 - 3.6224 / (b - 2), log_invalpha = port_log(1.1239 + 1.1328 / (b - 3.4));
	for (;;) {
		double u = uniform(s) - 0.5, v = uniform(s), us = 0.5 - fabs(u), k;
		if (us == 0) continue;
		k = floor((2 * a / us + b) * u + mean + 0.43);
		if (k < 0 || (us < 0.013 && v > us)) continue;
		if (us >= 0.07 && v <= vr) return (uint64_t)k;
		if (port_log(v) + log_invalpha - port_log(a / (us * us) + b) <=
		    -mean + k * loglam - log_factorial(k)) return (uint64_t)k;
	}
}

static void print_seq(const char *name, xorwow s) {
	int i;
	printf("%s: d=%u v={%u,%u,%u,%u,%u}\n", name, s.d, s.v[0], s.v[1], s.v[2], s.v[3], s.v[4]);
	for (i = 0; i < 10; i++) printf("  0x%08x,\n", next(&s));
	printf("  after 10: d=%u v={%u,%u,%u,%u,%u}\n", s.d, s.v[0], s.v[1], s.v[2], s.v[3], s.v[4]);
}

int main(void) {
	xorwow lit = { 6615241, { 123456789, 362436069, 521288629, 88675123, 5783321 } };
	xorwow s;
	int i;
	print_seq("FromSeed64(0)", from_seed64(0));
	print_seq("FromSeed64(0x0123456789abcdef)", from_seed64(0x0123456789abcdefULL));
	print_seq("literal", lit);
	printf("Seed64(42, 7) = 0x%016llx, Seed64(0, 0) = 0x%016llx\n",
	       (unsigned long long)seed64(42, 7), (unsigned long long)seed64(0, 0));
	print_seq("New(42, 7)", new_xorwow(42, 7));

	s = from_seed64(42);
	printf("Uniform, FromSeed64(42):\n");
	for (i = 0; i < 5; i++) printf("  0x%016llx,\n", (unsigned long long)bits(uniform(&s)));
	printf("Exponential(3.5), continuing:\n");
	for (i = 0; i < 5; i++) printf("  0x%016llx,\n", (unsigned long long)bits(exponential(&s, 3.5)));
	printf("Range(10, 20), continuing:\n");
	for (i = 0; i < 5; i++) printf("  %llu,\n", (unsigned long long)range(&s, 10, 20));
	printf("Poisson(4.25), continuing:\n");
	for (i = 0; i < 5; i++) printf("  %llu,\n", (unsigned long long)poisson(&s, 4.25));
	printf("Poisson(50) then Poisson(200) (PTRS), New(42, 7):\n");
	{
		xorwow p = new_xorwow(42, 7);
		for (i = 0; i < 5; i++) printf("  %llu,\n", (unsigned long long)poisson_ptrs(&p, 50));
		for (i = 0; i < 5; i++) printf("  %llu,\n", (unsigned long long)poisson_ptrs(&p, 200));
		printf("  final: d=%u v={%u,%u,%u,%u,%u}\n", p.d, p.v[0], p.v[1], p.v[2], p.v[3], p.v[4]);
	}
	printf("  final: d=%u v={%u,%u,%u,%u,%u}\n", s.d, s.v[0], s.v[1], s.v[2], s.v[3], s.v[4]);

	{
		static const double xs[] = { 1e-310, 5e-324, 0x1p-32, 0.1, 0.5, 0.70710678118654752440,
			0.9999999997671694, 1.0000000000000002, 2.0, 10.0, 1e300 };
		printf("Log:\n");
		for (i = 0; i < (int)(sizeof xs / sizeof xs[0]); i++)
			printf("  {0x%016llx, 0x%016llx},\n", (unsigned long long)bits(xs[i]),
			       (unsigned long long)bits(port_log(xs[i])));
	}
	return 0;
}
