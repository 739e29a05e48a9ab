// SPDX-License-Identifier: GPL-2.0-only
/*
 * hot.c - see hot.h.
 */
#include "hot.h"

static unsigned hot_index(uint64_t pgno)
{
	/* Fibonacci hashing: neighbouring pages land far apart. */
	return (unsigned)((pgno * 0x9e3779b97f4a7c15ull) >> 51) & (HOT_SLOTS - 1);
}

void hot_note(struct hot *h, uint64_t pgno, uint64_t now_ms)
{
	struct hot_slot *s = &h->slot[hot_index(pgno)];

	s->pgno = pgno + 1;
	s->when_ms = now_ms;
}

bool hot_recent(const struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms)
{
	const struct hot_slot *s = &h->slot[hot_index(pgno)];

	return s->pgno == pgno + 1 && now_ms - s->when_ms < window_ms;
}

uint64_t hot_count(const struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < HOT_SLOTS; i++)
		n += h->slot[i].pgno && now_ms - h->slot[i].when_ms < window_ms;
	return n;
}
