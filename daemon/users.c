// SPDX-License-Identifier: GPL-2.0-only
/*
 * users.c - bounds per user (users.h).
 *
 * The pool is zswapd's memory, locked and charged to zswapd, not to the
 * user's own memory cgroup: unbounded, one user could fill it and leave
 * every other user's processes unable to evict, or keep more memory than
 * its cgroup allows.  A user over a bound is told once, in the log, and
 * its processes run unserved (or, over the pool bound, keep their pages)
 * until it is under again.
 */
#include <stdint.h>

#include "daemon.h"
#include "log.h"
#include "users.h"

enum users_bound {
	USERS_CONNS,
	USERS_PROCESSES,
	USERS_POOL,
	USERS_NBOUNDS,
};

#define USERS_TOLD_MAX 64

/* Users told they are over a bound, by bound: said once each. */
static struct {
	uid_t uid[USERS_TOLD_MAX];
	unsigned n;
} users_told[USERS_NBOUNDS];

static void users_tell(struct daemon *d, uid_t uid, enum users_bound b, const char *what)
{
	d->st.denied++;
	for (unsigned i = 0; i < users_told[b].n; i++)
		if (users_told[b].uid[i] == uid)
			return;
	if (users_told[b].n < USERS_TOLD_MAX)
		users_told[b].uid[users_told[b].n++] = uid;
	log_warning("uid %u is at its bound of %s: its processes past it run unserved "
		    "(zswapd.conf, max_*_per_user)", (unsigned)uid, what);
}

bool users_conn_ok(struct daemon *d, const struct conn *new)
{
	uid_t uid = new->cred.uid;
	unsigned n = 0;

	if (uid == 0)
		return true;
	for (const struct conn *c = d->conns.list; c; c = c->next)
		if (c != new && !c->dead && c->cred.uid == uid && !c->target)
			n++;
	if (n < d->cfg.users.max_connections_per_user)
		return true;
	users_tell(d, uid, USERS_CONNS, "connections");
	return false;
}

bool users_process_ok(struct daemon *d, uid_t uid)
{
	unsigned n = 0;

	if (uid == 0)
		return true;
	for (const struct target *t = d->targets; t; t = t->next)
		if (!t->dead && t->uid == uid)
			n++;
	if (n < d->cfg.users.max_processes_per_user)
		return true;
	users_tell(d, uid, USERS_PROCESSES, "processes served");
	return false;
}

bool users_pool_ok(struct daemon *d, uid_t uid)
{
	uint64_t bytes = 0, bound;

	if (uid == 0)
		return true;
	bound = d->pool_limit.bytes / 100 * d->cfg.users.max_pool_percent_per_user;
	for (const struct target *t = d->targets; t; t = t->next)
		if (!t->dead && t->uid == uid)
			bytes += t->counts.compressed_bytes;
	if (bytes < bound)
		return true;
	users_tell(d, uid, USERS_POOL, "pool bytes");
	return false;
}
