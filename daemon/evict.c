// SPDX-License-Identifier: GPL-2.0-only
/*
 * evict.c - moving pages out of a process without losing a write (hazard 1,
 * docs/design.md).
 *
 * The daemon cannot drop a page of another process (process_madvise says
 * EINVAL to MADV_DONTNEED, UFFDIO_MOVE works only inside the mm), and it
 * must never read a page that may be missing in a registered range through
 * process_vm_readv (its own read would wait for a fault only it can serve).
 * So eviction is a round trip with the agent thread inside the target, made
 * atomic against the app's writes by UFFDIO_MOVE where the agent has it:
 *
 *   1. pick present pages (vmscan), register their 2 MiB chunks (MISSING|WP);
 *   2. ZS_EVICT with ZS_EVICT_MOVE_FIRST: the agent moves each run into its
 *      scratch area (one ioctl a run, no event): a write of the app lands
 *      before, in the page moved, or after, in a missing fault we hold; then
 *      copies what it moved into the shared staging memfd, slot by slot
 *      marked copied (ZS_STAGING_COPIED);
 *   3. ZS_EVICT_DONE: compress from staging into entries and index them, a
 *      slice of pages per loop turn (faults are served in between), put
 *      back the pages that were refused (UFFDIO_COPY from staging); the
 *      faults held meanwhile are served the entries they missed.
 *
 * Its first batch, before the agent has a scratch area, and every batch on
 * kernels without UFFDIO_MOVE (agent_move = no) is locked by the
 * write-protect bit instead: we UFFDIO_WRITEPROTECT the runs, so a writer
 * waits in a WP fault we leave pending; the agent copies them (with
 * process_vm_readv on itself: a vanished range is EFAULT, not SIGSEGV),
 * then drops them (UFFDIO_MOVE, or MADV_DONTNEED); the commit lifts the
 * protection, which wakes the writers.  Each protect is a TLB flush per
 * run, on top of the move's own: move-first halves them, and spares the
 * daemon's loop a turn write-protecting the next batch.
 *
 * What the app may do to the pages while they are in flight, and how each
 * case is kept exact, is evict_flight.c's; which pages go, evict_pick.c's.
 * A batch reports what it did in the target's tallies (stores,
 * stored_bytes, refused): the reclaim that asked reads them, and no batch
 * holds a pointer to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"
#include "users.h"
#include "vmscan.h"
#include "persist/journal.h"

#define EVICT_COMMIT_SLICE 8	     /* pages committed per loop turn: ~60 us, a fault's wait at most */

static void evict_batch_free(struct batch *b)
{
	if (!b)
		return;
	free(b->runs);
	free(b->dead);
	free(b->restored);
	free(b->writer);
	free(b->deferred);
	free(b->dropped);
	free(b->committed);
	free(b->remaps);
	for (uint32_t i = 0; b->saved && i < b->npages; i++)
		free(b->saved[i]);
	free(b->saved);
	free(b);
}


static int evict_send(struct target *t, struct batch *b)
{
	size_t len = sizeof(struct zs_evict) + b->nruns * sizeof(struct zs_run);
	struct zs_evict *msg;
	int r;

	msg = calloc(1, len);
	if (!msg)
		return -ENOMEM;
	msg->batch = b->id;
	msg->nruns = b->nruns;
	msg->flags = (b->move_first ? ZS_EVICT_MOVE_FIRST : 0) | (b->no_unshare ? ZS_EVICT_NO_UNSHARE : 0);
	for (uint32_t i = 0; i < b->nruns; i++) {
		msg->runs[i].addr = b->runs[i].addr;
		msg->runs[i].npages = b->runs[i].npages;
		msg->runs[i].staging_slot = b->runs[i].slot;
	}
	r = proto_send(t->conn->w.fd, ZS_EVICT, 0, msg, len, NULL, 0);
	free(msg);
	return r;
}

/*
 * A batch for the runs of a pick, its lock chosen: move-first once the
 * agent has a scratch area (and agent_move_first says so), write-protect
 * otherwise.  NULL: out of memory.
 */
static struct batch *evict_batch_alloc(struct target *t, size_t nruns)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->runs = calloc(nruns, sizeof(*b->runs));
	b->dead = calloc(t->agent.staging_pages, 1);
	b->restored = calloc(t->agent.staging_pages, 1);
	b->committed = calloc(t->agent.staging_pages, 1);
	b->writer = calloc(t->agent.staging_pages, 1);
	if (!b->runs || !b->dead || !b->restored || !b->committed || !b->writer) {
		evict_batch_free(b);
		return NULL;
	}
	b->started_usec = now_usec();
	return b;
}

static struct batch *evict_batch_new(struct target *t, size_t nruns)
{
	struct batch *b = evict_batch_alloc(t, nruns);

	if (!b)
		return NULL;
	b->id = ++t->d->next_batch_id;
	b->move_first = t->d->cfg.agent.agent_move_first && target_scratch(t, NULL) != 0;
	if (b->move_first) {
		/* Before the check below that the pages are this process's
		 * alone: a fork begun after it may share them (the agent then
		 * unshares none), one under way may too. */
		volatile uint32_t *gate = ZS_STAGING_FORK_GATE(t->agent.staging, t->agent.staging_pages);

		__atomic_store_n(&gate[3], __atomic_load_n(&gate[2], __ATOMIC_SEQ_CST),
				 __ATOMIC_SEQ_CST);
		b->no_unshare = __atomic_load_n(&gate[0], __ATOMIC_SEQ_CST) != 0;
	}
	return b;
}

/* Registers a run's chunks and, in a write-protected batch, protects the run. */
static int evict_lock_run(struct target *t, const struct batch *b, const struct vmscan_run *run)
{
	uint64_t len = (uint64_t)run->npages << ZS_PAGE_SHIFT;
	int r;

	r = target_register(t, run->reg_start, run->reg_end);
	if (r == 0 && !b->move_first)
		r = uffd_writeprotect(t->uffd_w.fd, run->addr, len, true);
	if (r == -ENOENT && t->layout.nregistered) {
		/* unregistered without an event we know of: register again */
		t->layout.nregistered = 0;
		r = target_register(t, run->reg_start, run->reg_end);
		if (r == 0 && !b->move_first)
			r = uffd_writeprotect(t->uffd_w.fd, run->addr, len, true);
	}
	return r;
}

/*
 * Readies one picked run for the agent, its pages from staging slot on.
 * Returns how many of its pages the batch keeps (0: none, skip the run),
 * or -ESRCH: the process is gone.
 */
static int evict_prepare_run(struct target *t, struct batch *b, const struct vmscan_run *run,
			     uint32_t slot)
{
	uint64_t len = (uint64_t)run->npages << ZS_PAGE_SHIFT;
	uint32_t kept;
	int r;

	r = evict_lock_run(t, b, run);
	if (r < 0) {
		/* The mapping changed under us (munmap, mprotect): skip the run. */
		log_debug_errno(r, "pid %d: cannot protect %#llx+%llu: %m", (int)t->pid,
				(unsigned long long)run->addr, (unsigned long long)len);
		return r == -ESRCH ? r : 0;
	}
	if (!b->move_first) {
		evict_note_pending_lifts(t, b, run->addr, run->npages, slot);
		target_unprotect_cancel(t, run->addr, len);
	}
	/* The pick is a few loop turns old, and the app ran meanwhile: a
	 * page it discarded before we registered its range left no REMOVE
	 * event, and the agent would fault on it.  Now that the run is
	 * protected and registered (a later discard is an event), keep it
	 * up to its first page that is no longer evictable. */
	kept = vmscan_evictable_prefix(t->evict.pick->pagemap_fd, run->addr, run->npages);
	if (kept < run->npages && !b->move_first)
		target_unprotect(t, run->addr + ((uint64_t)kept << ZS_PAGE_SHIFT),
				 (uint64_t)(run->npages - kept) << ZS_PAGE_SHIFT);
	for (uint32_t k = kept; k < run->npages; k++)
		if (b->writer[slot + k] == BATCH_WRITER_WAITING) {
			b->writer[slot + k] = BATCH_WRITER_NONE; /* the next run's slot */
			b->nwriters_waiting--;
		}
	return (int)kept;
}

/* Clears the staging flags and sends the batch: in flight, or on failure not at all. */
static int evict_launch(struct target *t, struct batch *b)
{
	int r;

	memset((void *)ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages), 0, t->agent.staging_pages);
	memset((void *)ZS_STAGING_DROPS(t->agent.staging, t->agent.staging_pages), 0,
	       t->agent.staging_pages * sizeof(uint16_t));
	memset((void *)ZS_STAGING_COPIED(t->agent.staging, t->agent.staging_pages), 0,
	       ZS_STAGING_MAX_SLOTS / 8);
	t->evict.batch = b;
	/* Recorded before the agent can take a page: a zswapd that dies
	 * with the batch out finds its pages to put back (recover.c). */
	journal_batch(t, b, (b->move_first ? ZS_EVICT_MOVE_FIRST : 0) |
				    (b->no_unshare ? ZS_EVICT_NO_UNSHARE : 0));
	r = evict_send(t, b);
	if (r < 0) {
		journal_batch_end(t, b);
		t->evict.batch = NULL;
		for (uint32_t i = 0; i < b->nruns && !b->move_first; i++)
			target_unprotect(t, b->runs[i].addr,
					 (uint64_t)b->runs[i].npages << ZS_PAGE_SHIFT);
		return r;
	}
	t->d->st.evict_batches++;
	if (b->move_first)
		t->d->st.evict_move_first_batches++;
	if (log_get_level() >= LOG_LVL_DEBUG)
		for (uint32_t i = 0; i < b->nruns; i++)
			log_debug("pid %d: batch %llu run %#llx +%u", (int)t->pid,
				  (unsigned long long)b->id, (unsigned long long)b->runs[i].addr,
				  b->runs[i].npages);
	return 0;
}

/*
 * Starts one batch on t: pick (over several loop turns), then ready each
 * run, then send.  Returns 1 if a batch is now in flight, 0 if there was
 * nothing to evict, EVICT_PICKING if the pick needs more loop turns (call
 * again), -errno on failure.
 */
int evict_begin(struct target *t)
{
	struct vmscan_run *runs;
	struct vmscan_result res;
	struct batch *b = NULL;
	uint32_t slot = 0, dups;
	int r;

	if (t->evict.batch || !t->conn || !t->agent.tid || t->dead || t->d->stop.active)
		return -EBUSY;
	if (!users_pool_ok(t->d, t->uid))
		return 0; /* its user's share of the pool is full: nothing more to take */
	r = evict_pick(t);
	if (r <= 0) {
		if (r < 0)
			evict_pick_free(t);
		return r < 0 ? r : EVICT_PICKING;
	}
	runs = t->evict.pick->runs;
	res = t->evict.pick->res;
	dups = vmscan_runs_dedup(runs, &res.nruns);
	if (dups) {
		/* The log pass took a page this pick's sweep took too (see
		 * evict_pick_log): once only, and say so, as it is rare. */
		log_warning("pid %d: %u pages picked twice for one batch, taken once", (int)t->pid,
			    dups);
		res.npages -= dups;
	}
	log_debug("pid %d: picked %u pages in %zu runs in %llu us", (int)t->pid, res.npages,
		  res.nruns, (unsigned long long)(now_usec() - t->evict.pick->started_usec));
	if (res.npages == 0)
		goto out;

	r = -ENOMEM;
	b = evict_batch_new(t, res.nruns);
	if (!b)
		goto out;
	for (size_t i = 0; i < res.nruns; i++) {
		r = evict_prepare_run(t, b, &runs[i], slot);
		if (r == -ESRCH)
			goto out;
		if (r == 0)
			continue;
		b->runs[b->nruns++] = (struct batch_run){
			.addr = runs[i].addr,
			.npages = (uint32_t)r,
			.slot = slot,
		};
		slot += (uint32_t)r;
	}
	b->npages = slot;
	r = 0;
	if (b->nruns == 0)
		goto out;
	/* The pages were picked from /proc/PID by pid: alive now, the mm was
	 * ours all along, not that of a program the process exec'd since. */
	if (!target_mm_alive(t)) {
		target_kill(t, "exec'd");
		r = -ESRCH;
		goto out;
	}
	r = evict_launch(t, b);
	if (r < 0)
		goto out;
	b = NULL;
	r = 1;
out:
	evict_batch_free(b);
	evict_pick_free(t);
	return r;
}

/*
 * Puts one page back into t at addr; if the kernel says not now (EAGAIN: an
 * madvise or mremap of the app is under way), keep it as a raw entry that
 * the next fault maps.  Returns what UFFDIO_COPY said, or the fallback's.
 */
static int evict_put_back(struct target *t, uint64_t addr, const void *page, bool recovered)
{
	struct entry *e;
	int r;

	/* A batch a dead zswapd sent: a page the app discarded since has no
	 * marker left (hazard 8): zeros are its content now, not this. */
	if (recovered && t->pid && proc_page_owed(t->pid, addr) == 0)
		return 0;
	r = target_fill_checked(t, addr, uffd_copy(t->uffd_w.fd, addr, page, false));

	if (r == -EEXIST)
		return 0; /* mapped meanwhile: nothing to put back */
	if (r != -EAGAIN && r != -ENOMEM)
		return r;
	r = entry_store_raw(t->d, page, &e);
	if (r == 0) {
		r = target_insert(t, addr, e);
		if (r < 0)
			entry_put(t->d, e);
		else
			journal_store(t, addr, e);
	}
	return r;
}

/*
 * Puts a page back into the children forked while the batch was in flight:
 * one forked after the agent dropped it lacks it too (EEXIST, harmless,
 * where the child has it).
 */
static void evict_put_back_children(struct batch *b, uint64_t addr, const void *page)
{
	for (uint32_t f = 0; f < b->nforks; f++)
		if (!b->forks[f]->dead)
			evict_put_back(b->forks[f], addr, page, b->recovered);
}

/* Puts a refused page back where it was, in the target and in children forked meanwhile. */
static void evict_refuse(struct target *t, struct batch *b, uint64_t addr, const void *page)
{
	int r = evict_put_back(t, addr, page, b->recovered);

	if (r == -ESRCH) {
		target_kill(t, "mm gone"); /* exited meanwhile: nothing to put back */
	} else if (r < 0) {
		t->d->st.uffd_errors++;
		log_error_errno(r, "pid %d: cannot put back refused page %#llx: %m", (int)t->pid,
				(unsigned long long)addr);
	}
	evict_put_back_children(b, addr, page);
}

/* Stores one dropped page: into the index of t and of children forked meanwhile. */
static int evict_commit_page(struct target *t, struct batch *b, uint64_t addr, const void *page)
{
	struct entry *e;
	int r;

	r = entry_store(t->d, page, &e);
	if (r < 0)
		return r;
	e->stored_at = (uint32_t)t->counts.stores;
	/* An agent that does not mark what it takes out (a shim from before
	 * markers): marked here, before the journal says the page is out. */
	if (target_marks(t) && !target_agent_marks(t)) {
		uffd_writeprotect(t->uffd_w.fd, addr, ZS_PAGE_SIZE, true);
		for (uint32_t f = 0; f < b->nforks; f++)
			if (!b->forks[f]->dead)
				uffd_writeprotect(b->forks[f]->uffd_w.fd, addr, ZS_PAGE_SIZE, true);
	}
	for (uint32_t f = 0; f < b->nforks; f++) {
		struct target *child = b->forks[f];

		if (child->dead)
			continue;
		entry_get(e);
		if (target_insert(child, addr, e) < 0) {
			entry_put(t->d, e);
			evict_put_back(child, addr, page, false);
		} else {
			journal_store(child, addr, e);
		}
	}
	r = target_insert(t, addr, e);
	if (r < 0) {
		entry_put(t->d, e);
		return r;
	}
	journal_store(t, addr, e);
	t->counts.stores++;
	t->counts.stored_bytes += e->len;
	return 0;
}

/* A target is going away: no batch of a parent may still name it. */
void evict_forget_child(struct daemon *d, struct target *child)
{
	for (struct target *t = d->targets; t; t = t->next) {
		struct batch *b = t->evict.batch;

		for (uint32_t f = 0; b && f < b->nforks; f++)
			if (b->forks[f] == child)
				b->forks[f] = b->forks[--b->nforks];
	}
	child->evict.batch_parent = NULL;
}

/*
 * The agent took pages UFFDIO_MOVE had reported not moved (agent.c,
 * agent_slot_filled): counted, and said once per process, since a kernel
 * that does this would lose those pages under any agent that believed it.
 */
static void evict_note_mismoves(struct target *t, const struct batch *b)
{
	uint64_t now = __atomic_load_n(ZS_STAGING_MISMOVES(t->agent.staging, t->agent.staging_pages),
				       __ATOMIC_RELAXED);
	uint64_t seen = t->agent.mismoves_seen;

	if (now == seen)
		return;
	/* The agent writes the word: at most one per page of the batch counts. */
	if (now < seen || now - seen > b->npages) {
		log_warning("pid %d: its agent says %llu misreported moves after %llu, in a batch "
			    "of %u pages; counting none", (int)t->pid, (unsigned long long)now,
			    (unsigned long long)seen, b->npages);
		t->agent.mismoves_seen = now;
		return;
	}
	if (!seen)
		log_warning("pid %d: UFFDIO_MOVE reported a page not moved that it had moved; "
			    "the agent took it as moved (agent_move_misreports)", (int)t->pid);
	t->d->st.agent_move_misreports += now - seen;
	t->agent.mismoves_seen = now;
}

/*
 * Lifts a write-protected batch's protection from what the app still has.
 * A page taken out carries the agent's marker (hazard 8), which a lift
 * would clear: where the index holds an entry, the range stops.
 */
static void evict_unprotect_run(struct target *t, const struct batch_run *run)
{
	uint64_t start = run->addr, end = run->addr + ((uint64_t)run->npages << ZS_PAGE_SHIFT);

	if (!t->d->persist.journal) {
		target_unprotect(t, start, end - start);
		return;
	}
	/* Writers that waited on a page taken out since fault again, and wait for its load. */
	uffd_wake(t->uffd_w.fd, start, end - start);
	for (uint64_t a = start; a < end; a += ZS_PAGE_SIZE) {
		if (!idx_lookup(t->idx, a >> ZS_PAGE_SHIFT))
			continue;
		if (a > start)
			target_unprotect(t, start, a - start);
		start = a + ZS_PAGE_SIZE;
	}
	if (end > start)
		target_unprotect(t, start, end - start);
}

static void evict_finish(struct target *t, struct batch *b)
{
	journal_batch_end(t, b);
	evict_note_mismoves(t, b);
	for (uint32_t f = 0; f < b->nforks; f++)
		b->forks[f]->evict.batch_parent = NULL;
	for (uint32_t i = 0; i < b->nruns && !b->move_first; i++)
		evict_unprotect_run(t, &b->runs[i]);
	t->evict.batch = NULL;
	for (uint32_t i = 0; i < b->ndeferred && !t->dead; i++) {
		const struct uffd_msg *m = &b->deferred[i];
		uint64_t addr = m->arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1);

		if (load_serve(t, addr, m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) == -EAGAIN)
			uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		target_note_stall(t, m);
	}
	evict_batch_free(b);
}

/* One page the agent dropped: stored, or put back if it cannot be. */
static void evict_commit_one(struct target *t, struct batch *b, const struct batch_run *run,
			     uint32_t k)
{
	uint32_t slot = run->slot + k;
	const uint8_t *page = t->agent.staging + ((size_t)slot << ZS_PAGE_SHIFT);
	uint64_t addr = evict_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));
	int r;

	b->committed[slot] = 1;
	if (b->restored[slot] && !b->dead[slot]) {
		/* resident again here, but maybe not in a child */
		evict_put_back_children(b, addr, page);
		return;
	}
	if (b->writer[slot] == BATCH_WRITER_LET_THROUGH && !b->dead[slot]) {
		bool kept = proc_page_present(t->pid, addr) == 1;

		log_debug("pid %d: batch %llu: %#llx written while stalled: %s", (int)t->pid,
			  (unsigned long long)b->id, (unsigned long long)addr,
			  kept ? "the app has it" : "moved out before, committed");
		if (kept) {
			/* The app's, with the write: children forked while it
			 * was out get it as it was (it is out only in rare timing). */
			evict_put_back_children(b, addr, page);
			return;
		}
	}
	if (b->dead[slot] || (ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[slot] &&
			      b->writer[slot] != BATCH_WRITER_LET_THROUGH))
		return; /* discarded by the app (zeros), or never dropped */
	if (b->move_first && !evict_slot_copied(t, slot)) {
		/* The agent copies every page it moves and vetoes every other:
		 * this one it did neither.  Its staging slot is stale; the page
		 * is where the app has it, or was lost in the agent. */
		t->d->st.evict_errors++;
		log_error("pid %d: batch %llu: agent left %#llx neither copied nor vetoed", (int)t->pid,
			  (unsigned long long)b->id, (unsigned long long)addr);
		return;
	}
	r = b->remap_overflow ? -EOVERFLOW : evict_commit_page(t, b, addr, page);
	if (r < 0) {
		if (r == -E2BIG)
			target_note_poor(t, addr);
		t->counts.refused++;
		evict_refuse(t, b, addr, page);
	}
}

/*
 * Commits up to EVICT_COMMIT_SLICE pages, then lets the loop serve faults:
 * compressing a whole batch at once would make every fault that came
 * meanwhile wait for all of it (docs/benchmarks.md, "Commit slices").
 * Until the batch is finished its pages stay in flight: the app's
 * discards, mremaps and forks are applied to the pages not committed yet
 * as before, and those committed are in the index, which follows them like
 * any entry.
 */
static void evict_commit_some(struct target *t)
{
	struct batch *b = t->evict.batch;
	uint32_t budget = EVICT_COMMIT_SLICE;

	for (; b->commit_run < b->nruns; b->commit_run++, b->commit_page = 0) {
		const struct batch_run *run = &b->runs[b->commit_run];
		int32_t dropped = b->dropped[b->commit_run];

		if (dropped < 0 || (uint32_t)dropped > run->npages) {
			t->d->st.evict_errors++;
			log_debug("pid %d: agent could not evict %#llx: %s", (int)t->pid,
				  (unsigned long long)run->addr, strerror(dropped < 0 ? -dropped : EINVAL));
			continue;
		}
		for (; b->commit_page < (uint32_t)dropped; b->commit_page++) {
			if (budget-- == 0)
				return;
			evict_commit_one(t, b, run, b->commit_page);
		}
	}
	log_debug("pid %d: batch %llu: %u pages in %u runs, in flight %llu us", (int)t->pid,
		  (unsigned long long)b->id, b->npages, b->nruns,
		  (unsigned long long)(now_usec() - b->started_usec));
	evict_finish(t, b);
}

int evict_done(struct target *t, const struct zs_evict_done *done)
{
	struct batch *b = t->evict.batch;

	if (!b || b->dropped || done->batch != b->id || done->nruns != b->nruns)
		return -EBADMSG;
	b->dropped = malloc(b->nruns * sizeof(*b->dropped));
	if (!b->dropped)
		return -ENOMEM;
	memcpy(b->dropped, done->result, b->nruns * sizeof(*b->dropped));
	journal_batch_done(t, b);
	if (b->recovered) {
		log_debug("pid %d: batch %llu of the zswapd that died answered after %llu ms",
			  (int)t->pid, (unsigned long long)b->id,
			  (unsigned long long)((now_usec() - b->started_usec) / 1000));
		evict_abort(t); /* the agent is done: every page it took goes back */
		return 0;
	}
	if (done->flags & ZS_DONE_ON_APP_CPU)
		t->d->st.evict_local_batches++;
	evict_commit_some(t);
	return 0;
}

/* The agent is done with t's batch, and the commit is under way. */
static bool evict_target_committing(const struct target *t)
{
	return !t->dead && t->evict.batch && t->evict.batch->dropped;
}

bool evict_committing(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (evict_target_committing(t))
			return true;
	return false;
}

/* A batch of the zswapd that died whose agent never answers: stopped, or its answer died with it. */
static void evict_recovered_timeout(struct target *t)
{
	struct batch *b = t->evict.batch;

	if (!b || !b->recovered || b->dropped || t->dead ||
	    now_usec() - b->started_usec < EVICT_RECOVER_WAIT_USEC)
		return;
	log_warning("pid %d: batch %llu of the zswapd that died: no answer from the agent in %llu s, "
		    "put back", (int)t->pid, (unsigned long long)b->id,
		    (unsigned long long)(EVICT_RECOVER_WAIT_USEC / 1000000));
	evict_abort(t);
}

void evict_commit_turn(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next) {
		if (evict_target_committing(t))
			evict_commit_some(t);
		evict_recovered_timeout(t);
	}
}

/*
 * The agent went away with a batch in flight, so we do not know what it
 * dropped.  Whatever it dropped it had copied to staging first, or in a
 * move-first batch is in staging or its scratch (evict_slot_page), so put
 * every page of the batch back from there: UFFDIO_COPY fails with EEXIST
 * (and changes nothing) where the page is still mapped.  Pages the app
 * discarded meanwhile stay discarded.  On a dead mm every copy fails with
 * ESRCH, and the scratch reads find nothing.
 */
void evict_abort(struct target *t)
{
	struct batch *b = t->evict.batch;

	if (!b)
		return;
	/* An agent only stopped (a debugger; the drain gives up on it after
	 * DRAIN_BATCH_TIMEOUT_USEC) would go on with the batch once resumed
	 * and take out the pages put back here, with whatever the app wrote
	 * to them since: every page vetoed, it leaves them, or moves them
	 * back (agent.c).  A MADV_DONTNEED agent checks only before a drop. */
	for (uint32_t i = 0; i < t->agent.staging_pages; i++)
		__atomic_store_n((uint8_t *)&ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[i], 1,
				 __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < b->nruns; i++) {
		struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++) {
			uint32_t slot = run->slot + k;
			uint64_t addr = evict_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));
			uint8_t buf[ZS_PAGE_SIZE];
			const uint8_t *page;
			int err = 0;

			if (b->dead[slot] || b->committed[slot])
				continue; /* discarded, or the commit has dealt with it */
			page = evict_slot_page(t, slot, buf, &err);
			if (!page) {
				if (err != -ENOENT) /* never moved: the app has it */
					log_error("pid %d: batch %llu: cannot read %#llx back from the "
						  "agent's scratch", (int)t->pid,
						  (unsigned long long)b->id, (unsigned long long)addr);
				continue;
			}
			if (!t->dead)
				evict_put_back(t, addr, page, b->recovered);
			evict_put_back_children(b, addr, page);
		}
	}
	evict_finish(t, b);
}


int evict_recover(struct target *t, const struct evict_recovered *rb)
{
	struct batch *b;

	if (!t->agent.staging || !rb->nruns || rb->nforks > BATCH_MAX_FORKS)
		return -EPROTO;
	for (uint32_t i = 0; i < rb->nruns; i++)
		if (!rb->runs[i].npages || rb->runs[i].slot > t->agent.staging_pages ||
		    rb->runs[i].npages > t->agent.staging_pages - rb->runs[i].slot)
			return -EPROTO;
	b = evict_batch_alloc(t, rb->nruns);
	if (!b)
		return -ENOMEM;
	/* As the dead zswapd sent it: the fork gate's words are the agent's
	 * and its, and stay as they are. */
	b->id = rb->id;
	b->move_first = rb->flags & ZS_EVICT_MOVE_FIRST;
	b->no_unshare = rb->flags & ZS_EVICT_NO_UNSHARE;
	b->recovered = true;
	b->nruns = rb->nruns;
	memcpy(b->runs, rb->runs, rb->nruns * sizeof(*b->runs));
	for (uint32_t i = 0; i < rb->nruns; i++) {
		const struct batch_run *run = &b->runs[i];

		b->npages += run->npages;
		/* Committed before it died: in the index, and not to put back. */
		for (uint32_t k = 0; k < run->npages; k++)
			if (idx_lookup(t->idx, (run->addr >> ZS_PAGE_SHIFT) + k))
				b->committed[run->slot + k] = 1;
	}
	for (uint32_t f = 0; f < rb->nforks; f++) {
		b->forks[b->nforks++] = rb->forks[f];
		rb->forks[f]->evict.batch_parent = t;
	}
	t->evict.batch = b;
	/* The agent, if still at it, takes no more and moves back what it takes. */
	for (uint32_t i = 0; i < t->agent.staging_pages; i++)
		__atomic_store_n((uint8_t *)&ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[i], 1,
				 __ATOMIC_SEQ_CST);
	if (rb->done)
		evict_abort(t);
	return 0;
}
