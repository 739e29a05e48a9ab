// SPDX-License-Identifier: GPL-2.0-only
/*
 * fault.c - the uffd service: faults (zswap_load) and the events by which
 * the kernel tells us the app changed its memory (invalidate).
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
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "compat.h"
#include "comp.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"

#define FAULT_READ_BATCH 32

int uffd_wake(struct target *t, uint64_t addr, uint64_t len)
{
	struct uffdio_range range = { .start = addr, .len = len };

	if (ioctl(t->uffd_w.fd, UFFDIO_WAKE, &range) < 0)
		return -errno;
	return 0;
}

int uffd_zeropage(struct target *t, uint64_t addr)
{
	struct uffdio_zeropage zp = { .range = { .start = addr, .len = ZS_PAGE_SIZE }, .mode = 0 };

	if (ioctl(t->uffd_w.fd, UFFDIO_ZEROPAGE, &zp) < 0)
		return -errno;
	return 0;
}

static int uffd_unprotect_now(struct target *t, uint64_t addr, uint64_t len)
{
	struct uffdio_writeprotect wp = { .range = { .start = addr, .len = len }, .mode = 0 };

	if (ioctl(t->uffd_w.fd, UFFDIO_WRITEPROTECT, &wp) < 0)
		return -errno;
	return 0;
}

static int uffd_unprotect_push(struct target *t, uint64_t addr, uint64_t len)
{
	if (t->nunprotect == t->unprotect_cap) {
		uint32_t cap = t->unprotect_cap ? t->unprotect_cap * 2 : 16;
		struct uffdio_range *u = realloc(t->unprotect, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		t->unprotect = u;
		t->unprotect_cap = cap;
	}
	t->unprotect[t->nunprotect++] = (struct uffdio_range){ .start = addr, .len = len };
	return 0;
}

/*
 * Lifts write-protection from [addr, addr+len) and wakes whoever waited on
 * it.  While an event of the app is pending (its madvise, munmap, mremap)
 * the kernel says EAGAIN and neither lifts nor wakes: a writer would wait
 * for ever (memtest churn hung so).  Such a range is lifted again from the
 * loop (fault_retry_all) until it goes through.
 */
int uffd_unprotect(struct target *t, uint64_t addr, uint64_t len)
{
	int r = uffd_unprotect_now(t, addr, len);

	return r == -EAGAIN ? uffd_unprotect_push(t, addr, len) : r;
}

/*
 * A new batch has just protected [addr, addr+len): a lift still pending
 * there from before must not take that protection away under the batch (a
 * write between the agent's copy and its drop would be lost).  The batch's
 * own lift wakes whoever waited on the old one.  A right part that cannot
 * be kept (ENOMEM) is woken instead: its writers fault again, and a
 * write-protect fault outside a batch lifts the protection.
 */
int uffd_unprotect_cancel(struct target *t, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;
	uint32_t n = t->nunprotect, kept = 0;
	int r = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct uffdio_range u = t->unprotect[i];
		uint64_t u_end = u.start + u.len;

		if (u_end <= addr || u.start >= end)
			continue;
		/* The left part stays in place, the right part goes to the end. */
		t->unprotect[i].len = u.start < addr ? addr - u.start : 0;
		if (u_end > end && uffd_unprotect_push(t, end, u_end - end) < 0) {
			r = -ENOMEM;
			uffd_wake(t, end, u_end - end);
		}
	}
	for (uint32_t i = 0; i < t->nunprotect; i++)
		if (t->unprotect[i].len)
			t->unprotect[kept++] = t->unprotect[i];
	t->nunprotect = kept;
	return r;
}

/* The write-protections that met EAGAIN, once more; those that fail for good wake anyway. */
static void uffd_unprotect_retry(struct target *t)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < t->nunprotect; i++) {
		struct uffdio_range *u = &t->unprotect[i];
		int r = uffd_unprotect_now(t, u->start, u->len);

		if (r == -EAGAIN)
			t->unprotect[kept++] = *u;
		else if (r < 0)
			uffd_wake(t, u->start, u->len);
	}
	t->nunprotect = kept;
}

/* Maps page at addr and wakes its waiters (or nobody); -EEXIST if something is mapped there. */
int fault_copy_page(struct target *t, uint64_t addr, const void *page, bool wake)
{
	struct uffdio_copy copy = {
		.dst = addr,
		.src = (uint64_t)(uintptr_t)page,
		.len = ZS_PAGE_SIZE,
		.mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
	};

	if (ioctl(t->uffd_w.fd, UFFDIO_COPY, &copy) < 0)
		return -errno;
	return 0;
}

/*
 * UFFDIO_COPY (and ZEROPAGE) says EEXIST when the page is there, but also when the PMD
 * above it is not a page table it can fill: a huge page, or a PMD that is
 * not present at that instant (mfill_establish_pmd, mm/userfaultfd.c).  On
 * EEXIST the caller drops the entry, or the page it was putting back,
 * believing the process has it: never on the ioctl's word alone.  A page
 * that is not there after all is EAGAIN, retried like any other.
 */
int uffd_fill_checked(struct target *t, uint64_t addr, int r)
{
	if (r != -EEXIST || t->pid == 0 || proc_page_present(t->pid, addr) != 0)
		return r;
	t->d->st.uffd_errors++;
	log_warning("pid %d: UFFDIO_COPY/ZEROPAGE at %#llx said EEXIST on a missing page; retrying",
		    (int)t->pid, (unsigned long long)addr);
	return -EAGAIN;
}

/* Asks our agent to leave a gap between its drops (ZS_STAGING_HOLD). */
static void fault_hold_agent(struct target *t, bool hold)
{
	if (t->staging)
		__atomic_store_n(ZS_STAGING_HOLD(t->staging, t->staging_pages), hold ? 1u : 0u,
				 __ATOMIC_RELEASE);
}

int fault_msgs_push(struct uffd_msg **msgs, uint32_t *n, uint32_t *cap, const struct uffd_msg *msg)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		struct uffd_msg *m = realloc(*msgs, c * sizeof(*m));

		if (!m)
			return -ENOMEM;
		*msgs = m;
		*cap = c;
	}
	(*msgs)[(*n)++] = *msg;
	return 0;
}

static int fault_queue_retry(struct target *t, const struct uffd_msg *msg)
{
	fault_hold_agent(t, true);
	return fault_msgs_push(&t->retry, &t->nretry, &t->retry_cap, msg);
}

/* One debug line per fault served: what it found, and what the ioctl said. */
static void fault_log(const struct target *t, const struct uffd_msg *msg, const char *what, int r)
{
	if (log_get_level() < LOG_LVL_DEBUG)
		return;
	log_debug("pid %d: fault at %#llx (%s%s) tid %u: %d", (int)t->pid,
		  (unsigned long long)(msg->arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1)),
		  what, msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE ? ", write" : "",
		  msg->arg.pagefault.feat.ptid, r);
}

/*
 * Serves one missing-page fault now: the entry if there is one (and drops
 * it: the page is the app's again), else a zero page.  Returns 0 when the
 * fault is resolved one way or another, -EAGAIN when it must be retried.
 */
int fault_serve(struct target *t, const struct uffd_msg *msg)
{
	uint64_t addr = msg->arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1);
	uint64_t pgno = addr >> ZS_PAGE_SHIFT;
	struct daemon *d = t->d;
	const char *what;
	struct entry *e;
	int r;

	e = idx_lookup(t->idx, pgno);
	what = !e ? "no entry" : e->where == ENTRY_ON_DISK ? "on disk" : "entry";
	if (!e) {
		if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) {
			memset(d->page_buf, 0, ZS_PAGE_SIZE);
			r = fault_copy_page(t, addr, d->page_buf, true);
		} else {
			r = uffd_zeropage(t, addr);
		}
		if (r == 0)
			d->st.zero_fills++;
		goto done;
	}

	if (e->where == ENTRY_ON_DISK) {
		/* Answered when the block arrives (wb_read_done). */
		r = wb_read(t, msg, e);
		if (r == 0)
			wb_readahead(t, addr);
		fault_log(t, msg, what, r);
		return r < 0 ? -EAGAIN : 0;
	}
	if (e->readahead) {
		d->st.readahead_hits++;
		e->readahead = 0;
		wb_readahead(t, addr); /* a sequential reader keeps its readahead going */
	}
	if (entry_is_zero(e) && !(msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE)) {
		r = uffd_fill_checked(t, addr, uffd_zeropage(t, addr));
	} else {
		r = entry_load(d, e, d->page_buf);
		if (r < 0) {
			/* Never map garbage: the page stays missing and the app waits
			 * rather than reading corrupt data.  This is a daemon bug. */
			log_error_errno(r, "pid %d: entry at %#llx does not decompress: %m",
					(int)t->pid, (unsigned long long)addr);
			d->st.uffd_errors++;
			return 0;
		}
		r = uffd_fill_checked(t, addr, fault_copy_page(t, addr, d->page_buf, true));
	}
	if (r == 0 || r == -EEXIST) {
		/* EEXIST: mapped meanwhile by a COPY of ours; the entry is stale either way. */
		idx_erase(t->idx, pgno);
		t->compressed_bytes -= e->len;
		target_note_refault(t, addr, e);
		t->loads++;
		d->st.loads++;
		entry_put(d, e);
	}
done:
	fault_log(t, msg, what, r);
	switch (r) {
	case 0:
		t->faults_since_check++;
		return 0;
	case -EAGAIN:
		return -EAGAIN;
	case -EEXIST:
	case -ENOENT:
	case -EFAULT:
		uffd_wake(t, addr, ZS_PAGE_SIZE);
		return 0;
	case -ESRCH:
		target_kill(t, "mm gone");
		return 0;
	default:
		d->st.uffd_errors++;
		log_warning_errno(r, "pid %d: cannot serve fault at %#llx: %m", (int)t->pid,
				  (unsigned long long)addr);
		uffd_wake(t, addr, ZS_PAGE_SIZE);
		return 0;
	}
}

/* A forked child names itself by faulting on its beacon page. */
static void fault_learn_pid(struct target *t, const struct uffd_msg *msg)
{
	pid_t tgid;

	if (!(t->features & UFFD_FEATURE_THREAD_ID) ||
	    proc_tgid_of((pid_t)msg->arg.pagefault.feat.ptid, &tgid) < 0)
		return;
	if (target_set_pid(t, tgid) < 0)
		return;
	for (struct conn *c = t->d->conns; c; c = c->next) {
		if (!c->dead && c->kind == CONN_SHIM && !c->target &&
		    (c->hello_flags & ZS_HELLO_FORKED) && c->cred.pid == tgid) {
			if (target_adopt(t, c) < 0)
				conn_close(c, "cannot hand over the child's uffd");
			break;
		}
	}
}

/* Whether eviction is under way on t, so that a held fault gets released. */
static bool fault_may_hold(const struct target *t)
{
	return t->batch ? !evict_batch_stuck(t) : t->pick != NULL;
}

/* Holds a fault of a process over its limit (reclaim_throttle). */
static int fault_throttle(struct target *t, const struct uffd_msg *msg)
{
	if (!t->nthrottled)
		t->throttled_usec = now_usec();
	return fault_msgs_push(&t->throttled, &t->nthrottled, &t->throttled_cap, msg);
}

static void fault_pagefault(struct target *t, const struct uffd_msg *msg, bool may_throttle)
{
	uint64_t addr = msg->arg.pagefault.address & ~(uint64_t)(ZS_PAGE_SIZE - 1);
	pid_t ptid = (pid_t)msg->arg.pagefault.feat.ptid;
	uint32_t slot;

	if (t->pid == 0)
		fault_learn_pid(t, msg);

	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		/* In a batch: the commit lifts it (our own agent: at once, with a
		 * veto on dropping the page; anyone, once the batch is stuck:
		 * evict_note_writer).  Elsewhere: a leftover, lift now. */
		if (!evict_in_flight(t, addr, &slot))
			uffd_unprotect(t, addr, ZS_PAGE_SIZE);
		else if (ptid == t->agent_tid)
			evict_serve_agent_wp(t, addr, slot);
		else
			evict_note_writer(t, addr, slot);
		return;
	}
	if (t->batch_parent && t->batch_parent->batch) {
		/* A child forked mid-batch: the page may be one its parent had
		 * dropped, whose entry the commit is about to give us. */
		if (fault_queue_retry(t, msg) < 0)
			uffd_wake(t, addr, ZS_PAGE_SIZE);
		return;
	}
	if (evict_in_staging(t, addr, &slot)) {
		if (ptid == t->agent_tid) {
			if (evict_serve_agent_fault(t, addr, slot, true) == -EAGAIN &&
			    fault_queue_retry(t, msg) < 0)
				uffd_wake(t, addr, ZS_PAGE_SIZE);
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
	 * and a process sharing our CPU faulted 60 MiB past its limit during
	 * each (every hot window / 4, the log's turn). */
	if (may_throttle && fault_may_hold(t) && ptid != t->agent_tid && reclaim_throttle(t) &&
	    fault_throttle(t, msg) == 0) {
		t->d->st.faults_deferred++;
		t->d->st.faults_throttled++;
		return;
	}
	if (fault_serve(t, msg) == -EAGAIN && fault_queue_retry(t, msg) < 0)
		uffd_wake(t, addr, ZS_PAGE_SIZE); /* it faults again and we try again */
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
			  t->batch ? (unsigned long long)t->batch->id : 0ull,
			  t->batch && t->batch->dropped ? " committing" : "", idx_count(t->idx));
		target_new_child(t, (int)msg->arg.fork.ufd, &child);
		break;
	case UFFD_EVENT_REMAP:
		evict_forget_layout(t); /* addresses moved; the loop picks again */
		log_debug("pid %d: remap %#llx -> %#llx +%llu", (int)t->pid,
			  (unsigned long long)msg->arg.remap.from, (unsigned long long)msg->arg.remap.to,
			  (unsigned long long)msg->arg.remap.len);
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
	struct target *t = (struct target *)((char *)w - offsetof(struct target, uffd_w));
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
		n = read(t->uffd_w.fd, msgs, sizeof(msgs));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				target_kill(t, "uffd read failed");
			return;
		}
		if (n == 0 || n % (ssize_t)sizeof(msgs[0])) {
			log_error("pid %d: short uffd read (%zd bytes)", (int)t->pid, n);
			target_kill(t, "uffd broken");
			return;
		}
		/*
		 * Events first, then the faults read with them.  The kernel
		 * lets the app go on with an event (fork, madvise, mremap) as
		 * soon as it is read, not when we act on it: a fault that came
		 * before a FORK in the same read, served first, mapped its page
		 * in the parent after the child was copied without it, and
		 * took the entry the child needed (a child read zeros in its
		 * .bss).  Served after the event, the entry goes to the child
		 * first; after a REMOVE, the page reads zeros as it must.
		 */
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(msgs[0]) && !t->dead; i++)
			if (msgs[i].event != UFFD_EVENT_PAGEFAULT)
				fault_event(t, &msgs[i]);
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(msgs[0]) && !t->dead; i++)
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
		if (!t->dead && (t->nthrottled || (t->batch && t->batch->ndeferred)))
			return true;
	return false;
}

/*
 * Once per loop turn: the held faults whose batch committed or whose time
 * is up, and those on the pages of a batch that does not commit.
 */
void fault_release_throttled(struct daemon *d)
{
	uint64_t now = now_usec();

	for (struct target *t = d->targets; t; t = t->next) {
		struct uffd_msg *msgs = t->throttled;
		uint32_t n = t->nthrottled;

		if (!t->dead)
			evict_serve_stuck(t);
		if (!n || t->dead ||
		    ((t->batch || t->pick) && !d->stopping &&
		     now - t->throttled_usec < FAULT_THROTTLE_USEC))
			continue;
		t->throttled = NULL;
		t->nthrottled = t->throttled_cap = 0;
		for (uint32_t i = 0; i < n && !t->dead; i++)
			fault_pagefault(t, &msgs[i], false);
		free(msgs);
	}
}

bool fault_retry_pending(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if ((t->nretry || t->nunprotect) && !t->dead)
			return true;
	return false;
}

void fault_retry_all(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next) {
		struct uffd_msg *msgs = t->retry;
		uint32_t n = t->nretry;

		if (t->nunprotect && !t->dead)
			uffd_unprotect_retry(t);
		if (!n || t->dead)
			continue;
		/* fault_pagefault() may queue again: give it a fresh list. */
		t->retry = NULL;
		t->nretry = t->retry_cap = 0;
		for (uint32_t i = 0; i < n && !t->dead; i++)
			fault_pagefault(t, &msgs[i], true);
		free(msgs);
		if (!t->nretry)
			fault_hold_agent(t, false);
	}
}
