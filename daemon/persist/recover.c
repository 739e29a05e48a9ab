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
#include "persist.h"
#include "pool.h"
#include "journal_read.h"
#include "uffd.h"

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

/* State kept from recover_prepare() to recover_load(). */
struct recovery {
	struct journal_in in;
	struct journal_replay rp;
	uint64_t start_usec;
};

/* A key whose value in the file the pool taken over overrides: said, once. */
static void recover_note(const char *key, const char *in_file, const char *kept)
{
	if (strcmp(in_file, kept) != 0)
		log_warning("%s = %s in the configuration, but the pool taken over was made with %s: "
			    "%s stays until zswapd is stopped and started",
			    key, in_file, kept, kept);
}

static void recover_note_config(const struct daemon *d, const struct jr_header *h)
{
	char file[32], kept[32];

	recover_note("compressor", comp_name(d->cfg.pool.compressor), h->compressor);
	recover_note("recompressor",
		     d->cfg.pool.recompressor == CFG_RECOMP_NONE ?
			     "none" :
			     comp_name((enum comp_alg)d->cfg.pool.recompressor),
		     h->recompressor[0] ? h->recompressor : "none");
	recover_note("swap_file", d->cfg.swap.swap_file, h->swap_file);
	snprintf(file, sizeof(file), "%llu", (unsigned long long)d->cfg.swap.swap_file_size);
	snprintf(kept, sizeof(kept), "%llu", (unsigned long long)h->swap_file_size);
	recover_note("swap_file_size", file, kept);
	recover_note("socket", d->cfg.socket, h->socket);
	snprintf(file, sizeof(file), "%u", (unsigned)d->cfg.agent.evict_batch_pages);
	snprintf(kept, sizeof(kept), "%u", (unsigned)h->evict_batch_pages);
	recover_note("evict_batch_pages", file, kept);
}

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
	d->persist.recovery = rc;
	h = rc->in.h;
	/* What the pool was made with stands, whatever the config says now. */
	recover_note_config(d, h);
	if (comp_parse(h->compressor, &alg) < 0)
		return log_error_errno(-EPROTO, "journal: unknown compressor %.16s", h->compressor);
	d->cfg.pool.compressor = alg;
	d->cfg.pool.recompressor = CFG_RECOMP_NONE;
	if (h->recompressor[0] && comp_parse(h->recompressor, &alg) == 0)
		d->cfg.pool.recompressor = (int)alg;
	d->cfg.agent.evict_batch_pages = h->evict_batch_pages;
	memcpy(d->cfg.socket, h->socket, sizeof(d->cfg.socket));
	d->cfg.socket[sizeof(d->cfg.socket) - 1] = '\0';
	memcpy(d->cfg.swap.swap_file, h->swap_file, sizeof(d->cfg.swap.swap_file));
	d->cfg.swap.swap_file[sizeof(d->cfg.swap.swap_file) - 1] = '\0';
	d->cfg.swap.swap_file_size = h->swap_file_size;
	d->upgrade.kept_swap_fd = fdstore_take(d, "swap");
	if (h->swap_file_size && d->upgrade.kept_swap_fd < 0)
		return log_error_errno(-EPROTO, "The fd store has no swap file");
	d->listen_w.fd = fdstore_take(d, "listen");
	log_info("taking over from the zswapd before: %s, %zu descriptors kept", rc->in.name,
		 d->persist.nhanded);
	return 1;
}

/*
 * Whether an entry of the journal can be built: its kind and place make
 * sense, and its object is in the pool as it says.  One that cannot names
 * data that is gone (a moment the journal did not see, hazard 8): its
 * pages are not taken over, and where a page is still marked as evicted
 * it gets a SIGBUS (recover_poison_unnamed()), never zeros.
 */
static bool recover_entry_ok(struct daemon *d, const struct jr_entry *je)
{
	if (je->kind < ENTRY_SAME || je->kind > ENTRY_COMP || je->where == ENTRY_WRITING ||
	    je->where > ENTRY_ON_DISK || je->len > ZS_PAGE_SIZE)
		return false;
	return je->kind != ENTRY_COMP || je->where != ENTRY_IN_POOL ||
	       (je->val < pool_handle_end(d->pool) && pool_live_len(d->pool, je->val) == je->len);
}

/* Builds each entry some page names; marks its handle as named. */
static int recover_entries(struct daemon *d, struct journal_replay *rp, uint8_t *named)
{
	uint64_t lost = 0;

	for (size_t i = 0; i < rp->entries.cap; i++) {
		struct rentry *re = rp->entries.vals[i];
		const struct jr_entry *je;
		struct entry *e;

		if (!rp->entries.keys[i] || !re || !re->links)
			continue;
		je = &re->e;
		/* (A RAW entry's copy died with the heap it was in; one object
		 * is one entry's, never two.) */
		if (!recover_entry_ok(d, je) ||
		    (je->kind == ENTRY_COMP && je->where == ENTRY_IN_POOL && named[je->val])) {
			lost++;
			continue;
		}
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
		if (entry_account(d, e) < 0) { /* on disk, past this swap file's end */
			free(e);
			lost++;
			continue;
		}
		if (e->kind == ENTRY_COMP && e->where == ENTRY_IN_POOL)
			named[e->val] = 1;
		re->built = e;
	}
	if (lost)
		log_error("journal: %llu entries name data that is not there; their pages are not "
			  "taken over", (unsigned long long)lost);
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

/* Closes a descriptor taken from the store, and has the store let it go too. */
static void recover_drop_fd(struct daemon *d, uint64_t key, enum journal_fd what, int *fd,
			    uint8_t *stored)
{
	char name[48];

	if (*fd < 0)
		return;
	journal_fd_name(key, what, name, sizeof(name));
	fdstore_drop(d, name);
	close(*fd);
	*fd = -1;
	*stored &= (uint8_t)~(1u << what);
}

/*
 * The staging slots of a process taken over.  Its record says, unless
 * zswapd was killed after storing the staging memfd and before the record
 * that names it (target_adopt(): the descriptors first, then the record):
 * then the memfd's size does, its slots and the page of veto bytes.  0 if
 * neither can say.
 */
static uint32_t recover_staging_pages(int staging, const struct target_record *rec)
{
	struct stat st;
	uint64_t pages;

	if (staging < 0 || rec->staging_pages)
		return rec->staging_pages;
	if (fstat(staging, &st) < 0 || st.st_size % ZS_PAGE_SIZE)
		return 0;
	pages = (uint64_t)st.st_size / ZS_PAGE_SIZE;
	if (pages < 2 || pages - 1 > ZS_STAGING_MAX_SLOTS)
		return 0;
	log_debug("recover: target %llu: %llu staging slots its record does not name yet",
		  (unsigned long long)rec->key, (unsigned long long)(pages - 1));
	return (uint32_t)(pages - 1);
}

/* The shim's connection (connfd, -1: none) to target t taken over, as its record rec says. */
static int recover_conn(struct daemon *d, struct target *t, const struct target_record *rec, int connfd)
{
	struct conn *c;
	int r;

	if (connfd < 0)
		return 0;
	r = conn_new(d, connfd, &c);
	if (r < 0)
		return log_warning_errno(r, "pid %d: its connection is lost: %m", (int)t->pid);
	c->kind = CONN_SHIM;
	c->target = t;
	t->conn = c;
	t->persist.stored_fds |= 1u << JOURNAL_FD_CONN;
	/* Killed between storing its connection and READY (target_adopt()):
	 * the record says so, or was not written yet and does not know the
	 * connection.  A shim that had READY ignores this one. */
	if ((t->persist.ready_unsure || !rec->has_conn) && t->agent.staging &&
	    target_send_ready(t, t->forked) == 0)
		t->persist.ready_unsure = false;
	return 0;
}

static int recover_target(struct daemon *d, struct rtarget *rt, uint64_t *pages)
{
	const struct target_record *rec = &rt->rec;
	struct recover_pages rpg = { 0 };
	uint8_t stored = 0;
	int uffd, pidfd, staging, connfd, r;
	uint32_t staging_pages;
	struct target *t;

	uffd = recover_take_fd(d, rec->key, JOURNAL_FD_UFFD, &stored);
	pidfd = recover_take_fd(d, rec->key, JOURNAL_FD_PIDFD, &stored);
	staging = recover_take_fd(d, rec->key, JOURNAL_FD_STAGING, &stored);
	connfd = recover_take_fd(d, rec->key, JOURNAL_FD_CONN, &stored);
	staging_pages = recover_staging_pages(staging, rec);
	/*
	 * Only what the record says settles whether the process is gone: a
	 * descriptor stored after it (a staging memfd of unknown size, say)
	 * is not a reason to close its uffd, whose registrations would go
	 * with it, and a forked child (ours alone until its shim claims it)
	 * would read zeros.
	 */
	if (staging >= 0 && !staging_pages) {
		log_warning("pid %d: its staging cannot be taken over; its shim is let go",
			    rec->pid);
		recover_drop_fd(d, rec->key, JOURNAL_FD_STAGING, &staging, &stored);
		recover_drop_fd(d, rec->key, JOURNAL_FD_CONN, &connfd, &stored);
	}
	if (uffd < 0 || (rec->pid && pidfd < 0) || (pidfd >= 0 && !recover_pidfd_alive(pidfd)) ||
	    rec->nexcl > ZS_AGENT_MAX_EXCL || rec->staging_pages > ZS_STAGING_MAX_SLOTS) {
		/* Exited (its pages go with it), or never fully ours. */
		log_debug("recover: target %llu (pid %d) is gone", (unsigned long long)rec->key,
			  rec->pid);
		recover_close(uffd);
		recover_close(pidfd);
		recover_close(staging);
		recover_close(connfd);
		return 0;
	}
	r = target_take_over(d, uffd, rec->features, rec->pid, pidfd, staging, staging_pages,
			     fault_uffd_ready, &t);
	if (r < 0) {
		recover_close(connfd);
		return r;
	}
	rt->built = t;
	t->persist.stored_fds = stored & (uint8_t)~(1u << JOURNAL_FD_CONN);
	target_record_apply(t, rec);
	t->persist.key = rec->key;
	t->persist.journaled = true;
	t->persist.ready_unsure = rec->ready_unsure;
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
	return recover_conn(d, t, rec, connfd);
}

/* The batches the dead zswapd had out, once every target is built (forks name others). */
static int recover_batches(struct daemon *d, struct journal_replay *rp)
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
	journal_replay_free(&rc->rp);
	journal_in_close(&rc->in);
	free(rc);
}

/* Entries whose every page was found loaded or discarded: gone. */
static void recover_drop_unused(struct daemon *d, struct journal_replay *rp)
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
	d->persist.handles_gen = h->handles_gen + 1;
	d->turn.pool_locking = d->cfg.mlock; /* hazard 6: mapped and locked again as the loop turns */
	d->turn.pool_lock_usec = now_usec();
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

	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)d->persist.handles_gen);
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

/* Poisons the pages of [start, end) that are marked and that no entry names; how many. */
static uint64_t recover_poison_range(struct target *t, uint64_t start, uint64_t end)
{
	uint64_t n = 0, pm[512];

	for (uint64_t addr = start; addr < end;) {
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
			    (t->evict.batch_parent && t->evict.batch_parent->evict.batch &&
			     evict_in_flight(t->evict.batch_parent, a, &slot)))
				continue;
			if (n < 5)
				log_debug("pid %d: page %#llx marked, no entry (pagemap %#llx)",
					  (int)t->pid, (unsigned long long)a, (unsigned long long)pm[i]);
			uffd_writeprotect(t->uffd_w.fd, a, ZS_PAGE_SIZE, false);
			uffd_poison(t->uffd_w.fd, a);
			n++;
		}
		addr += (uint64_t)k << ZS_PAGE_SHIFT;
	}
	return n;
}

/*
 * A page marked as evicted that no entry names: the journal missed it
 * (a moment it cannot cover, hazard 8).  Its data is gone: a SIGBUS at
 * its touch, said here, never zeros.  Pages of a batch still out are not
 * this: the batch puts them back.  Markers are only where we registered
 * (smaps VmFlags um/uw), which is all that is read.
 */
static uint64_t recover_poison_unnamed(struct target *t)
{
	char path[64], *smaps;
	struct vma *v;
	uint64_t n = 0;
	size_t nv;

	if (!t->pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
	if (read_full_file(path, &smaps, NULL) < 0)
		return 0;
	if (vmscan_registered(smaps, &v, &nv) == 0) {
		for (size_t i = 0; i < nv; i++)
			n += recover_poison_range(t, v[i].start, v[i].end);
		free(v);
	}
	free(smaps);
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
		if (t->agent.staging)
			__atomic_store_n(ZS_STAGING_DAEMON(t->agent.staging, t->agent.staging_pages),
					 (uint32_t)getpid(), __ATOMIC_RELEASE);
		uffd_wake_all(t->uffd_w.fd);
	}
}

int recover_load(struct daemon *d)
{
	struct recovery *rc = d->persist.recovery;
	uint8_t *named = NULL;
	uint64_t pages = 0;
	uint32_t ntargets = 0;
	int r;

	r = recover_pool(d, rc->in.h);
	if (r < 0)
		goto out;
	r = journal_replay(&rc->in, &rc->rp);
	if (r < 0)
		goto out;
	d->persist.next_key = rc->rp.max_key;
	named = calloc(pool_handle_end(d->pool), 1);
	if (!named) {
		r = -ENOMEM;
		goto out;
	}
	r = recover_entries(d, &rc->rp, named);
	if (r < 0)
		goto out;
	wb_hold(d, rc->rp.writing, rc->rp.nwriting);
	/* Before anything is stored: a page put back later may take a handle. */
	recover_release_unnamed(d, named);
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
	d->st.crash_recoveries = rc->in.h->recoveries + !rc->rp.handed_over;
	d->st.restarts = rc->in.h->restarts + rc->rp.handed_over;
	r = recover_switch(d, rc->in.h);
	if (r < 0)
		goto out;
	recover_announce(d);
	log_info("took over %u processes and %llu evicted pages in %llu ms, after a %s", ntargets,
		 (unsigned long long)pages, (unsigned long long)((now_usec() - rc->start_usec) / 1000),
		 rc->rp.handed_over ? "restart" : "crash");
out:
	if (r < 0)
		log_error_errno(r, "Failed to take over from the zswapd before: %m");
	free(named);
	recover_free(rc);
	d->persist.recovery = NULL;
	return r;
}
