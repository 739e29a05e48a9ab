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
 * A chain of blocks that grows and shrinks a block at a time with what it
 * holds, up to LOADLOG_MAX_ENTRIES; past that it forgets the oldest (which
 * the clock hand then finds cold anyway, once the hot window passes).  Not
 * a ring doubled by a copy: each load is logged, and the load that found
 * the ring full would wait for the copy (docs/benchmarks.md, "The log of
 * loads").
 * One emptied block is kept, so that a log hovering at a block's edge does
 * not allocate and free at each crossing.  Pure: nothing here reads the
 * clock.
 */
#ifndef ZSWAPD_LOADLOG_H
#define ZSWAPD_LOADLOG_H

#include <stdbool.h>
#include <stdint.h>

#define LOADLOG_BLOCK_ENTRIES 1024u /* 24 KiB a block */
#define LOADLOG_MAX_ENTRIES (1u << 20) /* 24 MiB: 4 GiB of resident pages */

struct loadlog_entry {
	uint64_t pgno;
	uint64_t when_ms; /* the load's time: a later load of pgno makes this one stale */
	uint32_t chances; /* times it may pass the head and stay */
};

struct loadlog_block {
	struct loadlog_block *next; /* the newer */
	struct loadlog_entry e[LOADLOG_BLOCK_ENTRIES];
};

struct loadlog {
	struct loadlog_block *head, *tail; /* the oldest block, the newest; NULL when empty */
	struct loadlog_block *spare; /* an emptied block, kept for the next */
	uint32_t head_pos; /* the oldest entry: head->e[head_pos] */
	uint32_t tail_n;   /* entries written in tail */
	uint32_t n;
	uint32_t nblocks; /* allocated, the spare among them */
	uint64_t forgotten; /* pushed out at the cap */
};

/* Appends at the tail; at the cap the oldest entry is forgotten.  -ENOMEM
 * if a new block was wanted and there is no memory for it. */
int loadlog_push(struct loadlog *l, const struct loadlog_entry *e);
/* Takes the oldest entry into *e; false if the log is empty. */
bool loadlog_pop(struct loadlog *l, struct loadlog_entry *e);
void loadlog_free(struct loadlog *l);

#endif
