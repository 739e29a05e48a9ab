/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * loadlog.h - the order in which a process's pages came back: a FIFO of
 * loads, oldest first.
 *
 * The clock hand (vmscan.c) passes over pages that came back within the hot
 * window (hot.h).  Under a tight limit that window holds every resident page
 * that was ever faulted back, and a hand that takes "hot" pages in address
 * order then gives up a page loaded a millisecond ago as readily as one
 * loaded seconds ago.  This log gives that second choice an order: the page
 * loaded longest ago goes first.
 *
 * Without access bits, age since load alone is FIFO.  What tells a hot page
 * from a cold one is its refault distance, as in the kernel's workingset
 * detection: how many pages the process had evicted between this page's
 * eviction and its return.  A page that returns within fewer evictions than
 * the process keeps resident would have stayed resident under an LRU of
 * that size: it is logged with a second chance, and at the head of the log
 * it is put back at the tail once instead of going.  The caller decides the
 * chances; the log only keeps them.
 *
 * A ring that grows with what it holds, up to LOADLOG_MAX_ENTRIES; past that
 * it forgets the oldest (which the clock hand then finds cold anyway, once
 * the hot window passes).  Pure: nothing here reads the clock.
 */
#ifndef ZSWAPD_LOADLOG_H
#define ZSWAPD_LOADLOG_H

#include <stdbool.h>
#include <stdint.h>

#define LOADLOG_MIN_ENTRIES 1024u
#define LOADLOG_MAX_ENTRIES (1u << 20) /* 16 MiB: 4 GiB of resident pages */

struct loadlog_entry {
	uint64_t pgno;
	uint64_t when_ms; /* the load's time: a later load of pgno makes this one stale */
	uint32_t chances; /* times it may pass the head and stay */
};

struct loadlog {
	struct loadlog_entry *ring;
	uint32_t cap; /* a power of two, or 0 before the first push */
	uint32_t head; /* the oldest */
	uint32_t n;
	uint64_t forgotten; /* pushed out at the cap */
};

/* Appends at the tail; at the cap the oldest entry is forgotten.  -ENOMEM
 * only if the log cannot hold even this one entry. */
int loadlog_push(struct loadlog *l, const struct loadlog_entry *e);
/* Takes the oldest entry into *e; false if the log is empty. */
bool loadlog_pop(struct loadlog *l, struct loadlog_entry *e);
void loadlog_free(struct loadlog *l);

#endif
