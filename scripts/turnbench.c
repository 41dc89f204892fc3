// turnbench: what taking turns on the cores costs, without the kernel. N processes each
// run work units (64 random read-modify-writes in an array of KIB KiB, about an event's
// worth) and, with YIELD 1, call sched_yield after every PER units, as a contended rank
// of a crowded node gives its core away after each short turn. It prints the units per
// second of all processes together (docs/PERFORMANCE.md, "Session 32").
//
//   gcc -O2 -o /tmp/turnbench scripts/turnbench.c
//   /tmp/turnbench N UNITS PER KIB YIELD     e.g. /tmp/turnbench 4 12000000 64 1024 1
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: turnbench N UNITS PER KIB YIELD\n");
		return 2;
	}
	int n = atoi(argv[1]), per = atoi(argv[3]), yield = atoi(argv[5]);
	long units = atol(argv[2]);
	size_t kib = (size_t)atol(argv[4]);
	if (n < 1 || per < 1 || kib < 1 || units < n) {
		fprintf(stderr, "turnbench: N, PER and KIB must be positive and UNITS at least N\n");
		return 2;
	}
	double t0 = now();
	for (int p = 0; p < n; p++) {
		if (fork() != 0) continue;
		size_t words = kib * 1024 / 8;
		uint64_t *a = malloc(words * 8), x = 88172645463325252ull + p, s = 0;
		if (a == NULL) _exit(1);
		for (size_t i = 0; i < words; i++) a[i] = i;
		for (long u = 0; u < units / n; u++) {
			for (int k = 0; k < 64; k++) {
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				size_t i = x % words;
				a[i] += x;
				s += a[(i * 7) % words];
			}
			if (yield && (u + 1) % per == 0) sched_yield();
		}
		_exit((int)(s & 1) * 0); // s is used, so the work is not optimized away
	}
	while (wait(NULL) > 0) {
	}
	double el = now() - t0;
	printf("n=%d per=%d kib=%zu yield=%d: %.3f s, %.3f M units/s\n", n, per, kib, yield, el, units / el / 1e6);
	return 0;
}
