/* SPDX-License-Identifier: GPL-2.0-only */
/* check_util.h - helpers that more than one Check suite uses. */
#ifndef ZSWAPD_CHECK_UTIL_H
#define ZSWAPD_CHECK_UTIL_H

#include <stdint.h>

/*
 * A xorshift64 generator (13, 7, 17): the same sequence on every machine and
 * libc.  A test seeds rng_state (never 0: it would stay 0) before its first
 * rng_next(), so each run does the same things.  One state per suite.
 */
static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

/* qsort()'s comparison of two uint64_t. */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif
