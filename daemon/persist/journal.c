// SPDX-License-Identifier: GPL-2.0-only
/*
 * journal.c - appends what changes to the journal (journal.h), and writes
 * a new one, checkpoint first, once appends have made it long.
 *
 * An append is a memcpy into the mapped memfd: no system call on the
 * fault path, and durable the moment it is written, since the memfd's
 * pages are the store's as much as ours.  Nothing here can fail the
 * caller: a journal that cannot grow (no memory) is dropped, said once,
 * and zswapd goes on without surviving its own death (the processes then
 * see it die as without a store: shim/orphan.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comp.h"
#include "fdstore.h"
#include "idx.h"
#include "journal.h"
#include "log.h"
#include "pool.h"
#include "swapmap.h"

struct journal {
	int fd;
	uint8_t *base;
	uint64_t mapped; /* bytes mapped, and the memfd's size */
	uint64_t tail;	 /* where the next record goes */
	uint64_t gen;
	uint64_t checkpoint_end; /* tail when the checkpoint was written */
};

static const char *const journal_fd_what[JOURNAL_FD_N] = { "uffd", "pidfd", "staging", "conn" };

void journal_fd_name(uint64_t key, enum journal_fd what, char *buf, size_t len)
{
	snprintf(buf, len, "t%llu.%s", (unsigned long long)key, journal_fd_what[what]);
}

static void journal_name(uint64_t gen, char *buf, size_t len)
{
	snprintf(buf, len, "journal.%llu", (unsigned long long)gen);
}

static void journal_free(struct journal *j)
{
	if (!j)
		return;
	if (j->base)
		munmap(j->base, j->mapped);
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

static int journal_grow(struct journal *j, uint64_t need)
{
	uint64_t bytes = j->mapped;
	void *p;

	while (bytes < need)
		bytes *= 2;
	if (bytes > JOURNAL_MAX_BYTES)
		return -EFBIG;
	if (ftruncate(j->fd, (off_t)bytes) < 0)
		return -errno;
	p = mremap(j->base, j->mapped, bytes, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return -errno;
	j->base = p;
	j->mapped = bytes;
	return 0;
}

/* One record, its payload in two parts (the second may be empty). */
static int journal_put(struct journal *j, enum jr_type type, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	size_t len = alen + blen;
	uint64_t end = j->tail + sizeof(struct jr_rec) + ((len + 7) & ~(size_t)7);
	struct jr_rec *rec;
	int r;

	/* Room for a zero header after it too: replay stops there. */
	if (end + sizeof(struct jr_rec) > j->mapped) {
		r = journal_grow(j, end + sizeof(struct jr_rec));
		if (r < 0)
			return r;
	}
	rec = (struct jr_rec *)(j->base + j->tail);
	rec->len = (uint32_t)len;
	memcpy(rec + 1, a, alen);
	if (blen)
		memcpy((uint8_t *)(rec + 1) + alen, b, blen);
	/* Last, after the payload: a record half written reads as the end. */
	__atomic_store_n(&rec->type, (uint16_t)type, __ATOMIC_RELEASE);
	j->tail = end;
	return 0;
}

static void journal_lost(struct daemon *d, int err)
{
	log_error_errno(err, "The journal cannot grow (%m): from now on processes do not "
			     "survive zswapd's death");
	journal_close(d);
}

static void journal_append(struct daemon *d, enum jr_type type, const void *a, size_t alen,
			   const void *b, size_t blen)
{
	int r;

	if (!d->persist.journal)
		return;
	r = journal_put(d->persist.journal, type, a, alen, b, blen);
	if (r < 0)
		journal_lost(d, r);
}

static void journal_pack_entry(const struct entry *e, struct jr_entry *je)
{
	*je = (struct jr_entry){ .kind = e->kind, .where = e->where, .recomp = e->recomp,
				 .len = e->len, .stored_at = e->stored_at, .val = e->val,
				 .disk = e->disk };
	/* One being written back is still in the pool: its block is not its own yet. */
	if (e->where == ENTRY_WRITING) {
		je->where = ENTRY_IN_POOL;
		je->disk = 0;
	}
}

static int journal_put_target(struct journal *j, const struct target *t)
{
	struct target_record rec;

	target_record_fill(t, &rec);
	return journal_put(j, JR_TARGET, &rec, sizeof(rec), NULL, 0);
}

static int journal_put_batch(struct journal *j, const struct target *t, const struct batch *b,
			     uint32_t flags)
{
	struct jr_batch jb = { .key = t->persist.key, .id = b->id, .nruns = b->nruns, .flags = flags };

	for (uint32_t f = 0; f < b->nforks; f++)
		if (b->forks[f]->persist.journaled)
			jb.forks[jb.nforks++] = b->forks[f]->persist.key;
	return journal_put(j, JR_BATCH, &jb, sizeof(jb), b->runs, b->nruns * sizeof(*b->runs));
}

struct journal_walk {
	struct journal *j;
	uint64_t key;
};

static int journal_put_page(uint64_t pgno, void *val, void *arg)
{
	struct journal_walk *w = arg;
	struct jr_store js = { .key = w->key, .pgno = pgno, .ekey = (uint64_t)(uintptr_t)val };

	journal_pack_entry(val, &js.e);
	return journal_put(w->j, JR_STORE, &js, sizeof(js), NULL, 0);
}

static uint32_t journal_batch_flags(const struct batch *b)
{
	return (b->move_first ? ZS_EVICT_MOVE_FIRST : 0) | (b->no_unshare ? ZS_EVICT_NO_UNSHARE : 0);
}

/* Every journaled target, its pages and its batch in flight, every swap file
 * block being written: the state, as records. */
static int journal_checkpoint(struct daemon *d, struct journal *j)
{
	uint64_t nblocks = d->swapmap ? swapmap_nblocks(d->swapmap) : 0;
	int r = 0;

	for (uint64_t b = 0;
	     r == 0 && b < nblocks && (b = swapmap_next_writing(d->swapmap, b)) < nblocks; b++) {
		struct jr_swap_write jw = { b, 0 };

		r = journal_put(j, JR_SWAP_WRITE, &jw, sizeof(jw), NULL, 0);
	}

	for (struct target *t = d->targets; t && r == 0; t = t->next)
		if (t->persist.journaled && !t->dead)
			r = journal_put_target(j, t);
	for (struct target *t = d->targets; t && r == 0; t = t->next) {
		struct journal_walk w = { j, t->persist.key };

		if (!t->persist.journaled || t->dead)
			continue;
		r = idx_walk(t->idx, 0, IDX_PGNO_MAX, journal_put_page, &w);
		if (r == 0 && t->evict.batch)
			r = journal_put_batch(j, t, t->evict.batch, journal_batch_flags(t->evict.batch));
		if (r == 0 && t->evict.batch && t->evict.batch->dropped) {
			struct jr_batch_end je = { t->persist.key, t->evict.batch->id };

			r = journal_put(j, JR_BATCH_DONE, &je, sizeof(je), NULL, 0);
		}
	}
	return r;
}

static void journal_fill_header(struct daemon *d, struct journal *j)
{
	struct jr_header *h = (struct jr_header *)j->base;

	memcpy(h->magic, JOURNAL_MAGIC, sizeof(h->magic));
	h->version = JOURNAL_VERSION;
	h->page_size = ZS_PAGE_SIZE;
	h->gen = j->gen;
	h->handles_gen = d->persist.handles_gen;
	h->evict_batch_pages = d->cfg.agent.evict_batch_pages;
	snprintf(h->compressor, sizeof(h->compressor), "%s", comp_name(d->cfg.pool.compressor));
	if (d->recomp.comp)
		snprintf(h->recompressor, sizeof(h->recompressor), "%s",
			 comp_name((enum comp_alg)d->cfg.pool.recompressor));
	if (d->wb) {
		memcpy(h->swap_file, d->cfg.swap.swap_file, sizeof(h->swap_file));
		h->swap_file_size = d->cfg.swap.swap_file_size;
	}
	memcpy(h->socket, d->cfg.socket, sizeof(h->socket));
	h->recoveries = d->st.crash_recoveries;
	h->restarts = d->st.restarts;
}

/* A new journal of generation gen, the checkpoint written, complete. */
static int journal_write(struct daemon *d, uint64_t gen, struct journal **ret)
{
	struct journal *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->gen = gen;
	j->mapped = JOURNAL_FIRST_BYTES;
	j->fd = memfd_create("zswapd-journal", MFD_CLOEXEC);
	if (j->fd < 0) {
		r = -errno;
		goto fail;
	}
	if (ftruncate(j->fd, (off_t)j->mapped) < 0) {
		r = -errno;
		goto fail;
	}
	j->base = mmap(NULL, j->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
	if (j->base == MAP_FAILED) {
		j->base = NULL;
		r = -errno;
		goto fail;
	}
	journal_fill_header(d, j);
	j->tail = ZS_PAGE_SIZE;
	r = journal_checkpoint(d, j);
	if (r < 0)
		goto fail;
	j->checkpoint_end = j->tail;
	__atomic_store_n(&((struct jr_header *)j->base)->complete, 1, __ATOMIC_RELEASE);
	*ret = j;
	return 0;
fail:
	journal_free(j);
	return r;
}

/* Writes generation gen and puts it in the store; the old one goes once it is there. */
static int journal_replace(struct daemon *d, uint64_t gen)
{
	struct journal *j = NULL;
	char name[32];
	int r;

	r = journal_write(d, gen, &j);
	if (r < 0)
		return r;
	journal_name(gen, name, sizeof(name));
	r = fdstore_put(d, name, j->fd);
	if (r < 0) {
		journal_free(j);
		return r;
	}
	if (d->persist.journal) {
		journal_name(d->persist.journal->gen, name, sizeof(name));
		fdstore_drop(d, name);
		journal_free(d->persist.journal);
	}
	d->persist.journal = j;
	return 0;
}

int journal_open(struct daemon *d, uint64_t gen)
{
	return journal_replace(d, gen);
}

void journal_close(struct daemon *d)
{
	char name[32];

	if (!d->persist.journal)
		return;
	journal_name(d->persist.journal->gen, name, sizeof(name));
	fdstore_drop(d, name);
	journal_free(d->persist.journal);
	d->persist.journal = NULL;
}

uint64_t journal_bytes(const struct daemon *d)
{
	return d->persist.journal ? d->persist.journal->tail : 0;
}

void journal_turn(struct daemon *d)
{
	struct journal *j = d->persist.journal;
	uint64_t start, appended;
	int r;

	if (!j)
		return;
	appended = j->tail - j->checkpoint_end;
	if (appended < JOURNAL_MIN_REWRITE || appended < 2 * j->checkpoint_end)
		return;
	start = now_usec();
	r = journal_replace(d, j->gen + 1);
	if (r < 0) {
		journal_lost(d, r);
		return;
	}
	d->st.journal_rewrites++;
	log_debug("journal rewritten: %llu KiB of appends into a %llu KiB checkpoint in %llu us",
		  (unsigned long long)(appended >> 10),
		  (unsigned long long)(d->persist.journal->checkpoint_end >> 10),
		  (unsigned long long)(now_usec() - start));
}

/* Puts what of t's descriptors is not in the store yet. */
static int journal_store_fds(struct target *t)
{
	int fds[JOURNAL_FD_N] = { t->uffd_w.fd, t->pidfd_w.fd, t->agent.staging_fd,
				  t->conn ? t->conn->w.fd : -1 };

	for (int i = 0; i < JOURNAL_FD_N; i++) {
		char name[48];
		int r;

		if (fds[i] < 0 || (t->persist.stored_fds & (1u << i)))
			continue;
		journal_fd_name(t->persist.key, (enum journal_fd)i, name, sizeof(name));
		r = fdstore_put(t->d, name, fds[i]);
		if (r < 0)
			return r;
		t->persist.stored_fds |= 1u << i;
	}
	return 0;
}

void journal_target(struct target *t)
{
	struct daemon *d = t->d;
	int r;

	if (!d->persist.journal || t->dead)
		return;
	/* Its descriptors first: a record naming what the store lacks is useless. */
	r = journal_store_fds(t);
	if (r < 0) {
		log_warning_errno(r, "pid %d: cannot keep its descriptors across a crash: %m",
				  (int)t->pid);
		return;
	}
	t->persist.journaled = true;
	r = journal_put_target(d->persist.journal, t);
	if (r < 0)
		journal_lost(d, r);
}

static void journal_drop_fd(struct target *t, enum journal_fd what)
{
	char name[48];

	if (!(t->persist.stored_fds & (1u << what)))
		return;
	journal_fd_name(t->persist.key, what, name, sizeof(name));
	fdstore_drop(t->d, name);
	t->persist.stored_fds &= ~(1u << what);
}

int journal_keep_target(struct target *t)
{
	int r;

	t->persist.stored_fds = 0; /* whatever a binary before us stored is gone (persist_close) */
	r = journal_store_fds(t);
	if (r == 0)
		t->persist.journaled = true;
	return r;
}

void journal_forget_target(struct target *t)
{
	t->persist.journaled = false;
	for (int i = 0; i < JOURNAL_FD_N; i++)
		journal_drop_fd(t, (enum journal_fd)i);
}

void journal_conn_gone(struct target *t)
{
	journal_drop_fd(t, JOURNAL_FD_CONN);
}

void journal_gone(struct target *t)
{
	if (t->persist.journaled) {
		journal_append(t->d, JR_GONE, &t->persist.key, sizeof(t->persist.key), NULL, 0);
		t->persist.journaled = false;
	}
	for (int i = 0; i < JOURNAL_FD_N; i++)
		journal_drop_fd(t, (enum journal_fd)i);
}

void journal_store(struct target *t, uint64_t addr, const struct entry *e)
{
	struct jr_store js = { .key = t->persist.key, .pgno = addr >> ZS_PAGE_SHIFT,
			       .ekey = (uint64_t)(uintptr_t)e };

	if (!t->persist.journaled)
		return;
	journal_pack_entry(e, &js.e);
	journal_append(t->d, JR_STORE, &js, sizeof(js), NULL, 0);
}

void journal_entry(struct daemon *d, const struct entry *e)
{
	struct jr_entry_rec je = { .ekey = (uint64_t)(uintptr_t)e };

	if (!d->persist.journal)
		return;
	journal_pack_entry(e, &je.e);
	journal_append(d, JR_ENTRY, &je, sizeof(je), NULL, 0);
}

void journal_unlink(struct target *t, uint64_t addr)
{
	struct jr_page jp = { t->persist.key, addr >> ZS_PAGE_SHIFT };

	if (t->persist.journaled)
		journal_append(t->d, JR_UNLINK, &jp, sizeof(jp), NULL, 0);
}

void journal_invalidate(struct target *t, uint64_t start, uint64_t end)
{
	struct jr_range jr = { t->persist.key, start >> ZS_PAGE_SHIFT,
			       (end + ZS_PAGE_SIZE - 1) >> ZS_PAGE_SHIFT };

	if (t->persist.journaled)
		journal_append(t->d, JR_INVALIDATE, &jr, sizeof(jr), NULL, 0);
}

void journal_remap(struct target *t, uint64_t from, uint64_t to, uint64_t len)
{
	struct jr_remap jr = { t->persist.key, from, to, len };

	if (t->persist.journaled)
		journal_append(t->d, JR_REMAP, &jr, sizeof(jr), NULL, 0);
}

void journal_fork(struct target *parent, struct target *child)
{
	struct jr_fork jf = { parent->persist.key, child->persist.key };
	int r;

	if (!parent->persist.journaled || !parent->d->persist.journal)
		return;
	/* The child's uffd is only ours until its shim claims it: into the
	 * store, unless journal_fork_early() put it there, after the record
	 * (as there). */
	journal_append(parent->d, JR_FORK, &jf, sizeof(jf), NULL, 0);
	r = journal_store_fds(child);
	if (r < 0) {
		log_warning_errno(r, "pid %d: cannot keep a forked child's uffd across a crash: %m",
				  (int)parent->pid);
		return;
	}
	child->persist.journaled = true;
}

void journal_fork_early(struct target *parent, struct uffd_msg *msg)
{
	struct daemon *d = parent->d;
	struct jr_fork jf = { parent->persist.key, 0 };
	char name[48];

	msg->arg.reserved.reserved2 = 0;
	if (!parent->persist.journaled || !d->persist.journal)
		return;
	/*
	 * The record before the uffd, against the rule of "descriptors
	 * first": killed in between, the next zswapd finds a child with no
	 * uffd and lets it go, and the child, whose uffd went with us, ends
	 * loudly as its registration fails.  The other way round, it would
	 * find a uffd no record names and drop it, after the child had found
	 * its registrations standing and gone on: it would read zeros.
	 */
	jf.child = ++d->persist.next_key;
	journal_append(d, JR_FORK, &jf, sizeof(jf), NULL, 0);
	journal_fd_name(jf.child, JOURNAL_FD_UFFD, name, sizeof(name));
	if (fdstore_put(d, name, (int)msg->arg.fork.ufd) < 0)
		return;
	msg->arg.reserved.reserved2 = jf.child;
}

void journal_fork_claim(struct target *child, const struct uffd_msg *msg)
{
	uint64_t key = msg->arg.reserved.reserved2;

	if (!key)
		return;
	child->persist.key = key;
	child->persist.stored_fds |= 1u << JOURNAL_FD_UFFD;
	child->persist.journaled = true;
}

void journal_batch(struct target *t, const struct batch *b, uint32_t flags)
{
	int r;

	if (!t->persist.journaled || !t->d->persist.journal)
		return;
	r = journal_put_batch(t->d->persist.journal, t, b, flags);
	if (r < 0)
		journal_lost(t->d, r);
}

void journal_batch_done(struct target *t, const struct batch *b)
{
	struct jr_batch_end je = { t->persist.key, b->id };

	if (t->persist.journaled)
		journal_append(t->d, JR_BATCH_DONE, &je, sizeof(je), NULL, 0);
}

void journal_batch_end(struct target *t, const struct batch *b)
{
	struct jr_batch_end je = { t->persist.key, b->id };

	if (t->persist.journaled)
		journal_append(t->d, JR_BATCH_END, &je, sizeof(je), NULL, 0);
}

void journal_handed_over(struct daemon *d)
{
	uint64_t pid = (uint64_t)getpid();

	journal_append(d, JR_HANDED_OVER, &pid, sizeof(pid), NULL, 0);
}

void journal_swap_write(struct daemon *d, uint64_t block, bool done)
{
	struct jr_swap_write jw = { block, done };

	journal_append(d, JR_SWAP_WRITE, &jw, sizeof(jw), NULL, 0);
}
