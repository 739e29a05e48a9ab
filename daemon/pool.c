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
 *    single pages: a chunk of the arena is contiguous memory, so an object
 *    may straddle a page boundary and pool_map() is plain arithmetic.
 *
 *  - Slabs live in one arena: a memfd, mapped once, cut into 64 KiB
 *    chunks, the largest slab's size; a slab's id is its chunk's index, so
 *    a slab's address is arithmetic and its place in the memfd outlives
 *    the mapping.  That is what an upgrade needs: the arena's descriptor
 *    crosses the exec, the new binary maps it and puts each object back at
 *    the slab and slot it had (pool_adopt(), pool_place()), and not one
 *    byte of the pool is copied.  A chunk is memory only where a slab
 *    wrote: the memfd is sparse, and an emptied slab's pages go back to the
 *    kernel with a hole punched over them, so pool_total_size() is memory
 *    the kernel really lent us and the pool shrinks without a shrinker.
 *    The arena's size is address space, not memory; it grows (ftruncate
 *    and mremap) as slab ids run out, and never shrinks.
 *
 *  - Not at once, though: a few empty slabs wait in a small cache until
 *    pool_trim() (the event loop calls it every second) in case a class
 *    wants a slab again.  Under churn, faults releasing objects while
 *    evictions store others, classes empty and create slabs thousands
 *    of times a second (one-page slabs of pages stored as they are,
 *    mostly), and each hole punched is a TLB flush by IPI (in a VM a
 *    hypercall) and each fresh slab a round of page faults
 *    (docs/benchmarks.md, "The slab cache").  What sat in the cache
 *    unused for a whole second goes back, and all of it when the pool
 *    nears its limit (pool_drop_cache()); the cache is counted in
 *    pool_total_size(): the memory is still ours.
 *
 *  - To make slabs empty out, allocation takes the fullest partial slab of
 *    its class: partial slabs sit in POOL_GROUPS fullness groups
 *    (zsmalloc's fullness lists), and a bitmap of non-empty groups finds
 *    the fullest in O(1).  Sparse slabs then only lose objects and are
 *    returned.  Fullest-first is not enough when entries die at random,
 *    hence compaction (pool_compact.c).
 *
 *  - Objects that move need a name that does not: a handle is an index into
 *    a handle table whose entry holds the object's current slab id, slot and
 *    length.  Moving an object rewrites one entry.  pool_map(), on the fault
 *    path, takes one load before the data, the entry: the slab's address
 *    is its chunk's, and the length gives the slot size.  Release and
 *    alloc pay a cache miss for the entry as well.  Free entries form a
 *    list threaded through the table itself, entry 0 is never used (so 0 is
 *    never a handle), and the table grows by doubling; it does not shrink,
 *    as callers hold its indices, and costs 8 bytes per object at the peak.
 *
 *  - Per-slot bookkeeping (the handle of the object in each slot, and a stack
 *    of free slots) lives in a malloc'd header beside the slab, never in its
 *    pages: every data byte is usable, and a stray write into the data
 *    cannot corrupt the allocator, only the object it hits.  The slot's
 *    handle is what compaction needs to find the table entry to rewrite.
 *
 * A handle that does not name a live object (out of the table, or a free
 * entry) means the daemon's own memory is corrupt; we abort rather than hand
 * out or free someone else's page.
 *
 * Handing the pool to another zswapd, after an upgrade or a crash, is
 * pool_handover.c.
 *
 * Not thread-safe: the caller serialises access to one pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool_internal.h"

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

/* A pool on the arena in fd, which is file_bytes long and all mapped; it
 * owns fd once this succeeds. */
int pool_open(int fd, uint64_t file_bytes, struct pool **ret_pool)
{
	struct pool *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	/* NORESERVE: address space, and the memfd is sparse; pages come as slabs write. */
	p->base = mmap(NULL, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p->base == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	/*
	 * Never huge pages, whatever shmem_enabled says: a slab writing 4 KiB
	 * would get a 2 MiB folio, holding memory pool_total_size() does not
	 * count, and a hole punched in it frees nothing.  The flag stays with
	 * the mapping when pool_grow_arena() grows it.
	 */
	if (madvise(p->base, file_bytes, MADV_NOHUGEPAGE) < 0) {
		r = -errno;
		munmap(p->base, file_bytes);
		goto fail;
	}
	p->fd = fd;
	p->hfd = -1;
	p->arena_bytes = p->file_bytes = file_bytes;
	pool_init_classes(p);
	*ret_pool = p;
	return 0;

fail:
	free(p);
	return r;
}

/*
 * Maps `chunks` chunks at least.  The memfd only ever grows: an adopted
 * one may be longer than what is mapped yet, and must not be cut.  The
 * mapping may move, which pool_map()'s rule (map right before use) allows.
 */
static int pool_grow_arena(struct pool *p, uint32_t chunks)
{
	uint64_t bytes = (uint64_t)chunks << POOL_CHUNK_SHIFT;
	void *base;

	if (bytes <= p->arena_bytes)
		return 0;
	if (bytes > p->file_bytes) {
		if (ftruncate(p->fd, (off_t)bytes) < 0)
			return -errno;
		p->file_bytes = bytes;
	}
	base = mremap(p->base, p->arena_bytes, bytes, MREMAP_MAYMOVE);
	if (base == MAP_FAILED)
		return -errno;
	p->base = base;
	p->arena_bytes = bytes;
	return 0;
}

static _Noreturn void pool_corrupt(const char *op, uint64_t handle)
{
	fprintf(stderr, "zswapd: pool: %s of invalid handle 0x%llx, memory is corrupt\n", op,
		(unsigned long long)handle);
	abort();
}

/* The pool's own bookkeeping contradicts itself: as bad as a corrupt handle. */
_Noreturn void pool_bug(const char *what, uint32_t slab_id)
{
	fprintf(stderr, "zswapd: pool: %s in slab %u, memory is corrupt\n", what, slab_id);
	abort();
}

static void pool_put_id(struct pool *p, uint32_t id)
{
	p->slabs[id] = NULL;
	p->free_ids[p->nr_free_ids++] = id;
}

/*
 * Gives a slab's pages back to the kernel, and its id to the free ones.
 * The hole is punched in the file, not just the mapping: the page cache
 * lets go of the pages, and a later slab in this chunk starts from none.
 */
static void pool_punch(struct pool *p, uint32_t id, size_t bytes)
{
	fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)((uint64_t)id << POOL_CHUNK_SHIFT), (off_t)bytes);
	p->total_size -= bytes;
	pool_put_id(p, id);
}

/* Punches cached slab i, which the caller then takes off the array. */
static size_t pool_cache_punch(struct pool *p, uint32_t i)
{
	size_t bytes = p->cache[i].bytes;

	pool_punch(p, p->cache[i].id, bytes);
	p->cached_bytes -= bytes;
	return bytes;
}

/*
 * Gives back the slabs that came into the cache before the last call and
 * are still there: a whole period without an allocation of their size.
 * One taken and put back since came in again, in this period.
 */
size_t pool_trim(struct pool *p)
{
	size_t freed = 0;
	uint32_t kept = 0;

	for (uint32_t i = 0; i < p->nr_cached; i++) {
		if (p->cache[i].period != p->cache_period)
			freed += pool_cache_punch(p, i);
		else
			p->cache[kept++] = p->cache[i];
	}
	p->nr_cached = kept;
	p->cache_period++;
	return freed;
}

size_t pool_drop_cache(struct pool *p)
{
	size_t freed = 0;

	while (p->nr_cached)
		freed += pool_cache_punch(p, --p->nr_cached);
	return freed;
}

/*
 * Retires a slab that is on no list: its chunk waits in the cache, pages
 * and id kept, if `keep` and there is room, else is punched and its id freed.
 */
static void pool_slab_destroy(struct pool *p, struct pool_slab *s, bool keep)
{
	struct pool_class *c = &p->classes[s->cls];
	uint32_t bytes = (uint32_t)pool_slab_bytes(c);

	/* A half-drained slab must not outlive its memory as compaction's cursor. */
	if (p->compact_src == s)
		p->compact_src = NULL;
	p->slabs[s->id] = NULL;
	if (keep && p->nr_cached < POOL_CACHE_SLABS && p->cached_bytes + bytes <= POOL_CACHE_BYTES) {
		p->cache[p->nr_cached++] = (struct pool_cached_slab){ s->id, bytes, p->cache_period };
		p->cached_bytes += bytes;
	} else {
		pool_punch(p, s->id, bytes);
	}
	c->nr_slabs--;
	free(s);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	/* No hole to punch: closing the memfd frees its pages, unless an
	 * upgrade handed it on, and then they are the next binary's. */
	for (uint32_t id = 0; id < p->nr_ids; id++)
		free(p->slabs[id]);
	munmap(p->base, p->arena_bytes);
	close(p->fd);
	if (p->handles)
		munmap(p->handles, p->handles_bytes);
	if (p->hfd >= 0)
		close(p->hfd);
	free(p->slabs);
	free(p->free_ids);
	free(p);
}

/* Makes room for one more id in all arrays, so freeing an id cannot fail. */
int pool_grow_ids(struct pool *p)
{
	uint32_t cap = p->cap_ids ? p->cap_ids * 2 : 64;
	struct pool_slab **slabs;
	uint32_t *free_ids;
	int r;

	if (p->cap_ids >= POOL_MAX_CHUNKS)
		return -ENOMEM;
	if (cap > POOL_MAX_CHUNKS)
		cap = POOL_MAX_CHUNKS;
	r = pool_grow_arena(p, cap);
	if (r < 0)
		return r;
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

/* A chunk with no page in it, for a new slab. */
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

/* A chunk for a slab of `bytes`: a cached one's, pages and all, or a free one. */
static int pool_slab_id_get(struct pool *p, uint32_t bytes, uint32_t *ret_id)
{
	int r;

	for (uint32_t i = p->nr_cached; i-- > 0;) {
		if (p->cache[i].bytes != bytes)
			continue;
		*ret_id = p->cache[i].id;
		p->cache[i] = p->cache[--p->nr_cached];
		p->cached_bytes -= bytes;
		return 0;
	}
	r = pool_get_id(p, ret_id);
	if (r == 0)
		p->total_size += bytes;
	return r;
}

/*
 * The handle table in its memfd, grown to hold cap entries (the memfd
 * keeps its size if it is longer).  It lives in a memfd so that, with the
 * arena, it outlives the daemon: a zswapd started after this one died
 * reads where every object is from it (pool_recover()).
 */
int pool_map_handles(struct pool *p, uint32_t cap)
{
	uint64_t bytes = ((uint64_t)cap * sizeof(struct pool_handle) + ZS_PAGE_SIZE - 1) &
			 ~(uint64_t)(ZS_PAGE_SIZE - 1);
	struct stat st;
	void *t;

	if (p->hfd < 0) {
		p->hfd = memfd_create("zswapd-handles", MFD_CLOEXEC);
		if (p->hfd < 0)
			return -errno;
	}
	if (bytes <= p->handles_bytes)
		return 0;
	if (fstat(p->hfd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < bytes && ftruncate(p->hfd, (off_t)bytes) < 0)
		return -errno;
	if (p->handles)
		t = mremap(p->handles, p->handles_bytes, bytes, MREMAP_MAYMOVE);
	else
		t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->hfd, 0);
	if (t == MAP_FAILED)
		return -errno;
	p->handles = t;
	p->handles_bytes = bytes;
	return 0;
}

/*
 * Makes sure a free handle entry exists, so that once a slot is taken
 * nothing can fail.  The table doubles; mremap moves it without a copy.
 */
static int pool_reserve_handle(struct pool *p)
{
	uint32_t n = p->nr_handles, cap, first;
	int r;

	if (p->free_handle)
		return 0;
	if (n == POOL_MAX_HANDLES)
		return -ENOMEM;
	cap = n > POOL_MAX_HANDLES / 2 ? POOL_MAX_HANDLES : (n ? n * 2 : 256);
	r = pool_map_handles(p, cap);
	if (r < 0)
		return r;
	/* Entry 0 stays free and off the list forever: 0 is never a handle. */
	first = n ? n : 1;
	if (!n)
		pool_handle_set(&p->handles[0], 0, 0, 0);
	/* Linked in ascending order, so low handles are used first. */
	for (uint32_t i = cap; i-- > first;)
		pool_handle_set(&p->handles[i], i + 1 < cap ? i + 1 : 0, 0, 0);
	p->nr_handles = cap;
	p->free_handle = first;
	return 0;
}

int pool_new(struct pool **ret_pool)
{
	uint64_t bytes = (uint64_t)POOL_FIRST_CHUNKS << POOL_CHUNK_SHIFT;
	struct pool *p;
	int fd, r;

	fd = memfd_create("zswapd-pool", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = ftruncate(fd, (off_t)bytes) < 0 ? -errno : pool_open(fd, bytes, &p);
	if (r < 0) {
		close(fd);
		return r;
	}
	/* The handle table's memfd from the start: it goes in the fd store. */
	r = pool_reserve_handle(p);
	if (r < 0) {
		pool_free(p);
		return r;
	}
	*ret_pool = p;
	return 0;
}

static uint32_t pool_get_handle(struct pool *p)
{
	uint32_t h = p->free_handle;

	p->free_handle = p->handles[h].slab;
	/*
	 * Released handles come back in release order, scattered over the
	 * table: fetch the next one's entry now rather than stall on it in
	 * the next pool_alloc().
	 */
	__builtin_prefetch(&p->handles[p->free_handle], 1);
	return h;
}

static void pool_put_handle(struct pool *p, uint32_t h)
{
	/* LIFO: the entry just used is likely still in cache for the next alloc. */
	pool_handle_set(&p->handles[h], p->free_handle, 0, 0);
	p->free_handle = h;
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
void pool_slab_regroup(struct pool_class *c, struct pool_slab *s)
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

/* A slab's header, on no list, its slots all free but no free stack yet. */
struct pool_slab *pool_slab_header(struct pool *p, unsigned cls, uint32_t id)
{
	const struct pool_class *c = &p->classes[cls];
	struct pool_slab *s = calloc(1, sizeof(*s) + c->nr_slots * (sizeof(s->slot_handle[0]) +
								   sizeof(uint16_t)));

	if (!s)
		return NULL;
	s->id = id;
	s->cls = (uint16_t)cls;
	s->group = POOL_NO_GROUP;
	return s;
}

static int pool_slab_create(struct pool *p, unsigned cls, struct pool_slab **ret_slab)
{
	struct pool_class *c = &p->classes[cls];
	struct pool_slab *s;
	uint16_t *stack;
	uint32_t id;
	int r;

	r = pool_slab_id_get(p, (uint32_t)pool_slab_bytes(c), &id);
	if (r < 0)
		return r;
	s = pool_slab_header(p, cls, id);
	if (!s) {
		pool_punch(p, id, pool_slab_bytes(c));
		return -ENOMEM;
	}
	/* Reversed, so slots are handed out from the start of the slab. */
	stack = pool_free_stack(s, c);
	for (unsigned i = 0; i < c->nr_slots; i++)
		stack[i] = (uint16_t)(c->nr_slots - 1 - i);
	p->slabs[id] = s;
	c->nr_slabs++;
	pool_slab_regroup(c, s);
	*ret_slab = s;
	return 0;
}

/* Takes the slab off its list, gives back its chunk. */
void pool_slab_retire(struct pool *p, struct pool_slab *s, bool keep)
{
	pool_group_unlink(&p->classes[s->cls], s);
	pool_slab_destroy(p, s, keep);
}

/* Occupies a free slot of a slab that has one, for handle h. */
uint16_t pool_slot_take(struct pool_class *c, struct pool_slab *s, uint32_t h)
{
	uint16_t slot = pool_free_stack(s, c)[c->nr_slots - s->nr_used - 1];

	s->slot_handle[slot] = h;
	s->nr_used++;
	c->nr_used++;
	pool_slab_regroup(c, s);
	return slot;
}

/*
 * Frees a slot.  A slab left empty is not regrouped, only left on its list:
 * the caller retires it at once.
 */
void pool_slot_put(struct pool_class *c, struct pool_slab *s, uint16_t slot)
{
	s->slot_handle[slot] = 0;
	pool_free_stack(s, c)[c->nr_slots - s->nr_used] = slot;
	s->nr_used--;
	c->nr_used--;
	if (s->nr_used)
		pool_slab_regroup(c, s);
}

static struct pool_slab *pool_class_fullest(struct pool_class *c)
{
	if (!c->group_mask)
		return NULL;
	return c->groups[31 - __builtin_clz(c->group_mask)];
}

int pool_alloc(struct pool *p, size_t len, uint64_t *ret_handle)
{
	struct pool_handle *e;
	struct pool_class *c;
	struct pool_slab *s;
	unsigned cls;
	uint32_t h;
	int r;

	if (len == 0 || len > ZS_PAGE_SIZE)
		return -EINVAL;
	/* Before the slab: a new slab would be left empty if this failed. */
	r = pool_reserve_handle(p);
	if (r < 0)
		return r;
	cls = pool_class_of(len);
	c = &p->classes[cls];
	s = pool_class_fullest(c);
	if (!s) {
		r = pool_slab_create(p, cls, &s);
		if (r < 0)
			return r;
	}
	h = pool_get_handle(p);
	e = &p->handles[h];
	pool_handle_set(e, s->id, pool_slot_take(c, s, h), (uint16_t)len);
	p->stored_bytes += len;
	p->nr_objects++;
	*ret_handle = h;
	return 0;
}

/* The live object's table entry; aborts if handle names none. */
struct pool_handle *pool_lookup(const struct pool *p, uint64_t handle, const char *op)
{
	struct pool_handle *e;

	/* Entry 0 is always free, so handle 0 fails the second test. */
	if (handle >= p->nr_handles)
		pool_corrupt(op, handle);
	e = &p->handles[handle];
	if (e->len == 0)
		pool_corrupt(op, handle);
	return e;
}

void pool_release(struct pool *p, uint64_t handle)
{
	struct pool_handle *e = pool_lookup(p, handle, "release");
	struct pool_slab *s = p->slabs[e->slab];

	p->stored_bytes -= e->len;
	p->nr_objects--;
	pool_slot_put(&p->classes[s->cls], s, e->slot);
	pool_put_handle(p, (uint32_t)handle);
	if (!s->nr_used)
		pool_slab_retire(p, s, true);
}

/*
 * The fault path.  One load before the data: the handle entry.  The slab's
 * address is its chunk's, and the slot size comes from the length.
 */
void *pool_map(struct pool *p, uint64_t handle)
{
	const struct pool_handle *e = pool_lookup(p, handle, "map");

	return pool_chunk(p, e->slab) + (size_t)e->slot * pool_slot_size(e->len);
}

size_t pool_obj_len(struct pool *p, uint64_t handle)
{
	return pool_lookup(p, handle, "obj_len")->len;
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
