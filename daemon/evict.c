// SPDX-License-Identifier: GPL-2.0-only
/*
 * evict.c - moving pages out of a process without losing a write (hazard 1).
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
 * protection, which wakes the writers.  Each protect was a TLB flush per
 * run, on top of the move's own: move-first halves them, and the daemon's
 * loop no longer spends a turn write-protecting the next batch.
 *
 * Meanwhile the app may do anything, and every case is kept exact:
 *  - a read of a dropped page is a missing fault: it waits for the commit
 *    (deferred), except the agent's own, which is served at once, and one
 *    on a page committed already, served from the index;
 *  - the agent's own MADV_DONTNEED reports REMOVE events: of its scratch
 *    area only, or where it has no UFFDIO_MOVE, of the ranges of runs it
 *    announced (ZS_STAGING_DROPS); not the app's discards;
 *  - the app's discard (REMOVE, UNMAP) of a page in flight marks it dead:
 *    it is not committed, so a later touch reads zeros as Linux promises;
 *  - mremap moves pages in flight: the commit indexes them where they went;
 *  - fork while in flight: the child gets the committed entries too, and
 *    the pages put back (restored, refused, aborted); until the commit its
 *    missing faults wait (a page its parent dropped has no entry yet); a
 *    fork() waits for the agent's copy of what it just moved (the fork
 *    gate, ZS_STAGING_FORK_GATE), so that no page is only in the parent's
 *    scratch, which the child does not get; evict_save_for_fork() reads
 *    any that are, for a fork that went around the gate (a raw syscall);
 *  - a batch whose agent is stopped (a debugger) serves reads from staging
 *    and lets writes through after FAULT_THROTTLE_USEC, rather than wait
 *    on the agent forever (evict_note_writer);
 *  - in a move-first batch, a page moved but not copied yet is read from
 *    the agent's scratch where it is needed before the commit (the agent's
 *    own fault on it, a stuck batch, an abort: evict_slot_page).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "comp.h"
#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "vmscan.h"

#define EVICT_MAX_RUNS 512
#define EVICT_VMAS_TTL_USEC 1000000   /* maps is read at most this often per target */
#define EVICT_SMAPS_TTL_USEC 10000000 /* smaps at most this long unread while maps is unchanged */
#define EVICT_PICK_CHUNK 4096	     /* pages of address space looked at per loop turn: ~0.1 ms */
#define EVICT_LOG_LOOKS 4	     /* log entries looked at per batch page, at most */
#define EVICT_COMMIT_SLICE 8	     /* pages committed per loop turn: ~60 us, a fault's wait at most */

static void batch_free(struct batch *b)
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

/* Where the page the batch found at addr is now, after the app's mremaps since. */
static uint64_t batch_translate(const struct batch *b, uint64_t addr)
{
	for (uint32_t i = 0; i < b->nremaps; i++) {
		const struct batch_remap *m = &b->remaps[i];

		if (addr >= m->from && addr < m->from + m->len)
			addr = m->to + (addr - m->from);
	}
	return addr;
}

/*
 * Where the batch found the page that is at addr now, undoing the app's
 * mremaps since, latest first; false if what is at addr now came after the
 * batch's page moved away (the place was vacated, then mapped again).
 */
static bool batch_untranslate(const struct batch *b, uint64_t *addr)
{
	for (uint32_t i = b->nremaps; i-- > 0;) {
		const struct batch_remap *m = &b->remaps[i];

		if (*addr >= m->to && *addr < m->to + m->len)
			*addr = m->from + (*addr - m->to);
		else if (*addr >= m->from && *addr < m->from + m->len)
			return false;
	}
	return true;
}

/*
 * Which run and staging slot hold the page now at addr, if it is in the
 * batch in flight.  A fault on a page the agent dropped, at the place an
 * mremap moved it to, must find it here: it has no entry before the commit.
 */
bool evict_in_flight(const struct target *t, uint64_t addr, uint32_t *ret_slot)
{
	const struct batch *b = t->batch;

	if (!b || !batch_untranslate(b, &addr))
		return false;
	for (uint32_t i = 0; i < b->nruns; i++) {
		const struct batch_run *run = &b->runs[i];

		if (addr >= run->addr && addr < run->addr + ((uint64_t)run->npages << ZS_PAGE_SHIFT)) {
			if (ret_slot)
				*ret_slot = run->slot + (uint32_t)((addr - run->addr) >> ZS_PAGE_SHIFT);
			return true;
		}
	}
	return false;
}

/*
 * A page the commit has dealt with is an evicted page like any other (or a
 * resident one again): faults on it are served from the index, not staging.
 */
bool evict_in_staging(const struct target *t, uint64_t addr, uint32_t *ret_slot)
{
	return evict_in_flight(t, addr, ret_slot) && !t->batch->committed[*ret_slot];
}

static bool evict_slot_copied(const struct target *t, uint32_t slot)
{
	const volatile uint64_t *copied = ZS_STAGING_COPIED(t->staging, t->staging_pages);

	return (__atomic_load_n(&copied[slot / 64], __ATOMIC_ACQUIRE) >> (slot % 64)) & 1;
}

/*
 * Reads slot's page from the agent's scratch into buf.  Through
 * /proc/PID/mem, which is the pid's mm of the moment: it counts only if our
 * target's mm is still alive after the read (an exec or an exit and a new
 * process under the pid would give another mm's bytes).  0, or -EIO: no
 * page there; -ESRCH: the mm is gone; another -errno: we could not tell
 * (out of file descriptors, of memory).
 */
static int evict_read_scratch(struct target *t, uint32_t slot, uint8_t *buf)
{
	uint64_t scratch = 0;
	int r;

	if (t->dead)
		return -ESRCH;
	if (!target_scratch(t, &scratch))
		return -EIO;
	r = proc_mem_read_page(t->pid, scratch + ((uint64_t)slot << ZS_PAGE_SHIFT), buf);
	if (r == -ENOENT)
		r = -ESRCH; /* no such pid */
	if (r == 0 && !target_mm_alive(t))
		r = -ESRCH;
	if (r == 0)
		t->d->st.evict_scratch_reads++;
	return r;
}

/*
 * The contents of slot's page before the commit: staging, or in a
 * move-first batch, for a page the agent moved and has not copied yet, its
 * scratch slot, read into buf.  The agent empties its scratch only once it
 * has copied every page of the batch, so a scratch read that finds nothing
 * (EIO, never a wait) means the copy is done: staging, after all; or that
 * the process is gone, and then a copy taken at a fork is all its children
 * have.  NULL if the page is in none, with *ret_err -ENOENT: it was never
 * moved (vetoed, or still to come), and is where the app has it; or
 * -EAGAIN: the scratch could not be read, ask again.
 */
static const uint8_t *evict_slot_page(struct target *t, uint32_t slot, uint8_t *buf, int *ret_err)
{
	struct batch *b = t->batch;
	const uint8_t *staged = t->staging + ((size_t)slot << ZS_PAGE_SHIFT);
	int r;

	if (!b->move_first || evict_slot_copied(t, slot))
		return staged;
	r = evict_read_scratch(t, slot, buf);
	if (r == 0)
		return buf;
	if (evict_slot_copied(t, slot))
		return staged;
	if (b->saved && b->saved[slot])
		return b->saved[slot];
	*ret_err = r == -EIO || r == -ESRCH ? -ENOENT : -EAGAIN;
	return NULL;
}

/*
 * Whether a REMOVE event is the agent's own drop rather than the app's
 * discard.  An agent that moves pages out (UFFDIO_MOVE) discards nothing but
 * its scratch area.  One that drops them with MADV_DONTNEED announces each
 * range first (ZS_STAGING_DROPS), within one registration chunk, so within
 * one mapping unless the app split it since: the kernel reports a drop one
 * event per mapping it spans, in order.  So each event must begin where the
 * announced range (what is left of it) begins, and end where it ends or,
 * short of that, at the end of a mapping.  The app's discard of the first
 * pages of a range, before the agent's drop there, ends elsewhere: it is
 * the app's, and the agent's event still matches.  If it ends at the end of
 * a mapping too, the two events are the same range, and which is taken for
 * which is the same.  An event may also begin past the announced start
 * where the app unmapped the pages between meanwhile.  (Where mappings are
 * is read from maps after the event: an app that changes them there again
 * before we read it can still fool this.)
 */
bool evict_consume_own_remove(struct target *t, uint64_t start, uint64_t end)
{
	struct batch *b = t->batch;
	uint64_t scratch_start = 0, scratch_len;

	if (!t->staging)
		return false;
	scratch_len = target_scratch(t, &scratch_start);
	if (scratch_len) {
		if (start < scratch_start || end > scratch_start + scratch_len)
			return false;
		/* The agent drops its scratch once per batch it moved pages in. */
		t->d->st.evict_moved_batches++;
		return true;
	}
	if (!b || end <= start)
		return false;
	for (uint32_t i = 0; i < b->nruns; i++) {
		const struct batch_run *run = &b->runs[i];
		uint64_t run_end = run->addr + ((uint64_t)run->npages << ZS_PAGE_SHIFT);
		volatile uint16_t *drops = ZS_STAGING_DROPS(t->staging, t->staging_pages);
		uint32_t slot, from, left, got;
		uint64_t vma_start, vma_end;

		if (start < run->addr || end > run_end)
			continue;
		slot = run->slot + (uint32_t)((start - run->addr) >> ZS_PAGE_SHIFT);
		got = (uint32_t)((end - start) >> ZS_PAGE_SHIFT);
		/* The announcement this event goes on: at its start, or before
		 * it across pages the app unmapped meanwhile, which the kernel's
		 * walk skips without an event. */
		for (from = slot; from > run->slot && !drops[from]; from--)
			;
		if (!drops[from] || from + drops[from] < slot + got)
			return false;
		if (from < slot &&
		    proc_vma_next(t->pid, run->addr + ((uint64_t)(from - run->slot) << ZS_PAGE_SHIFT),
				  &vma_start, &vma_end) == 0 &&
		    vma_start < start)
			return false; /* mapped in between: the agent's event starts there */
		left = drops[from] - (slot - from);
		if (got < left) {
			if (proc_vma_next(t->pid, end - 1, &vma_start, &vma_end) < 0 ||
			    vma_start > end - 1 || vma_end != end)
				return false;
			log_debug("pid %d: agent's drop at %#llx split at a mapping's end %#llx",
				  (int)t->pid, (unsigned long long)start, (unsigned long long)end);
			drops[slot + got] = (uint16_t)(left - got); /* the rest, next */
		}
		drops[from] = 0;
		return true;
	}
	return false;
}

/*
 * The app discarded [start, end): pages of the batch that are there now are
 * dead.  Where they are now, not where the batch found them: an mremap's
 * UNMAP event names the place it vacated, after the REMAP event that moved
 * them away from it (mremap_race lost every batch page it moved so).
 */
void evict_note_discard(struct target *t, uint64_t start, uint64_t end)
{
	struct batch *b = t->batch;

	if (!b)
		return;
	for (uint32_t i = 0; i < b->nruns; i++) {
		struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++) {
			uint64_t a = batch_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));

			if (a >= start && a < end)
				b->dead[run->slot + k] = 1;
		}
	}
}

struct remap_ctx {
	struct target *t;
	uint64_t from, to, len;
	struct entry **moved;
	uint64_t *pgnos;
	size_t n, cap;
};

static int remap_collect(uint64_t pgno, void *val, void *arg)
{
	struct remap_ctx *ctx = arg;

	if (ctx->n == ctx->cap) {
		size_t cap = ctx->cap ? ctx->cap * 2 : 256;
		struct entry **m = realloc(ctx->moved, cap * sizeof(*m));
		uint64_t *p;

		if (!m)
			return -ENOMEM;
		ctx->moved = m;
		p = realloc(ctx->pgnos, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ctx->pgnos = p;
		ctx->cap = cap;
	}
	ctx->moved[ctx->n] = val;
	ctx->pgnos[ctx->n] = pgno;
	ctx->n++;
	return 0;
}

/*
 * UFFD_EVENT_REMAP: the pages (and their registration) moved from `from` to
 * `to`; the entries follow.  Entries are collected first because idx_walk
 * forbids inserting while walking.
 */
int evict_note_remap(struct target *t, uint64_t from, uint64_t to, uint64_t len)
{
	struct remap_ctx ctx = { .t = t, .from = from, .to = to, .len = len };
	struct batch *b = t->batch;
	int r;

	r = idx_walk(t->idx, from >> ZS_PAGE_SHIFT, (from + len) >> ZS_PAGE_SHIFT, remap_collect,
		     &ctx);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < ctx.n; i++)
		idx_erase(t->idx, ctx.pgnos[i]);
	for (size_t i = 0; i < ctx.n; i++) {
		uint64_t addr = to + ((ctx.pgnos[i] << ZS_PAGE_SHIFT) - from);
		void *old = NULL;

		r = idx_insert(t->idx, addr >> ZS_PAGE_SHIFT, ctx.moved[i], &old);
		if (old) {
			t->compressed_bytes -= ((struct entry *)old)->len;
			entry_put(t->d, old);
		}
		if (r < 0) {
			/* The page would read as zeros at its new place. */
			log_error_errno(r, "pid %d: cannot follow mremap: %m", (int)t->pid);
			t->compressed_bytes -= ctx.moved[i]->len;
			entry_put(t->d, ctx.moved[i]);
		}
	}
	if (b) {
		if (b->nremaps == b->remaps_cap) {
			uint32_t cap = b->remaps_cap ? b->remaps_cap * 2 : 4;
			struct batch_remap *m = realloc(b->remaps, cap * sizeof(*m));

			if (m) {
				b->remaps = m;
				b->remaps_cap = cap;
			}
		}
		if (b->nremaps < b->remaps_cap)
			b->remaps[b->nremaps++] = (struct batch_remap){ from, to, len };
		else
			b->remap_overflow = true;
	}
	r = 0;
out:
	free(ctx.moved);
	free(ctx.pgnos);
	return r;
}

/*
 * In a move-first batch, the pages moved out before the fork are missing in
 * the child as in the parent, and until the agent has copied them their
 * only copy is in the parent's scratch, which the child does not inherit
 * (WIPEONFORK) and which goes if the parent exits.  The fork gate keeps
 * fork() from meeting such a page; a fork that went around it (a raw
 * system call, no atfork handler) may, and its pages are read now, if the
 * parent is still there: the kernel let it go on when we read the event.
 * A page the agent comes to after the fork is shared with the child: the
 * move refuses it (EBUSY), and the agent, which unshares none once a fork
 * began, leaves it.
 */
static void evict_save_for_fork(struct target *t, struct batch *b)
{
	uint8_t buf[ZS_PAGE_SIZE], *in_scratch;
	uint64_t scratch = 0;

	/* One pagemap read says which slots hold a page: with the gate, as a
	 * rule none that is not copied, and a fork must not cost a read of
	 * every slot. */
	in_scratch = calloc(b->npages, 1);
	if (!in_scratch || !target_scratch(t, &scratch) ||
	    proc_pages_populated(t->pid, scratch, b->npages, in_scratch) < 0) {
		free(in_scratch);
		return;
	}
	for (uint32_t slot = 0; slot < b->npages; slot++) {
		if (!in_scratch[slot] || b->dead[slot] || evict_slot_copied(t, slot) ||
		    (b->saved && b->saved[slot]) || evict_read_scratch(t, slot, buf) < 0)
			continue;
		if (!b->saved && !(b->saved = calloc(b->npages, sizeof(*b->saved))))
			break;
		b->saved[slot] = malloc(ZS_PAGE_SIZE);
		if (!b->saved[slot])
			break;
		memcpy(b->saved[slot], buf, ZS_PAGE_SIZE);
	}
	free(in_scratch);
}

void evict_note_fork(struct target *t, struct target *child)
{
	struct batch *b = t->batch;

	if (!b)
		return;
	if (b->move_first)
		evict_save_for_fork(t, b);
	if (b->nforks < BATCH_MAX_FORKS) {
		b->forks[b->nforks++] = child;
		child->batch_parent = t;
	} else
		log_error("pid %d: too many forks during one eviction batch", (int)t->pid);
}

int evict_defer_fault(struct target *t, const struct uffd_msg *msg)
{
	struct batch *b = t->batch;

	return fault_msgs_push(&b->deferred, &b->ndeferred, &b->deferred_cap, msg);
}

/*
 * Our agent faulted on a page of the batch it is working on: it dropped the
 * page in an earlier run and now needs it (the agent runs libc code, and
 * libc's .bss is app memory like any other).  It must never wait on itself,
 * and the page's contents are in staging since it copied before dropping:
 * put them back, and leave the page out of the commit.  A page the app
 * discarded meanwhile gets zeros, as the app was promised.
 */
int evict_serve_agent_fault(struct target *t, uint64_t addr, uint32_t slot, bool agent)
{
	struct batch *b = t->batch;
	uint8_t buf[ZS_PAGE_SIZE];
	const uint8_t *page;
	int r, err = 0;

	if (b->dead[slot]) {
		/* The app discarded it, and now it is the app's zero page, which
		 * may be written at once: veto it first, so that the agent leaves
		 * it, or moves it back (the commit skips a discarded page: one
		 * taken out anyway would lose the write; test discard_stuck). */
		__atomic_store_n(&ZS_STAGING_VETO(t->staging, t->staging_pages)[slot], 1,
				 __ATOMIC_SEQ_CST);
		r = uffd_zeropage(t, addr);
	} else if (!(page = evict_slot_page(t, slot, buf, &err))) {
		/* Never moved out.  The agent's own fault: the page is there (a
		 * fault read late: EEXIST), or missing with no event to say so
		 * (MADV_FREE reclaimed): what the app would get, and the agent
		 * must not wait on itself.  An app thread's, in a stuck batch: it
		 * may be on its way into the scratch, the next try finds it.  And
		 * a scratch we could not read: the next try. */
		r = agent && err == -ENOENT ? uffd_zeropage(t, addr) : -EAGAIN;
	} else {
		/* EEXIST: the page is there, the agent has not taken it yet (a
		 * fault read late): the agent and the commit go on with it as
		 * usual.  Marking it restored would leave it out of the commit
		 * once the agent has taken it: a page with no entry. */
		r = fault_copy_page(t, addr, page, false);
		if (r == 0)
			b->restored[slot] = 1;
	}
	/* Copied without waking: the commit wakes a batch at once. */
	if (r != -EAGAIN)
		uffd_wake(t, addr, ZS_PAGE_SIZE);
	return r == -EEXIST ? 0 : r;
}

/*
 * An app thread wants to write to a page of the batch, which waits in a
 * write-protect fault for the commit to lift the protection.  If the batch
 * stalls (its agent stopped by a debugger, or LeakSanitizer's tracer that
 * stops every thread and then writes chunk tags) that wait has no end, and
 * whoever stopped the agent may be the writer: a deadlock.  So once the
 * batch is stuck the write is let through, which is safe only with an agent
 * that moves pages out, because a move can be undone:
 *
 *   1. veto the slot, then lift the protection (the writer goes on);
 *   2. the agent looks at the vetoes before each move and again after it,
 *      and moves a vetoed page back (agent_unmove_vetoed);
 *   3. the commit asks pagemap: a page that is there is the app's, with its
 *      write, and stays out; a page that is gone was moved before the veto
 *      could be seen after the move, so before the lift, with no write in
 *      it, and its staging copy is exact: it is committed like any other.
 *
 * Meanwhile a fault on such a page may find it in the agent's scratch, with
 * the write in it, not in staging: it waits for the commit (evict_serve_stuck
 * leaves it deferred), which takes the agent only the moment from a move to
 * the look after it.  An agent that drops pages with MADV_DONTNEED cannot
 * undo a drop, so its writers wait for the commit, as before.
 */
static void evict_let_writer_through(struct target *t, uint64_t addr, uint32_t slot)
{
	struct batch *b = t->batch;
	volatile uint8_t *veto = &ZS_STAGING_VETO(t->staging, t->staging_pages)[slot];

	if (b->writer[slot] == BATCH_WRITER_WAITING)
		b->nwriters_waiting--;
	/* Visible before the lift that lets the writer on: the agent's look
	 * after its move then sees it if the write can be in the page moved. */
	__atomic_store_n(veto, 1, __ATOMIC_SEQ_CST);
	if (proc_page_present(t->pid, addr) == 0) {
		/* Moved out already, while still protected: no write in it, and
		 * its staging copy is exact.  Unvetoed, it is an evicted page
		 * like the others (or, if the agent saw the veto and moves it
		 * back, a present page with an entry, which is harmless); the
		 * writer faults again on a missing page, served from staging
		 * while the batch is stuck: nothing waits on the agent. */
		__atomic_store_n(veto, 0, __ATOMIC_SEQ_CST);
		log_debug("pid %d: batch %llu: %#llx written while stalled: moved out already",
			  (int)t->pid, (unsigned long long)b->id, (unsigned long long)addr);
		b->writer[slot] = BATCH_WRITER_NONE;
		uffd_wake(t, addr, ZS_PAGE_SIZE);
		return;
	}
	b->writer[slot] = BATCH_WRITER_LET_THROUGH;
	t->d->st.stalled_writes++;
	uffd_unprotect(t, addr, ZS_PAGE_SIZE);
}

/* A write-protect fault of an app thread (not the agent) on a page in flight. */
void evict_note_writer(struct target *t, uint64_t addr, uint32_t slot)
{
	struct batch *b = t->batch;

	if (b->move_first) {
		/* Not ours to hold: a lift of an earlier batch still pending. */
		uffd_unprotect(t, addr, ZS_PAGE_SIZE);
		return;
	}
	if (b->writer[slot] == BATCH_WRITER_LET_THROUGH) {
		uffd_unprotect(t, addr, ZS_PAGE_SIZE); /* a fault read late: lifted already */
		return;
	}
	if (evict_batch_stuck(t) && target_scratch(t, NULL)) {
		evict_let_writer_through(t, addr, slot);
		return;
	}
	if (b->writer[slot] == BATCH_WRITER_NONE)
		b->nwriters_waiting++;
	b->writer[slot] = BATCH_WRITER_WAITING;
}

/* The batch got stuck with writers waiting since before: let them through. */
static void evict_release_writers(struct target *t)
{
	struct batch *b = t->batch;

	for (uint32_t i = 0; i < b->nruns && b->nwriters_waiting; i++) {
		const struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++)
			if (b->writer[run->slot + k] == BATCH_WRITER_WAITING)
				evict_let_writer_through(
					t, batch_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT)),
					run->slot + k);
	}
}

/*
 * A lift of write-protection still pending (EAGAIN) where a new batch
 * protects [addr, +npages) is cancelled: its writers, woken by this batch's
 * lift now, wait on this batch without a fault of theirs to say so.  Count
 * them as waiting writers, or a stall would never let them through.
 */
static void evict_note_pending_lifts(struct target *t, struct batch *b, uint64_t addr,
				     uint32_t npages, uint32_t slot)
{
	uint64_t end = addr + ((uint64_t)npages << ZS_PAGE_SHIFT);

	for (uint32_t i = 0; i < t->nunprotect; i++) {
		uint64_t lo = t->unprotect[i].start, hi = lo + t->unprotect[i].len;

		for (uint64_t a = lo > addr ? lo : addr; a < hi && a < end; a += ZS_PAGE_SIZE) {
			uint32_t s = slot + (uint32_t)((a - addr) >> ZS_PAGE_SHIFT);

			if (b->writer[s] == BATCH_WRITER_NONE) {
				b->writer[s] = BATCH_WRITER_WAITING;
				b->nwriters_waiting++;
			}
		}
	}
}

bool evict_batch_stuck(const struct target *t)
{
	return t->batch && !t->batch->dropped &&
	       now_usec() - t->batch->started_usec >= FAULT_THROTTLE_USEC;
}

/*
 * The batch has been in flight for FAULT_THROTTLE_USEC and faults wait on
 * it: its agent may be stopped (a debugger; LeakSanitizer stops every
 * thread and then reads every page), and would never commit.  The pages
 * those faults want were dropped already (they are missing), so their
 * contents are in staging: serve them as the agent's own, left out of the
 * commit.  Called once per loop turn while it lasts.
 */
void evict_serve_stuck(struct target *t)
{
	struct batch *b = t->batch;
	struct uffd_msg *msgs;
	uint32_t n, slot;

	if (!evict_batch_stuck(t))
		return;
	if (b->nwriters_waiting && target_scratch(t, NULL))
		evict_release_writers(t);
	if (!b->ndeferred)
		return;
	msgs = b->deferred;
	n = b->ndeferred;
	b->deferred = NULL;
	b->ndeferred = b->deferred_cap = 0;
	for (uint32_t i = 0; i < n && !t->dead; i++) {
		uint64_t addr = msgs[i].arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1);
		int r;

		if (evict_in_staging(t, addr, &slot) && b->writer[slot] == BATCH_WRITER_LET_THROUGH)
			r = -EAGAIN; /* maybe in the agent's scratch with its write: the commit */
		else if (evict_in_staging(t, addr, &slot))
			r = evict_serve_agent_fault(t, addr, slot, false);
		else
			r = fault_serve(t, &msgs[i]);
		if (r == -EAGAIN && evict_defer_fault(t, &msgs[i]) < 0)
			uffd_wake(t, addr, ZS_PAGE_SIZE); /* it faults again */
	}
	free(msgs);
}

/*
 * Our agent wrote to a page of its own batch (something between it and the
 * kernel, an interposed library or a sanitizer, touched app memory).  It
 * must not wait on itself: veto the drop of that page (the agent checks right
 * before MADV_DONTNEED; it is stopped in this fault until we answer, so it
 * sees the veto) and lift the protection so it can go on.  The page stays
 * resident and is left out of the commit.
 */
int evict_serve_agent_wp(struct target *t, uint64_t addr, uint32_t slot)
{
	if (t->batch->move_first)
		return uffd_unprotect(t, addr, ZS_PAGE_SIZE); /* as in evict_note_writer */
	/* Stored before the ioctl that wakes the agent, which then reads it. */
	__atomic_store_n((uint8_t *)&ZS_STAGING_VETO(t->staging, t->staging_pages)[slot], 1,
			 __ATOMIC_SEQ_CST);
	return uffd_unprotect(t, addr, ZS_PAGE_SIZE);
}

static size_t evict_registered_at(const struct target *t, uint64_t start)
{
	size_t lo = 0, hi = t->nregistered;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->registered[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * UFFDIO_REGISTER takes the target's mmap lock for writing, which stops its
 * page faults, and a batch of scattered pages has a run in most chunks: so
 * each range is registered once, and again only after the layout changed
 * (an unmap or mremap event forgets them all).  A range that was
 * unregistered behind our back fails the write-protect that follows with
 * ENOENT: evict_start then forgets them all and registers it again.
 */
static int evict_register(struct target *t, uint64_t start, uint64_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	size_t i = evict_registered_at(t, start);

	if (i < t->nregistered && t->registered[i].start == start && t->registered[i].end == end)
		return 0;
	if (ioctl(t->uffd_w.fd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	if (t->nregistered == t->registered_cap) {
		size_t cap = t->registered_cap ? t->registered_cap * 2 : 64;
		struct vma *v = realloc(t->registered, cap * sizeof(*v));

		if (!v)
			return 0; /* registered, just not remembered */
		t->registered = v;
		t->registered_cap = cap;
	}
	memmove(t->registered + i + 1, t->registered + i,
		(t->nregistered - i) * sizeof(*t->registered));
	t->registered[i] = (struct vma){ start, end };
	t->nregistered++;
	return 0;
}

void evict_forget_layout(struct target *t)
{
	t->vmas_usec = 0;
	t->nregistered = 0;
	evict_pick_free(t);
}

static int evict_protect(struct target *t, uint64_t addr, uint64_t len)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = addr, .len = len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	if (ioctl(t->uffd_w.fd, UFFDIO_WRITEPROTECT, &wp) < 0)
		return -errno;
	return 0;
}

/* What the clock hand passes over, with the time read once per pick. */
struct evict_skip {
	struct target *t;
	uint64_t now_ms, hot_ms;
};

static bool evict_skip_poor(uint64_t pgno, void *ctx)
{
	struct evict_skip *sk = ctx;

	if (!hot_recent(&sk->t->poor, pgno, sk->now_ms, TARGET_POOR_WINDOW_MS))
		return false;
	sk->t->d->st.poor_skips++;
	return true;
}

static bool evict_skip_hot(uint64_t pgno, void *ctx)
{
	struct evict_skip *sk = ctx;

	if (evict_skip_poor(pgno, ctx))
		return true;
	if (!hot_recent(&sk->t->hot, pgno, sk->now_ms, sk->hot_ms))
		return false;
	sk->t->d->st.hot_skips++;
	return true;
}

/*
 * Which ranges may be evicted comes from smaps' VmFlags, but reading smaps
 * walks every page table of the process: 15 ms for 1 GiB here, with every
 * fault of every target waiting behind it.  /proc/PID/maps costs no walk:
 * while it reads as it did, the ranges stand.  A change that leaves maps as
 * it was (mlock or MADV_DONTFORK of a whole mapping) is seen within
 * EVICT_SMAPS_TTL_USEC.
 */
static int evict_read_vmas(struct target *t)
{
	char path[64], *maps = NULL, *smaps = NULL;
	struct vma *vmas;
	size_t nvmas;
	bool same;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	r = read_full_file(path, &maps, NULL);
	if (r < 0)
		return r;
	same = t->maps && strcmp(t->maps, maps) == 0;
	if (t->vmas_usec && same && now_usec() - t->smaps_usec < EVICT_SMAPS_TTL_USEC) {
		free(maps);
		t->vmas_usec = now_usec();
		return 0;
	}
	/* A mapping changed, and may have lost its registration without an
	 * event we know of: register again.  A move-first batch would not
	 * notice otherwise (UFFDIO_MOVE wants only its destination
	 * registered), and a page moved out of an unregistered range reads
	 * back as zeros, with no fault for us to serve. */
	if (!same)
		t->nregistered = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
	r = read_full_file(path, &smaps, NULL);
	if (r < 0)
		goto out;
	r = vmscan_parse(smaps, t->excl, t->nexcl, &vmas, &nvmas);
	if (r < 0)
		goto out;
	free(t->vmas);
	t->vmas = vmas;
	t->nvmas = nvmas;
	free(t->maps);
	t->maps = maps;
	maps = NULL;
	t->vmas_usec = t->smaps_usec = now_usec();
out:
	free(maps);
	free(smaps);
	return r;
}

void evict_pick_free(struct target *t)
{
	struct pick *p = t->pick;

	if (!p)
		return;
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	free(p->runs);
	free(p);
	t->pick = NULL;
}

static int evict_pick_new(struct target *t)
{
	struct pick *p;
	char path[64];
	int r;

	if (!t->vmas_usec || now_usec() - t->vmas_usec > EVICT_VMAS_TTL_USEC) {
		r = evict_read_vmas(t);
		if (r < 0)
			return r;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->runs = calloc(EVICT_MAX_RUNS, sizeof(*p->runs));
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid);
	p->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	t->pick = p;
	if (!p->runs || p->pagemap_fd < 0) {
		r = p->pagemap_fd < 0 ? -errno : -ENOMEM;
		evict_pick_free(t);
		return r;
	}
	p->start = p->cursor = t->scan_cursor;
	p->total = vmscan_total_pages(t->vmas, t->nvmas);
	p->started_usec = now_usec();
	/* The last sweep found next to nothing cold: do not sweep again so soon. */
	if (now_usec() / 1000 < t->sweep_dry_until_ms && t->loads_log.n &&
	    !(t->reclaim && t->reclaim->idle_only))
		p->from_log = true;
	return 0;
}

/* The second pass as a sweep: from where the first began, hot pages in. */
static void evict_pick_hot_in(struct pick *p)
{
	p->from_log = false;
	p->hot_in = true;
	p->res = (struct vmscan_result){ 0 };
	p->cursor = p->start;
	p->scanned = 0;
}

static int evict_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The second pass from the log of loads: the pages that came back longest
 * ago go first, those with a second chance once more to the tail (renewed
 * in the hot set, as if back now).  An entry is dropped when its page came
 * back again since (a later entry stands for it), compresses poorly, or is
 * out of the hot window (the sweep takes those: this pass may add to what a
 * sweep picked); one whose page is no longer present (evicted, unmapped) is
 * dropped by vmscan_pick_pages.  A second chance renews an entry before the
 * window is looked at, so a page the sweep took as cold can come round
 * again within the same pick, hot now, and be taken twice: evict_start
 * takes the double out (vmscan_runs_dedup).  Looks at most
 * EVICT_LOG_LOOKS entries per page wanted, so a log of second chances
 * costs a bounded turn.
 */
static int evict_pick_log(struct target *t, struct pick *p, const struct evict_skip *sk)
{
	uint32_t want = t->staging_pages - p->res.npages, n = 0;
	uint64_t *pgnos, budget = (uint64_t)want * EVICT_LOG_LOOKS, looked = 0, when;
	struct loadlog_entry le;
	struct vmscan_result got = { 0 };
	int r;

	if (!want)
		return 0;
	pgnos = malloc(want * sizeof(*pgnos));
	if (!pgnos)
		return -ENOMEM;
	while (n < want && looked < budget && loadlog_pop(&t->loads_log, &le)) {
		bool seen = hot_when(&t->hot, le.pgno, &when);

		looked++;
		if (seen && when != le.when_ms)
			continue; /* stale: it came back again since */
		if (hot_recent(&t->poor, le.pgno, sk->now_ms, TARGET_POOR_WINDOW_MS))
			continue;
		if (le.chances) {
			/* Another turn, as if it came back now: the sweep passes
			 * over it meanwhile, however long it stays resident. */
			le.chances--;
			le.when_ms = sk->now_ms;
			hot_note(&t->hot, le.pgno, sk->now_ms, sk->hot_ms);
			t->d->st.hot_skips++;
			(void)loadlog_push(&t->loads_log, &le);
			continue;
		}
		if (!seen || sk->now_ms - when >= sk->hot_ms)
			continue; /* out of the window: the sweep's to take (never both) */
		pgnos[n++] = le.pgno;
	}
	qsort(pgnos, n, sizeof(*pgnos), evict_cmp_u64);
	r = vmscan_pick_pages(p->pagemap_fd, t->vmas, t->nvmas, pgnos, n, p->runs + p->res.nruns,
			      EVICT_MAX_RUNS - p->res.nruns, &got);
	free(pgnos);
	if (r < 0)
		return r;
	p->res.npages += got.npages;
	p->res.nruns += got.nruns;
	return 0;
}

/*
 * Chooses the pages of the next batch, EVICT_PICK_CHUNK pages of address
 * space per call: a sweep of a large process takes milliseconds, and every
 * fault of every target would wait behind it.  Returns 1 when the pick is
 * complete (t->pick holds it), 0 when the loop should call again, -errno.
 */
static int evict_pick(struct target *t)
{
	struct reclaim *rc = t->reclaim;
	struct pick *p;
	struct evict_skip sk = { t, now_usec() / 1000, target_hot_window_ms(t) };
	struct vmscan_result got = { 0 };
	uint64_t left;
	int r;

	if (!t->pick) {
		r = evict_pick_new(t);
		if (r < 0)
			return r;
	}
	p = t->pick;
	if (p->from_log) {
		r = evict_pick_log(t, p, &sk);
		if (r < 0)
			return r;
		/* Mostly second chances and gone pages this turn: the next turn
		 * goes on (every entry looked at was dropped or lost a chance).
		 * Looks are not sweeps: they never make a reclaim "wrapped". */
		if (t->loads_log.n && p->res.npages < t->staging_pages / 2)
			return 0;
		if (p->res.npages)
			return 1;
		evict_pick_hot_in(p); /* nothing left in the log */
	}
	left = p->total - p->scanned;
	/* One pass scans at most one sweep of the address space, passing over
	 * pages that came back lately (hot.h). */
	r = vmscan_pick(p->pagemap_fd, t->vmas, t->nvmas, p->cursor,
			t->staging_pages - p->res.npages, left < EVICT_PICK_CHUNK ? left : EVICT_PICK_CHUNK,
			p->runs + p->res.nruns, EVICT_MAX_RUNS - p->res.nruns,
			p->hot_in ? evict_skip_poor : evict_skip_hot, &sk, &got);
	if (r < 0)
		return r;
	p->res.npages += got.npages;
	p->res.nruns += got.nruns;
	p->scanned += got.scanned;
	p->cursor = got.cursor;
	if (p->res.npages < t->staging_pages && p->res.nruns < EVICT_MAX_RUNS &&
	    p->scanned < p->total && t->nvmas)
		return 0;
	/*
	 * Under half a batch of cold pages in a whole sweep: a limit or a
	 * reclaim must still converge, so a second pass from the same place,
	 * hot pages in.  Idle sweeps take what is cold and nothing else.  (The
	 * window does not shrink instead: every page faulted back counts as
	 * refaulted, the cold ones too, and a shrinking window then gave up
	 * the truly hot pages first: 25-30k accesses/s in four runs at a 50%
	 * budget, 33-71k in six without it.)
	 */
	if (!p->hot_in && !(rc && rc->idle_only) && p->res.npages < t->staging_pages / 2) {
		/* Sweeping again soon would find as little: the log until then. */
		t->sweep_dry_until_ms = sk.now_ms + sk.hot_ms / 4;
		if (t->loads_log.n) {
			p->from_log = true; /* keeping what this pass found */
			return 0;
		}
		evict_pick_hot_in(p);
		return 0;
	}
	t->scan_cursor = p->cursor;
	/* Only the last pass counts: a first pass that found the pages hot
	 * must not end the reclaim as if the address space had nothing left
	 * (it held a limit at twice its size, one batch per reclaim). */
	if (rc) {
		rc->reply.scanned_pages += p->scanned;
		if (rc->reply.scanned_pages >= p->total)
			rc->wrapped = true;
	}
	return 1;
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
 * Starts one batch on t.  Returns 1 if a batch is now in flight, 0 if there
 * was nothing to evict, EVICT_PICKING if the pick needs more loop turns
 * (call again), -errno on failure.
 */
int evict_start(struct target *t)
{
	struct vmscan_run *runs;
	struct vmscan_result res;
	struct batch *b = NULL;
	uint32_t slot = 0, dups;
	int r;

	if (t->batch || !t->conn || !t->agent_tid || t->dead || t->d->stopping)
		return -EBUSY;
	r = evict_pick(t);
	if (r <= 0) {
		if (r < 0)
			evict_pick_free(t);
		return r < 0 ? r : EVICT_PICKING;
	}
	runs = t->pick->runs;
	res = t->pick->res;
	dups = vmscan_runs_dedup(runs, &res.nruns);
	if (dups) {
		/* The log pass took a page this pick's sweep took too (see
		 * evict_pick_log): once only, and say so, as it is rare. */
		log_warning("pid %d: %u pages picked twice for one batch, taken once", (int)t->pid,
			    dups);
		res.npages -= dups;
	}
	log_debug("pid %d: picked %u pages in %zu runs in %llu us", (int)t->pid, res.npages,
		  res.nruns, (unsigned long long)(now_usec() - t->pick->started_usec));
	if (res.npages == 0)
		goto out;

	r = -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		goto out;
	b->runs = calloc(res.nruns, sizeof(*b->runs));
	b->dead = calloc(t->staging_pages, 1);
	b->restored = calloc(t->staging_pages, 1);
	b->committed = calloc(t->staging_pages, 1);
	b->writer = calloc(t->staging_pages, 1);
	if (!b->runs || !b->dead || !b->restored || !b->committed || !b->writer)
		goto out;
	b->id = ++t->d->next_batch_id;
	b->started_usec = now_usec();
	b->move_first = t->d->cfg.agent_move_first && target_scratch(t, NULL) != 0;
	if (b->move_first) {
		/* Before the check below that the pages are this process's
		 * alone: a fork begun after it may share them (the agent then
		 * unshares none), one under way may too. */
		volatile uint32_t *gate = ZS_STAGING_FORK_GATE(t->staging, t->staging_pages);

		__atomic_store_n(&gate[3], __atomic_load_n(&gate[2], __ATOMIC_SEQ_CST),
				 __ATOMIC_SEQ_CST);
		b->no_unshare = __atomic_load_n(&gate[0], __ATOMIC_SEQ_CST) != 0;
	}

	for (size_t i = 0; i < res.nruns; i++) {
		uint64_t len = (uint64_t)runs[i].npages << ZS_PAGE_SHIFT;
		uint32_t kept;

		r = evict_register(t, runs[i].reg_start, runs[i].reg_end);
		if (r == 0 && !b->move_first)
			r = evict_protect(t, runs[i].addr, len);
		if (r == -ENOENT && t->nregistered) {
			/* unregistered without an event we know of: register again */
			t->nregistered = 0;
			r = evict_register(t, runs[i].reg_start, runs[i].reg_end);
			if (r == 0 && !b->move_first)
				r = evict_protect(t, runs[i].addr, len);
		}
		if (r == 0 && !b->move_first) {
			evict_note_pending_lifts(t, b, runs[i].addr, runs[i].npages, slot);
			uffd_unprotect_cancel(t, runs[i].addr, len);
		}
		if (r < 0) {
			/* The mapping changed under us (munmap, mprotect): skip the run. */
			log_debug_errno(r, "pid %d: cannot protect %#llx+%llu: %m", (int)t->pid,
					(unsigned long long)runs[i].addr, (unsigned long long)len);
			if (r == -ESRCH)
				goto out;
			continue;
		}
		/* The pick is a few loop turns old, and the app ran meanwhile: a
		 * page it discarded before we registered its range left no REMOVE
		 * event, and the agent would fault on it.  Now that the run is
		 * protected and registered (a later discard is an event), keep it
		 * up to its first page that is no longer evictable. */
		kept = vmscan_evictable_prefix(t->pick->pagemap_fd, runs[i].addr, runs[i].npages);
		if (kept < runs[i].npages && !b->move_first)
			uffd_unprotect(t, runs[i].addr + ((uint64_t)kept << ZS_PAGE_SHIFT),
				       (uint64_t)(runs[i].npages - kept) << ZS_PAGE_SHIFT);
		for (uint32_t k = kept; k < runs[i].npages; k++)
			if (b->writer[slot + k] == BATCH_WRITER_WAITING) {
				b->writer[slot + k] = BATCH_WRITER_NONE; /* the next run's slot */
				b->nwriters_waiting--;
			}
		if (kept == 0)
			continue;
		b->runs[b->nruns++] = (struct batch_run){
			.addr = runs[i].addr,
			.npages = kept,
			.slot = slot,
		};
		slot += kept;
	}
	b->npages = slot;
	if (b->nruns == 0) {
		r = 0;
		goto out;
	}
	memset((void *)ZS_STAGING_VETO(t->staging, t->staging_pages), 0, t->staging_pages);
	memset((void *)ZS_STAGING_DROPS(t->staging, t->staging_pages), 0,
	       t->staging_pages * sizeof(uint16_t));
	memset((void *)ZS_STAGING_COPIED(t->staging, t->staging_pages), 0,
	       ZS_STAGING_MAX_SLOTS / 8);
	t->batch = b;
	r = evict_send(t, b);
	if (r < 0) {
		t->batch = NULL;
		for (uint32_t i = 0; i < b->nruns && !b->move_first; i++)
			uffd_unprotect(t, b->runs[i].addr, (uint64_t)b->runs[i].npages << ZS_PAGE_SHIFT);
		goto out;
	}
	t->d->st.evict_batches++;
	if (b->move_first)
		t->d->st.evict_move_first_batches++;
	if (log_get_level() >= LOG_LVL_DEBUG)
		for (uint32_t i = 0; i < b->nruns; i++)
			log_debug("pid %d: batch %llu run %#llx +%u", (int)t->pid,
				  (unsigned long long)b->id, (unsigned long long)b->runs[i].addr,
				  b->runs[i].npages);
	b = NULL;
	r = 1;
out:
	batch_free(b);
	evict_pick_free(t);
	return r;
}

/*
 * Puts one page back into t at addr; if the kernel says not now (EAGAIN: an
 * madvise or mremap of the app is under way), keep it as a raw entry that
 * the next fault maps.  Returns what UFFDIO_COPY said, or the fallback's.
 */
static int evict_put_back(struct target *t, uint64_t addr, const void *page)
{
	struct entry *e;
	int r = uffd_fill_checked(t, addr, fault_copy_page(t, addr, page, false));

	if (r == -EEXIST)
		return 0; /* mapped meanwhile: nothing to put back */
	if (r != -EAGAIN && r != -ENOMEM)
		return r;
	r = entry_store_raw(t->d, page, &e);
	if (r == 0) {
		r = target_insert(t, addr, e);
		if (r < 0)
			entry_put(t->d, e);
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
			evict_put_back(b->forks[f], addr, page);
}

/* Puts a refused page back where it was, in the target and in children forked meanwhile. */
static void evict_refuse(struct target *t, struct batch *b, uint64_t addr, const void *page)
{
	int r = evict_put_back(t, addr, page);

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
	e->stored_at = (uint32_t)t->stores;
	for (uint32_t f = 0; f < b->nforks; f++) {
		struct target *child = b->forks[f];

		if (child->dead)
			continue;
		entry_get(e);
		if (target_insert(child, addr, e) < 0) {
			entry_put(t->d, e);
			evict_put_back(child, addr, page);
		}
	}
	r = target_insert(t, addr, e);
	if (r < 0) {
		entry_put(t->d, e);
		return r;
	}
	t->stores++;
	return 0;
}

/* A target is going away: no batch of a parent may still name it. */
void evict_forget_child(struct daemon *d, struct target *child)
{
	for (struct target *t = d->targets; t; t = t->next) {
		struct batch *b = t->batch;

		for (uint32_t f = 0; b && f < b->nforks; f++)
			if (b->forks[f] == child)
				b->forks[f] = b->forks[--b->nforks];
	}
	child->batch_parent = NULL;
}

/*
 * The agent took pages UFFDIO_MOVE had reported not moved (agent.c,
 * agent_slot_filled): counted, and said once per process, since a kernel
 * that does this would lose those pages under any agent that believed it.
 */
static void evict_note_mismoves(struct target *t)
{
	uint64_t now = __atomic_load_n(ZS_STAGING_MISMOVES(t->staging, t->staging_pages),
				       __ATOMIC_RELAXED);

	if (now == t->mismoves_seen)
		return;
	if (!t->mismoves_seen)
		log_warning("pid %d: UFFDIO_MOVE reported a page not moved that it had moved; "
			    "the agent took it as moved (agent_move_misreports)", (int)t->pid);
	t->d->st.agent_move_misreports += now - t->mismoves_seen;
	t->mismoves_seen = now;
}

static void evict_finish(struct target *t, struct batch *b)
{
	evict_note_mismoves(t);
	for (uint32_t f = 0; f < b->nforks; f++)
		b->forks[f]->batch_parent = NULL;
	for (uint32_t i = 0; i < b->nruns && !b->move_first; i++)
		uffd_unprotect(t, b->runs[i].addr, (uint64_t)b->runs[i].npages << ZS_PAGE_SHIFT);
	t->batch = NULL;
	for (uint32_t i = 0; i < b->ndeferred && !t->dead; i++)
		if (fault_serve(t, &b->deferred[i]) == -EAGAIN)
			uffd_wake(t, b->deferred[i].arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1),
				  ZS_PAGE_SIZE);
	batch_free(b);
}

/* One page the agent dropped: stored, or put back if it cannot be. */
static void evict_commit_one(struct target *t, struct batch *b, const struct batch_run *run,
			     uint32_t k)
{
	struct reclaim *rc = t->reclaim;
	uint32_t slot = run->slot + k;
	const uint8_t *page = t->staging + ((size_t)slot << ZS_PAGE_SHIFT);
	uint64_t addr = batch_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));
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
	if (b->dead[slot] || (ZS_STAGING_VETO(t->staging, t->staging_pages)[slot] &&
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
		evict_refuse(t, b, addr, page);
		if (rc)
			rc->reply.rejected_pages++;
		return;
	}
	if (rc) {
		const struct entry *e = idx_lookup(t->idx, addr >> ZS_PAGE_SHIFT);

		rc->reply.evicted_pages++;
		rc->reply.compressed_bytes += e ? e->len : 0;
	}
}

/*
 * Commits up to EVICT_COMMIT_SLICE pages, then lets the loop serve faults:
 * compressing a whole batch at once (2 ms for 256 pages) made every fault
 * that came meanwhile wait for all of it.  Until the batch is finished its
 * pages stay in flight: the app's discards, mremaps and forks are applied
 * to the pages not committed yet as before, and those committed are in the
 * index, which follows them like any entry.
 */
static void evict_commit_some(struct target *t)
{
	struct batch *b = t->batch;
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
	if (t->reclaim)
		reclaim_progress(t);
}

int evict_done(struct target *t, const struct zs_evict_done *done)
{
	struct batch *b = t->batch;

	if (!b || b->dropped || done->batch != b->id || done->nruns != b->nruns)
		return -EBADMSG;
	b->dropped = malloc(b->nruns * sizeof(*b->dropped));
	if (!b->dropped)
		return -ENOMEM;
	memcpy(b->dropped, done->result, b->nruns * sizeof(*b->dropped));
	if (done->flags & ZS_DONE_ON_APP_CPU)
		t->d->st.evict_local_batches++;
	evict_commit_some(t);
	return 0;
}

/* The agent is done with t's batch, and the commit is under way. */
static bool evict_target_committing(const struct target *t)
{
	return !t->dead && t->batch && t->batch->dropped;
}

bool evict_committing(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (evict_target_committing(t))
			return true;
	return false;
}

void evict_commit_all(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next)
		if (evict_target_committing(t))
			evict_commit_some(t);
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
	struct batch *b = t->batch;

	if (!b)
		return;
	/* An agent only stopped (a debugger; the drain gives up on it after
	 * DRAIN_BATCH_TIMEOUT_USEC) would go on with the batch once resumed
	 * and take out the pages put back here, with whatever the app wrote
	 * to them since: every page vetoed, it leaves them, or moves them
	 * back (agent.c).  A MADV_DONTNEED agent checks only before a drop. */
	for (uint32_t i = 0; i < t->staging_pages; i++)
		__atomic_store_n((uint8_t *)&ZS_STAGING_VETO(t->staging, t->staging_pages)[i], 1,
				 __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < b->nruns; i++) {
		struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++) {
			uint32_t slot = run->slot + k;
			uint64_t addr = batch_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));
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
				evict_put_back(t, addr, page);
			evict_put_back_children(b, addr, page);
		}
	}
	evict_finish(t, b);
}
