// SPDX-License-Identifier: GPL-2.0-only
/*
 * idx.c - a target's page index: a radix tree over 36-bit page numbers
 * (see idx.h).
 *
 * Owns the tree's nodes, not the values.  Four levels of 512-slot nodes,
 * 9 bits of the page number each: a node is about a page (512 pointers and
 * a small header), any lookup is exactly four loads, and there is no
 * rebalancing and no per-entry allocation.  The cost is memory for sparse
 * use: a lone page pays for four nodes (16K).  Evicted pages come in runs
 * (heaps, arenas, stacks), so in practice a leaf serves many neighbours,
 * and a full one costs 8 bytes per 4K page it indexes.
 *
 * Every node counts its non-empty slots, so erase frees a node the moment
 * it empties and walks back up freeing emptied parents: the tree holds only
 * paths to live entries, and an idle target's index shrinks to nothing.
 *
 * Every node also keeps a 512-bit map of its non-empty slots.  Walks use it
 * to jump to the next populated slot eight words at a time instead of
 * testing up to 512 pointers per level: between two lone pages far apart a
 * walk would otherwise read some 3000 slots, with the map about 50 words.
 *
 * Walks find each entry by a fresh descent from the root, starting at the
 * page after the previous one.  Holding no node across the callback is what
 * lets the callback erase the entry it was given, even when that frees the
 * leaf and every node above it; the price is three extra loads per entry,
 * which is nothing next to what a callback does with a page.
 */
#include <errno.h>
#include <stdlib.h>

#include "idx.h"

#define IDX_BITS 9
#define IDX_FANOUT (1u << IDX_BITS)
#define IDX_MASK (IDX_FANOUT - 1)
#define IDX_LEVELS 4
#define IDX_ROOT_SHIFT ((IDX_LEVELS - 1) * IDX_BITS)
#define IDX_MAP_WORDS (IDX_FANOUT / 64)

_Static_assert(IDX_PGNO_MAX == UINT64_C(1) << (IDX_LEVELS * IDX_BITS),
	       "the tree must cover exactly the page numbers idx.h promises");

struct idx_node {
	uint64_t present[IDX_MAP_WORDS]; /* bit i set: slot[i] != NULL */
	unsigned count;			 /* bits set in present */
	void *slot[IDX_FANOUT];
};

struct idx {
	struct idx_node *root;
	size_t count;
	size_t nr_nodes;
};

static unsigned idx_index(uint64_t pgno, unsigned shift)
{
	return (unsigned)(pgno >> shift) & IDX_MASK;
}

static void idx_slot_set(struct idx_node *n, unsigned i, void *p)
{
	n->slot[i] = p;
	n->present[i / 64] |= UINT64_C(1) << (i % 64);
	n->count++;
}

/* Returns how many slots stay filled. */
static unsigned idx_slot_clear(struct idx_node *n, unsigned i)
{
	n->slot[i] = NULL;
	n->present[i / 64] &= ~(UINT64_C(1) << (i % 64));
	return --n->count;
}

/* The first filled slot at or after i, or IDX_FANOUT. */
static unsigned idx_slot_next(const struct idx_node *n, unsigned i)
{
	unsigned w = i / 64;
	uint64_t bits;

	if (i >= IDX_FANOUT)
		return IDX_FANOUT;
	bits = n->present[w] & (~UINT64_C(0) << (i % 64));
	while (!bits) {
		if (++w == IDX_MAP_WORDS)
			return IDX_FANOUT;
		bits = n->present[w];
	}
	return w * 64 + (unsigned)__builtin_ctzll(bits);
}

int idx_new(struct idx **ret_idx)
{
	struct idx *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*ret_idx = t;
	return 0;
}

static void idx_node_free(struct idx_node *n, unsigned shift,
			  void (*drop)(void *val, void *arg), void *arg)
{
	for (unsigned i = idx_slot_next(n, 0); i < IDX_FANOUT; i = idx_slot_next(n, i + 1)) {
		if (shift)
			idx_node_free(n->slot[i], shift - IDX_BITS, drop, arg);
		else if (drop)
			drop(n->slot[i], arg);
	}
	free(n);
}

void idx_free(struct idx *t, void (*drop)(void *val, void *arg), void *arg)
{
	if (!t)
		return;
	if (t->root)
		idx_node_free(t->root, IDX_ROOT_SHIFT, drop, arg);
	free(t);
}

void *idx_lookup(const struct idx *t, uint64_t pgno)
{
	const struct idx_node *n = t->root;

	if (pgno >= IDX_PGNO_MAX)
		return NULL;
	for (unsigned shift = IDX_ROOT_SHIFT; n && shift; shift -= IDX_BITS)
		n = n->slot[idx_index(pgno, shift)];
	return n ? n->slot[idx_index(pgno, 0)] : NULL;
}

/*
 * How many nodes the path to pgno lacks.  They are all allocated before any
 * is linked, so -ENOMEM can leave the tree as it was.
 */
static unsigned idx_missing(const struct idx *t, uint64_t pgno)
{
	const struct idx_node *n = t->root;
	unsigned missing = IDX_LEVELS;

	for (unsigned shift = IDX_ROOT_SHIFT; n; shift -= IDX_BITS) {
		missing--;
		if (!shift)
			break;
		n = n->slot[idx_index(pgno, shift)];
	}
	return missing;
}

static int idx_alloc_nodes(struct idx_node **nodes, unsigned nr)
{
	unsigned i;

	for (i = 0; i < nr; i++) {
		nodes[i] = calloc(1, sizeof(**nodes));
		if (!nodes[i])
			goto fail_calloc;
	}
	return 0;

fail_calloc:
	while (i--)
		free(nodes[i]);
	return -ENOMEM;
}

/* Descends to pgno's leaf, linking nodes from spare[] where the path is missing. */
static struct idx_node *idx_build_path(struct idx *t, uint64_t pgno, struct idx_node **spare)
{
	struct idx_node *n;

	if (!t->root) {
		t->root = *spare++;
		t->nr_nodes++;
	}
	n = t->root;
	for (unsigned shift = IDX_ROOT_SHIFT; shift; shift -= IDX_BITS) {
		unsigned i = idx_index(pgno, shift);

		if (!n->slot[i]) {
			idx_slot_set(n, i, *spare++);
			t->nr_nodes++;
		}
		n = n->slot[i];
	}
	return n;
}

int idx_insert(struct idx *t, uint64_t pgno, void *val, void **ret_old)
{
	struct idx_node *spare[IDX_LEVELS];
	struct idx_node *leaf;
	unsigned i;
	void *old;
	int r;

	if (pgno >= IDX_PGNO_MAX)
		return -ERANGE;
	if (!val)
		return -EINVAL;
	r = idx_alloc_nodes(spare, idx_missing(t, pgno));
	if (r < 0)
		return r;
	leaf = idx_build_path(t, pgno, spare);
	i = idx_index(pgno, 0);
	old = leaf->slot[i];
	if (old) {
		leaf->slot[i] = val;
	} else {
		idx_slot_set(leaf, i, val);
		t->count++;
	}
	if (ret_old)
		*ret_old = old;
	return 0;
}

void *idx_erase(struct idx *t, uint64_t pgno)
{
	struct idx_node *path[IDX_LEVELS];
	struct idx_node *n = t->root;
	unsigned depth = 0, i;
	void *val;

	if (pgno >= IDX_PGNO_MAX)
		return NULL;
	for (unsigned shift = IDX_ROOT_SHIFT; n; shift -= IDX_BITS) {
		path[depth++] = n;
		if (!shift)
			break;
		n = n->slot[idx_index(pgno, shift)];
	}
	if (!n || !n->slot[idx_index(pgno, 0)])
		return NULL;
	val = n->slot[idx_index(pgno, 0)];
	t->count--;
	/* Clear the slot, then free each node that clearing its child emptied. */
	for (unsigned level = IDX_LEVELS; level-- > 0;) {
		n = path[level];
		i = idx_index(pgno, (IDX_LEVELS - 1 - level) * IDX_BITS);
		if (idx_slot_clear(n, i) > 0)
			break;
		free(n);
		t->nr_nodes--;
		if (level == 0)
			t->root = NULL;
	}
	return val;
}

/*
 * The first value at pgno in [pos, last) below n, whose slots are shift bits
 * apart.  Empty slots are skipped by the map, whatever their subtree's size.
 */
static void *idx_next(const struct idx_node *n, unsigned shift, uint64_t pos, uint64_t last,
		      uint64_t *ret_pgno)
{
	uint64_t base = pos & ~((UINT64_C(1) << (shift + IDX_BITS)) - 1);
	unsigned first = idx_index(pos, shift);

	for (unsigned i = idx_slot_next(n, first); i < IDX_FANOUT; i = idx_slot_next(n, i + 1)) {
		uint64_t from = i == first ? pos : base | (uint64_t)i << shift;
		void *v;

		if (from >= last)
			return NULL;
		if (!shift) {
			*ret_pgno = from;
			return n->slot[i];
		}
		v = idx_next(n->slot[i], shift - IDX_BITS, from, last, ret_pgno);
		if (v)
			return v;
	}
	return NULL;
}

int idx_walk(struct idx *t, uint64_t first, uint64_t last,
	     int (*cb)(uint64_t pgno, void *val, void *arg), void *arg)
{
	uint64_t pos = first, pgno = 0;
	void *val;
	int r;

	if (last > IDX_PGNO_MAX)
		last = IDX_PGNO_MAX;
	while (pos < last && t->root) {
		val = idx_next(t->root, IDX_ROOT_SHIFT, pos, last, &pgno);
		if (!val)
			break;
		r = cb(pgno, val, arg);
		if (r < 0)
			return r;
		pos = pgno + 1;
	}
	return 0;
}

size_t idx_count(const struct idx *t)
{
	return t->count;
}

uint64_t idx_mem_bytes(const struct idx *t)
{
	return (uint64_t)t->nr_nodes * sizeof(struct idx_node);
}
