/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hot.h - refault memory: which pages of a process came back recently.
 *
 * There are no access bits to read from userspace (no idle page tracking,
 * no soft-dirty, no DAMON for virtual addresses here), and write tracking
 * (WP_ASYNC) cannot share a uffd with the synchronous write-protection the
 * eviction path relies on.  What the daemon does see is every page that is
 * wanted back: a load.  Like the kernel's workingset shadow entries, a page
 * that refaults is remembered, and the clock hand passes over it for a
 * while: the hot set stays resident and the cold pages go first.
 *
 * A direct-mapped table, lossy by design: a collision forgets a page, which
 * then only risks one more refault.  Pure: time comes in as an argument.
 */
#ifndef ZSWAPD_HOT_H
#define ZSWAPD_HOT_H

#include <stdbool.h>
#include <stdint.h>

#define HOT_SLOTS 8192 /* per process: 128 KiB, remembers ~8k refaulted pages */

struct hot_slot {
	uint64_t pgno; /* + 1, so that 0 is empty */
	uint64_t when_ms;
};

struct hot {
	struct hot_slot slot[HOT_SLOTS];
};

/* Remembers that pgno was faulted back at now_ms. */
void hot_note(struct hot *h, uint64_t pgno, uint64_t now_ms);
/* True if pgno came back within window_ms before now_ms. */
bool hot_recent(const struct hot *h, uint64_t pgno, uint64_t now_ms, uint64_t window_ms);
/* How many remembered pages came back within the window: the hot-set estimate. */
uint64_t hot_count(const struct hot *h, uint64_t now_ms, uint64_t window_ms);

#endif
