/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool.h - the compressed pool: where stored pages live, packed by size class.
 *
 * Objects of 1..ZS_PAGE_SIZE bytes.  A handle names an object until it is
 * released; 0 is never a valid handle.  Memory comes from mmap and goes back
 * to the kernel as soon as a slab empties, so pool_total_size() is the
 * memory the pool really holds.
 */
#ifndef ZSWAPD_POOL_H
#define ZSWAPD_POOL_H

#include <stddef.h>
#include <stdint.h>

struct pool;

int pool_new(struct pool **ret_pool);
/* Frees every slab, released or not. NULL is fine. */
void pool_free(struct pool *p);

/* -EINVAL for len 0 or > ZS_PAGE_SIZE, -ENOMEM when the kernel says no. */
int pool_alloc(struct pool *p, size_t len, uint64_t *ret_handle);
void pool_release(struct pool *p, uint64_t handle);

/*
 * Where the object's bytes are.  Valid until the next pool_alloc(),
 * pool_release() or pool_compact() on this pool.
 */
void *pool_map(struct pool *p, uint64_t handle);
/* The length the object was allocated with. */
size_t pool_obj_len(struct pool *p, uint64_t handle);

/* Bytes of slab memory held from the kernel (what zswap calls pool_total_size). */
uint64_t pool_total_size(const struct pool *p);
/* Sum of the lengths of live objects. */
uint64_t pool_stored_bytes(const struct pool *p);
uint64_t pool_nr_objects(const struct pool *p);

#endif
