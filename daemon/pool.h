/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool.h - the compressed pool: where stored pages live, packed by size class.
 *
 * Objects of 1..ZS_PAGE_SIZE bytes.  A handle names an object until it is
 * released; 0 is never a valid handle, and a released handle may be handed
 * out again by a later pool_alloc().  The handle stays the same while the
 * object moves: pool_compact() relocates objects to pack slabs, so the
 * address pool_map() returns is not stable, the handle is.  Memory comes
 * from a sparse memfd (the arena) and goes back to the kernel when a slab
 * empties (through a small cache of empty slabs that pool_trim() empties),
 * so pool_total_size() is the memory the pool really holds.
 */
#ifndef ZSWAPD_POOL_H
#define ZSWAPD_POOL_H

#include <stdbool.h>
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
 * pool_release(), pool_compact() or pool_compact_some() on this pool:
 * compaction moves objects, and a growing arena moves them all, so map
 * right before use and never keep the pointer.
 */
void *pool_map(struct pool *p, uint64_t handle);
/* The length the object was allocated with. */
size_t pool_obj_len(struct pool *p, uint64_t handle);

/*
 * Packs every size class: objects move from the sparsest slabs into free
 * slots of the fullest ones, and each slab that empties is given back (not
 * cached).  Returns the bytes given back to the kernel.  Afterwards
 * pool_fragmented_bytes() is 0.  Its cost grows with the objects it moves;
 * from an event loop prefer pool_compact_some().
 */
size_t pool_compact(struct pool *p);
/*
 * The same work in bounded steps: moves at most max_moves objects (each a
 * memcpy of at most ZS_PAGE_SIZE bytes, plus a hole punched per emptied slab) and
 * returns the bytes given back.  The next call resumes where this one
 * stopped; allocs and releases in between are fine.  Compaction is complete
 * once pool_fragmented_bytes() is 0.
 */
size_t pool_compact_some(struct pool *p, size_t max_moves);

/*
 * Gives back the empty slabs kept for reuse (at most 1 MiB) that came before
 * the last call and no allocation took since, and returns their bytes.
 * Call it every second or so: an idle pool's cache is gone after the
 * second call.
 */
size_t pool_trim(struct pool *p);
/* Gives back every empty slab kept for reuse, and returns their bytes. */
size_t pool_drop_cache(struct pool *p);

/*
 * An upgrade hands the pool to the next binary without copying it: the
 * memfd its slabs live in crosses the exec (pool_fd()), with where each
 * object is (pool_locate()).  The new binary maps it with pool_adopt(),
 * which takes fd on success, puts every object back where it was, at the
 * handle it had, with pool_place(), and ends with pool_adopt_done(); the
 * pool is usable only then.  pool_place() says -EPROTO for an object that
 * cannot be where it is said to be (a bad length, slot or handle, a slot
 * or handle taken twice, a slab holding two sizes).  Empty slabs are not
 * named, so call pool_drop_cache() before the pool is handed on.
 */
int pool_fd(const struct pool *p);
void pool_locate(struct pool *p, uint64_t handle, uint32_t *ret_slab, uint16_t *ret_slot);
int pool_adopt(int fd, uint64_t max_handle, struct pool **ret_pool);
int pool_place(struct pool *p, uint64_t handle, uint32_t slab, uint16_t slot, size_t len);
void pool_adopt_done(struct pool *p);
/*
 * A crash: a zswapd started after this one died gets the arena and the
 * handle table (pool_handles_fd(), a memfd written one 8-byte store per
 * change, after the bytes it points to) back from systemd's fd store, and
 * pool_recover() puts every object the table names back where it is.
 * The caller then releases the handles nothing of its own names (an
 * object stored and not yet indexed when the daemon died).  Takes fd on
 * success; hfd stays the caller's (the table is rebuilt in a new memfd).
 */
int pool_handles_fd(const struct pool *p);
/* The length of the live object handle names, or 0 if none (never aborts). */
size_t pool_live_len(const struct pool *p, uint64_t handle);
/* Handles are below this. */
uint64_t pool_handle_end(const struct pool *p);
int pool_recover(int fd, int hfd, struct pool **ret_pool);
/*
 * Maps (and under mlockall, locks) the slabs' pages, from id *cursor (0 to
 * begin) on, about max_bytes per call; true once every slab is done.  An
 * adopted arena's pages are otherwise mapped only as faults read them.
 * Allocations and releases between calls are fine.
 */
bool pool_populate_some(struct pool *p, uint32_t *cursor, size_t max_bytes);

/* Bytes of slab memory held from the kernel (what zswap calls pool_total_size),
 * the cached empty slabs included. */
uint64_t pool_total_size(const struct pool *p);
/* Sum of the lengths of live objects. */
uint64_t pool_stored_bytes(const struct pool *p);
uint64_t pool_nr_objects(const struct pool *p);
/*
 * Slack that compaction could give back: per size class, its free slots
 * rounded down to whole slabs, times the slab size.  Free slots short of a
 * whole slab cannot be returned, however objects are arranged.  O(number of
 * classes); use it to decide whether compacting is worth the copying.
 */
uint64_t pool_fragmented_bytes(const struct pool *p);

#endif
