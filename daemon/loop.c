// SPDX-License-Identifier: GPL-2.0-only
/*
 * loop.c - the daemon's one event loop, and the turn it runs.
 *
 * epoll (watch.c) over the listening socket, the signalfd, every
 * connection, every target's uffd and pidfd, the swap file's completions:
 * each watch carries its owner's handler.  After the events, each module's
 * per-turn work, in an order that matters: faults waiting to be retried or
 * released first (they hold app threads), then the commits of eviction
 * batches and the next picks (reclaim), restores, writeback, compaction,
 * locking a handed-over pool;
 * then the reaper frees what died this turn, from the top down; then the
 * limits, group budgets and proactive sweeps (ten times a second); then,
 * once a second, housekeeping (sd_notify STATUS/WATCHDOG, the liveness
 * probe of targets without a pidfd, the rates of the last minute, the
 * cgroups' limits, trimming the pool's slab cache).
 */
#include <errno.h>
#include <sched.h>

#include "daemon.h"
#include "persist/persist.h"
#include "log.h"
#include "pool.h"
#include "persist/journal.h"

#define LOOP_MAX_EVENTS 64
#define LOOP_RETRY_USEC 50 /* an mm change (fork, mremap, our agent's drop) takes microseconds */
#define LOOP_TICK_MS 1000   /* housekeeping period */
#define LOOP_LIMIT_MS 100   /* how often process limits are checked (memory.high-like) */
#define LOOP_CHECK_USEC 100000 /* how often an upgrade's binary that says nothing is timed */
#define LOOP_COMPACT_CHECK_USEC 10000 /* how often a pool with nothing to compact is looked at */
#define LOOP_COMPACT_QUIET_USEC 1000 /* compaction waits for this long without a fault... */
#define LOOP_COMPACT_STARVE_USEC 100000 /* ...but not longer than this between its steps */
#define LOOP_COMPACT_MOVES 64

static uint64_t loop_faults_served(const struct daemon *d)
{
	return d->st.loads + d->st.zero_fills;
}

/* When a step may come: after a millisecond without a fault, or the starve bound. */
static uint64_t loop_compact_due(const struct daemon *d)
{
	uint64_t starved = d->turn.compact_step_usec + LOOP_COMPACT_STARVE_USEC;

	return d->turn.compact_quiet_usec < starved ? d->turn.compact_quiet_usec : starved;
}

/*
 * Freed entries leave holes in slabs the pool cannot give back: once the
 * holes add up to a tenth of the pool (and 1 MiB), move objects to close
 * them, 64 at a time (about 200 us, most of it the holes punched in emptied
 * slabs, each a TLB flush on every CPU).
 *
 * Faults first: a load is what frees most objects, so the holes grow
 * fastest while a process faults its pages back, and a step taken then is
 * 200 us that the next fault waits (docs/benchmarks.md, "Compaction
 * pacing").  So a step waits for a millisecond without a fault, or, in a
 * stream that never pauses, for LOOP_COMPACT_STARVE_USEC since the last
 * step: compaction still gets somewhere, and its stalls stay under one
 * load in a thousand.
 */
static void loop_compact(struct daemon *d)
{
	uint64_t frag, now = now_usec(), served = loop_faults_served(d);

	if (served != d->turn.compact_faults_mark) {
		d->turn.compact_faults_mark = served;
		d->turn.compact_quiet_usec = now + LOOP_COMPACT_QUIET_USEC;
	}
	/* Summing the classes is a walk of all of them: not at every fault's
	 * turn, only after a step or every LOOP_COMPACT_CHECK_USEC. */
	if (now >= d->turn.compact_check_usec) {
		frag = pool_fragmented_bytes(d->pool);
		d->turn.compact_wanted = frag >= (1u << 20) && frag * 10 >= pool_total_size(d->pool);
		d->turn.compact_check_usec = now + LOOP_COMPACT_CHECK_USEC;
	}
	if (!d->turn.compact_wanted || now < loop_compact_due(d))
		return;
	d->st.compacted_bytes += pool_compact_some(d->pool, LOOP_COMPACT_MOVES);
	d->turn.compact_step_usec = now;
	d->turn.compact_check_usec = 0; /* done yet? */
}

/* How long until loop_compact() may take its next step: UINT64_MAX if it has none to take. */
static uint64_t loop_compact_timeout(const struct daemon *d, uint64_t now)
{
	uint64_t at = loop_compact_due(d);

	if (!d->turn.compact_wanted)
		return UINT64_MAX;
	return at > now ? at - now : 0;
}

/*
 * A handed-over pool (handover_load.c) is locked again 4 MiB a turn (about
 * 1 ms): under mlockall, mapping its pages locks them, and until then a
 * fault reading one maps it.
 */
#define LOOP_LOCK_BYTES (4u << 20)

static void loop_lock_pool(struct daemon *d)
{
	if (!d->turn.pool_locking || !pool_populate_some(d->pool, &d->turn.pool_lock_cursor, LOOP_LOCK_BYTES))
		return;
	d->turn.pool_locking = false;
	log_info("the handed-over pool is locked again: %llu MiB in %llu ms",
		 (unsigned long long)(pool_total_size(d->pool) >> 20),
		 (unsigned long long)((now_usec() - d->turn.pool_lock_usec) / 1000));
}

static bool loop_any_limit(const struct daemon *d)
{
	if (group_any(d))
		return true;
	for (const struct target *t = d->targets; t; t = t->next)
		if (target_limited(t) && !t->dead)
			return true;
	return false;
}

static void loop_housekeeping(struct daemon *d)
{
	uint64_t now = now_usec();
	struct target *t;

	idlepoll_turn(d);
	if (!d->stop.active) {
		bool tick = now - d->turn.limit_usec >= LOOP_LIMIT_MS * 1000u;

		if (tick)
			d->turn.limit_usec = now;
		reclaim_enforce_limits(d, tick);
		if (d->groups.cgroups_changed) /* a process that grows fast must not wait a second */
			group_refresh(d);
		group_enforce(d, tick);
		proactive_turn(d);
	}

	if (now - d->turn.housekeeping_usec < LOOP_TICK_MS * 1000u)
		return;
	d->turn.housekeeping_usec = now;
	/* Only a failing ioctl tells us an mm is gone when its process lives
	 * on: an exec (its pidfd fires at exit only), or a child forked
	 * without our atfork handler, which has no pidfd. */
	for (t = d->targets; t; t = t->next)
		if (!t->dead && !target_mm_alive(t))
			target_kill(t, t->pidfd_w.fd < 0 ? "mm gone" : "exec'd");
	for (t = d->targets; t; t = t->next)
		target_tick(t, now / 1000);
	if (!d->stop.active)
		group_refresh(d);
	pressure_tick(d);
	if (!d->stop.active)
		restore_unclaimed(d);
	/* Empty slabs that sat in the pool's cache through a whole tick go back. */
	pool_trim(d->pool);
	notify_watchdog(d);
	notify_status(d);
}

/*
 * A dead target: what other modules had going on it ends (the reclaim and
 * the restore are answered, a batch in flight is put back from staging
 * into the children forked meanwhile, reads in flight complete into
 * nothing), its connection closes, then it is freed.
 */
static void loop_reap_target(struct daemon *d, struct target *t)
{
	reclaim_end(t, -ESRCH);
	restore_end(t, -ESRCH);
	evict_abort(t);
	evict_pick_free(t);
	evict_forget_child(d, t);
	wb_forget_target(t);
	if (t->conn) {
		t->conn->target = NULL;
		conn_close(t->conn, "target gone");
	}
	target_free(t);
}

void loop_reap(struct daemon *d)
{
	struct target **pp = &d->targets, *t;

	for (struct conn *c = d->conns.list; c; c = c->next)
		if (c->doomed && !c->dead)
			conn_close(c, c->doomed);
	while ((t = *pp)) {
		if (t->dead) {
			*pp = t->next;
			loop_reap_target(d, t);
		} else {
			pp = &t->next;
		}
	}
	conn_reap(d);
}

/*
 * Waits for events, but after a turn that served a fault, polls (timeout
 * 0) for up to fault_spin_usec first: the next fault of a burst then skips
 * the sleep/wake-up of both CPUs, which is most of a round trip.
 *
 * Yielding the CPU between two polls: the thread just woken may be queued
 * on this CPU (the scheduler puts a woken task near its waker), and a poll
 * that kept the CPU would make it wait the whole spin (docs/benchmarks.md,
 * "Yielding between polls").  Nothing else queued, the yield returns at
 * once.
 */
static int loop_wait(struct daemon *d, struct epoll_event *evs, uint64_t timeout_usec)
{
	uint64_t spin = d->cfg.fault.fault_spin_usec, until;
	int n;

	if (spin && loop_faults_served(d) != d->turn.spin_mark) {
		d->turn.spin_mark = loop_faults_served(d);
		until = now_usec() + spin;
		do {
			n = watch_wait(d->epfd, evs, LOOP_MAX_EVENTS, 0);
			if (n != 0)
				return n;
			sched_yield();
		} while (now_usec() < until);
	}
	return watch_wait(d->epfd, evs, LOOP_MAX_EVENTS, timeout_usec);
}

/* How long the next wait may be: no longer than the next thing due. */
static uint64_t loop_timeout_work(const struct daemon *d)
{
	if (d->stop.active && !evict_committing(d))
		return 10000;
	if (reclaim_picking(d) || evict_committing(d) || restore_active(d) || d->turn.pool_locking)
		return 0;
	if (fault_retry_pending(d))
		return LOOP_RETRY_USEC;
	if (upgrade_checking(d)) /* its answer wakes us; its silence must too */
		return LOOP_CHECK_USEC;
	if (fault_throttled_pending(d))
		return FAULT_THROTTLE_USEC / 10;
	if (recomp_pending(d))
		return RECOMP_TURN_USEC;
	return loop_any_limit(d) ? LOOP_LIMIT_MS * 1000 : LOOP_TICK_MS * 1000;
}

/* ... nor than a hold of idle CPUs polling that is due to go (idlepoll.h),
 * nor than compaction's next step. */
static uint64_t loop_timeout(const struct daemon *d)
{
	uint64_t now = now_usec(), t = loop_timeout_work(d);
	uint64_t hold = idlepoll_timeout(&d->idlepoll.burst, now), compact = loop_compact_timeout(d, now);

	if (hold < t)
		t = hold;
	return compact < t ? compact : t;
}

/* Runs until the daemon has stopped.  Returns the process exit code. */
int loop_run(struct daemon *d)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int n;

	for (;;) {
		n = loop_wait(d, evs, loop_timeout(d));
		if (n == -EINTR)
			continue;
		if (n < 0)
			return log_error_errno(n, "epoll_wait failed: %m"), 1;
		watch_dispatch(d, evs, n);
		fault_retry_turn(d);
		fault_throttled_turn(d);
		evict_commit_turn(d);
		reclaim_turn(d);
		restore_turn(d);
		wb_turn(d);
		recomp_turn(d);
		loop_compact(d);
		loop_lock_pool(d);
		loop_reap(d);
		journal_turn(d);
		loop_housekeeping(d);
		if (d->restart.active) {
			if (restart_step(d))
				return 0; /* the store kept for the next zswapd */
		} else if (d->upgrade.active || upgrade_checking(d))
			upgrade_step(d); /* execs the new binary once quiet */
		else if (d->stop.active && drain_step(d))
			return d->stop.exit_code;
	}
}
