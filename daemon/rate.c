// SPDX-License-Identifier: GPL-2.0-only
/*
 * rate.c - growth of a counter over the last minute, in ten-second slots.
 */
#include <string.h>

#include "rate.h"

void rate_feed(struct rate *r, uint64_t total, uint64_t now_ms)
{
	uint64_t grew = total > r->last_total ? total - r->last_total : 0;

	if (!r->slot_start_ms) {
		/* The first feed only sets the base: what came before is not
		 * "the last minute". */
		r->slot_start_ms = now_ms ? now_ms : 1;
		r->last_total = total;
		return;
	}
	r->last_total = total;
	if (now_ms >= r->slot_start_ms + RATE_SLOT_MS) {
		uint64_t steps = (now_ms - r->slot_start_ms) / RATE_SLOT_MS;

		if (steps >= RATE_SLOTS) {
			memset(r->slot, 0, sizeof(r->slot));
			r->cur = 0;
		} else {
			for (uint64_t i = 0; i < steps; i++) {
				r->cur = (r->cur + 1) % RATE_SLOTS;
				r->slot[r->cur] = 0;
			}
		}
		r->slot_start_ms += steps * RATE_SLOT_MS;
	}
	r->slot[r->cur] += grew;
}

uint64_t rate_per_minute(const struct rate *r)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < RATE_SLOTS; i++)
		sum += r->slot[i];
	return sum;
}
