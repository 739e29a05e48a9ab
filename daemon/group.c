// SPDX-License-Identifier: GPL-2.0-only
/*
 * group.c - one budget for many processes: every served process
 * (`zswapctl limit --all SIZE`), those of one memory cgroup (`zswapctl
 * limit --cgroup PATH SIZE`), and the limits of the memory cgroups served
 * processes run in, followed by themselves (follow_cgroup_limits).
 *
 * A per-process limit gives up the same share of a hot process as of a cold
 * one; the kernel's one LRU per cgroup takes from the cold one.  A group
 * does the same across its members, ten times a second like a limit
 * (reclaim.c): when what it holds is over its goal, the excess is taken
 * from the members in order of heat, coldest first: pages faulted back per
 * minute over the member's resident pages (its refault rate).  Each member
 * gives at most its cold pages (resident, less its hot set and what
 * compresses too poorly to leave); only when every member's cold pages are
 * spoken for does the coldest member give hot pages too.  Per-process limits
 * go on within a group: a member already reclaiming is left to it.
 *
 * What a group holds: for a budget, the members' resident anonymous memory
 * (RssAnon); for a followed cgroup limit, the cgroup's own usage (page cache
 * and other processes included, which zswapd cannot take but must leave
 * room for), held cgroup_headroom_percent under the limit so that the
 * kernel never reaches it: without swap, a cgroup at its limit with nothing
 * left to reclaim calls the OOM killer.  The pool is zswapd's memory,
 * outside the cgroup.  A cgroup's pressure event (cgroup.c: v1
 * memory.pressure_level, v2 a PSI trigger) makes the group look at once
 * rather than at the next tick.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "vmscan.h"

#define GROUP_MIN_TAKE_PAGES 64 /* a member is not sent a reclaim for less */

static bool group_has(const struct group *g, const struct target *t)
{
	if (t->dead || !t->pid)
		return false;
	return !g->cgroup[0] || (t->group.cgroup[0] && cgroup_under(t->group.cgroup, g->cgroup));
}

struct group *group_find(struct daemon *d, const char *cgroup)
{
	for (struct group *g = d->groups.list; g; g = g->next)
		if (!strcmp(g->cgroup, cgroup))
			return g;
	return NULL;
}

static void group_unwatch(struct daemon *d, struct group *g)
{
	if (g->pressure_w.fd < 0)
		return;
	watch_del(d->epfd, &g->pressure_w);
	close(g->pressure_w.fd);
	g->pressure_w.fd = -1;
}

static void group_pressure_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct group *g = watch_owner(w, struct group, pressure_w);
	uint64_t n;

	if (events & EPOLLERR) {
		/* The cgroup went away (its directory was removed). */
		group_unwatch(d, g);
		return;
	}
	if (!g->pressure_pri)
		(void)!read(w->fd, &n, sizeof(n)); /* the eventfd's count */
	d->st.pressure_events++;
	if (!g->pressure_told)
		log_info("cgroup %s: memory pressure, looking at it now", g->cgroup);
	g->pressure_told = true;
	d->turn.limit_usec = 0;
}

static void group_watch_pressure(struct daemon *d, struct group *g)
{
	bool pri = false;
	int fd = cgroup_pressure_fd(g->cgroup, d->cfg.policy.pressure_stall_ms, &pri);

	if (fd < 0) {
		log_debug("cgroup %s: no pressure events (%s): its usage is read ten times a second",
			  g->cgroup, strerror(-fd));
		return;
	}
	g->pressure_w.fd = fd;
	g->pressure_w.fn = group_pressure_ready;
	g->pressure_pri = pri;
	if (watch_add(d->epfd, &g->pressure_w, pri ? EPOLLPRI : EPOLLIN) < 0) {
		close(fd);
		g->pressure_w.fd = -1;
	}
}

/* SIGHUP changed pressure_stall_ms: every cgroup's trigger is written anew. */
void group_rewatch(struct daemon *d)
{
	for (struct group *g = d->groups.list; g; g = g->next) {
		if (!g->cgroup[0])
			continue;
		group_unwatch(d, g);
		group_watch_pressure(d, g);
	}
}

static int group_new(struct daemon *d, const char *cgroup, struct group **ret)
{
	struct group *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->d = d;
	snprintf(g->cgroup, sizeof(g->cgroup), "%s", cgroup);
	g->pressure_w.fd = -1;
	if (cgroup[0])
		group_watch_pressure(d, g);
	g->next = d->groups.list;
	d->groups.list = g;
	*ret = g;
	return 0;
}

static void group_free(struct daemon *d, struct group *g)
{
	struct group **pp = &d->groups.list;

	while (*pp != g)
		pp = &(*pp)->next;
	*pp = g->next;
	group_unwatch(d, g);
	free(g);
}

void group_free_all(struct daemon *d)
{
	while (d->groups.list)
		group_free(d, d->groups.list);
}

/* What a followed cgroup's usage is held under: its limit less the headroom. */
static uint64_t group_limit_goal(const struct daemon *d, const struct group *g)
{
	return g->limit - g->limit / 100 * d->cfg.policy.cgroup_headroom_percent;
}

/*
 * The limit a served process's cgroup is held under: its own, else the
 * nearest ancestor's (a slice's limit holds its services).  Walks up the
 * path in place; path is left naming the cgroup whose limit it is.
 */
static bool group_limited_ancestor(char *path, uint64_t *ret_limit)
{
	for (;;) {
		uint64_t limit;
		char *slash;

		if (strcmp(path, "/") && cgroup_limit(path, &limit) == 0 && limit != CGROUP_NO_LIMIT) {
			*ret_limit = limit;
			return true;
		}
		slash = strrchr(path, '/');
		if (!slash || slash == path)
			return false;
		*slash = '\0';
	}
}

/*
 * Once a second: a group for each limited cgroup a served process is in,
 * and the limits of those there are read again.  A followed group whose
 * limit went and that has no budget of an operator's goes.
 */
void group_refresh(struct daemon *d)
{
	struct group *g, *next;

	d->groups.cgroups_changed = false;
	if (d->cfg.policy.follow_cgroup_limits) {
		for (struct target *t = d->targets; t; t = t->next) {
			char path[CGROUP_PATH_MAX];
			uint64_t limit;

			if (t->dead || !t->group.cgroup[0] || !strcmp(t->group.cgroup, "/"))
				continue;
			memcpy(path, t->group.cgroup, sizeof(path));
			if (!group_limited_ancestor(path, &limit))
				continue;
			g = group_find(d, path);
			if (!g && group_new(d, path, &g) < 0)
				continue;
			if (!g->follows) {
				g->follows = true;
				g->limit = limit;
				log_info("cgroup %s: limit %llu MiB, kept %u%% under it by evicting its "
					 "served processes' cold pages", g->cgroup,
					 (unsigned long long)(limit >> 20), d->cfg.policy.cgroup_headroom_percent);
			}
		}
	}
	for (g = d->groups.list; g; g = next) {
		uint64_t limit = CGROUP_NO_LIMIT;

		next = g->next;
		if (!g->follows)
			continue;
		if (d->cfg.policy.follow_cgroup_limits && cgroup_limit(g->cgroup, &limit) == 0 &&
		    limit != CGROUP_NO_LIMIT) {
			g->limit = limit;
			continue;
		}
		log_info("cgroup %s: %s, no longer followed", g->cgroup,
			 d->cfg.policy.follow_cgroup_limits ? "its limit is gone" : "follow_cgroup_limits = no");
		g->follows = false;
		g->limit = 0;
		if (!g->budget)
			group_free(d, g);
	}
}

/* The member's refault rate, in refaults per minute per 1024 resident pages: its heat. */
static uint64_t group_heat(const struct target *t)
{
	return (rate_per_minute(&t->counts.loads_rate) << 10) / (t->group.anon_pages ? t->group.anon_pages : 1);
}

/* What the member can give up without touching its hot set. */
static uint64_t group_cold_pages(struct target *t)
{
	uint64_t keep = target_hot_pages(t) + hot_size(&t->evict.poor);

	return t->group.anon_pages > keep ? t->group.anon_pages - keep : 0;
}

static int group_cmp_heat(const void *a, const void *b)
{
	uint64_t x = group_heat(*(struct target *const *)a), y = group_heat(*(struct target *const *)b);

	return x < y ? -1 : x > y;
}

/*
 * Takes excess pages from the members, coldest first.  members[] holds
 * those that can take a reclaim now, sorted by heat.
 */
static void group_take(struct group *g, struct target **members, uint32_t n, uint64_t excess)
{
	uint64_t left = excess;

	for (uint32_t i = 0; i < n && left >= GROUP_MIN_TAKE_PAGES; i++) {
		uint64_t take = group_cold_pages(members[i]);

		take = take < left ? take : left;
		if (take < GROUP_MIN_TAKE_PAGES)
			continue;
		if (reclaim_internal(members[i], take * ZS_PAGE_SIZE, false) == 0) {
			left -= take;
			g->d->st.group_reclaims++;
		}
	}
	/* Every member's cold pages are spoken for: the coldest gives hot ones. */
	for (uint32_t i = 0; i < n && left >= GROUP_MIN_TAKE_PAGES; i++) {
		if (members[i]->reclaim)
			continue;
		if (reclaim_internal(members[i], left * ZS_PAGE_SIZE, false) == 0) {
			g->d->st.group_reclaims++;
			break;
		}
	}
}

/* Reads what g holds now into g->resident and g->usage; its members into *ret. */
static int group_measure(struct daemon *d, struct group *g, struct target ***ret, uint32_t *ret_n,
			 uint64_t *ret_pending)
{
	struct target **members = NULL;
	uint32_t n = 0, cap = 0;
	uint64_t pending = 0;

	g->resident = 0;
	g->members = 0;
	for (struct target *t = d->targets; t; t = t->next) {
		uint64_t kb;

		if (!group_has(g, t))
			continue;
		g->members++;
		if (proc_status_kb(t->pid, "RssAnon", &kb) < 0)
			continue;
		t->group.anon_pages = kb / (ZS_PAGE_SIZE / 1024);
		g->resident += kb * 1024;
		pending += reclaim_pending_pages(t);
		if (t->reclaim || t->evict.batch || t->restore || !t->agent.tid)
			continue;
		if (n == cap) {
			struct target **m = realloc(members, (cap ? cap * 2 : 8) * sizeof(*m));

			if (!m) {
				free(members);
				return -ENOMEM;
			}
			members = m;
			cap = cap ? cap * 2 : 8;
		}
		members[n++] = t;
	}
	if (g->follows && cgroup_usage(g->cgroup, &g->usage) < 0)
		g->usage = 0;
	*ret = members;
	*ret_n = n;
	*ret_pending = pending;
	return 0;
}

/* Pages g holds over its goal, slack included; 0 if it is within it. */
static uint64_t group_excess(const struct daemon *d, const struct group *g)
{
	uint64_t over = 0;

	if (g->budget && g->resident > g->budget + reclaim_slack(g->budget) / 4)
		over = g->resident - g->budget + reclaim_slack(g->budget);
	if (g->follows && g->limit) {
		uint64_t goal = group_limit_goal(d, g);

		if (g->usage > goal + reclaim_slack(goal) / 4 &&
		    g->usage - goal + reclaim_slack(goal) > over)
			over = g->usage - goal + reclaim_slack(goal);
	}
	return over / ZS_PAGE_SIZE;
}

static void group_tell(struct group *g, bool over)
{
	const char *name = g->cgroup[0] ? g->cgroup : "every served process";

	if (over == g->over)
		return;
	g->over = over;
	if (over)
		log_info("group %s: %llu MiB resident%s, over its goal: evicting from its %u "
			 "processes, coldest first", name, (unsigned long long)(g->resident >> 20),
			 g->follows ? " (cgroup usage counted)" : "", g->members);
	else
		log_info("group %s: back under its goal (%llu MiB resident)", name,
			 (unsigned long long)(g->resident >> 20));
	if (!over)
		g->pressure_told = false;
}

/*
 * Members of a group more than its slack over the goal have their faults
 * wait for their batch in flight (reclaim_throttle), as a process over its
 * own limit does.
 */
static void group_throttle(struct daemon *d, const struct group *g, uint64_t excess)
{
	uint64_t goal = g->budget ? g->budget : group_limit_goal(d, g);

	if (excess * ZS_PAGE_SIZE <= 2 * reclaim_slack(goal))
		return;
	for (struct target *t = d->targets; t; t = t->next)
		if (group_has(g, t))
			t->group.over = true;
}

/* Ten times a second (and at once on a pressure event): each group under its goal. */
void group_enforce(struct daemon *d, bool tick)
{
	if (!tick)
		return;
	for (struct target *t = d->targets; t; t = t->next)
		t->group.over = false;
	for (struct group *g = d->groups.list; g; g = g->next) {
		struct target **members;
		uint32_t n;
		uint64_t pending, excess;

		if (group_measure(d, g, &members, &n, &pending) < 0)
			continue;
		excess = group_excess(d, g);
		group_tell(g, excess > 0);
		group_throttle(d, g, excess);
		if (excess > pending && n) {
			qsort(members, n, sizeof(*members), group_cmp_heat);
			group_take(g, members, n, excess - pending);
		}
		free(members);
	}
}

/*
 * What no budget can take from the members: pages they locked (VmLck) and
 * anonymous pages another process maps too (a fork's copy-on-write pages,
 * which eviction passes over).  Reading smaps walks the page tables: at an
 * operator's command only.
 */
static uint64_t group_kept_bytes(struct daemon *d, const struct group *g)
{
	uint64_t sum = 0, kb;
	char path[64], *smaps;

	for (struct target *t = d->targets; t; t = t->next) {
		if (!group_has(g, t))
			continue;
		if (proc_status_kb(t->pid, "VmLck", &kb) == 0)
			sum += kb * 1024;
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
		if (read_full_file(path, &smaps, NULL) == 0) {
			sum += vmscan_shared_kb(smaps) * 1024;
			free(smaps);
		}
	}
	return sum;
}

/* How g stands now: what `limit --all|--cgroup` and `groups` print. */
static void group_figures(struct daemon *d, struct group *g, struct zs_group_reply *rep)
{
	struct target **m = NULL;
	uint32_t n;
	uint64_t pending;

	*rep = (struct zs_group_reply){ 0 };
	if (!g->members && group_measure(d, g, &m, &n, &pending) == 0)
		free(m);
	rep->budget_bytes = g->budget;
	rep->limit_bytes = g->follows ? g->limit : 0;
	rep->resident_bytes = g->resident;
	rep->usage_bytes = g->usage;
	if (g->cgroup[0] && !rep->usage_bytes)
		cgroup_usage(g->cgroup, &rep->usage_bytes);
	rep->members = g->members;
	for (struct target *t = d->targets; t; t = t->next) {
		if (!group_has(g, t))
			continue;
		rep->evicted_bytes += target_evicted_pages(t) * ZS_PAGE_SIZE;
		rep->compressed_bytes += t->counts.compressed_bytes;
		rep->refaults_per_min += rate_per_minute(&t->counts.loads_rate);
		rep->stall_usec_per_min += rate_per_minute(&t->counts.stall_rate);
	}
}

/* Every group, for `zswapctl groups`; how many were filled (at most max). */
size_t group_list(struct daemon *d, struct zs_group_info *out, size_t max)
{
	size_t n = 0;

	for (struct group *g = d->groups.list; g && n < max; g = g->next, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(out[n].cgroup, g->cgroup, sizeof(out[n].cgroup) - 1);
		out[n].flags = (g->cgroup[0] ? 0 : ZS_GROUP_ALL) | (g->follows ? ZS_GROUP_FOLLOWS : 0);
		group_figures(d, g, &out[n].figures);
	}
	return n;
}

/* What `zswapctl limit --all|--cgroup` sets; the reply says how the group stands. */
int group_set(struct daemon *d, const char *cgroup, uint64_t bytes, bool query,
	      struct zs_group_reply *rep, const char **ret_why)
{
	struct group probe = { 0 }, *g = group_find(d, cgroup);
	uint64_t kept;
	int r;

	*ret_why = NULL;
	snprintf(probe.cgroup, sizeof(probe.cgroup), "%s", cgroup);
	if (cgroup[0] && !cgroup_exists(cgroup)) {
		*ret_why = "no such memory cgroup (paths are as /proc/PID/cgroup gives them, "
			   "e.g. /system.slice/foo.service)";
		return -ENOENT;
	}
	if (!query && bytes && bytes < (1u << 20)) {
		*ret_why = "a budget below 1M makes no sense";
		return -EINVAL;
	}
	kept = query || !bytes ? 0 : group_kept_bytes(d, g ? g : &probe);
	if (bytes < kept) {
		*ret_why = "the budget is below what the group's processes cannot give up: pages "
			   "locked (VmLck) or shared with another process (a fork's copy-on-write)";
		return -EINVAL;
	}
	if (!query && bytes && !g) {
		r = group_new(d, cgroup, &g);
		if (r < 0)
			return r;
	}
	if (!query && g) {
		g->budget = bytes;
		log_info("group %s: budget %llu bytes", cgroup[0] ? cgroup : "every served process",
			 (unsigned long long)bytes);
		if (!bytes && !g->follows) {
			group_free(d, g);
			g = NULL;
		}
		d->turn.limit_usec = 0;
	}
	group_figures(d, g ? g : &probe, rep);
	return 0;
}

bool group_any(const struct daemon *d)
{
	return d->groups.list != NULL;
}
