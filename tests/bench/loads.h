/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * loads.h - the load phase micro.c and roundtrip.c share, so that their
 * figures differ by the server alone: every page touched once in a fresh
 * random order each round, each touch timed, and every page checked
 * against the mix at the end.
 */
#ifndef ZSWAPD_BENCH_LOADS_H
#define ZSWAPD_BENCH_LOADS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "benchtime.h"
#include "pagemix.h"

/* Round r's order: a Fisher-Yates shuffle seeded by r, the same in every run. */
static inline void shuffle_order(size_t *order, size_t npages, int round)
{
	for (size_t i = npages - 1; i > 0; i--) {
		size_t j = mix64(i * 31 + (size_t)round) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

/* One read of each page in order; its time in lat[], a fault's or not. */
static inline void touch_timed(const uint8_t *m, const size_t *order, size_t npages, double *lat)
{
	for (size_t i = 0; i < npages; i++) {
		const volatile uint8_t *p = m + order[i] * PAGE;
		double t1 = now_us();

		(void)*p;
		lat[i] = now_us() - t1;
	}
}

/* Pages that do not read back as fill_page() wrote them. */
static inline size_t count_wrong_pages(const uint8_t *m, size_t npages)
{
	uint8_t want[PAGE];
	size_t bad = 0;

	for (size_t i = 0; i < npages; i++) {
		fill_page(want, i);
		bad += memcmp(m + i * PAGE, want, PAGE) != 0;
	}
	return bad;
}

#endif
