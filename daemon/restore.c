// SPDX-License-Identifier: GPL-2.0-only
/*
 * restore.c - swapoff for one process (`zswapctl restore PID`).
 *
 * Every evicted page of the process goes back into it, as a fault would
 * bring it (load_serve: decompress and UFFDIO_COPY, or an asynchronous
 * read from the swap file), a slice of pages per loop turn so that the
 * faults of others are served in between.  Its limit is lifted first, or
 * the limit would take the pages out again as they come in.  The process
 * stays served: a later `limit` or `reclaim` evicts it again.  Operators
 * want this before a latency-critical phase, or before attaching a
 * debugger, whose reads of evicted memory the kernel refuses (EIO).
 * The same, unasked, for a forked child no shim claimed (restore_unclaimed).
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"
#include "idx.h"
#include "log.h"

#define RESTORE_SLICE 64 /* pages per loop turn: a few hundred us */
/* A forked child's shim claims its uffd within milliseconds of the fork. */
#define RESTORE_UNCLAIMED_USEC 1000000u

struct restore {
	struct conn *conn; /* NULL once the requester went away */
	uint32_t seq;
	uint64_t loads_before; /* the target's loads when the restore began */
	uint64_t cursor;       /* the next page number to look at */
	uint32_t budget;       /* pages this turn may still bring back */
	size_t left_at_pass;   /* evicted pages when this pass over the index began */
	bool skipped;	       /* this pass passed over pages being read in */
};

int restore_begin(struct target *t, struct conn *c, uint32_t seq)
{
	struct restore *rs;

	if (t->restore)
		return -EBUSY;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->conn = c;
	rs->seq = seq;
	rs->loads_before = t->counts.loads;
	rs->left_at_pass = idx_count(t->idx);
	t->limit.bytes = 0;
	t->limit.set = true;
	reclaim_end(t, -ECANCELED);
	t->restore = rs;
	log_info("pid %d: restoring %zu evicted pages (limit lifted)", (int)t->pid,
		 idx_count(t->idx));
	return 0;
}

/* Answers the requester, if still there, and ends the restore; err < 0: failed. */
void restore_end(struct target *t, int err)
{
	struct restore *rs = t->restore;
	struct zs_restore_reply rep = { 0 };
	uint64_t kb = 0;

	if (!rs)
		return;
	t->restore = NULL;
	rep.restored_pages = t->counts.loads - rs->loads_before;
	rep.left_pages = t->dead ? 0 : idx_count(t->idx);
	if (!t->dead)
		proc_status_kb(t->pid, "RssAnon", &kb);
	rep.resident_bytes = kb * 1024;
	log_info("pid %d: restore done: %llu pages back, %llu left (%s)", (int)t->pid,
		 (unsigned long long)rep.restored_pages, (unsigned long long)rep.left_pages,
		 err < 0 ? "failed" : "ok");
	if (rs->conn && !rs->conn->dead) {
		if (err < 0)
			proto_send_error(rs->conn->w.fd, rs->seq, err,
					 err == -ESRCH ? "the process exited" : "restore stopped");
		else
			proto_send(rs->conn->w.fd, ZS_RESTORE_REPLY, rs->seq, &rep, sizeof(rep),
				   NULL, 0);
	}
	free(rs);
}

void restore_forget_conn(struct daemon *d, struct conn *c)
{
	for (struct target *t = d->targets; t; t = t->next)
		if (t->restore && t->restore->conn == c)
			t->restore->conn = NULL;
}

/* Whether the restore waits on something: a batch of its own or its parent's
 * (pages that will be in the index once it commits), or reads under way. */
static bool restore_waits(const struct target *t)
{
	return t->evict.batch || (t->evict.batch_parent && t->evict.batch_parent->evict.batch) || t->swapin.reads;
}

/* A restore has pages to bring back now: not only waiting on reads, or on
 * a batch whose agent may be stopped (the loop would spin on it). */
bool restore_active(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (t->restore && idx_count(t->idx) && !t->swapin.reads && !evict_batch_stuck(t))
			return true;
	return false;
}

static int restore_one(uint64_t pgno, void *val, void *arg)
{
	struct target *t = arg;
	struct restore *rs = t->restore;
	struct entry *e = val;

	if (rs->budget == 0)
		return -EAGAIN;
	rs->cursor = pgno + 1;
	if (e->where == ENTRY_ON_DISK) {
		if (e->reads) {
			rs->skipped = true; /* on its way in, maybe for a fork child */
			return 0;
		}
		if (!wb_read_room(t->d)) {
			rs->cursor = pgno; /* the faults' reads first */
			return -EAGAIN;
		}
	}
	rs->budget--;
	/* Not dropped if it stays: a copy refused for now (ENOMEM, a page that
	 * would not decompress) keeps its data, counted as left at the end;
	 * where the app unmapped, its event drops the entry. */
	if (load_serve(t, pgno << ZS_PAGE_SHIFT, true) == -EAGAIN) {
		rs->cursor = pgno; /* an event is pending: read it first, then again */
		return -EAGAIN;
	}
	/* load_serve() may have found the mm gone: the target is dead, and
	 * the reaper ends the restore. */
	return t->dead || !t->restore ? -ESRCH : 0;
}

/* Once per loop turn: the next slice of each restore. */
void restore_turn(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next) {
		struct restore *rs = t->restore;

		if (!rs)
			continue;
		if (t->dead) {
			restore_end(t, -ESRCH);
			continue;
		}
		rs->budget = RESTORE_SLICE;
		if (idx_walk(t->idx, rs->cursor, IDX_PGNO_MAX, restore_one, t) < 0 || !t->restore)
			continue;
		/* A whole pass done.  Pages may still be on their way (reads,
		 * a batch), and one that could not come back (an event
		 * pending) needs another pass: until one brings back nothing. */
		rs->cursor = 0;
		if (!restore_waits(t) && !rs->skipped &&
		    (!idx_count(t->idx) || idx_count(t->idx) >= rs->left_at_pass))
			restore_end(t, 0);
		else
			rs->left_at_pass = idx_count(t->idx);
		if (t->restore)
			rs->skipped = false;
	}
}

/*
 * A forked child whose shim never claimed it (it could not reach us, or it
 * forked with a raw clone() and has no shim code running): we hold the only
 * copy of its uffd.  Were we to die, the kernel would drop its
 * registrations with that copy, and every page it inherited evicted would
 * read as zeros.  So its pages come back into it while we live, once, a
 * second or two after the fork; with no shim it has no agent, and nothing
 * of it is evicted again.  It costs the child's memory what the fork would
 * have cost without us.  Once a second, from the housekeeping.
 */
void restore_unclaimed(struct daemon *d)
{
	uint64_t now = now_usec();
	int r;

	for (struct target *t = d->targets; t; t = t->next) {
		if (!t->forked || t->conn || t->unclaimed || t->dead || t->restore ||
		    now - t->counts.started_usec < RESTORE_UNCLAIMED_USEC)
			continue;
		t->unclaimed = true;
		d->st.unclaimed_children++;
		/* pid 0: it has not faulted yet, so it never told us its pid */
		log_warning("pid %d: a forked child no shim claimed: its evicted pages come back, "
			    "since only zswapd holds its uffd",
			    (int)t->pid);
		r = restore_begin(t, NULL, 0);
		if (r < 0)
			log_warning_errno(r, "pid %d: cannot bring its pages back: %m", (int)t->pid);
	}
}
