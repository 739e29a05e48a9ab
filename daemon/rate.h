/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rate.h - how much a cumulative counter grew over the last minute.
 *
 * Proactive eviction backs off on a process's refault rate (pages faulted
 * back per minute) and on the stall it causes (microseconds its threads
 * waited on faults per minute), and `zswapctl list` shows both.  A minute
 * is kept as six ten-second slots: fed the counter's running total now and
 * then, the sum of the slots is its growth over the last 50 to 60 seconds,
 * with no history to store and no spike from the moment a window resets.
 * Pure: time comes in as an argument.
 */
#ifndef ZSWAPD_RATE_H
#define ZSWAPD_RATE_H

#include <stdint.h>

#define RATE_SLOTS 6
#define RATE_SLOT_MS 10000u

struct rate {
	uint64_t slot[RATE_SLOTS];
	uint64_t last_total; /* the counter when last fed */
	uint64_t slot_start_ms; /* when the current slot began; 0 = never fed */
	uint32_t cur;
};

/* Feeds the counter's running total at now_ms.  A total that went down
 * (a counter reset) counts as no growth. */
void rate_feed(struct rate *r, uint64_t total, uint64_t now_ms);
/* Growth over the last minute (the slots that cover it as of the last feed). */
uint64_t rate_per_minute(const struct rate *r);

#endif
