// SPDX-License-Identifier: GPL-2.0-only
/*
 * reclaim.c - `zswapctl reclaim PID SIZE`: evict up to SIZE now, like
 * cgroup memory.reclaim, one eviction batch after another, and answer once
 * with what was done.  It stops early when one sweep of the address space
 * found nothing more to take; the reply says how much it scanned.
 *
 * `zswapctl limit PID SIZE` is the same machinery run by the daemon itself,
 * like cgroup memory.high: a process whose RssAnon is over its limit gets an
 * internal reclaim of the excess.  RssAnon is read ten times a second, and
 * also as soon as the process has faulted in half the slack since the last
 * look: a process refaulting at 20 us a page would otherwise outgrow its
 * limit by 20 MiB between two ticks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comp.h"
#include "daemon.h"
#include "log.h"

/* The reply so far: what the target's commits did since the reclaim began. */
static void reclaim_tally(const struct target *t, struct reclaim *rc)
{
	rc->reply.evicted_pages = t->counts.stores - rc->stores_at_start;
	rc->reply.compressed_bytes = t->counts.stored_bytes - rc->stored_bytes_at_start;
	rc->reply.rejected_pages = t->counts.refused - rc->refused_at_start;
}

/* Counts from now on (a new reclaim, or an operator's taking over the daemon's own). */
static void reclaim_reset(const struct target *t, struct reclaim *rc, struct conn *c,
			  uint32_t seq, uint64_t bytes)
{
	memset(rc, 0, sizeof(*rc));
	rc->conn = c;
	rc->seq = seq;
	rc->want_pages = (bytes + ZS_PAGE_SIZE - 1) / ZS_PAGE_SIZE;
	rc->stores_at_start = t->counts.stores;
	rc->stored_bytes_at_start = t->counts.stored_bytes;
	rc->refused_at_start = t->counts.refused;
}

static void reclaim_finish(struct target *t, int err)
{
	struct reclaim *rc = t->reclaim;

	t->reclaim = NULL;
	reclaim_tally(t, rc);
	evict_pick_free(t);
	if (!rc->internal && rc->conn && !rc->conn->dead) {
		if (err < 0)
			proto_send_error(rc->conn->w.fd, rc->seq, err,
					 err == -ESRCH ? "the process exited" : "reclaim failed");
		else
			proto_send(rc->conn->w.fd, ZS_RECLAIM_REPLY, rc->seq, &rc->reply,
				   sizeof(rc->reply), NULL, 0);
	}
	if (err >= 0 && !rc->internal)
		log_info("pid %d: reclaimed %llu pages into %llu bytes (%llu refused, %llu scanned)",
			 (int)t->pid, (unsigned long long)rc->reply.evicted_pages,
			 (unsigned long long)rc->reply.compressed_bytes,
			 (unsigned long long)rc->reply.rejected_pages,
			 (unsigned long long)rc->reply.scanned_pages);
	free(rc);
}

void reclaim_progress(struct target *t)
{
	struct reclaim *rc = t->reclaim;
	int r;

	if (!rc)
		return;
	reclaim_tally(t, rc);
	if (rc->reply.evicted_pages >= rc->want_pages || rc->wrapped || t->d->stop.active ||
	    (!rc->internal && (!rc->conn || rc->conn->dead))) {
		reclaim_finish(t, 0);
		return;
	}
	r = evict_begin(t);
	if (r == 0)
		reclaim_finish(t, 0); /* nothing left to take */
	else if (r < 0)
		reclaim_finish(t, r);
}

static bool reclaim_can_go_on(const struct target *t)
{
	return t->reclaim && !t->evict.batch && t->agent.tid && t->conn && !t->dead;
}

/*
 * A reclaim with no batch in flight: its next batch is being picked, or its
 * pick was dropped (an UNMAP or REMAP event moved what it held).  Nothing
 * but the loop will move it on, so the loop must not sleep.
 */
bool reclaim_picking(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (reclaim_can_go_on(t))
			return true;
	return false;
}

/* Once per loop turn, after the faults: the next chunk of each pick. */
void reclaim_turn(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next)
		if (reclaim_can_go_on(t))
			reclaim_progress(t);
}

static int reclaim_begin(struct target *t, struct conn *c, uint32_t seq, uint64_t bytes,
			 bool idle_only)
{
	struct reclaim *rc = t->reclaim;

	if (t->restore)
		return -EBUSY; /* its pages are coming back: none goes out meanwhile */
	/* An operator's request takes over the daemon's own (limit, idle). */
	if (rc && rc->internal && c) {
		reclaim_reset(t, rc, c, seq, bytes);
		if (!t->evict.batch && t->agent.tid)
			reclaim_progress(t);
		return 0; /* else the batch in flight continues it */
	}
	if (rc)
		return -EBUSY;
	/* Connected but the agent has not said hello yet (a request right after
	 * start-up can overtake it): the reclaim waits for it, see conn_agent(). */
	if (!t->conn)
		return -ENOTCONN;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	reclaim_reset(t, rc, c, seq, bytes);
	rc->internal = c == NULL;
	rc->idle_only = idle_only;
	t->reclaim = rc;
	if (!t->evict.batch && t->agent.tid)
		reclaim_progress(t);
	return 0;
}

int reclaim_start(struct target *t, struct conn *c, uint32_t seq, uint64_t bytes)
{
	return reclaim_begin(t, c, seq, bytes, false);
}

/*
 * The daemon's own reclaim of t (a group's budget, proactive eviction):
 * answered to nobody, and taken over by an operator's request.
 * idle_only: cold pages only, no second pass over the hot ones.
 */
int reclaim_internal(struct target *t, uint64_t bytes, bool idle_only)
{
	if (t->dead || t->reclaim || t->evict.batch || !t->agent.tid)
		return -EBUSY;
	return reclaim_begin(t, NULL, 0, bytes, idle_only);
}

/* Pages an internal reclaim of t still means to take (0 if none). */
uint64_t reclaim_pending_pages(const struct target *t)
{
	const struct reclaim *rc = t->reclaim;

	if (!rc || !rc->internal || rc->reply.evicted_pages >= rc->want_pages)
		return 0;
	return rc->want_pages - rc->reply.evicted_pages;
}

void reclaim_end(struct target *t, int err)
{
	if (t->reclaim)
		reclaim_finish(t, err);
}

/*
 * Over the limit by this much before acting, and then evicting that much
 * more: a process at its limit would otherwise get a one-page reclaim on
 * every tick.  1/64 of the limit keeps it within 2% of it.
 */
uint64_t reclaim_slack(uint64_t limit)
{
	return limit / 64 > 256 * 1024 ? limit / 64 : 256 * 1024;
}

/*
 * The limit in force: the operator's, else default_limit_percent of the
 * process's anonymous memory (resident + evicted), so that a process that
 * grows keeps that share resident and the coldest of the rest goes.  Never
 * below 1 MiB: the floor `zswapctl limit` has.  0 = none.
 */
uint64_t reclaim_limit_of(const struct target *t, uint64_t rss)
{
	uint64_t pct = t->d->cfg.policy.default_limit_percent, limit;

	if (t->limit.set || !pct)
		return t->limit.bytes;
	limit = (rss + target_evicted_pages(t) * ZS_PAGE_SIZE) / 100 * pct;
	return limit > (1u << 20) ? limit : 1u << 20;
}

/*
 * The pages that compress too poorly to leave (t->evict.poor: refused in the
 * last minute, still resident) are as much as t's limit by themselves: no
 * eviction brings it under, and the limit's reclaim takes its hot pages
 * again and again for nothing (docs/benchmarks.md, "Pages too poor to
 * leave").  Said once per process, with the way out.
 */
bool reclaim_limit_unreachable(const struct target *t)
{
	return t->limit.last && hot_size(&t->evict.poor) * ZS_PAGE_SIZE >= t->limit.last;
}

static void reclaim_tell_unreachable(struct target *t)
{
	if (t->limit.unreachable_told || !reclaim_limit_unreachable(t) ||
	    entry_stores_incompressible(t->d))
		return;
	t->limit.unreachable_told = true;
	log_warning("pid %d: %llu MiB of its pages do not compress, more than its limit of %llu "
		    "MiB: it cannot get under it (store_incompressible = yes would store them)",
		    (int)t->pid, (unsigned long long)(hot_size(&t->evict.poor) * ZS_PAGE_SIZE >> 20),
		    (unsigned long long)(t->limit.last >> 20));
}

/*
 * Whether t is so far over its limit (by more than the slack) that its
 * faults should wait for the eviction batch in flight, as memory.high
 * throttles a cgroup that outgrows it: without that, a process that faults
 * faster than batches commit grows past its limit and stays there
 * (docs/benchmarks.md, "Throttling").  The estimate is RssAnon at the
 * last check, plus the pages faulted in since, minus those stored since.
 * Not when the pages that compress too poorly to leave (t->evict.poor) fill the
 * limit by themselves: no waiting brings the process under it then, and
 * every fault would pay a batch for nothing.
 */
bool reclaim_throttle(const struct target *t)
{
	uint64_t limit = t->limit.last, gone = t->counts.stores - t->limit.stores_at_check;
	uint64_t est = t->limit.rss_pages + t->limit.faults_since_check;

	/* A group over its budget throttles its members the same way: a
	 * member faulting its pages back faster than the group's reclaims
	 * take them would otherwise keep the group over for good. */
	if (t->group.over)
		return true;

	if (!limit || !target_limited(t) || reclaim_limit_unreachable(t))
		return false;
	est = est > gone ? est - gone : 0;
	return est * ZS_PAGE_SIZE > limit + reclaim_slack(limit);
}

void reclaim_enforce_limits(struct daemon *d, bool tick)
{
	for (struct target *t = d->targets; t; t = t->next) {
		uint64_t kb, rss, slack, limit;

		if (!target_limited(t) || t->dead || t->reclaim || t->evict.batch || !t->agent.tid)
			continue;
		/* The slack of the last limit seen: the percent one moves with RSS. */
		slack = reclaim_slack(t->limit.bytes ? t->limit.bytes : t->limit.last);
		if (!tick && t->limit.faults_since_check * ZS_PAGE_SIZE < slack / 2)
			continue;
		t->limit.faults_since_check = 0;
		if (proc_status_kb(t->pid, "RssAnon", &kb) < 0)
			continue;
		rss = kb * 1024;
		t->limit.rss_pages = rss / ZS_PAGE_SIZE;
		t->limit.stores_at_check = t->counts.stores;
		limit = t->limit.last = reclaim_limit_of(t, rss);
		slack = reclaim_slack(limit);
		if (rss <= limit + slack / 4)
			continue;
		reclaim_tell_unreachable(t);
		reclaim_begin(t, NULL, 0, rss - limit + slack, false);
	}
}
