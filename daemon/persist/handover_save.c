// SPDX-License-Identifier: GPL-2.0-only
/*
 * handover_save.c - zswapd's state, written into a memfd for the binary
 * that replaces it in place (upgrade.c); handover_load.c reads it back.
 *
 * The image is what a quiet daemon holds and the kernel does not: every
 * entry (its bytes, or where on the swap file they are), every target's
 * index, and which descriptor is which.  The descriptors themselves (each
 * uffd, pidfd, staging memfd and connection, the listening socket, the
 * swap file) cross the exec as they are, FD_CLOEXEC cleared, so the
 * processes see nothing: the same pid serves them, on the same sockets,
 * through the same uffds.  Faults that arrive meanwhile wait in their uffd
 * for the new binary to read them, as they wait for any busy daemon.
 *
 * The pool is not in the image: its slabs live in a memfd (pool.c), which
 * crosses the exec like the other descriptors, and the image says where in
 * it each entry's object is.  So the image is metadata, tens of bytes per
 * evicted page, and writing it changes nothing: if the exec fails, zswapd
 * goes on serving from the same pool.
 *
 * The records: handover.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comp.h"
#include "handover.h"
#include "idx.h"
#include "log.h"
#include "persist.h"
#include "pool.h"

struct ho_out {
	int fd;
	uint8_t *buf;
	size_t n;
	uint64_t off; /* where buf goes in the file */
	int err;
};

static void ho_flush(struct ho_out *o)
{
	size_t done = 0;

	while (!o->err && done < o->n) {
		ssize_t w = pwrite(o->fd, o->buf + done, o->n - done, (off_t)(o->off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err = w < 0 ? -errno : -EIO;
		else
			done += (size_t)w;
	}
	o->off += o->n;
	o->n = 0;
}

static void ho_put(struct ho_out *o, const void *p, size_t len)
{
	while (len && !o->err) {
		size_t k = HANDOVER_BUF - o->n < len ? HANDOVER_BUF - o->n : len;

		memcpy(o->buf + o->n, p, k);
		o->n += k;
		p = (const uint8_t *)p + k;
		len -= k;
		if (o->n == HANDOVER_BUF)
			ho_flush(o);
	}
}

/*
 * Entry pointer -> id: an entry shared by a parent and its child is written
 * once.  Open addressing, key and id side by side (a probe is one cache
 * miss).  With the image, it is most of the memory an upgrade takes.
 */
struct ho_slot {
	uintptr_t key;
	uint64_t id;
};

struct ho_ids {
	struct entry **ents; /* by id */
	uint64_t n;
	struct ho_slot *slots;
	uint64_t mask;
};

static uint64_t ho_hash(uintptr_t k)
{
	return (uint64_t)k * 0x9e3779b97f4a7c15ull >> 17;
}

/* e's id, given it the next one if it had none. */
static uint64_t ho_id(struct ho_ids *ids, struct entry *e)
{
	uint64_t i = ho_hash((uintptr_t)e) & ids->mask;

	while (ids->slots[i].key && ids->slots[i].key != (uintptr_t)e)
		i = (i + 1) & ids->mask;
	if (!ids->slots[i].key) {
		ids->slots[i] = (struct ho_slot){ (uintptr_t)e, ids->n };
		ids->ents[ids->n++] = e;
	}
	return ids->slots[i].id;
}

static int ho_id_one(uint64_t pgno, void *val, void *arg)
{
	(void)pgno;
	ho_id(arg, val);
	return 0;
}

static int ho_ids_build(struct daemon *d, struct ho_ids *ids)
{
	uint64_t indexed = 0, listed = 0, refs, cap = 2;

	for (struct target *t = d->targets; t; t = t->next)
		indexed += t->dead ? 0 : idx_count(t->idx);
	for (int l = 0; l < ENTRY_LRU_N; l++)
		for (struct entry *e = d->lru[l].head; e; e = e->lru_next)
			listed++;
	refs = indexed + listed + 1;
	/* Every entry is in an index, most on an LRU too: at most half full,
	 * and never full, as there are fewer entries than references. */
	while (cap < 2 * (indexed > listed ? indexed : listed) || cap < refs)
		cap <<= 1;
	ids->mask = cap - 1;
	ids->ents = malloc(refs * sizeof(*ids->ents));
	ids->slots = calloc(cap, sizeof(*ids->slots));
	if (!ids->ents || !ids->slots)
		return -ENOMEM;
	/* The LRUs first, oldest first: the ids keep their order. */
	for (int l = 0; l < ENTRY_LRU_N; l++)
		for (struct entry *e = d->lru[l].head; e; e = e->lru_next)
			ho_id(ids, e);
	for (struct target *t = d->targets; t; t = t->next)
		if (!t->dead)
			idx_walk(t->idx, 0, IDX_PGNO_MAX, ho_id_one, ids);
	return 0;
}

static void ho_ids_free(struct ho_ids *ids)
{
	free(ids->ents);
	free(ids->slots);
}

#define HO_SAVE_STAT_COUNTER_FIELD(name)                  \
	do {                                              \
		struct ho_stat s = { .value = d->st.name }; \
		snprintf(s.key, sizeof(s.key), "%s", #name); \
		ho_put(o, &s, sizeof(s));                 \
		n++;                                      \
	} while (0);
#define HO_SAVE_STAT_COUNTER_DERIVED(name)
#define HO_SAVE_STAT_GAUGE_FIELD(name)
#define HO_SAVE_STAT_GAUGE_DERIVED(name)
#define HO_SAVE_STAT(name, kind, source, help) HO_SAVE_STAT_##kind##_##source(name)

/* The counters that only grow; the levels are counted again as entries are rebuilt. */
static uint32_t ho_save_stats(struct daemon *d, struct ho_out *o)
{
	uint32_t n = 0;

	ZS_STATS(HO_SAVE_STAT)
	return n;
}

static uint32_t ho_save_groups(struct daemon *d, struct ho_out *o)
{
	uint32_t n = 0;

	for (struct group *g = d->groups.list; g; g = g->next) {
		struct ho_group hg = { .budget = g->budget };

		if (!g->budget) /* a followed cgroup limit is found again */
			continue;
		memcpy(hg.cgroup, g->cgroup, sizeof(hg.cgroup));
		ho_put(o, &hg, sizeof(hg));
		n++;
	}
	return n;
}

/* Every entry, in id order, with where its object is in the arena;
 * returns the highest pool handle among them. */
static uint64_t ho_save_entries(struct pool *pool, struct ho_ids *ids, struct ho_out *o)
{
	uint64_t max_handle = 0;

	for (uint64_t i = 0; i < ids->n; i++) {
		const struct entry *e = ids->ents[i];
		struct ho_entry he = { .kind = e->kind, .where = e->where, .recomp = e->recomp,
				       .len = e->len, .stored_at = e->stored_at, .val = e->val,
				       .disk = e->disk };

		if (e->kind == ENTRY_RAW) {
			he.val = 0;
		} else if (e->kind == ENTRY_COMP && e->where == ENTRY_IN_POOL) {
			pool_locate(pool, e->val, &he.slab, &he.slot);
			if (e->val > max_handle)
				max_handle = e->val;
		}
		ho_put(o, &he, sizeof(he));
		if (e->kind == ENTRY_RAW)
			ho_put(o, (const void *)(uintptr_t)e->val, ZS_PAGE_SIZE);
	}
	return max_handle;
}

struct ho_pages_ctx {
	struct ho_ids *ids;
	struct ho_out *o;
};

static int ho_save_page(uint64_t pgno, void *val, void *arg)
{
	struct ho_pages_ctx *ctx = arg;
	struct ho_page p = { .pgno = pgno, .id = ho_id(ctx->ids, val) };

	ho_put(ctx->o, &p, sizeof(p));
	return 0;
}

static uint32_t ho_save_targets(struct daemon *d, struct ho_ids *ids, struct ho_out *o)
{
	struct ho_pages_ctx ctx = { ids, o };
	uint32_t n = 0;

	for (struct target *t = d->targets; t; t = t->next) {
		struct target_record rec;
		struct ho_target ht = { .uffd = t->uffd_w.fd, .pidfd = t->pidfd_w.fd,
					.staging_fd = t->agent.staging_fd, .rec_len = sizeof(rec),
					.npages = idx_count(t->idx) };

		if (t->dead)
			continue;
		target_record_fill(t, &rec);
		rec.key = 0; /* the journal's, which the new binary writes anew */
		ho_put(o, &ht, sizeof(ht));
		ho_put(o, &rec, sizeof(rec));
		idx_walk(t->idx, 0, IDX_PGNO_MAX, ho_save_page, &ctx);
		n++;
	}
	return n;
}

static int32_t ho_target_index(struct daemon *d, const struct target *want)
{
	int32_t i = 0;

	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		if (t == want)
			return i;
		i++;
	}
	return -1;
}

/* Shims, registered or on their way, and a zswapctl that waits for this
 * upgrade; any other zswapctl has had its answer. */
static bool ho_conn_kept(const struct conn *c)
{
	return !c->dead && !c->doomed && (c->kind != CONN_CTL || c->upgrade_waiting);
}

static uint32_t ho_save_conns(struct daemon *d, struct ho_out *o)
{
	uint32_t n = 0;

	for (struct conn *c = d->conns.list; c; c = c->next) {
		struct ho_conn hc = { .fd = c->w.fd, .kind = c->kind, .hello_flags = c->hello_flags,
				      .target = c->target ? ho_target_index(d, c->target) : -1,
				      .upgrade_waiting = c->upgrade_waiting,
				      .upgrade_seq = c->upgrade_seq };

		if (!ho_conn_kept(c))
			continue;
		ho_put(o, &hc, sizeof(hc));
		n++;
	}
	return n;
}

static void ho_keep_fd(int fd, int flags)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, flags);
}

/* Every descriptor the image names crosses the exec (flags 0), or,
 * when the exec failed, is ours alone again (FD_CLOEXEC). */
static void ho_keep_fds(struct daemon *d, int flags)
{
	ho_keep_fd(d->listen_w.fd, flags);
	ho_keep_fd(wb_fd(d), flags);
	ho_keep_fd(pool_fd(d->pool), flags);
	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		ho_keep_fd(t->uffd_w.fd, flags);
		ho_keep_fd(t->pidfd_w.fd, flags);
		ho_keep_fd(t->agent.staging_fd, flags);
	}
	for (struct conn *c = d->conns.list; c; c = c->next)
		if (ho_conn_kept(c))
			ho_keep_fd(c->w.fd, flags);
}

void handover_cancel(struct daemon *d)
{
	ho_keep_fds(d, FD_CLOEXEC);
}

int handover_save(struct daemon *d, int fd)
{
	struct ho_header h = { .version = HANDOVER_VERSION, .page_size = ZS_PAGE_SIZE,
			       .evict_batch_pages = d->cfg.agent.evict_batch_pages,
			       .listen_fd = d->listen_w.fd, .socket_activated = d->sd.socket_activated,
			       .swap_fd = wb_fd(d), .swap_file_size = d->cfg.swap.swap_file_size,
			       .pool_fd = pool_fd(d->pool),
			       .next_batch_id = d->next_batch_id, .saved_usec = now_usec() };
	struct ho_out o = { .fd = fd, .off = sizeof(h) };
	struct ho_ids ids = { 0 };
	int r;

	memcpy(h.magic, HANDOVER_MAGIC, sizeof(h.magic));
	snprintf(h.compressor, sizeof(h.compressor), "%s", comp_name(d->cfg.pool.compressor));
	if (d->recomp.comp)
		snprintf(h.recompressor, sizeof(h.recompressor), "%s",
			 comp_name((enum comp_alg)d->cfg.pool.recompressor));
	memcpy(h.swap_file, d->cfg.swap.swap_file, sizeof(h.swap_file));
	memcpy(h.socket, d->cfg.socket, sizeof(h.socket));
	o.buf = malloc(HANDOVER_BUF);
	r = o.buf ? ho_ids_build(d, &ids) : -ENOMEM;
	if (r < 0)
		goto out;
	/* Empty slabs are named by no entry: the next binary would not know them. */
	pool_drop_cache(d->pool);
	h.nentries = ids.n;
	h.nstats = ho_save_stats(d, &o);
	h.ngroups = ho_save_groups(d, &o);
	h.max_handle = ho_save_entries(d->pool, &ids, &o);
	h.ntargets = ho_save_targets(d, &ids, &o);
	h.nconns = ho_save_conns(d, &o);
	ho_flush(&o);
	r = o.err;
	if (r == 0 && pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		r = -EIO;
	if (r < 0)
		goto out;
	ho_keep_fds(d, 0);
	log_info("handover image: %llu entries, %u processes, %llu bytes in %llu ms",
		 (unsigned long long)ids.n, h.ntargets, (unsigned long long)o.off,
		 (unsigned long long)((now_usec() - h.saved_usec) / 1000));
out:
	ho_ids_free(&ids);
	free(o.buf);
	return r;
}
