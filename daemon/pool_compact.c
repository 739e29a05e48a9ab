// SPDX-License-Identifier: GPL-2.0-only
/*
 * pool_compact.c - compaction of the pool (see pool.h, and pool.c for the
 * allocator it packs).
 *
 * Fullest-first is not enough when entries die at random: a slab goes
 * back only once every object in it is gone (up to a few dozen), so
 * releasing a random half of the pool frees almost no slab and leaves the
 * pool half empty.  Hence compaction (zsmalloc's zs_compact): per class,
 * the objects of the sparsest slab are copied into free slots of the
 * fullest ones until it is empty and can be unmapped.  Slot counts decide
 * what it can achieve: a class with F free slots in slabs of S slots can
 * give back F / S whole slabs (pool_fragmented_bytes()), and draining
 * sparsest-first gives back exactly that many while copying few objects:
 * the sparsest slabs hold the fewest.  Copies within a class only: moving
 * an object to a bigger class would waste what compaction is meant to
 * recover.
 *
 * Compaction is incremental: pool_compact_some() moves a bounded number of
 * objects and keeps its place (class, slab being drained, slot scan) in the
 * pool, so the event loop can spread the copying over many turns.
 */
#include "pool_internal.h"

/* Whole slabs' worth of free slots in the class: what compaction can return. */
static uint64_t pool_class_spare_slabs(const struct pool_class *c)
{
	return ((uint64_t)c->nr_slabs * c->nr_slots - c->nr_used) / c->nr_slots;
}

/*
 * The slab to drain: the sparsest, i.e. the head of the lowest non-empty
 * group (within a group, fullness differs by at most 1/POOL_GROUPS of a slab).
 * The one being drained is kept while it is still in the lowest group, even
 * if a release between two calls files another slab at that group's head:
 * switching would strand the objects already moved out of it and spend the
 * moves again on the new one.  Without allocations a source only loses
 * objects, so it stays lowest.
 */
static struct pool_slab *pool_compact_src(struct pool *p, struct pool_class *c)
{
	unsigned lowest = (unsigned)__builtin_ctz(c->group_mask);
	struct pool_slab *s = p->compact_src;

	if (s && s->group == lowest)
		return s;
	s = c->groups[lowest];
	p->compact_src = s;
	p->compact_slot = 0;
	return s;
}

/* The fullest partial slab other than the source: where moved objects go. */
static struct pool_slab *pool_compact_dst(struct pool_class *c, const struct pool_slab *src)
{
	uint32_t mask = c->group_mask;

	while (mask) {
		unsigned g = 31 - (unsigned)__builtin_clz(mask);

		for (struct pool_slab *s = c->groups[g]; s; s = s->next)
			if (s != src)
				return s;
		mask &= ~(UINT32_C(1) << g);
	}
	return NULL;
}

/*
 * The next occupied slot of the source.  The scan position survives between
 * calls, so draining a slab costs O(nr_slots) in all; it wraps because
 * allocations between calls may have refilled slots behind it.
 */
static uint16_t pool_compact_next_slot(struct pool *p, const struct pool_class *c,
				       const struct pool_slab *s)
{
	uint16_t slot = p->compact_slot;

	for (unsigned n = 0; n < c->nr_slots; n++, slot++) {
		if (slot == c->nr_slots)
			slot = 0;
		if (s->slot_handle[slot]) {
			p->compact_slot = slot;
			return slot;
		}
	}
	/* The source is on a list, so not empty: the bookkeeping is broken. */
	pool_bug("compaction source has no object", s->id);
}

/* Moves the object in src's slot into a free slot of dst; its handle follows. */
static void pool_move(struct pool *p, struct pool_class *c, struct pool_slab *src,
		      uint16_t slot, struct pool_slab *dst)
{
	uint32_t h = src->slot_handle[slot];
	struct pool_handle *e = &p->handles[h];
	uint16_t to = pool_slot_take(c, dst, h);

	memcpy(pool_chunk(p, dst->id) + (size_t)to * c->size,
	       pool_chunk(p, src->id) + (size_t)slot * c->size, e->len);
	pool_handle_set(e, dst->id, to, e->len);
	pool_slot_put(c, src, slot);
}

/*
 * Compacts class by class from where the last call stopped, until max_moves
 * objects have moved or every class is packed (*ret_done).  Classes are
 * independent, so one round over all of them with nothing left to move
 * means the pool is packed.
 */
static size_t pool_compact_run(struct pool *p, size_t max_moves, bool *ret_done)
{
	size_t moves = 0, freed = 0;
	unsigned packed = 0; /* classes in a row found with nothing to give back */

	while (packed < POOL_NR_CLASSES) {
		struct pool_class *c = &p->classes[p->compact_cls];
		struct pool_slab *src, *dst;

		if (!pool_class_spare_slabs(c)) {
			p->compact_src = NULL;
			p->compact_cls = (uint16_t)((p->compact_cls + 1) % POOL_NR_CLASSES);
			packed++;
			continue;
		}
		if (moves == max_moves)
			break;
		packed = 0;
		/*
		 * Spare slabs mean the class's free slots fill a slab, and
		 * the source has fewer than that, so the other slabs have at
		 * least as many free slots as it has objects: a destination
		 * exists, and the whole source fits.  Both are partial
		 * slabs, so on lists.
		 */
		src = pool_compact_src(p, c);
		dst = pool_compact_dst(c, src);
		if (!dst)
			pool_bug("no room to drain compaction source", src->id);
		pool_move(p, c, src, pool_compact_next_slot(p, c, src), dst);
		moves++;
		if (!src->nr_used) {
			/* Straight back to the kernel: that is what compaction is for. */
			freed += pool_slab_bytes(c);
			pool_slab_retire(p, src, false);
		}
	}
	*ret_done = packed == POOL_NR_CLASSES;
	return freed;
}

size_t pool_compact_some(struct pool *p, size_t max_moves)
{
	bool done;

	return pool_compact_run(p, max_moves, &done);
}

size_t pool_compact(struct pool *p)
{
	size_t freed = 0;
	bool done = false;

	while (!done)
		freed += pool_compact_run(p, POOL_COMPACT_BATCH, &done);
	return freed;
}

uint64_t pool_fragmented_bytes(const struct pool *p)
{
	uint64_t bytes = 0;

	for (unsigned i = 0; i < POOL_NR_CLASSES; i++) {
		const struct pool_class *c = &p->classes[i];

		bytes += pool_class_spare_slabs(c) * pool_slab_bytes(c);
	}
	return bytes;
}
