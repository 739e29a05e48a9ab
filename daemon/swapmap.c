// SPDX-License-Identifier: GPL-2.0-only
/*
 * swapmap.c - the swap file's block allocator (swapmap.h).
 *
 * Two arrays a block: the count of live objects, and whether a write is in
 * flight.  A block counts as used from the moment it is allocated until it
 * has neither.  Next-fit: the writeback fills the file from front to back
 * and comes round again, so a block freed lately is not reused at once.
 */
#include <errno.h>
#include <stdlib.h>

#include "swapmap.h"

struct swapmap {
	uint64_t nblocks;
	uint16_t *live;	  /* objects alive per block */
	uint8_t *writing; /* per block: a write is in flight */
	uint64_t used_blocks;
	uint64_t cursor; /* next-fit search for a free block */
};

int swapmap_new(uint64_t nblocks, struct swapmap **ret_map)
{
	struct swapmap *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->nblocks = nblocks;
	m->live = calloc(nblocks ? nblocks : 1, sizeof(*m->live));
	m->writing = calloc(nblocks ? nblocks : 1, 1);
	if (!m->live || !m->writing) {
		swapmap_free(m);
		return -ENOMEM;
	}
	*ret_map = m;
	return 0;
}

void swapmap_free(struct swapmap *m)
{
	if (!m)
		return;
	free(m->live);
	free(m->writing);
	free(m);
}

uint64_t swapmap_nblocks(const struct swapmap *m)
{
	return m->nblocks;
}

static bool swapmap_block_free(const struct swapmap *m, uint64_t b)
{
	return m->live[b] == 0 && !m->writing[b];
}

int swapmap_alloc(struct swapmap *m, uint64_t *ret_block)
{
	for (uint64_t i = 0; i < m->nblocks; i++) {
		uint64_t b = (m->cursor + i) % m->nblocks;

		if (swapmap_block_free(m, b)) {
			m->cursor = b + 1;
			m->used_blocks++;
			*ret_block = b;
			return 0;
		}
	}
	return -ENOSPC;
}

void swapmap_get(struct swapmap *m, uint64_t b)
{
	m->live[b]++;
}

int swapmap_adopt(struct swapmap *m, uint64_t b)
{
	if (b >= m->nblocks)
		return -ERANGE;
	if (swapmap_block_free(m, b))
		m->used_blocks++;
	m->live[b]++;
	return 0;
}

void swapmap_put(struct swapmap *m, uint64_t b)
{
	if (m->live[b] > 0)
		m->live[b]--;
	if (swapmap_block_free(m, b))
		m->used_blocks--;
}

void swapmap_set_writing(struct swapmap *m, uint64_t b, bool writing)
{
	m->writing[b] = writing;
}

uint64_t swapmap_next_writing(const struct swapmap *m, uint64_t b)
{
	while (b < m->nblocks && !m->writing[b])
		b++;
	return b;
}

void swapmap_unalloc(struct swapmap *m, uint64_t b)
{
	if (swapmap_block_free(m, b))
		m->used_blocks--;
}

uint64_t swapmap_used_bytes(const struct swapmap *m)
{
	return m ? m->used_blocks * SWAPMAP_BLOCK : 0;
}
