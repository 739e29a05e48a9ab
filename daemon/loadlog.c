// SPDX-License-Identifier: GPL-2.0-only
/*
 * loadlog.c - see loadlog.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loadlog.h"

/* Doubles the ring, the oldest entry moving to slot 0. */
static int loadlog_grow(struct loadlog *l)
{
	uint32_t cap = l->cap ? l->cap * 2 : LOADLOG_MIN_ENTRIES;
	struct loadlog_entry *ring = malloc((size_t)cap * sizeof(*ring));
	uint32_t first;

	if (!ring)
		return -ENOMEM;
	first = l->cap - l->head < l->n ? l->cap - l->head : l->n;
	if (l->n) {
		memcpy(ring, l->ring + l->head, (size_t)first * sizeof(*ring));
		memcpy(ring + first, l->ring, (size_t)(l->n - first) * sizeof(*ring));
	}
	free(l->ring);
	l->ring = ring;
	l->cap = cap;
	l->head = 0;
	return 0;
}

int loadlog_push(struct loadlog *l, const struct loadlog_entry *e)
{
	if (l->n == l->cap) {
		if (l->cap < LOADLOG_MAX_ENTRIES && loadlog_grow(l) == 0) {
			/* room now */
		} else if (l->cap) {
			/* At the cap, or no memory to grow: forget the oldest. */
			l->head = (l->head + 1) & (l->cap - 1);
			l->n--;
			l->forgotten++;
		} else {
			return -ENOMEM;
		}
	}
	l->ring[(l->head + l->n) & (l->cap - 1)] = *e;
	l->n++;
	return 0;
}

bool loadlog_pop(struct loadlog *l, struct loadlog_entry *e)
{
	if (!l->n)
		return false;
	*e = l->ring[l->head];
	l->head = (l->head + 1) & (l->cap - 1);
	l->n--;
	return true;
}

void loadlog_free(struct loadlog *l)
{
	free(l->ring);
	*l = (struct loadlog){ 0 };
}
