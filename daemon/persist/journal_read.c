// SPDX-License-Identifier: GPL-2.0-only
/*
 * journal_read.c - reads a journal back into the model of journal_read.h.
 * Records are applied in order, each as the daemon applied the change it
 * records: a store links a page to an entry (a key seen again while a page
 * names it is that entry, changed; one no page names any more was freed,
 * and this is a new entry), an unlink or a discard drops links, an mremap
 * moves them, a fork copies the parent's into the child (recorded as the
 * event is read, then again once the events before it were dealt with: the
 * second is what the child inherited), a batch is out until it ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idx.h"
#include "log.h"
#include "journal_read.h"

/* A key -> pointer table, open addressing; keys are never 0. */

static void **rmap_slot(struct rmap *m, uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	return &m->vals[i];
}

void *rmap_get(const struct rmap *m, uint64_t key)
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

static int rp_target(struct journal_replay *rp, uint64_t key, bool create, struct rtarget **ret)
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
	rt->rec.key = key;
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

static int rp_store(struct journal_replay *rp, const struct jr_store *js)
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

static int rp_fork(struct journal_replay *rp, const struct jr_fork *jf)
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
	target_record_fork(&parent->rec, jf->child, &child->rec);
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

static int rp_batch(struct journal_replay *rp, const struct jr_batch *jb, uint32_t len)
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

static int rp_batch_end(struct journal_replay *rp, const struct jr_batch_end *je, bool done)
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

static int rp_gone(struct journal_replay *rp, uint64_t key)
{
	struct rtarget *rt;
	int r = rp_target(rp, key, false, &rt);

	if (r == 0 && rt) {
		idx_free(rt->idx, rp_unlink_val, NULL);
		rt->idx = NULL;
		rt->gone = true;
		free(rt->batch);
		rt->batch = NULL;
	}
	return r;
}

static int rp_entry(struct journal_replay *rp, const struct jr_entry_rec *je)
{
	struct rentry *re = rmap_get(&rp->entries, je->ekey);

	if (re && re->links)
		re->e = je->e;
	return 0;
}

static int rp_unlink(struct journal_replay *rp, const struct jr_page *jp)
{
	struct rtarget *rt;
	void *val;
	int r = rp_target(rp, jp->key, false, &rt);

	if (r == 0 && rt && jp->pgno < IDX_PGNO_MAX && (val = idx_erase(rt->idx, jp->pgno)))
		rp_unlink_val(val, NULL);
	return r;
}

static int rp_invalidate(struct journal_replay *rp, const struct jr_range *jr)
{
	struct rtarget *rt;
	int r = rp_target(rp, jr->key, false, &rt);

	return r == 0 && rt ? idx_walk(rt->idx, jr->first, jr->last, rp_unlink_one, rt) : r;
}

static int rp_remap_rec(struct journal_replay *rp, const struct jr_remap *jr)
{
	struct rtarget *rt;
	int r = rp_target(rp, jr->key, false, &rt);

	return r == 0 && rt ? rp_remap(rt, jr) : r;
}

static int rp_target_rec(struct journal_replay *rp, const void *p, uint32_t len)
{
	struct target_record rec;
	struct rtarget *rt;
	int r = target_record_read(p, len, &rec);

	if (r == 0)
		r = rp_target(rp, rec.key, true, &rt);
	if (r == 0 && rt)
		rt->rec = rec;
	return r;
}

/* Few at a time (the writeback's queue): a list. */
static int rp_swap_write(struct journal_replay *rp, const struct jr_swap_write *jw)
{
	size_t i = 0;

	while (i < rp->nwriting && rp->writing[i] != jw->block)
		i++;
	if (jw->done) {
		if (i < rp->nwriting)
			rp->writing[i] = rp->writing[--rp->nwriting];
		return 0;
	}
	if (i < rp->nwriting)
		return 0;
	if (rp->nwriting == rp->writing_cap) {
		size_t cap = rp->writing_cap ? 2 * rp->writing_cap : 16;
		uint64_t *w = realloc(rp->writing, cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		rp->writing = w;
		rp->writing_cap = cap;
	}
	rp->writing[rp->nwriting++] = jw->block;
	return 0;
}

/* Applies one record; -EPROTO if its length is not its type's. */
static int rp_record(struct journal_replay *rp, uint16_t type, const void *p, uint32_t len)
{
	static const uint32_t sizes[] = {
		[JR_GONE] = sizeof(uint64_t),
		[JR_STORE] = sizeof(struct jr_store),	   [JR_ENTRY] = sizeof(struct jr_entry_rec),
		[JR_UNLINK] = sizeof(struct jr_page),	   [JR_INVALIDATE] = sizeof(struct jr_range),
		[JR_REMAP] = sizeof(struct jr_remap),	   [JR_FORK] = sizeof(struct jr_fork),
		[JR_BATCH_DONE] = sizeof(struct jr_batch_end), [JR_BATCH_END] = sizeof(struct jr_batch_end),
		[JR_HANDED_OVER] = sizeof(uint64_t), [JR_SWAP_WRITE] = sizeof(struct jr_swap_write),
	};

	if (type == JR_BATCH)
		return len < sizeof(struct jr_batch) ? -EPROTO : rp_batch(rp, p, len);
	if (type == JR_TARGET) /* an older zswapd's is shorter */
		return rp_target_rec(rp, p, len);
	if (type >= sizeof(sizes) / sizeof(sizes[0]) || !sizes[type] || len != sizes[type])
		return -EPROTO;
	switch (type) {
	case JR_GONE:
		return rp_gone(rp, *(const uint64_t *)p);
	case JR_STORE:
		return rp_store(rp, p);
	case JR_ENTRY:
		return rp_entry(rp, p);
	case JR_UNLINK:
		return rp_unlink(rp, p);
	case JR_INVALIDATE:
		return rp_invalidate(rp, p);
	case JR_REMAP:
		return rp_remap_rec(rp, p);
	case JR_FORK:
		return rp_fork(rp, p);
	case JR_HANDED_OVER:
		rp->handed_over = true;
		return 0;
	case JR_SWAP_WRITE:
		return rp_swap_write(rp, p);
	default:
		return rp_batch_end(rp, p, type == JR_BATCH_DONE);
	}
}

void journal_in_close(struct journal_in *in)
{
	if (in->base)
		munmap((void *)in->base, in->size);
	in->base = NULL;
}

int journal_in_open(int fd, struct journal_in *in)
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

int journal_replay(const struct journal_in *in, struct journal_replay *rp)
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

void journal_replay_free(struct journal_replay *rp)
{
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
	free(rp->writing);
}
