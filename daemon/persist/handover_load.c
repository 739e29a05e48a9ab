// SPDX-License-Identifier: GPL-2.0-only
/*
 * handover_load.c - the new binary of an in-place upgrade reads the image
 * the one it replaced wrote (handover_save.c): the header first, over the
 * config (handover_prepare), then, once the daemon is set up, the pool's
 * arena, every entry (its object put back where it was in the arena),
 * process and connection (handover_load).  Each stretch of the image is
 * punched out of the memfd once read.  Anything that does not add up is
 * an error, and the caller exits: the processes then see zswapd die
 * (shim/orphan.c), never a wrong page.
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

struct ho_in {
	int fd;
	uint8_t *buf;
	size_t pos, n;
	uint64_t off;	 /* file offset of buf[0] */
	uint64_t punched; /* given back up to here */
};

static int ho_fill(struct ho_in *in)
{
	ssize_t r;

	in->off += in->n;
	in->pos = in->n = 0;
	if (in->off - in->punched >= HANDOVER_PUNCH) {
		fallocate(in->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)in->punched,
			  (off_t)(in->off - in->punched));
		in->punched = in->off;
	}
	do
		r = pread(in->fd, in->buf, HANDOVER_BUF, (off_t)in->off);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return r < 0 ? -errno : -EIO;
	in->n = (size_t)r;
	return 0;
}

static int ho_get(struct ho_in *in, void *p, size_t len)
{
	while (len) {
		size_t k;

		if (in->pos == in->n) {
			int r = ho_fill(in);

			if (r < 0)
				return r;
		}
		k = in->n - in->pos < len ? in->n - in->pos : len;
		memcpy(p, in->buf + in->pos, k);
		in->pos += k;
		p = (uint8_t *)p + k;
		len -= k;
	}
	return 0;
}

/* An inherited descriptor, close-on-exec again: ours, not a child's. */
static int ho_own(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

void handover_print_versions(bool all)
{
	/* zswapd builds before --handover-versions ask --handover-version,
	 * and want their own version alone: the oldest we read is theirs. */
	printf("zswapd handover");
	for (int v = HANDOVER_OLDEST; v <= (all ? HANDOVER_VERSION : HANDOVER_OLDEST); v++)
		printf(" %d", v);
	printf(" protocol %d\n", ZS_VERSION);
}

/* Where the records start: after a header as long as its version's. */
static uint64_t ho_header_size(const struct ho_header *h)
{
	return h->version == 1 ? HO_HEADER_V1_SIZE : sizeof(*h);
}

static int ho_header_read(int fd, struct ho_header *h)
{
	ssize_t n = pread(fd, h, sizeof(*h), 0);

	if (n < (ssize_t)HO_HEADER_V1_SIZE)
		return -EIO;
	if (memcmp(h->magic, HANDOVER_MAGIC, sizeof(h->magic)) || h->version < HANDOVER_OLDEST ||
	    h->version > HANDOVER_VERSION || h->page_size != ZS_PAGE_SIZE ||
	    (uint64_t)n < ho_header_size(h))
		return -EPROTO;
	if (h->version == 1)
		h->pool_fd = -1; /* the pool is in the image */
	h->compressor[sizeof(h->compressor) - 1] = '\0';
	h->recompressor[sizeof(h->recompressor) - 1] = '\0';
	h->swap_file[sizeof(h->swap_file) - 1] = '\0';
	h->socket[sizeof(h->socket) - 1] = '\0';
	return 0;
}

int handover_prepare(struct daemon *d, int fd)
{
	struct ho_header h;
	enum comp_alg alg;
	int r;

	r = ho_header_read(fd, &h);
	if (r < 0)
		return log_error_errno(r, "The handover image is not one this zswapd reads: %m");
	/* What the image was made with stands, whatever the config says now. */
	if (comp_parse(h.compressor, &alg) < 0)
		return log_error_errno(-EPROTO, "Handover: unknown compressor %s", h.compressor);
	if (alg != d->cfg.pool.compressor)
		log_warning("handover: keeping compressor %s, which the pool is in", h.compressor);
	d->cfg.pool.compressor = alg;
	if (h.recompressor[0]) {
		if (comp_parse(h.recompressor, &alg) < 0)
			return log_error_errno(-EPROTO, "Handover: unknown compressor %s",
					       h.recompressor);
		d->cfg.pool.recompressor = (int)alg;
	}
	d->cfg.agent.evict_batch_pages = h.evict_batch_pages;
	memcpy(d->cfg.socket, h.socket, sizeof(d->cfg.socket));
	if (h.swap_fd >= 0 && (strcmp(h.swap_file, d->cfg.swap.swap_file) ||
			       h.swap_file_size != d->cfg.swap.swap_file_size))
		log_warning("handover: keeping swap file %s, which holds pages", h.swap_file);
	memcpy(d->cfg.swap.swap_file, h.swap_file, sizeof(d->cfg.swap.swap_file));
	d->cfg.swap.swap_file_size = h.swap_fd >= 0 ? h.swap_file_size : 0;
	d->upgrade.kept_swap_fd = ho_own(h.swap_fd);
	d->listen_w.fd = ho_own(h.listen_fd);
	d->sd.socket_activated = h.socket_activated;
	d->next_batch_id = h.next_batch_id;
	d->upgrade.handover_fd = fd;
	return 0;
}

#define HO_LOAD_STAT_COUNTER_FIELD(name) \
	if (!strcmp(s.key, #name))       \
		d->st.name = s.value;
#define HO_LOAD_STAT_COUNTER_DERIVED(name)
#define HO_LOAD_STAT_GAUGE_FIELD(name)
#define HO_LOAD_STAT_GAUGE_DERIVED(name)
#define HO_LOAD_STAT(name, kind, source, help) HO_LOAD_STAT_##kind##_##source(name)

static int ho_load_stats(struct daemon *d, struct ho_in *in, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ho_stat s;
		int r = ho_get(in, &s, sizeof(s));

		if (r < 0)
			return r;
		s.key[sizeof(s.key) - 1] = '\0';
		ZS_STATS(HO_LOAD_STAT) /* a counter this binary has not: dropped */
	}
	return 0;
}

struct ho_loaded {
	struct entry **ents;	/* by id */
	uint64_t nents;
	struct entry **by_handle; /* version 1: the old pool's handle -> entry */
	uint64_t max_handle;
	struct target **targets;
	uint32_t ntargets;
};

static int ho_load_entries(struct daemon *d, struct ho_in *in, struct ho_loaded *l)
{
	for (uint64_t i = 0; i < l->nents; i++) {
		struct ho_entry he;
		struct entry *e;
		void *page = NULL;
		int r = ho_get(in, &he, sizeof(he));

		if (r < 0)
			return r;
		if (he.kind < ENTRY_SAME || he.kind > ENTRY_RAW || he.where == ENTRY_WRITING ||
		    he.where > ENTRY_ON_DISK || he.len > ZS_PAGE_SIZE)
			return -EPROTO;
		if (l->by_handle && he.kind == ENTRY_COMP && he.where == ENTRY_IN_POOL &&
		    (!he.val || he.val > l->max_handle || l->by_handle[he.val]))
			return -EPROTO;
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->ents[i] = e;
		e->kind = he.kind;
		e->where = he.where;
		e->recomp = he.recomp;
		e->len = he.len;
		e->stored_at = he.stored_at;
		e->disk = he.disk;
		if (he.kind == ENTRY_SAME) {
			e->val = he.val;
		} else if (he.kind == ENTRY_RAW) {
			if (posix_memalign(&page, ZS_PAGE_SIZE, ZS_PAGE_SIZE))
				return -ENOMEM;
			e->val = (uint64_t)(uintptr_t)page;
			r = ho_get(in, page, ZS_PAGE_SIZE);
			if (r < 0)
				return r;
		} else if (he.where == ENTRY_IN_POOL && l->by_handle) {
			l->by_handle[he.val] = e; /* its bytes come with the pool's objects */
		} else if (he.where == ENTRY_IN_POOL) {
			/* Where it was: pool_place() refuses a place taken or impossible. */
			r = pool_place(d->pool, he.val, he.slab, he.slot, he.len);
			if (r < 0)
				return r;
			e->val = he.val;
		}
	}
	return 0;
}

/* Version 1: the pool's objects, copied into ours, each named by one entry. */
static int ho_load_objects_v1(struct daemon *d, struct ho_in *in, struct ho_loaded *l)
{
	for (;;) {
		struct ho_obj ho;
		struct entry *e;
		uint64_t handle;
		int r = ho_get(in, &ho, sizeof(ho));

		if (r < 0)
			return r;
		if (!ho.handle)
			break;
		if (ho.handle > l->max_handle || !(e = l->by_handle[ho.handle]) || ho.len != e->len)
			return -EPROTO;
		r = pool_alloc(d->pool, ho.len, &handle);
		if (r < 0)
			return r;
		e->val = handle;
		l->by_handle[ho.handle] = NULL; /* each object once */
		r = ho_get(in, pool_map(d->pool, handle), ho.len);
		if (r < 0)
			return r;
	}
	/* An entry whose object never came. */
	for (uint64_t h = 1; h <= l->max_handle; h++)
		if (l->by_handle[h])
			return -EPROTO;
	return 0;
}

/* Counts each entry in, on its LRU in the old order. */
static int ho_account_entries(struct daemon *d, struct ho_loaded *l)
{
	for (uint64_t i = 0; i < l->nents; i++) {
		int r = entry_account(d, l->ents[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

/* The old pool in place of the empty one daemon_setup() made, with every
 * entry, its object where it was. */
static int ho_load_pool(struct daemon *d, struct ho_in *in, const struct ho_header *h,
			struct ho_loaded *l)
{
	int r;

	if (h->version == 1) {
		/* Into the pool daemon_setup() made, object by object. */
		l->max_handle = h->max_handle;
		l->by_handle = calloc(h->max_handle + 1, sizeof(*l->by_handle));
		if (!l->by_handle)
			return -ENOMEM;
	} else {
		pool_free(d->pool);
		d->pool = NULL;
		r = pool_adopt(ho_own(h->pool_fd), h->max_handle, &d->pool);
		if (r < 0)
			return r;
	}
	r = ho_load_entries(d, in, l);
	if (r < 0)
		return r;
	if (l->by_handle) {
		r = ho_load_objects_v1(d, in, l);
		if (r < 0)
			return r;
	} else {
		pool_adopt_done(d->pool);
		/* Hazard 6: the pool locked again, as the old binary had it; by
		 * the loop, a few MiB a turn, so that no fault waits for it. */
		d->turn.pool_locking = d->cfg.mlock;
		d->turn.pool_lock_usec = now_usec();
	}
	return ho_account_entries(d, l);
}

/* A process as versions 1 and 2 wrote it, field by field: as a record. */
static int ho_get_target_v2(struct ho_in *in, struct ho_target *ht, struct target_record *rec)
{
	struct ho_target_v2 o;
	int r = ho_get(in, &o, sizeof(o));

	if (r < 0)
		return r;
	*ht = (struct ho_target){ .uffd = o.uffd, .pidfd = o.pidfd, .staging_fd = o.staging_fd,
				  .npages = o.npages };
	*rec = (struct target_record){
		.pid = o.pid, .uid = o.uid, .features = o.features, .beacon = o.beacon,
		.staging_pages = o.staging_pages, .agent_tid = o.agent_tid, .nexcl = o.nexcl,
		.forked = o.forked, .limit_set = o.limit_set, .limit_bytes = o.limit_bytes,
		.scan_cursor = o.scan_cursor, .started_usec = o.started_usec, .stores = o.stores,
		.loads = o.loads, .invalidates = o.invalidates, .stored_bytes = o.stored_bytes,
		.refused = o.refused, .unclaimed = o.unclaimed, .mismoves_seen = o.mismoves_seen,
		.stall_usec = o.stall_usec,
	};
	memcpy(rec->comm, o.comm, sizeof(rec->comm));
	memcpy(rec->excl, o.excl, sizeof(rec->excl));
	return 0;
}

static int ho_get_target(struct ho_in *in, uint32_t version, struct ho_target *ht,
			 struct target_record *rec)
{
	uint8_t buf[sizeof(*rec)];
	int r;

	if (version < 3)
		return ho_get_target_v2(in, ht, rec);
	r = ho_get(in, ht, sizeof(*ht));
	if (r == 0 && ht->rec_len > sizeof(buf))
		r = -EPROTO;
	if (r == 0)
		r = ho_get(in, buf, ht->rec_len);
	return r < 0 ? r : target_record_read(buf, ht->rec_len, rec);
}

static int ho_load_target(struct daemon *d, struct ho_in *in, uint32_t version,
			  struct ho_loaded *l, struct target **ret)
{
	struct target_record rec;
	struct ho_target ht;
	struct target *t;
	int r = ho_get_target(in, version, &ht, &rec);

	if (r < 0)
		return r;
	if (rec.nexcl > ZS_AGENT_MAX_EXCL || rec.staging_pages > ZS_STAGING_MAX_SLOTS)
		return -EPROTO;
	r = target_take_over(d, ho_own(ht.uffd), rec.features, rec.pid, ho_own(ht.pidfd),
			     ho_own(ht.staging_fd), rec.staging_pages, fault_uffd_ready, &t);
	if (r < 0)
		return r;
	*ret = t;
	target_record_apply(t, &rec);
	for (uint64_t i = 0; i < ht.npages; i++) {
		struct ho_page p;
		struct entry *e;

		r = ho_get(in, &p, sizeof(p));
		if (r < 0)
			return r;
		if (p.id >= l->nents || p.pgno >= IDX_PGNO_MAX)
			return -EPROTO;
		e = l->ents[p.id];
		entry_get(e);
		r = target_insert(t, p.pgno << ZS_PAGE_SHIFT, e);
		if (r < 0) {
			e->refs--;
			return r;
		}
	}
	return 0;
}

static int ho_load_conns(struct daemon *d, struct ho_in *in, struct ho_loaded *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ho_conn hc;
		struct conn *c;
		int r = ho_get(in, &hc, sizeof(hc));

		if (r < 0)
			return r;
		if (hc.kind > CONN_CTL || (hc.kind == CONN_CTL) != !!hc.upgrade_waiting ||
		    hc.target >= (int32_t)l->ntargets)
			return -EPROTO;
		r = conn_new(d, ho_own(hc.fd), &c);
		if (r < 0) {
			log_warning_errno(r, "handover: a connection is lost: %m");
			continue;
		}
		c->kind = hc.kind;
		c->hello_flags = hc.hello_flags;
		c->upgrade_waiting = hc.upgrade_waiting;
		c->upgrade_seq = hc.upgrade_seq;
		if (hc.target >= 0 && l->targets[hc.target]) {
			c->target = l->targets[hc.target];
			c->target->conn = c;
		}
	}
	return 0;
}

/* The zswapctl upgrade that asked for this gets its answer from us. */
static void ho_answer_upgrade(struct daemon *d, uint32_t processes, uint64_t pages, uint64_t msec)
{
	struct zs_upgrade_reply rep = { .pages = pages, .processes = processes,
					.msec = (uint32_t)msec };

	for (struct conn *c = d->conns.list; c; c = c->next)
		if (c->upgrade_waiting) {
			c->upgrade_waiting = false;
			proto_send(c->w.fd, ZS_UPGRADE_REPLY, c->upgrade_seq, &rep, sizeof(rep), NULL, 0);
		}
}

static void ho_load_groups(struct daemon *d, const struct ho_group *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct zs_group_reply rep;
		const char *why;
		char cg[CGROUP_PATH_MAX];

		memcpy(cg, g[i].cgroup, sizeof(cg));
		cg[sizeof(cg) - 1] = '\0';
		if (group_set(d, cg, g[i].budget, false, &rep, &why) < 0)
			log_warning("handover: the budget of group %s is lost: %s", cg[0] ? cg : "all",
				    why ? why : "no memory");
	}
}

/* Entries nothing names any more (a target that went): counted, then freed. */
static void ho_drop_unnamed(struct daemon *d, struct ho_loaded *l)
{
	for (uint64_t i = 0; i < l->nents; i++) {
		struct entry *e = l->ents[i];

		if (e && !e->refs) {
			e->refs = 1;
			entry_put(d, e);
		}
	}
}

/* A forked child no shim claimed was getting its pages back: on with it. */
static void ho_restore_unclaimed(struct ho_loaded *l)
{
	for (uint32_t i = 0; i < l->ntargets; i++) {
		struct target *t = l->targets[i];

		if (t->unclaimed && idx_count(t->idx) && restore_begin(t, NULL, 0) < 0)
			log_warning("pid %d: cannot bring its pages back", (int)t->pid);
	}
}

int handover_load(struct daemon *d)
{
	struct ho_in in = { .fd = d->upgrade.handover_fd };
	struct ho_loaded l = { 0 };
	struct ho_group *groups = NULL;
	struct ho_header h;
	uint64_t pages = 0, start = now_usec();
	int r;

	r = ho_header_read(d->upgrade.handover_fd, &h);
	if (r < 0)
		return r;
	in.off = ho_header_size(&h);
	in.punched = 0;
	in.buf = malloc(HANDOVER_BUF);
	l.nents = h.nentries;
	l.ntargets = h.ntargets;
	l.ents = calloc(h.nentries ? h.nentries : 1, sizeof(*l.ents));
	l.targets = calloc(h.ntargets ? h.ntargets : 1, sizeof(*l.targets));
	groups = calloc(h.ngroups ? h.ngroups : 1, sizeof(*groups));
	if (!in.buf || !l.ents || !l.targets || !groups) {
		r = -ENOMEM;
		goto out;
	}
	r = ho_load_stats(d, &in, h.nstats);
	if (r == 0)
		r = ho_get(&in, groups, (size_t)h.ngroups * sizeof(*groups));
	if (r == 0)
		r = ho_load_pool(d, &in, &h, &l);
	for (uint32_t i = 0; r == 0 && i < h.ntargets; i++) {
		r = ho_load_target(d, &in, h.version, &l, &l.targets[i]);
		if (r == 0)
			pages += idx_count(l.targets[i]->idx);
	}
	if (r == 0)
		r = ho_load_conns(d, &in, &l, h.nconns);
	if (r < 0)
		goto out;
	ho_drop_unnamed(d, &l);
	ho_load_groups(d, groups, h.ngroups);
	ho_restore_unclaimed(&l);
	d->st.upgrades++;
	ho_answer_upgrade(d, h.ntargets, pages, (now_usec() - h.saved_usec) / 1000);
	/* From the image's first byte to now: what a waiting fault waited, less our own set-up. */
	log_info("took over %u processes and %llu evicted pages in %llu ms (the image read in %llu)",
		 h.ntargets, (unsigned long long)pages,
		 (unsigned long long)((now_usec() - h.saved_usec) / 1000),
		 (unsigned long long)((now_usec() - start) / 1000));
out:
	/* On failure what was rebuilt is left as it is: the caller exits. */
	if (r < 0)
		log_error_errno(r, "Failed to read the handover image: %m");
	close(d->upgrade.handover_fd);
	d->upgrade.handover_fd = -1;
	free(in.buf);
	free(l.ents);
	free(l.by_handle);
	free(l.targets);
	free(groups);
	return r;
}
