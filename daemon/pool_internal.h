/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool_internal.h - what the pool's files share: the layout of the arena,
 * the slabs and the handle table, and the steps that change them.  Only
 * pool.c, pool_compact.c and pool_handover.c include it; everyone else goes
 * through pool.h.
 */
#ifndef ZSWAPD_POOL_INTERNAL_H
#define ZSWAPD_POOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "comp.h"
#include "pool.h"

#define POOL_CLASS_DELTA 32u
#define POOL_NR_CLASSES (ZS_PAGE_SIZE / POOL_CLASS_DELTA)
#define POOL_MAX_SLAB_PAGES 16u
#define POOL_MAX_SLOTS (POOL_MAX_SLAB_PAGES * ZS_PAGE_SIZE / POOL_CLASS_DELTA)
#define POOL_GROUPS 16u
#define POOL_NO_GROUP UINT8_MAX
/* One slab per chunk of the arena, as big as the biggest slab. */
#define POOL_CHUNK_SHIFT 16u
/* The arena grows with the slab ids, from this many chunks to at most
 * 256 GiB of address space (which sanitizers' layouts still have). */
#define POOL_FIRST_CHUNKS 64u
#define POOL_MAX_CHUNKS (1u << 22)
#define POOL_MAX_HANDLES UINT32_MAX
/* Empty slabs kept for reuse until pool_trim(), at most: */
#define POOL_CACHE_SLABS 256u
#define POOL_CACHE_BYTES (1u << 20)
/* Objects pool_compact() moves between checks for completion. */
#define POOL_COMPACT_BATCH 1024u

_Static_assert(ZS_PAGE_SIZE % POOL_CLASS_DELTA == 0, "classes must tile a page");
_Static_assert(POOL_MAX_SLOTS <= UINT16_MAX, "slot indices are kept in uint16_t");
_Static_assert(ZS_PAGE_SIZE <= UINT16_MAX, "object lengths are kept in uint16_t");
_Static_assert(POOL_NR_CLASSES <= UINT16_MAX, "class indices are kept in uint16_t");
_Static_assert(POOL_GROUPS <= 32, "the group bitmap is 32 bits");
_Static_assert(POOL_MAX_SLAB_PAGES * ZS_PAGE_SIZE == 1u << POOL_CHUNK_SHIFT,
	       "a chunk holds the biggest slab");

/*
 * One handle table entry.  8 bytes: small beside the object it describes,
 * which takes a slot of 32 bytes at least and typically of hundreds.
 */
struct pool_handle {
	uint32_t slab; /* slab id; if free, the next free entry (0 ends the list) */
	uint16_t slot;
	uint16_t len; /* as allocated; 0 marks a free entry */
};

_Static_assert(sizeof(struct pool_handle) == 8, "handle entries are 8 bytes");

struct pool_slab {
	struct pool_slab *prev, *next; /* in its class's fullness group */
	uint32_t id;
	uint16_t cls;
	uint16_t nr_used;
	uint8_t group; /* POOL_NO_GROUP when full */
	/*
	 * slot_handle[nr_slots]: handle of the object in each slot, 0 if the
	 * slot is free; then uint16_t free_stack[nr_slots], of which the top
	 * nr_slots - nr_used entries are the free slots.
	 */
	uint32_t slot_handle[];
};

struct pool_class {
	uint32_t size;
	uint16_t pages;
	uint16_t nr_slots;
	uint32_t group_mask; /* bit g set: groups[g] is not empty */
	uint32_t nr_slabs;
	uint64_t nr_used; /* objects in all its slabs */
	struct pool_slab *groups[POOL_GROUPS];
};

/* An empty slab's chunk, its pages kept for the next slab of the same size. */
struct pool_cached_slab {
	uint32_t id;
	uint32_t bytes;
	uint32_t period; /* the pool_trim() period it came in */
};

struct pool {
	int fd;	      /* the arena's memfd */
	uint8_t *base; /* where it is mapped */
	uint64_t arena_bytes; /* mapped: at least cap_ids chunks */
	uint64_t file_bytes;  /* the memfd's size, never less */
	struct pool_class classes[POOL_NR_CLASSES];
	struct pool_cached_slab cache[POOL_CACHE_SLABS];
	uint32_t nr_cached;
	uint32_t cache_period; /* pool_trim() calls so far */
	uint64_t cached_bytes;
	struct pool_slab **slabs; /* by id; NULL for free and cached ids */
	uint32_t *free_ids;	  /* ids whose chunk holds no page */
	uint32_t nr_free_ids;
	uint32_t nr_ids; /* ids handed out so far, free or not */
	uint32_t cap_ids;
	struct pool_handle *handles; /* mapped from hfd */
	int hfd;		     /* the handle table's memfd */
	uint64_t handles_bytes;	     /* mapped, and the memfd's size */
	uint32_t nr_handles; /* table entries, all initialised */
	uint32_t free_handle; /* head of the free entries, 0 if none */
	/* Where pool_compact_some() resumes. */
	struct pool_slab *compact_src; /* being drained; NULL to pick one */
	uint16_t compact_cls;
	uint16_t compact_slot; /* scan position in compact_src */
	uint64_t total_size;
	uint64_t stored_bytes;
	uint64_t nr_objects;
};

/*
 * Every write of a table entry is one 8-byte store, after the object's
 * bytes: a zswapd killed at any instant leaves each entry naming either
 * the object's old place or its new one, never half of each, and never a
 * place its bytes have not reached (pool_recover()).
 */
static inline void pool_handle_set(struct pool_handle *e, uint32_t slab, uint16_t slot, uint16_t len)
{
	uint64_t v;

	memcpy(&v, &(struct pool_handle){ .slab = slab, .slot = slot, .len = len }, sizeof(v));
	__atomic_store_n((uint64_t *)(void *)e, v, __ATOMIC_RELEASE);
}

static inline uint16_t *pool_free_stack(struct pool_slab *s, const struct pool_class *c)
{
	return (uint16_t *)(s->slot_handle + c->nr_slots);
}

static inline size_t pool_slab_bytes(const struct pool_class *c)
{
	return (size_t)c->pages * ZS_PAGE_SIZE;
}

/* The class of an object of len (1..ZS_PAGE_SIZE) bytes. */
static inline unsigned pool_class_of(size_t len)
{
	return (unsigned)((len - 1) / POOL_CLASS_DELTA);
}

/* The slot size of an object of len bytes: its class's size. */
static inline size_t pool_slot_size(size_t len)
{
	return (len + POOL_CLASS_DELTA - 1) / POOL_CLASS_DELTA * POOL_CLASS_DELTA;
}

static inline uint8_t *pool_chunk(const struct pool *p, uint32_t id)
{
	return p->base + ((size_t)id << POOL_CHUNK_SHIFT);
}

/* A pool on the arena in fd, which is file_bytes long and all mapped; it
 * owns fd once this succeeds. */
int pool_open(int fd, uint64_t file_bytes, struct pool **ret_pool);
/* Makes room for one more id in all arrays, so freeing an id cannot fail. */
int pool_grow_ids(struct pool *p);
/* The handle table in its memfd, grown to hold cap entries. */
int pool_map_handles(struct pool *p, uint32_t cap);
/* A slab's header, on no list, its slots all free but no free stack yet. */
struct pool_slab *pool_slab_header(struct pool *p, unsigned cls, uint32_t id);
/* Files a slab in the fullness group its use says; full slabs are on none. */
void pool_slab_regroup(struct pool_class *c, struct pool_slab *s);
/* Takes the slab off its list, gives back its chunk (to the cache if keep). */
void pool_slab_retire(struct pool *p, struct pool_slab *s, bool keep);
/* Occupies a free slot of a slab that has one, for handle h. */
uint16_t pool_slot_take(struct pool_class *c, struct pool_slab *s, uint32_t h);
/* Frees a slot; a slab left empty stays on its list for the caller to retire. */
void pool_slot_put(struct pool_class *c, struct pool_slab *s, uint16_t slot);
/* The live object's table entry; aborts if handle names none. */
struct pool_handle *pool_lookup(const struct pool *p, uint64_t handle, const char *op);
/* The pool's own bookkeeping contradicts itself: as bad as a corrupt handle. */
_Noreturn void pool_bug(const char *what, uint32_t slab_id);

#endif
