// SPDX-License-Identifier: GPL-2.0-only
/*
 * evict_flight.c - the pages of an eviction batch while they are in flight,
 * from ZS_EVICT until the commit has dealt with each (hazards 1, 3 and 4:
 * docs/design.md).
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
 *
 * A batch's pages are named by where the batch found them; an mremap since
 * moves them (evict_translate), and a staging slot holds each (slot = the
 * run's first slot + the page's place in the run).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"

/* Where the page the batch found at addr is now, after the app's mremaps since. */
uint64_t evict_translate(const struct batch *b, uint64_t addr)
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
static bool evict_batch_untranslate(const struct batch *b, uint64_t *addr)
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
	const struct batch *b = t->evict.batch;

	if (!b || !evict_batch_untranslate(b, &addr))
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
	return evict_in_flight(t, addr, ret_slot) && !t->evict.batch->committed[*ret_slot];
}

bool evict_slot_copied(const struct target *t, uint32_t slot)
{
	const volatile uint64_t *copied = ZS_STAGING_COPIED(t->agent.staging, t->agent.staging_pages);

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
	r = proc_mem_read_page(t->ident.mem_fd, scratch + ((uint64_t)slot << ZS_PAGE_SHIFT), buf);
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
const uint8_t *evict_slot_page(struct target *t, uint32_t slot, uint8_t *buf, int *ret_err)
{
	struct batch *b = t->evict.batch;
	const uint8_t *staged = t->agent.staging + ((size_t)slot << ZS_PAGE_SHIFT);
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
	struct batch *b = t->evict.batch;
	uint64_t scratch_start = 0, scratch_len;

	if (!t->agent.staging)
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
		volatile uint16_t *drops = ZS_STAGING_DROPS(t->agent.staging, t->agent.staging_pages);
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
 * them away from it (test mremap_race).
 */
void evict_note_discard(struct target *t, uint64_t start, uint64_t end)
{
	struct batch *b = t->evict.batch;

	if (!b)
		return;
	for (uint32_t i = 0; i < b->nruns; i++) {
		struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++) {
			uint64_t a = evict_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT));

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

static int evict_remap_collect(uint64_t pgno, void *val, void *arg)
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
	struct batch *b = t->evict.batch;
	int r;

	r = idx_walk(t->idx, from >> ZS_PAGE_SHIFT, (from + len) >> ZS_PAGE_SHIFT, evict_remap_collect,
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
			t->counts.compressed_bytes -= ((struct entry *)old)->len;
			entry_put(t->d, old);
		}
		if (r < 0) {
			/* The page would read as zeros at its new place. */
			log_error_errno(r, "pid %d: cannot follow mremap: %m", (int)t->pid);
			t->counts.compressed_bytes -= ctx.moved[i]->len;
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
	struct batch *b = t->evict.batch;

	if (!b)
		return;
	if (b->move_first)
		evict_save_for_fork(t, b);
	if (b->nforks < BATCH_MAX_FORKS) {
		b->forks[b->nforks++] = child;
		child->evict.batch_parent = t;
	} else
		log_error("pid %d: too many forks during one eviction batch", (int)t->pid);
}

int evict_defer_fault(struct target *t, const struct uffd_msg *msg)
{
	struct batch *b = t->evict.batch;

	return uffd_msgs_push(&b->deferred, &b->ndeferred, &b->deferred_cap, msg);
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
	struct batch *b = t->evict.batch;
	uint8_t buf[ZS_PAGE_SIZE];
	const uint8_t *page;
	int r, err = 0;

	if (b->dead[slot]) {
		/* The app discarded it, and now it is the app's zero page, which
		 * may be written at once: veto it first, so that the agent leaves
		 * it, or moves it back (the commit skips a discarded page: one
		 * taken out anyway would lose the write; test discard_stuck). */
		__atomic_store_n(&ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[slot], 1,
				 __ATOMIC_SEQ_CST);
		r = uffd_zeropage(t->uffd_w.fd, addr);
	} else if (!(page = evict_slot_page(t, slot, buf, &err))) {
		/* Never moved out.  The agent's own fault: the page is there (a
		 * fault read late: EEXIST), or missing with no event to say so
		 * (MADV_FREE reclaimed): what the app would get, and the agent
		 * must not wait on itself.  An app thread's, in a stuck batch: it
		 * may be on its way into the scratch, the next try finds it.  And
		 * a scratch we could not read: the next try. */
		r = agent && err == -ENOENT ? uffd_zeropage(t->uffd_w.fd, addr) : -EAGAIN;
	} else {
		/* EEXIST: the page is there, the agent has not taken it yet (a
		 * fault read late): the agent and the commit go on with it as
		 * usual.  Marking it restored would leave it out of the commit
		 * once the agent has taken it: a page with no entry. */
		r = uffd_copy(t->uffd_w.fd, addr, page, false);
		if (r == 0)
			b->restored[slot] = 1;
	}
	/* Copied without waking: the commit wakes a batch at once. */
	if (r != -EAGAIN)
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
	return r == -EEXIST ? 0 : r;
}
