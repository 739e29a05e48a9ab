// SPDX-License-Identifier: GPL-2.0-only
/*
 * entry.c - store, load and release of one page: zswap_store/zswap_load.
 *
 * A page made of one repeated 64-bit word (zero pages above all) is kept as
 * that word and costs no pool memory.  Anything else is compressed; a result
 * larger than max_compressed_percent of a page saves too little to be worth
 * a fault later.  Such a page is stored as it is, a whole page in the pool,
 * if store_incompressible says so (stored_incompressible_pages), and refused
 * otherwise: it stays resident (reject_compress_poor).  An object of exactly
 * ZS_PAGE_SIZE bytes is always such a page, never compressed data: a
 * compressed result that long is too poor to keep under any setting, so
 * the length alone tells which it holds (entry_as_is()), in the pool and
 * on disk alike, as zswap's entry->length == PAGE_SIZE does.  The pool
 * limit is enforced here with zswap's hysteresis: once full, stores are
 * refused until the pool is back under accept_threshold_percent of the
 * limit, so we do not thrash at the edge.
 *
 * The writeback LRUs are the entries', as zswap's LRU is: every COMP entry
 * in the pool is on one, oldest stored first; the writeback (wb.c) takes
 * from their heads, and an entry that dies leaves its list, and gives its
 * object back to the pool or its swap file block (swapmap.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comp.h"
#include "daemon.h"
#include "pool.h"
#include "swapmap.h"

/*
 * The pool's size as its limit sees it.  Empty slabs kept for reuse are
 * memory it holds, so they count; near the limit they go back first, so
 * that no store is refused, and no entry written back, for memory that
 * holds nothing.
 */
uint64_t entry_pool_size(struct daemon *d)
{
	uint64_t total = pool_total_size(d->pool);

	if (d->pool_limit.bytes &&
	    (total + ZS_PAGE_SIZE > d->pool_limit.bytes ||
	     total * 100 > d->pool_limit.bytes * d->cfg.pool.accept_threshold_percent) &&
	    pool_drop_cache(d->pool))
		total = pool_total_size(d->pool);
	return total;
}

static bool entry_pool_has_room(struct daemon *d, size_t len)
{
	uint64_t total = entry_pool_size(d);

	if (d->pool_limit.bytes == 0)
		return true;
	if (d->pool_limit.full) {
		if (total * 100 > d->pool_limit.bytes * d->cfg.pool.accept_threshold_percent)
			return false;
		d->pool_limit.full = false;
	}
	if (total + len > d->pool_limit.bytes) {
		d->pool_limit.full = true;
		return false;
	}
	return true;
}

/*
 * auto follows kernel zswap (6.18): a page that does not compress is stored
 * when it can be written back, refused when it could only sit in the pool.
 */
bool entry_stores_incompressible(const struct daemon *d)
{
	if (d->cfg.pool.store_incompressible == CFG_AUTO)
		return d->wb != NULL;
	return d->cfg.pool.store_incompressible == CFG_YES;
}

/*
 * Stores one page.  -E2BIG: compresses too poorly; -ENOSPC: pool at its
 * limit; -ENOMEM: no memory.  Each refusal is counted here.
 */
int entry_store(struct daemon *d, const void *page, struct entry **ret_entry)
{
	struct entry *e;
	const void *src = d->buf.comp;
	uint64_t word, handle;
	int len, r;

	e = calloc(1, sizeof(*e));
	if (!e) {
		d->st.reject_alloc_fail++;
		return -ENOMEM;
	}
	e->refs = 1;
	if (comp_same_filled(page, &word)) {
		e->kind = ENTRY_SAME;
		e->val = word;
		d->st.same_filled_pages++;
		goto stored;
	}

	len = comp_compress(d->comp, page, d->buf.comp, COMP_BOUND);
	if (len < 0) {
		r = len;
		d->st.reject_alloc_fail++;
		goto fail;
	}
	if ((unsigned)len >= ZS_PAGE_SIZE ||
	    (unsigned)len * 100 > ZS_PAGE_SIZE * d->cfg.pool.max_compressed_percent) {
		if (!entry_stores_incompressible(d)) {
			r = -E2BIG;
			d->st.reject_compress_poor++;
			goto fail;
		}
		len = ZS_PAGE_SIZE;
		src = page;
	}
	if (!entry_pool_has_room(d, (size_t)len)) {
		r = -ENOSPC;
		d->st.pool_limit_hit++;
		goto fail;
	}
	r = pool_alloc(d->pool, (size_t)len, &handle);
	if (r < 0) {
		d->st.reject_alloc_fail++;
		goto fail;
	}
	memcpy(pool_map(d->pool, handle), src, (size_t)len);
	e->kind = ENTRY_COMP;
	e->len = (uint16_t)len;
	e->val = handle;
	d->st.compressed_bytes += (uint64_t)len;
	if (entry_as_is(e))
		d->st.stored_incompressible_pages++;
	entry_lru_add(d, e, false);
stored:
	d->st.stored_pages++;
	d->st.stores++;
	*ret_entry = e;
	return 0;
fail:
	free(e);
	return r;
}

/*
 * An entry rebuilt from a handover image (handover_load.c), its object already
 * in the pool, the swap file or e->val: counted in the levels as
 * entry_store() would have counted it, and on its LRU, but not as a store.
 * -ERANGE: it says it is on disk, and this swap file has no such block.
 */
int entry_account(struct daemon *d, struct entry *e)
{
	if (e->kind == ENTRY_SAME) {
		d->st.same_filled_pages++;
	} else if (e->kind == ENTRY_RAW) {
		d->st.raw_pages++;
	} else {
		if (entry_as_is(e))
			d->st.stored_incompressible_pages++;
		if (e->where == ENTRY_IN_POOL) {
			d->st.compressed_bytes += e->len;
			entry_lru_add(d, e, false);
		} else if (!d->swapmap || swapmap_adopt(d->swapmap, e->disk / SWAPMAP_BLOCK) < 0) {
			return -ERANGE; /* on disk, past the end of this swap file */
		}
	}
	d->st.stored_pages++;
	return 0;
}

/*
 * A refused page the agent already dropped must go back into the process,
 * but UFFDIO_COPY can say EAGAIN (the app is in the middle of an madvise or
 * mremap).  The data must not be lost meanwhile: keep the page as it is, in
 * an entry of its own, and let the next fault (or the drain) map it.
 */
int entry_store_raw(struct daemon *d, const void *page, struct entry **ret_entry)
{
	struct entry *e = calloc(1, sizeof(*e));
	uint64_t handle;
	void *copy = NULL;

	if (!e)
		return -ENOMEM;
	/*
	 * In the pool, as a page stored as it is, past its limit if need be
	 * (a page the process owns, and rare): a zswapd that dies finds it
	 * there (journal.h), where a copy on our heap would die with us.
	 */
	if (pool_alloc(d->pool, ZS_PAGE_SIZE, &handle) == 0) {
		memcpy(pool_map(d->pool, handle), page, ZS_PAGE_SIZE);
		e->refs = 1;
		e->kind = ENTRY_COMP;
		e->len = ZS_PAGE_SIZE;
		e->val = handle;
		d->st.compressed_bytes += ZS_PAGE_SIZE;
		d->st.stored_incompressible_pages++;
		entry_lru_add(d, e, false);
		d->st.stored_pages++;
		*ret_entry = e;
		return 0;
	}
	if (posix_memalign(&copy, ZS_PAGE_SIZE, ZS_PAGE_SIZE)) {
		free(e);
		return -ENOMEM;
	}
	memcpy(copy, page, ZS_PAGE_SIZE);
	e->refs = 1;
	e->kind = ENTRY_RAW;
	e->val = (uint64_t)(uintptr_t)copy;
	d->st.stored_pages++;
	d->st.raw_pages++;
	*ret_entry = e;
	return 0;
}

/* Fills page with the entry's contents; the entry stays. */
int entry_load(struct daemon *d, const struct entry *e, void *page)
{
	if (e->kind == ENTRY_SAME) {
		comp_fill(page, e->val);
		return 0;
	}
	if (e->kind == ENTRY_RAW) {
		memcpy(page, (const void *)(uintptr_t)e->val, ZS_PAGE_SIZE);
		return 0;
	}
	if (e->where == ENTRY_ON_DISK)
		return -EAGAIN; /* the caller reads it back: wb_read() */
	return entry_unpack(d, e, pool_map(d->pool, e->val), page);
}

int entry_unpack(struct daemon *d, const struct entry *e, const void *obj, void *page)
{
	if (entry_as_is(e)) {
		memcpy(page, obj, ZS_PAGE_SIZE);
		return 0;
	}
	return comp_decompress(e->recomp & ENTRY_RECOMP_DONE ? d->recomp.comp : d->comp, obj, e->len,
			       page);
}

bool entry_is_zero(const struct entry *e)
{
	return e->kind == ENTRY_SAME && e->val == 0;
}

void entry_put(struct daemon *d, struct entry *e)
{
	if (--e->refs > 0)
		return;
	if (e->kind == ENTRY_COMP) {
		if (e->where == ENTRY_IN_POOL)
			entry_lru_del(d, e);
		if (e->where != ENTRY_ON_DISK) {
			pool_release(d->pool, e->val);
			d->st.compressed_bytes -= e->len;
		}
		if (entry_as_is(e))
			d->st.stored_incompressible_pages--;
		/* On disk, or on its way: its block loses an object. */
		if (d->swapmap && e->where != ENTRY_IN_POOL)
			swapmap_put(d->swapmap, e->disk / SWAPMAP_BLOCK);
	} else if (e->kind == ENTRY_RAW) {
		free((void *)(uintptr_t)e->val);
		d->st.raw_pages--;
	} else {
		d->st.same_filled_pages--;
	}
	d->st.stored_pages--;
	free(e);
}

/* ---- the writeback LRUs ---- */

static struct entry_lru *entry_lru_of(struct daemon *d, const struct entry *e)
{
	return &d->lru[entry_as_is(e) ? ENTRY_LRU_RAW : ENTRY_LRU_COMP];
}

void entry_lru_add(struct daemon *d, struct entry *e, bool oldest)
{
	struct entry_lru *l = entry_lru_of(d, e);

	if (oldest) {
		e->lru_next = l->head;
		if (l->head)
			l->head->lru_prev = e;
		l->head = e;
		if (!l->tail)
			l->tail = e;
	} else {
		e->lru_prev = l->tail;
		if (l->tail)
			l->tail->lru_next = e;
		l->tail = e;
		if (!l->head)
			l->head = e;
	}
}

void entry_lru_del(struct daemon *d, struct entry *e)
{
	struct entry_lru *l = entry_lru_of(d, e);

	if (l->cursor == e)
		l->cursor = e->lru_next;
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else if (l->head == e)
		l->head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else if (l->tail == e)
		l->tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

/*
 * Pages stored as they are leave first, then the compressed ones, oldest
 * first within each.  Either costs one read when it is wanted back, but a
 * page stored as it is gives the pool a whole page of room for it, a
 * compressed one a few hundred bytes: the pool keeps the most pages in
 * memory by writing the large ones out (docs/benchmarks.md, "Writeback
 * order").  (Kernel zswap before 6.18 sent such pages to swap at once.)
 */
struct entry_lru *entry_lru_next(struct daemon *d)
{
	return d->lru[ENTRY_LRU_RAW].head ? &d->lru[ENTRY_LRU_RAW] : &d->lru[ENTRY_LRU_COMP];
}
