// SPDX-License-Identifier: GPL-2.0-only
/*
 * loop.c - the daemon's one event loop.
 *
 * epoll over the listening socket, the signalfd, every connection, every
 * target's uffd and pidfd.  Each watch carries its own handler.  Besides
 * events the loop does three timed things: retry faults that met a changing
 * mm (EAGAIN from UFFDIO_COPY) after 50 us, reap dead targets at the end of
 * each turn (so no handler frees what another is still using), and once a
 * second: sd_notify STATUS/WATCHDOG and the liveness probe of targets.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <time.h>

#include "daemon.h"
#include "log.h"
#include "pool.h"

#define LOOP_MAX_EVENTS 64
#define LOOP_RETRY_USEC 50 /* an mm change (fork, mremap, our agent's drop) takes microseconds */
#define LOOP_TICK_MS 1000   /* housekeeping period */
#define LOOP_LIMIT_MS 100   /* how often process limits are checked (memory.high-like) */

int loop_add(struct daemon *d, struct watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
		return -errno;
	return 0;
}

void loop_del(struct daemon *d, struct watch *w)
{
	if (w->fd >= 0)
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

/*
 * Freed entries leave holes in slabs the pool cannot give back: once the
 * holes add up to a tenth of the pool (and 1 MiB), move objects to close
 * them, 64 at a time (about 200 us, measured with tests/unit/check_pool.c's
 * figures) so that no turn of the loop stalls the faults behind it.
 */
static void loop_compact(struct daemon *d)
{
	uint64_t frag = pool_fragmented_bytes(d->pool);

	if (frag >= (1u << 20) && frag * 10 >= pool_total_size(d->pool))
		d->st.compacted_bytes += pool_compact_some(d->pool, 64);
}

static bool loop_any_limit(const struct daemon *d)
{
	for (const struct target *t = d->targets; t; t = t->next)
		if (reclaim_limited(t) && !t->dead)
			return true;
	return false;
}

static void loop_housekeeping(struct daemon *d)
{
	uint64_t now = now_usec();
	struct target *t;

	if (!d->stopping) {
		bool tick = now - d->last_limit_usec >= LOOP_LIMIT_MS * 1000u;

		if (tick)
			d->last_limit_usec = now;
		reclaim_enforce_limits(d, tick);
		reclaim_idle_sweep(d);
	}

	if (now - d->last_housekeeping_usec < LOOP_TICK_MS * 1000u)
		return;
	d->last_housekeeping_usec = now;
	/* A child forked without our atfork handler (raw clone) has no pidfd:
	 * only a failing ioctl tells us its mm is gone. */
	for (t = d->targets; t; t = t->next)
		if (t->pidfd_w.fd < 0 && !t->dead && !target_mm_alive(t))
			target_kill(t, "mm gone");
	/* Empty slabs that sat in the pool's cache through a whole tick go back. */
	pool_trim(d->pool);
	notify_watchdog(d);
	notify_status(d);
}

static uint64_t loop_faults_served(const struct daemon *d)
{
	return d->st.loads + d->st.zero_fills;
}

/*
 * epoll_wait, but after a turn that served a fault, poll (timeout 0) for up
 * to fault_spin_usec first: the next fault of a burst then skips the
 * sleep/wake-up of both vCPUs, which is most of a round trip here.
 */
static int loop_wait(struct daemon *d, struct epoll_event *evs, uint64_t timeout_usec)
{
	struct timespec ts = { (time_t)(timeout_usec / 1000000), (long)(timeout_usec % 1000000) * 1000 };
	uint64_t spin = d->cfg.fault_spin_usec, until;
	int n;

	if (spin && loop_faults_served(d) != d->spin_mark) {
		d->spin_mark = loop_faults_served(d);
		until = now_usec() + spin;
		do {
			n = epoll_wait(d->epfd, evs, LOOP_MAX_EVENTS, 0);
			if (n != 0)
				return n;
		} while (now_usec() < until);
	}
	/* epoll_pwait2: a retry 50 us away must not sleep a whole millisecond. */
	return epoll_pwait2(d->epfd, evs, LOOP_MAX_EVENTS, &ts, NULL);
}

/* Runs until the daemon has stopped.  Returns the process exit code. */
int loop_run(struct daemon *d)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	uint64_t timeout;
	int n;

	for (;;) {
		timeout = reclaim_picking(d) || evict_committing(d) || restore_active(d) ? 0
			  : fault_retry_pending(d)			? LOOP_RETRY_USEC
			  : fault_throttled_pending(d)			? FAULT_THROTTLE_USEC / 10
			  : loop_any_limit(d)				? LOOP_LIMIT_MS * 1000
									: LOOP_TICK_MS * 1000;
		if (d->stopping && !evict_committing(d))
			timeout = 10000;
		n = loop_wait(d, evs, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "epoll_wait failed: %m"), 1;
		}
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;

			w->fn(d, w, evs[i].events);
		}
		fault_retry_all(d);
		fault_release_throttled(d);
		evict_commit_all(d);
		reclaim_continue(d);
		restore_continue(d);
		wb_run(d);
		loop_compact(d);
		target_reap(d);
		conn_reap(d);
		loop_housekeeping(d);
		if (d->stopping && drain_step(d))
			return d->exit_code;
	}
}
