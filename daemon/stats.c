// SPDX-License-Identifier: GPL-2.0-only
/*
 * stats.c - the reply to `zswapctl stats`: every counter of zswap_stats.h,
 * in its order.  FIELD counters are read from struct stats as they are;
 * the DERIVED ones are computed here, from the pool, the swap file and the
 * targets, when asked.
 */
#include <stddef.h>
#include <stdio.h>

#include "daemon.h"
#include "idx.h"
#include "persist/journal.h"
#include "pool.h"
#include "swapmap.h"

struct stats_derived {
	uint64_t pool_total_size, pool_packing_percent, pool_limit_bytes, swap_used_bytes;
	uint64_t targets, targets_moving, pool_fragmented_bytes, metadata_bytes;
	uint64_t proactive_backed_off, groups, journal_bytes;
};

static void stats_derive(struct daemon *d, struct stats_derived *out)
{
	uint64_t index_bytes = 0;

	*out = (struct stats_derived){ 0 };
	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		out->targets++;
		/* An agent publishes its scratch area once it moves pages out. */
		if (target_scratch(t, NULL))
			out->targets_moving++;
		index_bytes += idx_mem_bytes(t->idx);
	}
	out->pool_total_size = pool_total_size(d->pool);
	/* How well the pool packs: compressed data / memory held, in percent. */
	out->pool_packing_percent =
		out->pool_total_size ? d->st.compressed_bytes * 100 / out->pool_total_size : 0;
	out->pool_limit_bytes = d->pool_limit.bytes;
	out->swap_used_bytes = swapmap_used_bytes(d->swapmap);
	out->pool_fragmented_bytes = pool_fragmented_bytes(d->pool);
	/* What the bookkeeping itself costs, so the savings can be judged honestly. */
	out->metadata_bytes = index_bytes + d->st.stored_pages * sizeof(struct entry);
	out->journal_bytes = journal_bytes(d);
	out->proactive_backed_off = proactive_backed_off(d);
	for (const struct group *g = d->groups.list; g; g = g->next)
		out->groups++;
}

static void stats_put(struct zs_stat *out, size_t *n, size_t max, const char *name, uint64_t v)
{
	if (*n >= max)
		return;
	snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
	out[*n].value = v;
	(*n)++;
}

#define STATS_VALUE_FIELD(name) d->st.name
#define STATS_VALUE_DERIVED(name) derived.name
#define STATS_PUT(name, kind, source, help) \
	stats_put(out, &n, max, #name, STATS_VALUE_##source(name));

size_t stats_fill(struct daemon *d, struct zs_stat *out, size_t max)
{
	struct stats_derived derived;
	size_t n = 0;

	stats_derive(d, &derived);
	ZS_STATS(STATS_PUT)
	return n;
}
