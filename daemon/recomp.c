// SPDX-License-Identifier: GPL-2.0-only
/*
 * recomp.c - what stays cold in the pool is compressed again, denser.
 *
 * Stores and loads want a fast compressor (lzo or lz4: a fault waits on
 * the decompression); a page that stays in the pool for minutes is better
 * off small, and zstd packs the same pages into about a third of lzo's
 * bytes (docs/benchmarks.md, "Recompressor").  As ChromeOS
 * does with zram's recompression of idle pages, a walk over the pool's
 * LRU of compressed entries, oldest first, marks each entry it meets; the
 * next walk, recompress_seconds after the last one began, compresses every
 * entry still marked (it stayed in the pool, never loaded, for that long)
 * with the recompressor, and keeps the result if it is at least an eighth
 * smaller.  A recompressed entry says so (entry->recomp), and entry_unpack()
 * reads it with the recompressor, in the pool and on disk alike.
 *
 * Paced so that it never holds a fault up for long: RECOMP_PAGES_PER_TURN
 * pages per loop turn, turns RECOMP_TURN_USEC apart, and none while the
 * daemon stops (the drain wants every cycle).  That is at most ~2.5% of a
 * CPU, and the loop serves whatever fault arrives between two turns.
 */
#include <errno.h>
#include <string.h>

#include "comp.h"
#include "daemon.h"
#include "log.h"
#include "pool.h"
#include "persist/journal.h"

#define RECOMP_PAGES_PER_TURN 4	  /* ~100 us of zstd */
#define RECOMP_VISITS_PER_TURN 4096 /* entries looked at: a pointer walk, tens of us */

/* In the pool, not being read, not done yet: anything else is passed over. */
static bool recomp_worth(const struct entry *e)
{
	return e->where == ENTRY_IN_POOL && !e->reads && !e->ra_pending && !e->readahead &&
	       !(e->recomp & (ENTRY_RECOMP_DONE | ENTRY_RECOMP_POOR)) && !entry_as_is(e);
}

/* Compresses e again; 0 whether or not that paid, -errno if it could not try. */
static int recomp_one(struct daemon *d, struct entry *e)
{
	uint64_t handle, old;
	int len, r;

	r = entry_unpack(d, e, pool_map(d->pool, e->val), d->buf.page);
	if (r < 0)
		return r;
	len = comp_compress(d->recomp.comp, d->buf.page, d->buf.comp, COMP_BOUND);
	if (len < 0)
		return len;
	if ((unsigned)len > e->len - e->len / 8u) {
		e->recomp |= ENTRY_RECOMP_POOR; /* not worth it, and never will be */
		return 0;
	}
	/* The new object before the old goes: the pool grows by len for a
	 * moment, and no limit is asked, the pool shrinks by the end. */
	r = pool_alloc(d->pool, (size_t)len, &handle);
	if (r < 0)
		return r;
	memcpy(pool_map(d->pool, handle), d->buf.comp, (size_t)len);
	old = e->val;
	d->st.compressed_bytes -= e->len - (unsigned)len;
	d->st.recompressed_pages++;
	d->st.recompress_saved_bytes += e->len - (unsigned)len;
	e->val = handle;
	e->len = (uint16_t)len;
	e->recomp |= ENTRY_RECOMP_DONE;
	/* The journal names the new object before the old one goes. */
	journal_entry(d, e);
	pool_release(d->pool, old);
	return 0;
}

/* A walk starts only recompress_seconds after the last began. */
static bool recomp_walking(struct daemon *d, uint64_t now)
{
	struct entry_lru *l = &d->lru[ENTRY_LRU_COMP];

	if (l->cursor)
		return true;
	if (!l->head || now - d->recomp.walk_usec < (uint64_t)d->cfg.pool.recompress_seconds * 1000000u)
		return false;
	d->recomp.walk_usec = now;
	l->cursor = l->head;
	return true;
}

void recomp_turn(struct daemon *d)
{
	struct entry_lru *l = &d->lru[ENTRY_LRU_COMP];
	uint64_t now = now_usec();
	unsigned pages = 0, visits = 0;

	if (!d->recomp.comp || d->stop.active || now - d->recomp.turn_usec < RECOMP_TURN_USEC)
		return;
	d->recomp.turn_usec = now;
	while (recomp_walking(d, now) && pages < RECOMP_PAGES_PER_TURN &&
	       visits++ < RECOMP_VISITS_PER_TURN) {
		struct entry *e = l->cursor;

		l->cursor = e->lru_next;
		if (!recomp_worth(e))
			continue;
		if (!(e->recomp & ENTRY_RECOMP_SEEN)) {
			e->recomp |= ENTRY_RECOMP_SEEN; /* the next walk takes it */
			continue;
		}
		pages++;
		if (recomp_one(d, e) < 0) {
			/* No memory for the new object: the next walk tries again. */
			l->cursor = NULL;
			break;
		}
	}
}

bool recomp_pending(const struct daemon *d)
{
	return d->recomp.comp && !d->stop.active && d->lru[ENTRY_LRU_COMP].cursor;
}

int recomp_open(struct daemon *d)
{
	int r;

	if (d->cfg.pool.recompressor == CFG_RECOMP_NONE || (int)d->cfg.pool.recompressor == (int)d->cfg.pool.compressor)
		return 0; /* nothing denser to go to */
	r = comp_new((enum comp_alg)d->cfg.pool.recompressor, &d->recomp.comp);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the recompressor %s: %m",
				       comp_name((enum comp_alg)d->cfg.pool.recompressor));
	return 0;
}

void recomp_close(struct daemon *d)
{
	comp_free(d->recomp.comp);
	d->recomp.comp = NULL;
}
