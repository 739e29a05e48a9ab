// SPDX-License-Identifier: GPL-2.0-only
/*
 * persist.c - what lets the processes outlive zswapd's death: the fd store
 * holding the pool, the journal and each process's descriptors (fdstore.h,
 * journal.h), the markers on every page taken out (hazard 8 in
 * docs/design.md), and the words in staging that tell a shim's watcher to
 * wait for the next zswapd (shim/orphan.c).
 *
 * On when survive_crash is set and NOTIFY_SOCKET names a store: systemd
 * with FileDescriptorStoreMax= (the unit we ship), or zswapd's keeper
 * (keeper.c).  persist_open() puts everything in the store and opens a
 * journal; an upgrade takes it all out before its exec (persist_close())
 * and the new binary puts it back, under its own names, once it has read
 * the image.  A start after a crash is recover.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compat.h"
#include "fdstore.h"
#include "idx.h"
#include "journal.h"
#include "log.h"
#include "persist.h"
#include "pool.h"
#include "uffd.h"

void persist_init(struct daemon *d)
{
	d->persist.fdstore = d->cfg.survive.survive_crash && getenv("NOTIFY_SOCKET");
}

/* Marks each evicted page of t: pages taken out before markers were made. */
static int persist_mark_one(uint64_t pgno, void *val, void *arg)
{
	struct target *t = arg;

	(void)val;
	uffd_writeprotect(t->uffd_w.fd, pgno << ZS_PAGE_SHIFT, ZS_PAGE_SIZE, true);
	return 0;
}

static void persist_put_global(struct daemon *d, const char *name, int fd)
{
	if (fd < 0)
		fdstore_drop(d, name);
	else if (fdstore_put(d, name, fd) < 0)
		log_warning("fd store: cannot keep %s", name);
}

int persist_open(struct daemon *d)
{
	char name[48];
	int r;

	if (!d->persist.fdstore)
		return 0;
	persist_put_global(d, "pool", pool_fd(d->pool));
	persist_put_global(d, "swap", wb_fd(d));
	if (!d->sd.socket_activated)
		persist_put_global(d, "listen", d->listen_w.fd);
	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)++d->persist.handles_gen);
	r = fdstore_put(d, name, pool_handles_fd(d->pool));
	if (r < 0)
		goto fail;
	for (struct target *t = d->targets; t; t = t->next) {
		if (t->dead)
			continue;
		/* Taken out unmarked (by a zswapd without a store, or an
		 * agent that does not mark): marked now, one by one. */
		if (target_marks(t) && !target_agent_marks(t))
			idx_walk(t->idx, 0, IDX_PGNO_MAX, persist_mark_one, t);
		if (t->agent.staging)
			target_set_staging_words(t);
		r = journal_keep_target(t);
		if (r < 0)
			goto fail;
	}
	r = journal_open(d, d->persist.handles_gen);
	if (r < 0)
		goto fail;
	return 0;
fail:
	log_error_errno(r, "Cannot keep what zswapd holds in the fd store (%m): processes do not "
			   "survive zswapd's death");
	persist_close(d);
	return r;
}

void persist_close(struct daemon *d)
{
	char name[48];

	if (!d->persist.fdstore)
		return;
	for (struct target *t = d->targets; t; t = t->next)
		journal_forget_target(t);
	journal_close(d);
	snprintf(name, sizeof(name), "handles.%llu", (unsigned long long)d->persist.handles_gen);
	fdstore_drop(d, name);
	fdstore_drop(d, "pool");
	fdstore_drop(d, "swap");
	fdstore_drop(d, "listen");
}
