// SPDX-License-Identifier: GPL-2.0-only
/*
 * recover.c - a zswapd started after one died takes over what it held,
 * from what the fd store handed back (fdstore.h): the pool's arena and
 * handle table, the newest complete journal (journal.h), each process's
 * uffd, pidfd, staging memfd and connection, the listening socket and the
 * swap file.
 *
 *   1. recover_prepare(), before set-up: the journal's header over the
 *      config (the pool was made with its compressor, its swap file),
 *      the listening socket and the swap file taken from the store.
 *   2. recover_load(), after set-up: the pool put back from its table;
 *      the journal replayed into a model of targets, pages and entries;
 *      each entry built once, each handle nothing names released; each
 *      process taken over if its pidfd says it lives, each page kept only
 *      where its page table still owes it (hazard 8: a marker, not present;
 *      a page the app has again, or discarded, was loaded or zeroed in a
 *      moment the journal did not see); each batch a dead zswapd had out
 *      put back once its agent is done (evict_recover()); the connections
 *      taken over; a new journal written and stored, and what the store
 *      holds that nothing names dropped.
 *   3. Every thread waiting in a fault the dead zswapd had read is sent to
 *      fault again (UFFDIO_WAKE), into our reads, and each shim's watcher
 *      learns our pid (ZS_STAGING_DAEMON) and stops waiting for us.
 * Anything that does not add up is an error, and the caller exits: the
 * processes go on waiting, for the next zswapd or their reattach timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comp.h"
#include "fdstore.h"
#include "idx.h"
#include "journal.h"
#include "log.h"
#include "pool.h"
#include "uffd.h"

/* A key -> pointer table, open addressing; keys are never 0. */
struct rmap {
	uint64_t *keys;
	void **vals;
	size_t cap, n;
};

static void **rmap_slot(struct rmap *m, uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	return &m->vals[i];
}

static void *rmap_get(const struct rmap *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1); m->keys[i];
	     i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return NULL;
}

static int rmap_put(struct rmap *m, uint64_t key, void *val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct rmap bigger = { .cap = m->cap ? m->cap * 2 : 64 };

		bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
		bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
		if (!bigger.keys || !bigger.vals) {
			free(bigger.keys);
			free(bigger.vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i] && m->vals[i])
				*rmap_slot(&bigger, m->keys[i]) = m->vals[i], bigger.n++;
		free(m->keys);
		free(m->vals);
		*m = bigger;
	}
	if (!*rmap_slot(m, key))
		m->n++;
	*rmap_slot(m, key) = val;
	return 0;
}

struct rentry {
	struct jr_entry e;
	uint32_t links; /* pages that name it */
	struct entry *built;
};

struct rtarget {
	struct jr_target jt;
	bool gone;
	struct idx *idx; /* pgno -> struct rentry */
	struct jr_batch *batch; /* in flight, runs after it; NULL if none */
	bool batch_done;
	struct target *built;
};

struct replay {
	struct rmap targets; /* key -> rtarget */
	struct rmap entries; /* ekey -> rentry */
	struct rtarget **order; /* the targets, as they came */
	size_t ntargets, cap;
	uint64_t max_key;
};

static int rp_target(struct replay *rp, uint64_t key, bool create, struct rtarget **ret)
{
	struct rtarget *rt = rmap_get(&rp->targets, key);
	int r;

	if (rt || !create) {
		*ret = rt && !rt->gone ? rt : NULL;
		return 0;
	}
	if (rp->ntargets == rp->cap) {
		size_t cap = rp->cap ? rp->cap * 2 : 16;
		struct rtarget **o = reallocarray(rp->order, cap, sizeof(*o));

		if (!o)
			return -ENOMEM;
		rp->order = o;
		rp->cap = cap;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	r = idx_new(&rt->idx);
	if (r == 0)
		r = rmap_put(&rp->targets, key, rt);
	if (r < 0) {
		idx_free(rt->idx, NULL, NULL);
		free(rt);
		return r;
	}
	rt->jt.key = key;
	rp->order[rp->ntargets++] = rt;
	if (key > rp->max_key)
		rp->max_key = key;
	*ret = rt;
	return 0;
}

static void rp_unlink_val(void *val, void *arg)
{
	(void)arg;
	((struct rentry *)val)->links--;
}

static int rp_link(struct rtarget *rt, uint64_t pgno, struct rentry *re)
{
	void *old = NULL;
	int r;

	if (pgno >= IDX_PGNO_MAX)
		return -EPROTO;
	r = idx_insert(rt->idx, pgno, re, &old);
	if (r < 0)
		return r;
	re->links++;
	if (old)
		((struct rentry *)old)->links--;
	return 0;
}

static int rp_store(struct replay *rp, const struct jr_store *js)
{
	struct rentry *re = rmap_get(&rp->entries, js->ekey);
	struct rtarget *rt;
	int r;

	r = rp_target(rp, js->key, false, &rt);
	if (r < 0 || !rt)
		return r;
	/* A key seen with no page naming it any more was freed: this is a new entry. */
	if (!re || !re->links) {
		re = calloc(1, sizeof(*re));
		if (!re)
			return -ENOMEM;
		r = rmap_put(&rp->entries, js->ekey, re);
		if (r < 0) {
			free(re);
			return r;
		}
	}
	re->e = js->e;
	return rp_link(rt, js->pgno, re);
}

static int rp_unlink_one(uint64_t pgno, void *val, void *arg)
{
	struct rtarget *rt = arg;

	idx_erase(rt->idx, pgno);
	rp_unlink_val(val, NULL);
	return 0;
}

struct rp_remap {
	uint64_t *pgnos;
	struct rentry **moved;
	size_t n, cap;
};

static int rp_remap_collect(uint64_t pgno, void *val, void *arg)
{
	struct rp_remap *m = arg;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		uint64_t *p = reallocarray(m->pgnos, cap, sizeof(*p));
		struct rentry **v;

		if (!p)
			return -ENOMEM;
		m->pgnos = p;
		v = reallocarray(m->moved, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->moved = v;
		m->cap = cap;
	}
	m->pgnos[m->n] = pgno;
	m->moved[m->n++] = val;
	return 0;
}

/* As evict_note_remap() did to the index: the pages follow, replacing what was there. */
static int rp_remap(struct rtarget *rt, const struct jr_remap *jr)
{
	struct rp_remap m = { 0 };
	int r;

	if ((jr->from | jr->to | jr->len) & (ZS_PAGE_SIZE - 1))
		return -EPROTO;
	r = idx_walk(rt->idx, jr->from >> ZS_PAGE_SHIFT, (jr->from + jr->len) >> ZS_PAGE_SHIFT,
		     rp_remap_collect, &m);
	for (size_t i = 0; r == 0 && i < m.n; i++)
		idx_erase(rt->idx, m.pgnos[i]);
	for (size_t i = 0; r == 0 && i < m.n; i++) {
		uint64_t to = (jr->to >> ZS_PAGE_SHIFT) + (m.pgnos[i] - (jr->from >> ZS_PAGE_SHIFT));

		m.moved[i]->links--;
		r = rp_link(rt, to, m.moved[i]);
	}
	free(m.pgnos);
	free(m.moved);
	return r;
}

static int rp_copy_one(uint64_t pgno, void *val, void *arg)
{
	return rp_link(arg, pgno, val);
}

static int rp_fork(struct replay *rp, const struct jr_fork *jf)
{
	struct rtarget *parent, *child;
	int r = rp_target(rp, jf->parent, false, &parent);

	if (r < 0 || !parent)
		return r;
	r = rp_target(rp, jf->child, true, &child);
	if (r < 0 || !child)
		return r;
	/* Recorded as it was read, then again once the events before it in
	 * that read were: the second is what the child inherited. */
	r = idx_walk(child->idx, 0, IDX_PGNO_MAX, rp_unlink_one, child);
	if (r < 0)
		return r;
	child->jt = parent->jt;
	child->jt.key = jf->child;
	child->jt.pid = 0;
	child->jt.agent_tid = 0;
	child->jt.staging_pages = 0;
	child->jt.has_conn = 0;
	child->jt.forked = 1;
	child->jt.stores = child->jt.loads = child->jt.invalidates = 0;
	child->jt.stored_bytes = child->jt.refused = 0;
	/* Forked while its parent's batch was out: that batch's pages are its too. */
	if (parent->batch && parent->batch->nforks < BATCH_MAX_FORKS) {
		uint32_t f = 0;

		while (f < parent->batch->nforks && parent->batch->forks[f] != jf->child)
			f++;
		if (f == parent->batch->nforks)
			parent->batch->forks[parent->batch->nforks++] = jf->child;
	}
	return idx_walk(parent->idx, 0, IDX_PGNO_MAX, rp_copy_one, child);
}

static int rp_batch(struct replay *rp, const struct jr_batch *jb, uint32_t len)
{
	struct rtarget *rt;
	int r = rp_target(rp, jb->key, false, &rt);

	if (r < 0 || !rt)
		return r;
	if (jb->nruns > EVICT_MAX_RUNS || jb->nforks > BATCH_MAX_FORKS ||
	    len != sizeof(*jb) + jb->nruns * sizeof(struct batch_run))
		return -EPROTO;
	free(rt->batch);
	rt->batch = malloc(len);
	if (!rt->batch)
		return -ENOMEM;
	memcpy(rt->batch, jb, len);
	rt->batch_done = false;
	return 0;
}

static int rp_batch_end(struct replay *rp, const struct jr_batch_end *je, bool done)
{
	struct rtarget *rt;
	int r = rp_target(rp, je->key, false, &rt);

	if (r < 0 || !rt || !rt->batch || rt->batch->id != je->id)
		return r;
	if (done) {
		rt->batch_done = true;
	} else {
		free(rt->batch);
		rt->batch = NULL;
	}
	return 0;
}

static int rp_record(struct replay *rp, uint16_t type, const void *p, uint32_t len)
{
	struct rtarget *rt;
	int r;

#define RP_NEED(T) \
	if (len != sizeof(T)) \
		return -EPROTO;
	switch (type) {
	case JR_TARGET: {
		const struct jr_target *jt = p;

		RP_NEED(struct jr_target);
		r = rp_target(rp, jt->key, true, &rt);
		if (r == 0 && rt)
			rt->jt = *jt;
		return r;
	}
	case JR_GONE:
		RP_NEED(uint64_t);
		r = rp_target(rp, *(const uint64_t *)p, false, &rt);
		if (r == 0 && rt) {
			idx_free(rt->idx, rp_unlink_val, NULL);
			rt->idx = NULL;
			rt->gone = true;
			free(rt->batch);
			rt->batch = NULL;
		}
		return r;
	case JR_STORE:
		RP_NEED(struct jr_store);
		return rp_store(rp, p);
	case JR_ENTRY: {
		const struct jr_entry_rec *je = p;
		struct rentry *re;

		RP_NEED(struct jr_entry_rec);
		re = rmap_get(&rp->entries, je->ekey);
		if (re && re->links)
			re->e = je->e;
		return 0;
	}
	case JR_UNLINK: {
		const struct jr_page *jp = p;
		void *val;

		RP_NEED(struct jr_page);
		r = rp_target(rp, jp->key, false, &rt);
		if (r == 0 && rt && jp->pgno < IDX_PGNO_MAX && (val = idx_erase(rt->idx, jp->pgno)))
			rp_unlink_val(val, NULL);
		return r;
	}
	case JR_INVALIDATE: {
		const struct jr_range *jr = p;

		RP_NEED(struct jr_range);
		r = rp_target(rp, jr->key, false, &rt);
		if (r == 0 && rt)
			r = idx_walk(rt->idx, jr->first, jr->last, rp_unlink_one, rt);
		return r;
	}
	case JR_REMAP: {
		const struct jr_remap *jr = p;

		RP_NEED(struct jr_remap);
		r = rp_target(rp, jr->key, false, &rt);
		return r == 0 && rt ? rp_remap(rt, jr) : r;
	}
	case JR_FORK:
		RP_NEED(struct jr_fork);
		return rp_fork(rp, p);
	case JR_BATCH:
		if (len < sizeof(struct jr_batch))
			return -EPROTO;
		return rp_batch(rp, p, len);
	case JR_BATCH_DONE:
	case JR_BATCH_END:
		RP_NEED(struct jr_batch_end);
		return rp_batch_end(rp, p, type == JR_BATCH_DONE);
	default:
		return -EPROTO;
	}
#undef RP_NEED
}

struct journal_in {
	int fd;
	const uint8_t *base;
	uint64_t size;
	const struct jr_header *h;
	char name[64];
};

static void journal_in_close(struct journal_in *in)
{
	if (in->base)
		munmap((void *)in->base, in->size);
	in->base = NULL;
}

static int journal_in_open(int fd, struct journal_in *in)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < ZS_PAGE_SIZE)
		return -EPROTO;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	in->fd = fd;
	in->base = p;
	in->size = (uint64_t)st.st_size;
	in->h = p;
	if (memcmp(in->h->magic, JOURNAL_MAGIC, sizeof(in->h->magic)) ||
	    in->h->version != JOURNAL_VERSION || in->h->page_size != ZS_PAGE_SIZE ||
	    !__atomic_load_n(&in->h->complete, __ATOMIC_ACQUIRE)) {
		journal_in_close(in);
		return -EPROTO;
	}
	return 0;
}

/* The newest complete journal of those handed back (journal.<gen>). */
static void recover_pick_one(struct daemon *d, const char *name, int fd, void *arg)
{
	struct journal_in *best = arg, in = { 0 };

	(void)d;
	if (journal_in_open(fd, &in) < 0) {
		log_warning("fd store: %s is not a complete journal; left out", name);
		return;
	}
	if (best->base && best->h->gen >= in.h->gen) {
		journal_in_close(&in);
		return;
	}
	journal_in_close(best);
	*best = in;
	snprintf(best->name, sizeof(best->name), "%s", name);
}

static int recover_replay(const struct journal_in *in, struct replay *rp)
{
	uint64_t off = ZS_PAGE_SIZE, records = 0;

	while (off + sizeof(struct jr_rec) <= in->size) {
		const struct jr_rec *rec = (const void *)(in->base + off);
		uint16_t type = __atomic_load_n(&rec->type, __ATOMIC_ACQUIRE);
		uint64_t next;
		int r;

		if (!type)
			break; /* the end, or a record its writer did not finish */
		next = off + sizeof(*rec) + (((uint64_t)rec->len + 7) & ~7ull);
		if (next > in->size)
			return -EPROTO;
		r = rp_record(rp, type, rec + 1, rec->len);
		if (r < 0)
			return log_error_errno(r, "journal record %llu (type %u) at %llu: %m",
					       (unsigned long long)records, type,
					       (unsigned long long)off);
		records++;
		off = next;
	}
	log_debug("journal: %llu records, %llu bytes", (unsigned long long)records,
		  (unsigned long long)off);
	return 0;
}

/* State kept from recover_prepare() to recover_load(). */
struct recovery {
	struct journal_in in;
	struct replay rp;
	uint64_t start_usec;
};

int recover_prepare(struct daemon *d)
{
	struct recovery *rc;
	const struct jr_header *h;
	enum comp_alg alg;
	int r;

	r = fdstore_load(d);
	if (r <= 0)
		return r;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->start_usec = now_usec();
	fdstore_each(d, "journal.", recover_pick_one, &rc->in);
	if (!rc->in.base) {
		free(rc);
		return 0; /* a socket from systemd, maybe, and nothing kept */
	}
	d->recovery = rc;
	h = rc->in.h;
	/* What the pool was made with stands, whatever the config says now. */
	if (comp_parse(h->compressor, &alg) < 0)
		return log_error_errno(-EPROTO, "journal: unknown compressor %.16s", h->compressor);
	d->cfg.compressor = alg;
	d->cfg.recompressor = CFG_RECOMP_NONE;
	if (h->recompressor[0] && comp_parse(h->recompressor, &alg) == 0)
		d->cfg.recompressor = (int)alg;
	d->cfg.evict_batch_pages = h->evict_batch_pages;
	memcpy(d->cfg.socket, h->socket, sizeof(d->cfg.socket));
	d->cfg.socket[sizeof(d->cfg.socket) - 1] = '\0';
	memcpy(d->cfg.swap_file, h->swap_file, sizeof(d->cfg.swap_file));
	d->cfg.swap_file[sizeof(d->cfg.swap_file) - 1] = '\0';
	d->cfg.swap_file_size = h->swap_file_size;
	d->kept_swap_fd = fdstore_take(d, "swap");
	if (h->swap_file_size && d->kept_swap_fd < 0)
		return log_error_errno(-EPROTO, "The fd store has no swap file");
	d->listen_w.fd = fdstore_take(d, "listen");
	log_info("taking over from a zswapd that died: %s, %zu descriptors kept", rc->in.name,
		 d->nhanded);
	return 1;
}

/* Builds each entry some page names; marks its handle as named. */
static int recover_entries(struct daemon *d, struct replay *rp, uint8_t *named)
{
	uint64_t end = pool_handle_end(d->pool);

	for (size_t i = 0; i < rp->entries.cap; i++) {
		struct rentry *re = rp->entries.vals[i];
		const struct jr_entry *je;
		struct entry *e;
		int r;

		if (!rp->entries.keys[i] || !re || !re->links)
			continue;
		je = &re->e;
		if (je->kind < ENTRY_SAME || je->kind > ENTRY_RAW || je->where == ENTRY_WRITING ||
		    je->where > ENTRY_ON_DISK || je->len > ZS_PAGE_SIZE)
			return -EPROTO;
		if (je->kind == ENTRY_RAW)
			continue; /* its copy died with the heap it was in: not built (hazard 8) */
		if (je->kind == ENTRY_COMP && je->where == ENTRY_IN_POOL &&
		    (je->val >= end || pool_live_len(d->pool, je->val) != je->len))
			return log_error_errno(-EPROTO, "journal: an entry names handle %llu, "
							"which the pool has not",
					       (unsigned long long)je->val);
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->kind = je->kind;
		e->where = je->where;
		e->recomp = je->recomp;
		e->len = je->len;
		e->stored_at = je->stored_at;
		e->val = je->val;
		e->disk = je->disk;
		r = entry_account(d, e);
		if (r < 0) {
			free(e);
			return r;
		}
		if (e->kind == ENTRY_COMP && e->where == ENTRY_IN_POOL)
			named[e->val] = 1;
		re->built = e;
	}
	return 0;
}

/* An object stored and not yet in an index when the old zswapd died. */
static void recover_release_unnamed(struct daemon *d, const uint8_t *named)
{
	uint64_t end = pool_handle_end(d->pool), n = 0;

	for (uint64_t h = 1; h < end; h++)
		if (!named[h] && pool_live_len(d->pool, h)) {
			pool_release(d->pool, h);
			n++;
		}
	if (n)
		log_info("recover: %llu objects no page named are gone", (unsigned long long)n);
}

static bool recover_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

struct recover_pages {
	struct target *t;
	uint64_t pm[512];
	uint64_t pm_first; /* pgno of pm[0] */
	uint32_t pm_n;
	uint64_t kept, dropped;
	int err;
};

/* Whether page pgno of t is still owed to it (hazard 8); 1 if its pagemap cannot say. */
static bool recover_owed(struct recover_pages *rpg, uint64_t pgno)
{
	if (!rpg->t->pid || rpg->err)
		return true; /* a child not named yet: its journal is all we have */
	if (pgno < rpg->pm_first || pgno >= rpg->pm_first + rpg->pm_n) {
		rpg->pm_n = 0;
		rpg->pm_first = pgno;
		rpg->err = proc_pagemap(rpg->t->pid, pgno << ZS_PAGE_SHIFT, 512, rpg->pm);
		if (rpg->err < 0) {
			/* Near the top of the address space a full read fails: one. */
			rpg->err = proc_pagemap(rpg->t->pid, pgno << ZS_PAGE_SHIFT, 1, rpg->pm);
			if (rpg->err < 0)
				return true;
			rpg->pm_n = 1;
		} else {
			rpg->pm_n = 512;
		}
	}
	return PAGEMAP_OWED(rpg->pm[pgno - rpg->pm_first]);
}

static int recover_page(uint64_t pgno, void *val, void *arg)
{
	struct recover_pages *rpg = arg;
	struct rentry *re = val;
	int r;

	if (!re->built || !recover_owed(rpg, pgno)) {
		if (rpg->dropped < 5)
			log_debug("pid %d: page %#llx not owed (pagemap %#llx)", (int)rpg->t->pid,
				  (unsigned long long)(pgno << ZS_PAGE_SHIFT),
				  (unsigned long long)(rpg->pm_n ? rpg->pm[pgno - rpg->pm_first] : 0));
		rpg->dropped++;
		return 0;
	}
	entry_get(re->built);
	r = target_insert(rpg->t, pgno << ZS_PAGE_SHIFT, re->built);
	if (r < 0) {
		re->built->refs--;
		return r;
	}
	rpg->kept++;
	return 0;
}

static int recover_take_fd(struct daemon *d, uint64_t key, enum journal_fd what, uint8_t *stored)
{
	char name[48];
	int fd;

	journal_fd_name(key, what, name, sizeof(name));
	fd = fdstore_take(d, name);
	if (fd >= 0)
		*stored |= 1u << what;
	return fd;
}

static void recover_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

static int recover_target(struct daemon *d, struct rtarget *rt, uint64_t *pages)
{
	const struct jr_target *jt = &rt->jt;
	struct recover_pages rpg = { 0 };
	uint8_t stored = 0;
	int uffd, pidfd, staging, connfd, r;
	struct target *t;
	struct conn *c;

	uffd = recover_take_fd(d, jt->key, JOURNAL_FD_UFFD, &stored);
	pidfd = recover_take_fd(d, jt->key, JOURNAL_FD_PIDFD, &stored);
	staging = recover_take_fd(d, jt->key, JOURNAL_FD_STAGING, &stored);
	connfd = recover_take_fd(d, jt->key, JOURNAL_FD_CONN, &stored);
	if (uffd < 0 || (jt->pid && pidfd < 0) || (pidfd >= 0 && !recover_pidfd_alive(pidfd)) ||
	    jt->nexcl > ZS_AGENT_MAX_EXCL || jt->staging_pages > ZS_STAGING_MAX_SLOTS ||
	    (staging >= 0 && !jt->staging_pages)) {
		/* Exited (its pages go with it), or never fully ours. */
		log_debug("recover: target %llu (pid %d) is gone", (unsigned long long)jt->key,
			  jt->pid);
		recover_close(uffd);
		recover_close(pidfd);
		recover_close(staging);
		recover_close(connfd);
		return 0;
	}
	r = target_take_over(d, uffd, jt->features, jt->pid, pidfd, staging, jt->staging_pages,
			     fault_uffd_ready, &t);
	if (r < 0) {
		recover_close(connfd);
		return r;
	}
	rt->built = t;
	t->key = jt->key;
	t->journaled = true;
	t->stored_fds = stored & (uint8_t)~(1u << JOURNAL_FD_CONN);
	t->uid = jt->uid;
	memcpy(t->comm, jt->comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
	t->agent_tid = jt->agent_tid;
	t->beacon = jt->beacon;
	t->nexcl = jt->nexcl;
	memcpy(t->excl, jt->excl, sizeof(t->excl));
	t->forked = jt->forked;
	t->limit_set = jt->limit_set;
	t->limit_bytes = jt->limit_bytes;
	t->scan_cursor = jt->scan_cursor;
	t->started_usec = jt->started_usec;
	t->stores = jt->stores;
	t->loads = jt->loads;
	t->invalidates = jt->invalidates;
	t->stored_bytes = jt->stored_bytes;
	t->refused = jt->refused;
	rpg.t = t;
	r = idx_walk(rt->idx, 0, IDX_PGNO_MAX, recover_page, &rpg);
	if (r < 0) {
		recover_close(connfd);
		return r;
	}
	*pages += rpg.kept;
	if (rpg.dropped)
		log_info("pid %d: %llu pages came back or went while zswapd was away",
			 (int)t->pid, (unsigned long long)rpg.dropped);
	if (connfd >= 0) {
		r = conn_new(d, connfd, &c);
		if (r < 0)
			return log_warning_errno(r, "pid %d: its connection is lost: %m", (int)t->pid);
		c->kind = CONN_SHIM;
		c->target = t;
		t->conn = c;
		t->stored_fds |= 1u << JOURNAL_FD_CONN;
	}
	return 0;
}

/* The batches the dead zswapd had out, once every target is built (forks name others). */
static int recover_batches(struct daemon *d, struct replay *rp)
{
	for (size_t i = 0; i < rp->ntargets; i++) {
		struct rtarget *rt = rp->order[i];
		struct evict_recovered rb = { 0 };
		int r;

		if (!rt->built || !rt->batch)
			continue;
		rb.id = rt->batch->id;
		rb.flags = rt->batch->flags;
		rb.runs = (const struct batch_run *)(rt->batch + 1);
		rb.nruns = rt->batch->nruns;
		rb.done = rt->batch_done;
		for (uint32_t f = 0; f < rt->batch->nforks; f++) {
			struct rtarget *child = rmap_get(&rp->targets, rt->batch->forks[f]);

			if (child && child->built)
				rb.forks[rb.nforks++] = child->built;
		}
		r = evict_recover(rt->built, &rb);
		if (r < 0)
			log_error_errno(r, "pid %d: cannot put back the batch it had out: %m",
					(int)rt->built->pid);
		d->next_batch_id = d->next_batch_id > rb.id ? d->next_batch_id : rb.id;
	}
	return 0;
}

static void recover_free(struct recovery *rc)
{
	struct replay *rp = &rc->rp;

	for (size_t i = 0; i < rp->ntargets; i++) {
		idx_free(rp->order[i]->idx, NULL, NULL);
		free(rp->order[i]->batch);
		free(rp->order[i]);
	}
	for (size_t i = 0; i < rp->entries.cap; i++)
		if (rp->entries.keys[i])
			free(rp->entries.vals[i]);
	free(rp->order);
	free(rp->targets.keys);
	free(rp->targets.vals);
	free(rp->entries.keys);
	free(rp->entries.vals);
	journal_in_close(&rc->in);
	free(rc);
}

/* Entries whose every page was found loaded or discarded: gone. */
static void recover_drop_unused(struct daemon *d, struct replay *rp)
{
	for (size_t i = 0; i < rp->entries.cap; i++) {
		struct rentry *re = rp->entries.vals[i];

		if (rp->entries.keys[i] && re && re->built && !re->built->refs) {
			re->built->refs = 1;
			entry_put(d, re->built);
		}
	}
}

static int recover_pool(struct daemon *d, const struct jr_header *h)
{
	char name[48];
	struct pool *p;
	int fd, hfd, r;

	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)h->handles_gen);
	fd = fdstore_take(d, "pool");
	hfd = fdstore_take(d, name);
	if (fd < 0 || hfd < 0) {
		recover_close(fd);
		recover_close(hfd);
		return log_error_errno(-EPROTO, "The fd store lacks the pool or %s", name);
	}
	r = pool_recover(fd, hfd, &p);
	close(hfd);
	if (r < 0) {
		close(fd);
		return log_error_errno(r, "Cannot put the pool back: %m");
	}
	pool_free(d->pool);
	d->pool = p;
	d->handles_gen = h->handles_gen + 1;
	d->pool_locking = d->cfg.mlock; /* hazard 6: mapped and locked again as the loop turns */
	d->pool_lock_usec = now_usec();
	return 0;
}

/*
 * The new journal and handle table into the store, and only then the old
 * ones, and all else nobody took, out of it: until the new journal is
 * there, a zswapd that dies here leaves the old one to start from again.
 */
static int recover_switch(struct daemon *d, const struct jr_header *old)
{
	char name[48];
	int r;

	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)d->handles_gen);
	r = fdstore_put(d, name, pool_handles_fd(d->pool));
	if (r < 0)
		return r;
	r = journal_open(d, old->gen + 1);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)old->handles_gen);
	fdstore_drop(d, name);
	fdstore_forget_rest(d);
	return 0;
}

/*
 * A page marked as evicted that no entry names: the journal missed it
 * (a moment it cannot cover, hazard 8).  Its data is gone: a SIGBUS at
 * its touch, said here, never zeros.  Pages of a batch still out are not
 * this: the batch puts them back.
 */
static uint64_t recover_poison_unnamed(struct target *t)
{
	uint64_t addr = 0, start, end, n = 0, pm[512];

	if (!t->pid)
		return 0;
	while (proc_vma_next(t->pid, addr, &start, &end) == 0) {
		for (addr = start; addr < end;) {
			uint32_t k = (uint32_t)((end - addr) >> ZS_PAGE_SHIFT);

			if (k > 512)
				k = 512;
			if (proc_pagemap(t->pid, addr, k, pm) < 0)
				break;
			for (uint32_t i = 0; i < k; i++) {
				uint64_t a = addr + ((uint64_t)i << ZS_PAGE_SHIFT);
				uint32_t slot;

				if (!PAGEMAP_OWED(pm[i]) || idx_lookup(t->idx, a >> ZS_PAGE_SHIFT) ||
				    evict_in_flight(t, a, &slot) ||
				    (t->batch_parent && t->batch_parent->batch &&
				     evict_in_flight(t->batch_parent, a, &slot)))
					continue;
				if (n < 5)
					log_debug("pid %d: page %#llx marked, no entry (pagemap %#llx)",
						  (int)t->pid, (unsigned long long)a,
						  (unsigned long long)pm[i]);
				uffd_writeprotect(t->uffd_w.fd, a, ZS_PAGE_SIZE, false);
				uffd_poison(t->uffd_w.fd, a);
				n++;
			}
			addr += (uint64_t)k << ZS_PAGE_SHIFT;
		}
		addr = end;
	}
	if (n)
		log_error("pid %d: %llu pages evicted and named by no entry: a SIGBUS at their touch",
			  (int)t->pid, (unsigned long long)n);
	return n;
}

/* Our pid where each shim's watcher looks for it, and every waiting fault sent to fault again. */
static void recover_announce(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		if (t->staging)
			__atomic_store_n(ZS_STAGING_DAEMON(t->staging, t->staging_pages),
					 (uint32_t)getpid(), __ATOMIC_RELEASE);
		uffd_wake_all(t->uffd_w.fd);
	}
}

int recover_load(struct daemon *d)
{
	struct recovery *rc = d->recovery;
	uint8_t *named = NULL;
	uint64_t pages = 0;
	uint32_t ntargets = 0;
	int r;

	r = recover_pool(d, rc->in.h);
	if (r < 0)
		goto out;
	r = recover_replay(&rc->in, &rc->rp);
	if (r < 0)
		goto out;
	d->next_key = rc->rp.max_key;
	named = calloc(pool_handle_end(d->pool), 1);
	if (!named) {
		r = -ENOMEM;
		goto out;
	}
	r = recover_entries(d, &rc->rp, named);
	if (r < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < rc->rp.ntargets; i++)
		if (!rc->rp.order[i]->gone)
			r = recover_target(d, rc->rp.order[i], &pages);
	if (r < 0)
		goto out;
	for (struct target *t = d->targets; t; t = t->next)
		ntargets++;
	/* Puts back pages the old journal names as out: a recovery that dies
	 * here and starts again from it finds them back, and leaves them. */
	recover_batches(d, &rc->rp);
	for (struct target *t = d->targets; t; t = t->next)
		recover_poison_unnamed(t);
	recover_drop_unused(d, &rc->rp);
	recover_release_unnamed(d, named);
	d->st.crash_recoveries = rc->in.h->recoveries + 1;
	r = recover_switch(d, rc->in.h);
	if (r < 0)
		goto out;
	recover_announce(d);
	log_info("took over %u processes and %llu evicted pages in %llu ms", ntargets,
		 (unsigned long long)pages, (unsigned long long)((now_usec() - rc->start_usec) / 1000));
out:
	if (r < 0)
		log_error_errno(r, "Failed to take over from the zswapd that died: %m");
	free(named);
	recover_free(rc);
	d->recovery = NULL;
	return r;
}
