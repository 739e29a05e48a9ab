// SPDX-License-Identifier: GPL-2.0-only
/*
 * hot.c - see hot.h.  Linear probing: pages are never deleted one by one
 * (that would break probe chains); expired ones are dropped wholesale when
 * the table is rebuilt.
 */
#include <stdlib.h>

#include "hot.h"

static uint32_t hot_index(uint64_t pgno, uint32_t cap)
{
	/* Fibonacci hashing, top bits: neighbouring pages land far apart. */
	return (uint32_t)((pgno * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctz(cap)));
}

static bool hot_live(const struct hot_slot *s, uint64_t now_ms, uint64_t window_ms)
{
	return s->pgno && now_ms - s->when_ms < window_ms;
}

/* Three quarters full: linear probing slows down past that. */
static bool hot_full(const struct hot *h)
{
	return h->used >= h->cap / 4 * 3;
}

/* Where pgno is, or the empty slot where it would go; NULL if the table is full. */
static struct hot_slot *hot_find(const struct hot *h, uint64_t pgno)
{
	uint32_t i = hot_index(pgno, h->cap);

	for (uint32_t n = 0; n < h->cap; n++, i = (i + 1) & (h->cap - 1))
		if (h->slot[i].pgno == pgno + 1 || !h->slot[i].pgno)
			return &h->slot[i];
	return NULL;
}

/* Rebuilds with the live pages only, at a size that leaves room for as many again. */
static void hot_rebuild(struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	struct hot old = *h;
	uint32_t live = 0, cap = HOT_MIN_SLOTS;

	for (uint32_t i = 0; i < old.cap; i++)
		live += hot_live(&old.slot[i], now_ms, window_ms);
	while (cap < HOT_MAX_SLOTS && cap < (uint64_t)live * 4)
		cap *= 2;
	h->slot = calloc(cap, sizeof(*h->slot));
	if (!h->slot) {
		*h = old; /* keep what we have; a note may be forgotten */
		return;
	}
	h->cap = cap;
	h->used = 0;
	for (uint32_t i = 0; i < old.cap; i++) {
		struct hot_slot *s;

		if (!hot_live(&old.slot[i], now_ms, window_ms))
			continue;
		s = hot_find(h, old.slot[i].pgno - 1);
		if (!s || s->pgno)
			continue; /* shrunk to the cap: forget the rest */
		*s = old.slot[i];
		h->used++;
		if (hot_full(h))
			break;
	}
	free(old.slot);
}

void hot_note(struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms)
{
	struct hot_slot *s;

	/* Three quarters full: drop the expired, grow if that is not enough.
	 * At the cap, not on every note: only once pages had time to expire. */
	if (!h->cap || (hot_full(h) &&
			(h->cap < HOT_MAX_SLOTS || now_ms - h->rebuilt_ms >= window_ms / 4))) {
		hot_rebuild(h, now_ms, window_ms);
		h->rebuilt_ms = now_ms;
	}
	if (!h->cap)
		return;
	s = hot_find(h, pgno);
	if (!s || (!s->pgno && hot_full(h))) {
		/* At the cap: take over the page's home slot, forgetting its holder. */
		s = &h->slot[hot_index(pgno, h->cap)];
	} else if (!s->pgno) {
		h->used++;
	}
	s->pgno = pgno + 1;
	s->when_ms = now_ms;
}

bool hot_recent(const struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms)
{
	const struct hot_slot *s;

	if (!h->cap)
		return false;
	s = hot_find(h, pgno);
	return s && s->pgno == pgno + 1 && now_ms - s->when_ms < window_ms;
}

bool hot_when(const struct hot *h, uint64_t pgno, uint64_t *when_ms)
{
	const struct hot_slot *s;

	if (!h->cap)
		return false;
	s = hot_find(h, pgno);
	if (!s || s->pgno != pgno + 1)
		return false;
	*when_ms = s->when_ms;
	return true;
}

uint64_t hot_count(const struct hot *h, uint64_t now_ms, uint64_t window_ms)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < h->cap; i++)
		n += hot_live(&h->slot[i], now_ms, window_ms);
	return n;
}

void hot_free(struct hot *h)
{
	free(h->slot);
	h->slot = NULL;
	h->cap = h->used = 0;
}
