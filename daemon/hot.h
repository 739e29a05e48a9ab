/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hot.h - a set of pages each remembered with a time: which pages of a
 * process came back recently (refault memory), or compressed too poorly to
 * be worth another try.
 *
 * There are no access bits to read from userspace (no idle page tracking,
 * no soft-dirty, no DAMON for virtual addresses here), and write tracking
 * (WP_ASYNC) cannot share a uffd with the synchronous write-protection the
 * eviction path relies on.  What the daemon does see is every page that is
 * wanted back: a load.  Like the kernel's workingset shadow entries, a page
 * that refaults is remembered, and the clock hand passes over it for a
 * while: the hot set stays resident and the cold pages go first.
 *
 * An open-addressed hash table that grows with what it holds, up to a cap,
 * and drops what has expired whenever it would grow; the rebuild is spread
 * over the notes that follow, so that no load waits for all of it.  It must
 * not be lossy below the cap: a set that forgets 16k incompressible pages of
 * a 512 MiB process makes the daemon compress each of them again on every
 * sweep.  At the cap it forgets (a page then risks one more refault or one
 * more try).
 * Pure: time comes in as an argument.
 */
#ifndef ZSWAPD_HOT_H
#define ZSWAPD_HOT_H

#include <stdbool.h>
#include <stdint.h>

#define HOT_MIN_SLOTS 1024u
#define HOT_MAX_SLOTS (1u << 20) /* 16 MiB: 750k pages, 3 GiB of hot set */
/* A rebuild's share of a note (hot.c): slots counted, slots moved at least,
 * and at most at the cap (about 50 us, however many are live). */
#define HOT_STEP_SLOTS 64u
#define HOT_CAP_STEP_SLOTS 512u
/* How long hot_count_recent() gives the same count. */
#define HOT_COUNT_EVERY_MS 1000u

struct hot_slot {
	uint64_t pgno; /* + 1, so that 0 is empty */
	uint64_t when_ms;
};

struct hot {
	struct hot_slot *slot;
	uint32_t cap;  /* a power of two, or 0 before the first note */
	uint32_t used; /* slots holding a page, expired or not */
	uint64_t rebuilt_ms;
	/* A rebuild under way (hot.c): its live pages counted, then moved. */
	bool counting;
	uint32_t count_pos, live; /* the next slot to count, live pages so far */
	struct hot_slot *old; /* the full table being moved into slot[], or NULL */
	uint32_t old_cap, old_pos; /* its slots, the next to move */
	uint32_t old_left; /* pages in it not moved yet, expired or not */
	uint32_t step; /* its slots moved per note */
	/* hot_count_recent()'s last count: when (+ 1, 0 for none), for what
	 * window, and the pages noted hot since that it did not count. */
	uint64_t counted, counted_ms, counted_window_ms, counted_fresh;
};

/* Remembers that pgno was seen at now_ms; what is older than window_ms may go. */
void hot_note(struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms);
/* True if pgno was seen within window_ms before now_ms. */
bool hot_recent(const struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms);
/* When pgno was last seen, if the set still holds it (expired or not). */
bool hot_when(const struct hot *h, uint64_t pgno, uint64_t *when_ms);
/* How many pages were seen within the window: the hot-set estimate. */
uint64_t hot_count(const struct hot *h, uint64_t now_ms, uint64_t window_ms);
/* The same, counted again only HOT_COUNT_EVERY_MS after the last count,
 * and in between that count plus the pages noted hot since. */
uint64_t hot_count_recent(struct hot *h, uint64_t now_ms, uint64_t window_ms);
/* Pages held, expired or not: what the set costs, not what it knows to be hot. */
uint64_t hot_size(const struct hot *h);
void hot_free(struct hot *h);

#endif
