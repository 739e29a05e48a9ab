// SPDX-License-Identifier: GPL-2.0-only
/*
 * ctl.c - what zswapctl can ask: stats (stats.c fills the reply), list,
 * reclaim, limit, groups and their budgets (group.c), restore, upgrade.
 *
 * A request that fails gets ZS_ERROR with a sentence for
 * the operator and the connection stays usable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "persist/persist.h"
#include "idx.h"
#include "identity.h"
#include "log.h"
#include "proto.h"

static int ctl_stats(struct conn *c, const struct zs_hdr *h)
{
	struct zs_stat st[STATS_COUNT];
	size_t n = stats_fill(c->d, st, STATS_COUNT);

	return proto_send(c->w.fd, ZS_STATS_REPLY, h->seq, st, n * sizeof(st[0]), NULL, 0);
}

static bool ctl_may_see(const struct conn *c, const struct target *t)
{
	return c->cred.uid == 0 || c->cred.uid == t->uid;
}

/*
 * The pid c's peer knows t by: t's own, or for a peer in a pid namespace
 * of its own (a container), t's in that namespace if t is in it; 0 if t is
 * out of its sight.  zswapctl in a container names its processes as it
 * sees them, and sees no others.
 */
static pid_t ctl_pid_of(const struct conn *c, const struct target *t)
{
	if (!c->pidns)
		return t->pid;
	if (identity_pidns(t->pid) != c->pidns)
		return 0;
	return identity_inner_pid(t->pid) > 0 ? identity_inner_pid(t->pid) : 0;
}

static int ctl_list(struct conn *c, const struct zs_hdr *h)
{
	size_t max = (ZS_MSG_MAX - sizeof(struct zs_hdr)) / sizeof(struct zs_target_info);
	struct zs_target_info *out;
	size_t n = 0;
	int r;

	out = calloc(max, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (struct target *t = c->d->targets; t && n < max; t = t->next) {
		struct zs_target_info *ti = &out[n];
		uint64_t kb = 0;

		pid_t pid = t->pid ? ctl_pid_of(c, t) : 0;

		if (t->dead || pid <= 0 || !ctl_may_see(c, t))
			continue;
		ti->pid = (uint32_t)pid;
		memcpy(ti->comm, t->comm, sizeof(ti->comm));
		ti->comm[sizeof(ti->comm) - 1] = '\0';
		if (proc_status_kb(t->pid, "RssAnon", &kb) == 0)
			ti->resident_pages = kb * 1024 / ZS_PAGE_SIZE;
		ti->evicted_pages = target_evicted_pages(t);
		ti->compressed_bytes = t->counts.compressed_bytes;
		ti->stores = t->counts.stores;
		ti->loads = t->counts.loads;
		ti->invalidates = t->counts.invalidates;
		ti->limit_bytes = reclaim_limit_of(t, ti->resident_pages * ZS_PAGE_SIZE);
		ti->hot_pages = target_hot_pages(t);
		ti->stall_usec = t->counts.stall_usec;
		ti->stall_usec_per_min = rate_per_minute(&t->counts.stall_rate);
		ti->refaults_per_min = rate_per_minute(&t->counts.loads_rate);
		ti->proactive_backoff = t->proactive.backoff ? t->proactive.backoff : 1;
		memcpy(ti->cgroup, t->group.cgroup, sizeof(ti->cgroup) - 1); /* calloc'd: NUL at the end */
		n++;
	}
	r = proto_send(c->w.fd, ZS_LIST_REPLY, h->seq, out, n * sizeof(*out), NULL, 0);
	free(out);
	return r;
}

/*
 * The target a reclaim or limit names, if the peer may act on it.  If not,
 * the peer has been told why and false is returned.
 */
static bool ctl_find_target(struct conn *c, const struct zs_hdr *h, uint32_t pid, const char *verb,
			    struct target **ret_target)
{
	struct target *t = NULL;
	char msg[160];

	for (struct target *o = c->d->targets; o && !t && pid; o = o->next)
		if (!o->dead && o->pid && ctl_pid_of(c, o) == (pid_t)pid)
			t = o;

	if (!t) {
		snprintf(msg, sizeof(msg), "pid %u is not served by zswapd (start it under the shim)",
			 pid);
		proto_send_error(c->w.fd, h->seq, -ESRCH, msg);
		return false;
	}
	if (!ctl_may_see(c, t)) {
		c->d->st.denied++;
		log_warning("uid %u may not %s pid %u, refusing", (unsigned)c->cred.uid, verb, pid);
		snprintf(msg, sizeof(msg), "only root or the process's owner may %s it", verb);
		proto_send_error(c->w.fd, h->seq, -EPERM, msg);
		return false;
	}
	*ret_target = t;
	return true;
}

/* What a stop under way refuses; an upgrade or a restart is over soon: try again. */
int ctl_refuse_stopping(struct conn *c, uint32_t seq)
{
	const struct daemon *d = c->d;

	if (!d->upgrade.active)
		return proto_send_error(c->w.fd, seq, -ESHUTDOWN, "zswapd is stopping");
	return proto_send_error(c->w.fd, seq, -EAGAIN,
				d->restart.active ? "zswapd is restarting, try again" :
						"zswapd is upgrading, try again");
}

static int ctl_reclaim(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_reclaim *req = proto_payload(h);
	struct target *t;
	int r;

	if (!ctl_find_target(c, h, req->pid, "reclaim", &t))
		return 0;
	if (c->d->stop.active)
		return ctl_refuse_stopping(c, h->seq);
	if (t->restore)
		return proto_send_error(c->w.fd, h->seq, -EBUSY,
					"a restore of this process is running");
	r = reclaim_start(t, c, h->seq, req->bytes);
	if (r == -EBUSY)
		return proto_send_error(c->w.fd, h->seq, r, "a reclaim of this process is running");
	if (r == -ENOTCONN)
		return proto_send_error(c->w.fd, h->seq, r,
					"the process's agent is not connected (it closed its zswapd socket)");
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, "cannot start reclaim");
	return 0;
}

static int ctl_limit(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_limit *req = proto_payload(h);
	struct zs_limit_reply rep = { 0 };
	struct target *t;
	uint64_t kb = 0;

	if (!ctl_find_target(c, h, req->pid, "limit", &t))
		return 0;
	if (req->bytes && req->bytes < 1024 * 1024)
		return proto_send_error(c->w.fd, h->seq, -EINVAL, "a limit below 1M makes no sense");
	if (t->restore)
		return proto_send_error(c->w.fd, h->seq, -EBUSY,
					"a restore of this process is running (it lifts the limit)");
	t->limit.bytes = req->bytes;
	t->limit.set = true;
	proc_status_kb(t->pid, "RssAnon", &kb);
	rep.limit_bytes = t->limit.bytes;
	rep.resident_bytes = kb * 1024;
	log_info("pid %d: limit %llu bytes (resident %llu)", (int)t->pid,
		 (unsigned long long)t->limit.bytes, (unsigned long long)rep.resident_bytes);
	c->d->turn.limit_usec = 0; /* act on it at the end of this turn */
	return proto_send(c->w.fd, ZS_LIMIT_REPLY, h->seq, &rep, sizeof(rep), NULL, 0);
}

/* zswapctl limit --all|--cgroup: root only, as the group spans users. */
static int ctl_group(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_group *req = proto_payload(h);
	struct zs_group_reply rep = { 0 };
	bool query = req->flags & ZS_GROUP_QUERY;
	const char *why;
	int r;

	if (!query && c->cred.uid != 0) {
		c->d->st.denied++;
		return proto_send_error(c->w.fd, h->seq, -EPERM,
					"only root may set a budget for a group of processes");
	}
	r = group_set(c->d, req->cgroup, req->bytes, query, &rep, &why);
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, why ? why : "cannot set the budget");
	return proto_send(c->w.fd, ZS_GROUP_REPLY, h->seq, &rep, sizeof(rep), NULL, 0);
}

/* zswapctl groups: anyone may look (the figures are sums, no process named). */
static int ctl_groups(struct conn *c, const struct zs_hdr *h)
{
	size_t max = (ZS_MSG_MAX - sizeof(struct zs_hdr)) / sizeof(struct zs_group_info), n;
	struct zs_group_info *out = calloc(max, sizeof(*out));
	int r;

	if (!out)
		return -ENOMEM;
	n = group_list(c->d, out, max);
	r = proto_send(c->w.fd, ZS_GROUPS_REPLY, h->seq, out, n * sizeof(*out), NULL, 0);
	free(out);
	return r;
}

static int ctl_restore(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_restore *req = proto_payload(h);
	struct target *t;
	int r;

	if (!ctl_find_target(c, h, req->pid, "restore", &t))
		return 0;
	if (c->d->stop.active)
		return ctl_refuse_stopping(c, h->seq);
	r = restore_begin(t, c, h->seq);
	if (r == -EBUSY)
		return proto_send_error(c->w.fd, h->seq, r, "a restore of this process is running");
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, "cannot start restore");
	return 0; /* answered by restore_end() */
}

/* Answered by the new binary once it has taken over, or here if refused (upgrade.c). */
static int ctl_upgrade(struct conn *c, const struct zs_hdr *h)
{
	const char *why = NULL;
	int r;

	if (c->cred.uid != 0) {
		c->d->st.denied++;
		log_warning("uid %u may not upgrade zswapd, refusing", (unsigned)c->cred.uid);
		return proto_send_error(c->w.fd, h->seq, -EPERM, "only root may upgrade zswapd");
	}
	r = upgrade_begin(c->d, &why);
	if (r < 0)
		return proto_send_error(c->w.fd, h->seq, r, why);
	c->upgrade_waiting = true;
	c->upgrade_seq = h->seq;
	return 0;
}

int ctl_handle(struct conn *c, const struct zs_hdr *h)
{
	switch (h->type) {
	case ZS_STATS:
		return ctl_stats(c, h);
	case ZS_LIST:
		return ctl_list(c, h);
	case ZS_RECLAIM:
		return ctl_reclaim(c, h);
	case ZS_LIMIT:
		return ctl_limit(c, h);
	case ZS_RESTORE:
		return ctl_restore(c, h);
	case ZS_GROUP:
		return ctl_group(c, h);
	case ZS_GROUPS:
		return ctl_groups(c, h);
	case ZS_UPGRADE:
		return ctl_upgrade(c, h);
	default:
		return -EBADMSG;
	}
}
