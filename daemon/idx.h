/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * idx.h - a target's index: page number (address >> 12) to entry pointer.
 *
 * The zswap_tree of one process.  A radix tree keyed by the 36-bit page
 * number of a 48-bit address, so that range operations (munmap, mremap,
 * MADV_DONTNEED of a gigabyte) visit only the populated parts.
 */
#ifndef ZSWAPD_IDX_H
#define ZSWAPD_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_PGNO_MAX (1ull << 36) /* page numbers are < this */

struct idx;

int idx_new(struct idx **ret_idx);
/* Frees the tree; drop (if not NULL) is called on every value first. NULL is fine. */
void idx_free(struct idx *t, void (*drop)(void *val, void *arg), void *arg);

void *idx_lookup(const struct idx *t, uint64_t pgno);
/*
 * Stores val (not NULL) at pgno.  The value it replaces, or NULL, goes to
 * *ret_old (ret_old may be NULL only if the caller knows the slot is empty).
 * -ENOMEM leaves the tree unchanged; -ERANGE for pgno >= IDX_PGNO_MAX.
 */
int idx_insert(struct idx *t, uint64_t pgno, void *val, void **ret_old);
/* Removes and returns the value at pgno, or NULL. */
void *idx_erase(struct idx *t, uint64_t pgno);

/*
 * Calls cb for every value with first <= pgno < last, in ascending order.
 * cb may idx_erase() the pgno it was given, and no other; it must not insert.
 * A negative return from cb stops the walk and is returned.
 */
int idx_walk(struct idx *t, uint64_t first, uint64_t last,
	     int (*cb)(uint64_t pgno, void *val, void *arg), void *arg);

size_t idx_count(const struct idx *t);
/* Bytes the tree's own nodes take. */
uint64_t idx_mem_bytes(const struct idx *t);

#endif
