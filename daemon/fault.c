// SPDX-License-Identifier: GPL-2.0-only
/*
 * fault.c - the uffd reader: faults, which load.c serves (zswap_load), and
 * the events by which the kernel tells us the app changed its memory
 * (invalidate, remap, fork).
 *
 * Contract with the kernel (fs/userfaultfd.c):
 *  - Events (FORK, REMAP, REMOVE, UNMAP) block the app until read, so we
 *    drain every message each time the uffd is readable and never stall.
 *  - While an event is pending the mm is "changing" and UFFDIO_COPY /
 *    ZEROPAGE say EAGAIN: such faults go on a retry list, tried again after
 *    the events are read (loop.c retries 50 us later; our own agent leaves
 *    a gap between its drops when asked, see ZS_STAGING_HOLD).
 *  - EEXIST from COPY/ZEROPAGE: the page is already there; wake the waiter.
 *    ENOENT/ESRCH/EFAULT: the range or the mm went away; wake and forget.
 *
 * A missing-page fault on a page of the eviction batch in flight, not yet
 * committed, waits for the batch to commit (evict_defer_fault) unless it
 * comes from our own agent thread, which must never wait on itself.  A write-protect fault outside a
 * batch is a leftover of one (a remapped page, a forked child's copy) and is
 * simply lifted.
 */
#include <errno.h>
#include <stdlib.h>

#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"
#include "persist/journal.h"

#define FAULT_READ_BATCH 32

/* Asks our agent to leave a gap between its drops (ZS_STAGING_HOLD). */
static void fault_hold_agent(struct target *t, bool hold)
{
	if (t->agent.staging)
		__atomic_store_n(ZS_STAGING_HOLD(t->agent.staging, t->agent.staging_pages), hold ? 1u : 0u,
				 __ATOMIC_RELEASE);
}

static int fault_queue_retry(struct target *t, const struct uffd_msg *msg)
{
	fault_hold_agent(t, true);
	return uffd_msgs_push(&t->waits.retry, &t->waits.nretry, &t->waits.retry_cap, msg);
}

/*
 * A forked child's fault on its beacon, which its shim makes right after
 * its hello: answered with the child's nonce, then the child is claimed by
 * the connection whose peer reads it (target_claim).  True if dealt with.
 */
static bool fault_child_beacon(struct target *t, const struct uffd_msg *msg, uint64_t addr)
{
	int r;

	if (t->pid || t->ident.planted || addr != t->agent.beacon)
		return false;
	r = target_plant(t);
	if (r == -EAGAIN) {
		if (fault_queue_retry(t, msg) < 0)
			uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return true;
	}
	if (r < 0) {
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return true;
	}
	for (struct conn *c = t->d->conns.list; c; c = c->next) {
		r = target_claim(t, c);
		if (r < 0)
			c->doomed = "cannot hand over the child's uffd";
		if (r != 0)
			break;
	}
	return true;
}

/* Whether eviction is under way on t, so that a held fault gets released. */
static bool fault_may_hold(const struct target *t)
{
	return t->evict.batch ? !evict_batch_stuck(t) : t->evict.pick != NULL;
}

/* Holds a fault of a process over its limit (reclaim_throttle). */
static int fault_throttle(struct target *t, const struct uffd_msg *msg)
{
	if (!t->waits.nthrottled)
		t->waits.throttled_usec = now_usec();
	return uffd_msgs_push(&t->waits.throttled, &t->waits.nthrottled, &t->waits.throttled_cap, msg);
}

/*
 * The kernel's PSI does not count a thread waiting in a userfaultfd fault:
 * zswapd measures the stall it causes itself, from the moment it read the
 * fault to the wake.  The read time rides in the message's reserved3 word,
 * which the kernel leaves zero, through every queue a fault may wait in
 * (retried, throttled, deferred on a batch).  Microseconds, modulo 2^32: a
 * fault waits well under the 71 minutes that wrap takes.
 */
static void fault_stamp(struct uffd_msg *msgs, ssize_t n)
{
	uint32_t now = (uint32_t)now_usec();

	for (ssize_t i = 0; i < n; i++)
		msgs[i].reserved3 = now;
}

static void fault_pagefault(struct target *t, const struct uffd_msg *msg, bool may_throttle)
{
	uint64_t addr = msg->arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1);
	pid_t ptid = (pid_t)msg->arg.pagefault.feat.ptid;
	uint32_t slot;

	if (t->pid == 0 && !(msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) &&
	    fault_child_beacon(t, msg, addr))
		return;

	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		/* In a batch: the commit lifts it (our own agent: at once, with a
		 * veto on dropping the page; anyone, once the batch is stuck:
		 * evict_note_writer).  Elsewhere: a leftover, lift now. */
		if (!evict_in_flight(t, addr, &slot)) {
			target_unprotect(t, addr, ZS_PAGE_SIZE);
			target_note_stall(t, msg);
		} else if (ptid == t->agent.tid)
			evict_serve_agent_wp(t, addr, slot);
		else
			evict_note_writer(t, addr, slot);
		return;
	}
	if (t->evict.batch_parent && t->evict.batch_parent->evict.batch) {
		/* A child forked mid-batch: the page may be one its parent had
		 * dropped, whose entry the commit is about to give us. */
		if (fault_queue_retry(t, msg) < 0)
			uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return;
	}
	if (evict_in_staging(t, addr, &slot)) {
		if (ptid == t->agent.tid) {
			if (evict_serve_agent_fault(t, addr, slot, true) == -EAGAIN &&
			    fault_queue_retry(t, msg) < 0)
				uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
			return;
		}
		if (evict_defer_fault(t, msg) == 0) {
			t->d->st.faults_deferred++;
			return;
		}
	}
	/* Far over its limit: wait for the batch in flight to commit, once,
	 * and never longer than FAULT_THROTTLE_USEC; not at all on a batch
	 * that old: its agent may be stopped (a debugger; LeakSanitizer's
	 * stop-the-world reading every page).  Never the agent itself: the
	 * batch waits on it.  Also while the next batch is being picked: a
	 * sweep that finds the pages hot reads the whole address space first,
	 * and a process sharing our CPU would fault far past its limit during
	 * each (every hot window / 4, the log's turn; docs/benchmarks.md,
	 * "Throttling"). */
	if (may_throttle && fault_may_hold(t) && ptid != t->agent.tid && reclaim_throttle(t) &&
	    fault_throttle(t, msg) == 0) {
		t->d->st.faults_deferred++;
		t->d->st.faults_throttled++;
		return;
	}
	/* No pages ahead for a process over its limit: each would be one more to take back. */
	if (load_fault(t, addr, msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE,
		       !reclaim_throttle(t)) != -EAGAIN) {
		target_note_stall(t, msg);
		idlepoll_fault_served(t->d);
	} else if (fault_queue_retry(t, msg) < 0)
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE); /* it faults again and we try again */
}

static void fault_event(struct target *t, const struct uffd_msg *msg)
{
	struct target *child;

	switch (msg->event) {
	case UFFD_EVENT_PAGEFAULT:
		fault_pagefault(t, msg, true);
		break;
	case UFFD_EVENT_FORK:
		log_debug("pid %d: fork event, batch %llu%s, %zu entries", (int)t->pid,
			  t->evict.batch ? (unsigned long long)t->evict.batch->id : 0ull,
			  t->evict.batch && t->evict.batch->dropped ? " committing" : "", idx_count(t->idx));
		if (target_new_child(t, (int)msg->arg.fork.ufd, &child) == 0) {
			journal_fork_claim(child, msg);
			journal_fork(t, child);
			evict_note_fork(t, child);
		}
		break;
	case UFFD_EVENT_REMAP:
		evict_forget_layout(t); /* addresses moved; the loop picks again */
		log_debug("pid %d: remap %#llx -> %#llx +%llu", (int)t->pid,
			  (unsigned long long)msg->arg.remap.from, (unsigned long long)msg->arg.remap.to,
			  (unsigned long long)msg->arg.remap.len);
		journal_remap(t, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len);
		evict_note_remap(t, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len);
		break;
	case UFFD_EVENT_REMOVE:
		if (evict_consume_own_remove(t, msg->arg.remove.start, msg->arg.remove.end))
			break;
		/* the app discarded memory */
		__attribute__((fallthrough));
	case UFFD_EVENT_UNMAP:
		if (msg->event == UFFD_EVENT_UNMAP)
			evict_forget_layout(t);
		log_debug("pid %d: discard %#llx-%#llx (event %u)", (int)t->pid,
			  (unsigned long long)msg->arg.remove.start,
			  (unsigned long long)msg->arg.remove.end, msg->event);
		target_invalidate(t, msg->arg.remove.start, msg->arg.remove.end);
		evict_note_discard(t, msg->arg.remove.start, msg->arg.remove.end);
		break;
	default:
		log_warning("pid %d: unexpected uffd event %u, ignoring", (int)t->pid, msg->event);
		break;
	}
}

void fault_uffd_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct target *t = watch_owner(w, struct target, uffd_w);
	struct uffd_msg msgs[FAULT_READ_BATCH];
	ssize_t n;

	(void)d;
	if (t->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		target_kill(t, "uffd closed");
		return;
	}
	for (;;) {
		n = uffd_read_msgs(t->uffd_w.fd, msgs, FAULT_READ_BATCH);
		if (n == 0)
			return;
		if (n < 0) {
			if (n == -EIO)
				log_error("pid %d: short uffd read", (int)t->pid);
			target_kill(t, n == -EIO ? "uffd broken" : "uffd read failed");
			return;
		}
		fault_stamp(msgs, n);
		/* A forked child's uffd is ours alone: into the store at once. */
		for (ssize_t i = 0; i < n; i++)
			if (msgs[i].event == UFFD_EVENT_FORK)
				journal_fork_early(t, &msgs[i]);
		/*
		 * Events first, then the faults read with them.  The kernel
		 * lets the app go on with an event (fork, madvise, mremap) as
		 * soon as it is read, not when we act on it: a fault that came
		 * before a FORK in the same read, served first, would map its
		 * page in the parent after the child was copied without it, and
		 * take the entry the child needs (the child would read zeros).
		 * Served after the event, the entry goes to the child first;
		 * after a REMOVE, the page reads zeros as it must.
		 */
		for (ssize_t i = 0; i < n && !t->dead; i++)
			if (msgs[i].event != UFFD_EVENT_PAGEFAULT)
				fault_event(t, &msgs[i]);
		for (ssize_t i = 0; i < n && !t->dead; i++)
			if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
				fault_event(t, &msgs[i]);
		if (t->dead)
			return;
	}
}

/* Faults that wait on a batch: throttled ones, or ones on its pages. */
bool fault_throttled_pending(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (!t->dead && (t->waits.nthrottled || (t->evict.batch && t->evict.batch->ndeferred)))
			return true;
	return false;
}

/*
 * Once per loop turn: the held faults whose batch committed or whose time
 * is up, and those on the pages of a batch that does not commit.
 */
void fault_throttled_turn(struct daemon *d)
{
	uint64_t now = now_usec();

	for (struct target *t = d->targets; t; t = t->next) {
		struct uffd_msg *msgs = t->waits.throttled;
		uint32_t n = t->waits.nthrottled;

		if (!t->dead)
			evict_serve_stuck(t);
		if (!n || t->dead ||
		    ((t->evict.batch || t->evict.pick) && !d->stop.active &&
		     now - t->waits.throttled_usec < FAULT_THROTTLE_USEC))
			continue;
		t->waits.throttled = NULL;
		t->waits.nthrottled = t->waits.throttled_cap = 0;
		for (uint32_t i = 0; i < n && !t->dead; i++)
			fault_pagefault(t, &msgs[i], false);
		free(msgs);
	}
}

bool fault_retry_pending(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if ((t->waits.nretry || t->waits.nunprotect) && !t->dead)
			return true;
	return false;
}

void fault_retry_turn(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next) {
		struct uffd_msg *msgs = t->waits.retry;
		uint32_t n = t->waits.nretry;

		if (t->waits.nunprotect && !t->dead)
			target_unprotect_retry(t);
		if (!n || t->dead)
			continue;
		/* fault_pagefault() may queue again: give it a fresh list. */
		t->waits.retry = NULL;
		t->waits.nretry = t->waits.retry_cap = 0;
		for (uint32_t i = 0; i < n && !t->dead; i++)
			fault_pagefault(t, &msgs[i], true);
		free(msgs);
		if (!t->waits.nretry)
			fault_hold_agent(t, false);
	}
}
