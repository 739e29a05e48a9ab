/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * benchtime.h - what the per-call benchmarks (micro.c, unmap.c) time with:
 * monotonic microseconds, and the comparison qsort() wants for medians.
 */
#ifndef ZSWAPD_BENCH_BENCHTIME_H
#define ZSWAPD_BENCH_BENCHTIME_H

#include <time.h>

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif
