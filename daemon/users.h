/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * users.h - what one user may take of zswapd: connections not yet a served
 * process, processes served, pool bytes (the cfg_users keys).  Root is not
 * bounded.  A user's usage is counted from the connections and targets
 * themselves, each time it is asked: nothing to keep in step.
 */
#ifndef ZSWAPD_USERS_H
#define ZSWAPD_USERS_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon;

struct conn;

/* Whether c, just accepted, is within its user's bound of connections. */
bool users_conn_ok(struct daemon *d, const struct conn *c);
/* Whether uid may have one more process served. */
bool users_process_ok(struct daemon *d, uid_t uid);
/* Whether the pages uid's processes have evicted may take more of the pool. */
bool users_pool_ok(struct daemon *d, uid_t uid);

#endif
