// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctl.c - what zswapctl can ask: stats, list, reclaim.
 *
 * Counters are named after kernel zswap's debugfs files where one exists
 * (stored_pages, pool_total_size, same_filled_pages, pool_limit_hit,
 * reject_compress_poor, reject_alloc_fail) so that dashboards built for one
 * read the other.  A request that fails gets ZS_ERROR with a sentence for
 * the operator and the connection stays usable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "pool.h"
#include "proto.h"

#define CTL_MAX_STATS 48

static void ctl_put(struct zs_stat *out, size_t *n, size_t max, const char *name, uint64_t v)
{
	if (*n >= max)
		return;
	snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
	out[*n].value = v;
	(*n)++;
}

void ctl_fill_stats(struct daemon *d, struct zs_stat *out, size_t *ret_n, size_t max)
{
	uint64_t targets = 0, targets_moving = 0, index_bytes = 0;
	size_t n = 0;

	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		targets++;
		/* An agent publishes its scratch area once it moves pages out. */
		if (target_scratch(t, NULL))
			targets_moving++;
		index_bytes += idx_mem_bytes(t->idx);
	}
	ctl_put(out, &n, max, "stored_pages", d->st.stored_pages);
	ctl_put(out, &n, max, "pool_total_size", pool_total_size(d->pool));
	ctl_put(out, &n, max, "compressed_bytes", d->st.compressed_bytes);
	/* How well the pool packs: compressed data / memory held, in percent. */
	ctl_put(out, &n, max, "pool_packing_percent",
		pool_total_size(d->pool) ? d->st.compressed_bytes * 100 / pool_total_size(d->pool) : 0);
	ctl_put(out, &n, max, "same_filled_pages", d->st.same_filled_pages);
	ctl_put(out, &n, max, "stored_incompressible_pages", d->st.stored_incompressible_pages);
	ctl_put(out, &n, max, "pool_limit_bytes", d->pool_limit);
	ctl_put(out, &n, max, "pool_limit_hit", d->st.pool_limit_hit);
	ctl_put(out, &n, max, "written_back_pages", d->st.written_back_pages);
	ctl_put(out, &n, max, "swap_used_bytes", wb_used_bytes(d));
	ctl_put(out, &n, max, "swap_writes", d->st.swap_writes);
	ctl_put(out, &n, max, "swap_write_bytes", d->st.swap_write_bytes);
	ctl_put(out, &n, max, "swap_reads", d->st.swap_reads);
	ctl_put(out, &n, max, "swap_read_bytes", d->st.swap_read_bytes);
	ctl_put(out, &n, max, "writeback_errors", d->st.writeback_errors);
	ctl_put(out, &n, max, "swap_read_errors", d->st.swap_read_errors);
	ctl_put(out, &n, max, "readahead_pages", d->st.readahead_pages);
	ctl_put(out, &n, max, "readahead_hits", d->st.readahead_hits);
	ctl_put(out, &n, max, "reject_compress_poor", d->st.reject_compress_poor);
	ctl_put(out, &n, max, "reject_alloc_fail", d->st.reject_alloc_fail);
	ctl_put(out, &n, max, "stores", d->st.stores);
	ctl_put(out, &n, max, "loads", d->st.loads);
	ctl_put(out, &n, max, "invalidates", d->st.invalidates);
	ctl_put(out, &n, max, "targets", targets);
	ctl_put(out, &n, max, "targets_moving", targets_moving);
	ctl_put(out, &n, max, "zero_fills", d->st.zero_fills);
	ctl_put(out, &n, max, "faults_deferred", d->st.faults_deferred);
	ctl_put(out, &n, max, "faults_throttled", d->st.faults_throttled);
	ctl_put(out, &n, max, "stalled_writes", d->st.stalled_writes);
	ctl_put(out, &n, max, "hot_skips", d->st.hot_skips);
	ctl_put(out, &n, max, "poor_skips", d->st.poor_skips);
	ctl_put(out, &n, max, "raw_pages", d->st.raw_pages);
	ctl_put(out, &n, max, "compacted_bytes", d->st.compacted_bytes);
	ctl_put(out, &n, max, "pool_fragmented_bytes", pool_fragmented_bytes(d->pool));
	ctl_put(out, &n, max, "evict_batches", d->st.evict_batches);
	ctl_put(out, &n, max, "evict_moved_batches", d->st.evict_moved_batches);
	ctl_put(out, &n, max, "evict_local_batches", d->st.evict_local_batches);
	ctl_put(out, &n, max, "evict_move_first_batches", d->st.evict_move_first_batches);
	ctl_put(out, &n, max, "evict_scratch_reads", d->st.evict_scratch_reads);
	ctl_put(out, &n, max, "agent_move_misreports", d->st.agent_move_misreports);
	ctl_put(out, &n, max, "evict_errors", d->st.evict_errors);
	ctl_put(out, &n, max, "uffd_errors", d->st.uffd_errors);
	ctl_put(out, &n, max, "proto_errors", d->st.proto_errors);
	ctl_put(out, &n, max, "denied", d->st.denied);
	/* What the bookkeeping itself costs, so the savings can be judged honestly. */
	ctl_put(out, &n, max, "metadata_bytes",
		index_bytes + d->st.stored_pages * sizeof(struct entry));
	*ret_n = n;
}

static int ctl_stats(struct conn *c, const struct zs_hdr *h)
{
	struct zs_stat st[CTL_MAX_STATS];
	size_t n;

	ctl_fill_stats(c->d, st, &n, CTL_MAX_STATS);
	return proto_send(c->w.fd, ZS_STATS_REPLY, h->seq, st, n * sizeof(st[0]), NULL, 0);
}

static bool ctl_may_see(const struct conn *c, const struct target *t)
{
	return c->cred.uid == 0 || c->cred.uid == t->uid;
}

static int ctl_list(struct conn *c, const struct zs_hdr *h)
{
	size_t max = (ZS_MSG_MAX - sizeof(struct zs_hdr)) / sizeof(struct zs_target_info);
	struct zs_target_info *out;
	size_t n = 0;
	int r;

	out = calloc(max, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (struct target *t = c->d->targets; t && n < max; t = t->next) {
		struct zs_target_info *ti = &out[n];
		uint64_t kb = 0;

		if (t->dead || t->pid == 0 || !ctl_may_see(c, t))
			continue;
		ti->pid = (uint32_t)t->pid;
		memcpy(ti->comm, t->comm, sizeof(ti->comm));
		ti->comm[sizeof(ti->comm) - 1] = '\0';
		if (proc_status_kb(t->pid, "RssAnon", &kb) == 0)
			ti->resident_pages = kb * 1024 / ZS_PAGE_SIZE;
		ti->evicted_pages = target_evicted_pages(t);
		ti->compressed_bytes = t->compressed_bytes;
		ti->stores = t->stores;
		ti->loads = t->loads;
		ti->invalidates = t->invalidates;
		ti->limit_bytes = reclaim_limit_of(t, ti->resident_pages * ZS_PAGE_SIZE);
		ti->hot_pages = target_hot_pages(t);
		n++;
	}
	r = proto_send(c->w.fd, ZS_LIST_REPLY, h->seq, out, n * sizeof(*out), NULL, 0);
	free(out);
	return r;
}

/*
 * The target a reclaim or limit names, if the peer may act on it.  If not,
 * the peer has been told why and false is returned.
 */
static bool ctl_find_target(struct conn *c, const struct zs_hdr *h, uint32_t pid, const char *verb,
			    struct target **ret_target)
{
	struct target *t = target_by_pid(c->d, (pid_t)pid);
	char msg[160];

	if (!t) {
		snprintf(msg, sizeof(msg), "pid %u is not served by zswapd (start it under the shim)",
			 pid);
		proto_send_error(c->w.fd, h->seq, -ESRCH, msg);
		return false;
	}
	if (!ctl_may_see(c, t)) {
		c->d->st.denied++;
		log_warning("uid %u may not %s pid %u, refusing", (unsigned)c->cred.uid, verb, pid);
		snprintf(msg, sizeof(msg), "only root or the process's owner may %s it", verb);
		proto_send_error(c->w.fd, h->seq, -EPERM, msg);
		return false;
	}
	*ret_target = t;
	return true;
}

static int ctl_reclaim(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_reclaim *req = proto_payload(h);
	struct target *t;
	int r;

	if (!ctl_find_target(c, h, req->pid, "reclaim", &t))
		return 0;
	if (c->d->stopping)
		return proto_send_error(c->w.fd, h->seq, -ESHUTDOWN, "zswapd is stopping");
	if (t->restore)
		return proto_send_error(c->w.fd, h->seq, -EBUSY,
					"a restore of this process is running");
	r = reclaim_start(t, c, h->seq, req->bytes);
	if (r == -EBUSY)
		return proto_send_error(c->w.fd, h->seq, r, "a reclaim of this process is running");
	if (r == -ENOTCONN)
		return proto_send_error(c->w.fd, h->seq, r,
					"the process's agent is not connected (it closed its zswapd socket)");
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, "cannot start reclaim");
	return 0;
}

static int ctl_limit(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_limit *req = proto_payload(h);
	struct zs_limit_reply rep = { 0 };
	struct target *t;
	uint64_t kb = 0;

	if (!ctl_find_target(c, h, req->pid, "limit", &t))
		return 0;
	if (req->bytes && req->bytes < 1024 * 1024)
		return proto_send_error(c->w.fd, h->seq, -EINVAL, "a limit below 1M makes no sense");
	if (t->restore)
		return proto_send_error(c->w.fd, h->seq, -EBUSY,
					"a restore of this process is running (it lifts the limit)");
	t->limit_bytes = req->bytes;
	t->limit_set = true;
	proc_status_kb(t->pid, "RssAnon", &kb);
	rep.limit_bytes = t->limit_bytes;
	rep.resident_bytes = kb * 1024;
	log_info("pid %d: limit %llu bytes (resident %llu)", (int)t->pid,
		 (unsigned long long)t->limit_bytes, (unsigned long long)rep.resident_bytes);
	c->d->last_limit_usec = 0; /* act on it at the end of this turn */
	return proto_send(c->w.fd, ZS_LIMIT_REPLY, h->seq, &rep, sizeof(rep), NULL, 0);
}

static int ctl_restore(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_restore *req = proto_payload(h);
	struct target *t;
	int r;

	if (!ctl_find_target(c, h, req->pid, "restore", &t))
		return 0;
	if (c->d->stopping)
		return proto_send_error(c->w.fd, h->seq, -ESHUTDOWN, "zswapd is stopping");
	r = restore_start(t, c, h->seq);
	if (r == -EBUSY)
		return proto_send_error(c->w.fd, h->seq, r, "a restore of this process is running");
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, "cannot start restore");
	return 0; /* answered by restore_finish() */
}

int ctl_handle(struct conn *c, const struct zs_hdr *h)
{
	switch (h->type) {
	case ZS_STATS:
		return ctl_stats(c, h);
	case ZS_LIST:
		return ctl_list(c, h);
	case ZS_RECLAIM:
		return ctl_reclaim(c, h);
	case ZS_LIMIT:
		return ctl_limit(c, h);
	case ZS_RESTORE:
		return ctl_restore(c, h);
	default:
		return -EBADMSG;
	}
}
