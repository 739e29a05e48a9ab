// SPDX-License-Identifier: GPL-2.0-only
/*
 * proactive.c - compress what has gone cold without being asked, and back
 * off when that costs the process.
 *
 * Like the kernel's proactive reclaim (TMO/Senpai at Meta, far memory at
 * Google): a page not wanted back for idle_evict_seconds (the cold age) is
 * evicted, while the process's refault rate and the stall zswapd causes it
 * stay under their targets.  zswapd has no access bits (hot.h): what it
 * knows of a page's heat is whether it came back.  So each process gets a
 * sweep every cold age / 4 that takes what did not come back within the
 * cold age; a page in use is taken once, comes back at its next touch, and
 * is then left alone for a while (below).  A process is first swept once it
 * has been served for a cold age, so that what it touches at start-up is
 * not taken just because zswapd never saw it come back.
 *
 * Each sweep looks back at the last minute (rate.h): pages faulted back per
 * minute over the process's anonymous memory (proactive_refault_permille),
 * and microseconds its threads waited on faults per second
 * (proactive_stall_permille of a second).  Over either target the process
 * backs off: its sweeps come half as often and a page that came back is
 * left alone twice as long, up to PROACTIVE_MAX_BACKOFF times.  It speeds
 * up again one step once it has been under half of both targets for a whole
 * such window.  Without access bits a page in use is known only by coming
 * back, so its protection must run out some time for the page to be probed
 * again, and each probe of a hot set refaults all of it: the window is at
 * least PROACTIVE_MIN_PROTECT cold ages and grows with the backoff, so that
 * the probes thin out (docs/benchmarks.md, "Pages that came back").  Under
 * memory pressure (pressure.c) sweeps come at once, backoff or not: pages
 * that go then keep the host away from the OOM killer.  Each change of
 * state is logged once at info level.
 */
#include "daemon.h"
#include "log.h"

#define PROACTIVE_PRESSURE_USEC 1000000 /* under pressure: a sweep at most once a second */

static uint64_t proactive_period_usec(const struct daemon *d)
{
	return (uint64_t)d->cfg.policy.idle_evict_seconds * 1000000u / 4;
}

/* Refaults per minute per 1000 pages of its anonymous memory, and stall per second in permille. */
static void proactive_costs(const struct target *t, uint64_t *refault_pm, uint64_t *stall_pm)
{
	uint64_t kb = 0, pages;

	if (proc_status_kb(t->pid, "RssAnon", &kb) == 0)
		pages = kb / (ZS_PAGE_SIZE / 1024) + target_evicted_pages(t);
	else
		pages = t->limit.rss_pages + target_evicted_pages(t);

	*refault_pm = rate_per_minute(&t->counts.loads_rate) * 1000 / (pages ? pages : 1);
	/* usec per minute / 60 s * 1000 = per-mille of each second spent waiting */
	*stall_pm = rate_per_minute(&t->counts.stall_rate) / 60000;
}

static void proactive_adjust(struct target *t, uint64_t now)
{
	const struct cfg *c = &t->d->cfg;
	uint64_t refault_pm, stall_pm, window;
	uint32_t was = t->proactive.backoff;
	bool over, under;

	proactive_costs(t, &refault_pm, &stall_pm);
	over = refault_pm > c->policy.proactive_refault_permille || stall_pm > c->policy.proactive_stall_permille;
	under = refault_pm * 2 <= c->policy.proactive_refault_permille &&
		stall_pm * 2 <= c->policy.proactive_stall_permille;
	window = (uint64_t)c->policy.idle_evict_seconds * 1000000u * t->proactive.backoff;
	if (!under)
		t->proactive.calm_usec = 0;
	else if (!t->proactive.calm_usec)
		t->proactive.calm_usec = now;
	if (over && t->proactive.backoff < PROACTIVE_MAX_BACKOFF) {
		t->proactive.backoff *= 2;
	} else if (under && t->proactive.backoff > 1 && now - t->proactive.calm_usec >= window) {
		/* Calm for a whole protection window: its hot pages may be
		 * probed again sooner. */
		t->proactive.backoff /= 2;
		t->proactive.calm_usec = now;
	}
	if (t->proactive.backoff == was)
		return;
	log_info("pid %d: proactive eviction %s: a sweep every %llu s, pages that came back left "
		 "alone %llu s (%llu refaults/min per 1000 pages, target %u; stall %llu permille, "
		 "target %u)",
		 (int)t->pid, t->proactive.backoff > was ? "backs off" : "speeds up",
		 (unsigned long long)(proactive_period_usec(t->d) * t->proactive.backoff / 1000000),
		 (unsigned long long)(target_proactive_window_ms(t) / 1000), (unsigned long long)refault_pm,
		 c->policy.proactive_refault_permille, (unsigned long long)stall_pm,
		 c->policy.proactive_stall_permille);
}

static void proactive_one(struct target *t, uint64_t now, bool pressure)
{
	uint64_t period = proactive_period_usec(t->d);
	bool due;

	if (!t->proactive.backoff)
		t->proactive.backoff = 1;
	if (!t->proactive.next_usec) /* the first: once it has been served a cold age */
		t->proactive.next_usec = t->counts.started_usec + period * 4;
	due = now >= t->proactive.next_usec ||
	      (pressure && now - t->proactive.last_usec >= PROACTIVE_PRESSURE_USEC &&
	       now - t->counts.started_usec >= PROACTIVE_PRESSURE_USEC);
	if (!due || t->dead || t->reclaim || t->evict.batch || t->restore || !t->agent.tid)
		return; /* not yet, or busy: a later turn looks again */
	proactive_adjust(t, now);
	t->proactive.last_usec = now;
	t->proactive.next_usec = now + period * t->proactive.backoff;
	if (reclaim_internal(t, UINT64_MAX / 2, true) == 0)
		t->d->st.proactive_sweeps++;
}

void proactive_turn(struct daemon *d)
{
	uint64_t now = now_usec();
	bool pressure = pressure_active(d);

	if (!d->cfg.policy.idle_evict_seconds || d->stop.active)
		return;
	for (struct target *t = d->targets; t; t = t->next)
		if (t->pid)
			proactive_one(t, now, pressure);
}

uint64_t proactive_backed_off(const struct daemon *d)
{
	uint64_t n = 0;

	for (const struct target *t = d->targets; t; t = t->next)
		n += t->proactive.backoff > 1;
	return n;
}
