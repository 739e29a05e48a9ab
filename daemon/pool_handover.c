// SPDX-License-Identifier: GPL-2.0-only
/*
 * pool_handover.c - the pool handed to another zswapd: by an upgrade,
 * which execs the next binary with the arena's memfd (pool_fd(),
 * pool_locate(), then pool_adopt(), pool_place(), pool_adopt_done() on the
 * other side), and by a crash, after which the next zswapd rebuilds the
 * pool from the arena and the handle table that systemd's fd store kept
 * (pool_recover()).  Not one byte of the pool is copied either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool_internal.h"

int pool_fd(const struct pool *p)
{
	return p->fd;
}

void pool_locate(struct pool *p, uint64_t handle, uint32_t *ret_slab, uint16_t *ret_slot)
{
	const struct pool_handle *e = pool_lookup(p, handle, "locate");

	*ret_slab = e->slab;
	*ret_slot = e->slot;
}

int pool_adopt(int fd, uint64_t max_handle, struct pool **ret_pool)
{
	struct pool *p = NULL;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % (1 << POOL_CHUNK_SHIFT) ||
	    (uint64_t)st.st_size >> POOL_CHUNK_SHIFT > POOL_MAX_CHUNKS ||
	    max_handle >= POOL_MAX_HANDLES)
		return -EPROTO;
	r = pool_open(fd, (uint64_t)st.st_size, &p);
	if (r < 0)
		return r;
	/* Every entry free until placed; the free list is threaded at the end. */
	r = pool_map_handles(p, (uint32_t)max_handle + 1);
	if (r < 0) {
		p->fd = -1; /* still the caller's */
		pool_free(p);
		return r;
	}
	p->nr_handles = (uint32_t)max_handle + 1;
	*ret_pool = p;
	return 0;
}

int pool_place(struct pool *p, uint64_t handle, uint32_t id, uint16_t slot, size_t len)
{
	struct pool_class *c;
	struct pool_slab *s;
	unsigned cls;
	int r;

	if (len == 0 || len > ZS_PAGE_SIZE || handle == 0 || handle >= p->nr_handles ||
	    p->handles[handle].len || id >= POOL_MAX_CHUNKS)
		return -EPROTO;
	cls = pool_class_of(len);
	c = &p->classes[cls];
	if (slot >= c->nr_slots)
		return -EPROTO;
	while (id >= p->cap_ids) {
		r = pool_grow_ids(p);
		if (r < 0)
			return r;
	}
	for (; p->nr_ids <= id; p->nr_ids++)
		p->slabs[p->nr_ids] = NULL;
	s = p->slabs[id];
	if (!s) {
		s = pool_slab_header(p, cls, id);
		if (!s)
			return -ENOMEM;
		p->slabs[id] = s;
		c->nr_slabs++;
		p->total_size += pool_slab_bytes(c);
	} else if (s->cls != cls || s->slot_handle[slot]) {
		return -EPROTO;
	}
	s->slot_handle[slot] = (uint32_t)handle;
	s->nr_used++;
	c->nr_used++;
	pool_handle_set(&p->handles[handle], id, slot, (uint16_t)len);
	p->stored_bytes += len;
	p->nr_objects++;
	return 0;
}

/*
 * Maps the pages of the slabs from id *cursor on, runs of neighbouring
 * slabs at a time, until about max_bytes are done.  Only slabs that exist
 * now: populating a free chunk would allocate pages nothing counts.
 */
bool pool_populate_some(struct pool *p, uint32_t *cursor, size_t max_bytes)
{
	uint64_t start = 0, end = 0, done = 0; /* the run so far, as arena offsets */
	uint32_t id = *cursor;

	for (; id <= p->nr_ids && done < max_bytes; id++) {
		const struct pool_slab *s = id < p->nr_ids ? p->slabs[id] : NULL;
		uint64_t off = (uint64_t)id << POOL_CHUNK_SHIFT;

		if (s && off == end && end - start < max_bytes) {
			end = off + pool_slab_bytes(&p->classes[s->cls]);
			continue;
		}
		if (end > start) {
			/* A failure (no memory to lock) leaves those pages to their first fault. */
			madvise(p->base + start, end - start, MADV_POPULATE_READ);
			done += end - start;
		}
		start = off;
		end = s ? off + pool_slab_bytes(&p->classes[s->cls]) : off;
	}
	if (end > start)
		madvise(p->base + start, end - start, MADV_POPULATE_READ);
	*cursor = id;
	return id > p->nr_ids;
}

/* Chunks [from, to) hold no slab: whatever pages a dead zswapd left there go. */
static void pool_punch_free(struct pool *p, uint32_t from, uint32_t to)
{
	if (to > from)
		fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)((uint64_t)from << POOL_CHUNK_SHIFT),
			  (off_t)((uint64_t)(to - from) << POOL_CHUNK_SHIFT));
}

void pool_adopt_done(struct pool *p)
{
	uint32_t free_end = p->nr_ids; /* the run of free chunks being walked ends here */

	/* Downwards, so that the lowest ids, slots and handles go out first. */
	for (uint32_t id = p->nr_ids; id-- > 0;) {
		struct pool_slab *s = p->slabs[id];
		struct pool_class *c;
		uint16_t *stack, n = 0;

		if (!s) {
			p->free_ids[p->nr_free_ids++] = id;
			continue;
		}
		/* An upgrade drops its cache first, but a crash leaves it. */
		pool_punch_free(p, id + 1, free_end);
		free_end = id;
		c = &p->classes[s->cls];
		stack = pool_free_stack(s, c);
		for (uint16_t slot = c->nr_slots; slot-- > 0;)
			if (!s->slot_handle[slot])
				stack[n++] = slot;
		pool_slab_regroup(c, s);
	}
	pool_punch_free(p, 0, free_end);
	for (uint32_t h = p->nr_handles; h-- > 1;) {
		if (p->handles[h].len)
			continue;
		pool_handle_set(&p->handles[h], p->free_handle, 0, 0);
		p->free_handle = h;
	}
}

size_t pool_live_len(const struct pool *p, uint64_t handle)
{
	return handle && handle < p->nr_handles ? p->handles[handle].len : 0;
}

uint64_t pool_handle_end(const struct pool *p)
{
	return p->nr_handles;
}

int pool_handles_fd(const struct pool *p)
{
	return p->hfd;
}

int pool_recover(int fd, int hfd, struct pool **ret_pool)
{
	struct pool_handle *old = MAP_FAILED;
	struct pool *p = NULL;
	uint64_t n = 0, max = 0;
	struct stat st;
	int r;

	if (fstat(hfd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)sizeof(*old) || st.st_size % ZS_PAGE_SIZE ||
	    (uint64_t)st.st_size / sizeof(*old) > (uint64_t)POOL_MAX_HANDLES + 1)
		return -EPROTO;
	n = (uint64_t)st.st_size / sizeof(*old);
	/* A private copy to read from: the table is rebuilt in its own memfd. */
	old = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, hfd, 0);
	if (old == MAP_FAILED)
		return -errno;
	for (uint64_t h = 1; h < n; h++)
		if (old[h].len)
			max = h;
	r = old[0].len ? -EPROTO : pool_adopt(fd, max ? max : 1, &p);
	for (uint64_t h = 1; r == 0 && h <= max; h++)
		if (old[h].len)
			r = pool_place(p, h, old[h].slab, old[h].slot, old[h].len);
	if (r == 0) {
		pool_adopt_done(p);
		*ret_pool = p;
	} else if (p) {
		p->fd = -1; /* still the caller's */
		pool_free(p);
	}
	munmap(old, (size_t)st.st_size);
	return r;
}
