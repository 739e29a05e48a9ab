// SPDX-License-Identifier: GPL-2.0-only
/*
 * pool.c - the compressed pool: a size-class slab allocator (see pool.h).
 *
 * Owns every byte of compressed data the daemon holds.  The design follows
 * zsmalloc, for the same reasons:
 *
 *  - Size classes every POOL_CLASS_DELTA bytes.  An object is rounded up to
 *    its class, so rounding never wastes more than 31 bytes per object, and
 *    all slots of a slab are the same size, so a slot is found by index.
 *
 *  - A slab is N contiguous pages, with N (1..POOL_MAX_SLAB_PAGES) chosen per
 *    class to waste the smallest fraction at the slab's tail.  A 2080-byte
 *    class in one page holds one object and wastes half the page; in 16
 *    pages it holds 31 and wastes 1.6%.  Unlike zsmalloc we need not chain
 *    single pages: mmap gives us contiguous virtual memory, so an object may
 *    straddle a page boundary and pool_map() is plain arithmetic.
 *
 *  - Slabs come from mmap and go back with munmap the moment their last
 *    object is released, so pool_total_size() is memory the kernel really
 *    lent us and the pool shrinks without a shrinker.  To make slabs empty
 *    out, allocation takes the fullest partial slab of its class: partial
 *    slabs sit in POOL_GROUPS fullness groups (zsmalloc's fullness lists),
 *    and a bitmap of non-empty groups finds the fullest in O(1).  Sparse
 *    slabs then only lose objects and are returned.
 *
 *  - Per-slot bookkeeping (the requested length, and a stack of free slots)
 *    lives in a malloc'd header beside the slab, never in its pages: every
 *    data byte is usable, and a stray write into the data cannot corrupt the
 *    allocator, only the object it hits.
 *
 * A handle is (slab id + 1) << POOL_SLOT_BITS | slot.  The slab id indexes a
 * table of slab pointers whose free ids are reused, so a handle resolves in
 * O(1) and is never 0.  A handle that does not name a live object means the
 * daemon's own memory is corrupt; we abort rather than hand out or free
 * someone else's page.
 *
 * Not thread-safe: the caller serialises access to one pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "comp.h"
#include "pool.h"

#define POOL_CLASS_DELTA 32u
#define POOL_NR_CLASSES (ZS_PAGE_SIZE / POOL_CLASS_DELTA)
#define POOL_MAX_SLAB_PAGES 16u
#define POOL_MAX_SLOTS (POOL_MAX_SLAB_PAGES * ZS_PAGE_SIZE / POOL_CLASS_DELTA)
#define POOL_GROUPS 16u
#define POOL_NO_GROUP UINT8_MAX
#define POOL_SLOT_BITS 16
#define POOL_SLOT_MASK ((UINT64_C(1) << POOL_SLOT_BITS) - 1)
#define POOL_MAX_SLABS UINT32_MAX

_Static_assert(ZS_PAGE_SIZE % POOL_CLASS_DELTA == 0, "classes must tile a page");
_Static_assert(POOL_MAX_SLOTS <= POOL_SLOT_MASK, "slot index must fit its handle bits");
_Static_assert(ZS_PAGE_SIZE <= UINT16_MAX, "object lengths are kept in uint16_t");
_Static_assert(POOL_GROUPS <= 32, "the group bitmap is 32 bits");

struct pool_slab {
	struct pool_slab *prev, *next; /* in its class's fullness group */
	uint8_t *mem;
	uint32_t id;
	uint16_t cls;
	uint16_t nr_used;
	uint8_t group; /* POOL_NO_GROUP when full */
	/*
	 * slot_len[nr_slots]: length of each object, 0 if the slot is free;
	 * then free_stack[nr_slots], of which the top nr_slots - nr_used
	 * entries are the free slots.
	 */
	uint16_t slot_len[];
};

struct pool_class {
	uint32_t size;
	uint16_t pages;
	uint16_t nr_slots;
	uint32_t group_mask; /* bit g set: groups[g] is not empty */
	struct pool_slab *groups[POOL_GROUPS];
};

struct pool {
	struct pool_class classes[POOL_NR_CLASSES];
	struct pool_slab **slabs; /* by id; NULL for free ids */
	uint32_t *free_ids;
	uint32_t nr_free_ids;
	uint32_t nr_ids; /* ids handed out so far, free or not */
	uint32_t cap_ids;
	uint64_t total_size;
	uint64_t stored_bytes;
	uint64_t nr_objects;
};

/*
 * Pages per slab: the count that wastes the smallest fraction at the tail.
 * Ties go to fewer pages, since a small slab empties, and is returned, sooner.
 */
static unsigned pool_class_pages(uint32_t size)
{
	unsigned best = 1;
	uint64_t best_waste_num = ZS_PAGE_SIZE % size, best_den = ZS_PAGE_SIZE;

	for (unsigned n = 2; n <= POOL_MAX_SLAB_PAGES; n++) {
		uint64_t bytes = (uint64_t)n * ZS_PAGE_SIZE;
		uint64_t waste = bytes % size;

		/* waste / bytes < best_waste_num / best_den, without floats */
		if (waste * best_den < best_waste_num * bytes) {
			best = n;
			best_waste_num = waste;
			best_den = bytes;
		}
	}
	return best;
}

static void pool_init_classes(struct pool *p)
{
	for (unsigned i = 0; i < POOL_NR_CLASSES; i++) {
		struct pool_class *c = &p->classes[i];

		c->size = (i + 1) * POOL_CLASS_DELTA;
		c->pages = (uint16_t)pool_class_pages(c->size);
		c->nr_slots = (uint16_t)(c->pages * ZS_PAGE_SIZE / c->size);
	}
}

int pool_new(struct pool **ret_pool)
{
	struct pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pool_init_classes(p);
	*ret_pool = p;
	return 0;
}

static uint16_t *pool_free_stack(struct pool_slab *s, const struct pool_class *c)
{
	return s->slot_len + c->nr_slots;
}

static size_t pool_slab_bytes(const struct pool_class *c)
{
	return (size_t)c->pages * ZS_PAGE_SIZE;
}

static void pool_slab_destroy(struct pool *p, struct pool_slab *s)
{
	const struct pool_class *c = &p->classes[s->cls];

	munmap(s->mem, pool_slab_bytes(c));
	p->total_size -= pool_slab_bytes(c);
	free(s);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	for (uint32_t id = 0; id < p->nr_ids; id++)
		if (p->slabs[id])
			pool_slab_destroy(p, p->slabs[id]);
	free(p->slabs);
	free(p->free_ids);
	free(p);
}

/* Makes room for one more id in both arrays, so freeing an id cannot fail. */
static int pool_grow_ids(struct pool *p)
{
	uint32_t cap = p->cap_ids ? p->cap_ids * 2 : 64;
	struct pool_slab **slabs;
	uint32_t *free_ids;

	if (p->cap_ids > POOL_MAX_SLABS / 2)
		return -ENOMEM;
	slabs = reallocarray(p->slabs, cap, sizeof(*slabs));
	if (!slabs)
		return -ENOMEM;
	p->slabs = slabs;
	free_ids = reallocarray(p->free_ids, cap, sizeof(*free_ids));
	if (!free_ids)
		return -ENOMEM;
	p->free_ids = free_ids;
	p->cap_ids = cap;
	return 0;
}

static int pool_get_id(struct pool *p, uint32_t *ret_id)
{
	int r;

	if (p->nr_free_ids) {
		*ret_id = p->free_ids[--p->nr_free_ids];
		return 0;
	}
	if (p->nr_ids == p->cap_ids) {
		r = pool_grow_ids(p);
		if (r < 0)
			return r;
	}
	p->slabs[p->nr_ids] = NULL;
	*ret_id = p->nr_ids++;
	return 0;
}

static void pool_put_id(struct pool *p, uint32_t id)
{
	p->slabs[id] = NULL;
	p->free_ids[p->nr_free_ids++] = id;
}

static void pool_group_unlink(struct pool_class *c, struct pool_slab *s)
{
	if (s->group == POOL_NO_GROUP)
		return;
	if (s->prev)
		s->prev->next = s->next;
	else
		c->groups[s->group] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (!c->groups[s->group])
		c->group_mask &= ~(UINT32_C(1) << s->group);
	s->prev = s->next = NULL;
	s->group = POOL_NO_GROUP;
}

static void pool_group_link(struct pool_class *c, struct pool_slab *s, unsigned g)
{
	s->group = (uint8_t)g;
	s->prev = NULL;
	s->next = c->groups[g];
	if (s->next)
		s->next->prev = s;
	c->groups[g] = s;
	c->group_mask |= UINT32_C(1) << g;
}

/* Full slabs are on no list: nothing can be allocated from them. */
static void pool_slab_regroup(struct pool_class *c, struct pool_slab *s)
{
	unsigned g;

	if (s->nr_used == c->nr_slots) {
		pool_group_unlink(c, s);
		return;
	}
	g = (unsigned)s->nr_used * POOL_GROUPS / c->nr_slots;
	if (g == s->group)
		return;
	pool_group_unlink(c, s);
	pool_group_link(c, s, g);
}

static int pool_slab_create(struct pool *p, unsigned cls, struct pool_slab **ret_slab)
{
	struct pool_class *c = &p->classes[cls];
	struct pool_slab *s;
	uint16_t *stack;
	uint32_t id;
	int r;

	r = pool_get_id(p, &id);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s) + 2 * c->nr_slots * sizeof(s->slot_len[0]));
	if (!s) {
		r = -ENOMEM;
		goto fail_header;
	}
	s->mem = mmap(NULL, pool_slab_bytes(c), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED) {
		r = -errno;
		goto fail_mmap;
	}
	s->id = id;
	s->cls = (uint16_t)cls;
	s->group = POOL_NO_GROUP;
	/* Reversed, so slots are handed out from the start of the slab. */
	stack = pool_free_stack(s, c);
	for (unsigned i = 0; i < c->nr_slots; i++)
		stack[i] = (uint16_t)(c->nr_slots - 1 - i);
	p->slabs[id] = s;
	p->total_size += pool_slab_bytes(c);
	pool_slab_regroup(c, s);
	*ret_slab = s;
	return 0;

fail_mmap:
	free(s);
fail_header:
	pool_put_id(p, id);
	return r;
}

static struct pool_slab *pool_class_fullest(struct pool_class *c)
{
	if (!c->group_mask)
		return NULL;
	return c->groups[31 - __builtin_clz(c->group_mask)];
}

int pool_alloc(struct pool *p, size_t len, uint64_t *ret_handle)
{
	unsigned cls;
	struct pool_class *c;
	struct pool_slab *s;
	uint16_t slot;
	int r;

	if (len == 0 || len > ZS_PAGE_SIZE)
		return -EINVAL;
	cls = (unsigned)((len - 1) / POOL_CLASS_DELTA);
	c = &p->classes[cls];
	s = pool_class_fullest(c);
	if (!s) {
		r = pool_slab_create(p, cls, &s);
		if (r < 0)
			return r;
	}
	slot = pool_free_stack(s, c)[c->nr_slots - s->nr_used - 1];
	s->slot_len[slot] = (uint16_t)len;
	s->nr_used++;
	pool_slab_regroup(c, s);
	p->stored_bytes += len;
	p->nr_objects++;
	*ret_handle = ((uint64_t)s->id + 1) << POOL_SLOT_BITS | slot;
	return 0;
}

static _Noreturn void pool_corrupt(const char *op, uint64_t handle)
{
	fprintf(stderr, "zswapd: pool: %s of invalid handle 0x%llx, memory is corrupt\n", op,
		(unsigned long long)handle);
	abort();
}

/* The live object's slab; aborts if handle names none. */
static struct pool_slab *pool_lookup(const struct pool *p, uint64_t handle, const char *op,
				     uint16_t *ret_slot)
{
	uint64_t id = (handle >> POOL_SLOT_BITS) - 1;
	uint64_t slot = handle & POOL_SLOT_MASK;
	struct pool_slab *s;

	if (handle >> POOL_SLOT_BITS == 0 || id >= p->nr_ids)
		pool_corrupt(op, handle);
	s = p->slabs[id];
	if (!s || slot >= p->classes[s->cls].nr_slots || s->slot_len[slot] == 0)
		pool_corrupt(op, handle);
	*ret_slot = (uint16_t)slot;
	return s;
}

void pool_release(struct pool *p, uint64_t handle)
{
	struct pool_class *c;
	struct pool_slab *s;
	uint16_t slot;

	s = pool_lookup(p, handle, "release", &slot);
	c = &p->classes[s->cls];
	p->stored_bytes -= s->slot_len[slot];
	p->nr_objects--;
	s->slot_len[slot] = 0;
	pool_free_stack(s, c)[c->nr_slots - s->nr_used] = slot;
	s->nr_used--;
	if (s->nr_used > 0) {
		pool_slab_regroup(c, s);
		return;
	}
	pool_group_unlink(c, s);
	pool_put_id(p, s->id);
	pool_slab_destroy(p, s);
}

void *pool_map(struct pool *p, uint64_t handle)
{
	struct pool_slab *s;
	uint16_t slot;

	s = pool_lookup(p, handle, "map", &slot);
	return s->mem + (size_t)slot * p->classes[s->cls].size;
}

size_t pool_obj_len(struct pool *p, uint64_t handle)
{
	struct pool_slab *s;
	uint16_t slot;

	s = pool_lookup(p, handle, "obj_len", &slot);
	return s->slot_len[slot];
}

uint64_t pool_total_size(const struct pool *p)
{
	return p->total_size;
}

uint64_t pool_stored_bytes(const struct pool *p)
{
	return p->stored_bytes;
}

uint64_t pool_nr_objects(const struct pool *p)
{
	return p->nr_objects;
}
