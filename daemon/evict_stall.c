// SPDX-License-Identifier: GPL-2.0-only
/*
 * evict_stall.c - a batch whose agent stalls, and the app's writes to the
 * pages of a batch (hazard 1, docs/design.md).
 *
 * An agent can stop mid-batch: a debugger, or LeakSanitizer's exit check,
 * which stops every thread and then reads every page and writes chunk
 * tags.  Whoever stopped it may be waiting on a page of its batch, so a
 * batch in flight for FAULT_THROTTLE_USEC is "stuck" and no longer held
 * to: reads are served from staging or the agent's scratch, and in a
 * write-protected batch a write is let through once its page is vetoed
 * (the agent moves a vetoed page back, and the commit asks pagemap which
 * copy is the app's).  In a move-first batch no write ever waits on the
 * agent: a write-protect fault there is a leftover of an earlier batch.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"
#include "log.h"
#include "uffd.h"

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
 * undo a drop, so its writers wait for the commit, stuck or not.
 */
static void evict_let_writer_through(struct target *t, uint64_t addr, uint32_t slot)
{
	struct batch *b = t->evict.batch;
	volatile uint8_t *veto = &ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[slot];

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
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return;
	}
	b->writer[slot] = BATCH_WRITER_LET_THROUGH;
	t->d->st.stalled_writes++;
	target_unprotect(t, addr, ZS_PAGE_SIZE);
}

/* A write-protect fault of an app thread (not the agent) on a page in flight. */
void evict_note_writer(struct target *t, uint64_t addr, uint32_t slot)
{
	struct batch *b = t->evict.batch;

	if (b->move_first) {
		/* Not ours to hold: a lift of an earlier batch still pending. */
		target_unprotect(t, addr, ZS_PAGE_SIZE);
		return;
	}
	if (b->writer[slot] == BATCH_WRITER_LET_THROUGH) {
		target_unprotect(t, addr, ZS_PAGE_SIZE); /* a fault read late: lifted already */
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
	struct batch *b = t->evict.batch;

	for (uint32_t i = 0; i < b->nruns && b->nwriters_waiting; i++) {
		const struct batch_run *run = &b->runs[i];

		for (uint32_t k = 0; k < run->npages; k++)
			if (b->writer[run->slot + k] == BATCH_WRITER_WAITING)
				evict_let_writer_through(
					t, evict_translate(b, run->addr + ((uint64_t)k << ZS_PAGE_SHIFT)),
					run->slot + k);
	}
}

/*
 * A lift of write-protection still pending (EAGAIN) where a new batch
 * protects [addr, +npages) is cancelled: its writers, woken by this batch's
 * lift now, wait on this batch without a fault of theirs to say so.  Count
 * them as waiting writers, or a stall would never let them through.
 */
void evict_note_pending_lifts(struct target *t, struct batch *b, uint64_t addr,
				     uint32_t npages, uint32_t slot)
{
	uint64_t end = addr + ((uint64_t)npages << ZS_PAGE_SHIFT);

	for (uint32_t i = 0; i < t->waits.nunprotect; i++) {
		uint64_t lo = t->waits.unprotect[i].start, hi = lo + t->waits.unprotect[i].len;

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
	return t->evict.batch && !t->evict.batch->dropped &&
	       now_usec() - t->evict.batch->started_usec >= FAULT_THROTTLE_USEC;
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
	struct batch *b = t->evict.batch;
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
			r = load_serve(t, addr, msgs[i].arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE);
		if (r != -EAGAIN)
			target_note_stall(t, &msgs[i]);
		else if (evict_defer_fault(t, &msgs[i]) < 0)
			uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE); /* it faults again */
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
	if (t->evict.batch->move_first)
		return target_unprotect(t, addr, ZS_PAGE_SIZE); /* as in evict_note_writer */
	/* Stored before the ioctl that wakes the agent, which then reads it. */
	__atomic_store_n((uint8_t *)&ZS_STAGING_VETO(t->agent.staging, t->agent.staging_pages)[slot], 1,
			 __ATOMIC_SEQ_CST);
	return target_unprotect(t, addr, ZS_PAGE_SIZE);
}

