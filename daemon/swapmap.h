/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * swapmap.h - which blocks of the swap file are in use: the swap_map of
 * zswapd's writeback tier.
 *
 * The file is an array of SWAPMAP_BLOCK-byte blocks.  A block holds the
 * objects one writeback packed into it and is free again when its last
 * object goes and no write to it is in flight.  Entries (entry.c) give
 * objects back here when they die; the writeback (wb.c) takes blocks, and
 * marks them writing while its I/O is in flight.  Pure bookkeeping: no I/O.
 */
#ifndef ZSWAPD_SWAPMAP_H
#define ZSWAPD_SWAPMAP_H

#include <stdbool.h>
#include <stdint.h>

#define SWAPMAP_BLOCK 4096u
#define SWAPMAP_MAX_PER_BLOCK (SWAPMAP_BLOCK / 16) /* objects per block, at most */

struct swapmap;

int swapmap_new(uint64_t nblocks, struct swapmap **ret_map);
void swapmap_free(struct swapmap *m); /* NULL is fine */
uint64_t swapmap_nblocks(const struct swapmap *m);
/* A free block, next-fit from the last one taken; -ENOSPC if none. */
int swapmap_alloc(struct swapmap *m, uint64_t *ret_block);
/* One more object lives in block b. */
void swapmap_get(struct swapmap *m, uint64_t b);
/* The same for a block a handover names, which may have been free; -ERANGE past the end. */
int swapmap_adopt(struct swapmap *m, uint64_t b);
/* One object of block b is gone (or was never written there). */
void swapmap_put(struct swapmap *m, uint64_t b);
/* A write to b is in flight: b is not free, whatever its objects. */
void swapmap_set_writing(struct swapmap *m, uint64_t b, bool writing);
/* The first block from b on with a write in flight; nblocks if none. */
uint64_t swapmap_next_writing(const struct swapmap *m, uint64_t b);
/* Gives back a block taken by swapmap_alloc() that got no object. */
void swapmap_unalloc(struct swapmap *m, uint64_t b);
/* Bytes of the blocks in use (whole blocks: the waste inside them shows). */
uint64_t swapmap_used_bytes(const struct swapmap *m);

#endif
