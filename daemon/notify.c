// SPDX-License-Identifier: GPL-2.0-only
/*
 * notify.c - what systemd hears from us: STATUS= with live figures once a
 * second, and WATCHDOG=1 from the loop itself, so a wedged loop is noticed.
 */
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "pool.h"

void notify_status(struct daemon *d)
{
	uint64_t targets = 0, pool = pool_total_size(d->pool);
	double ratio;

	if (!d->sd.notify)
		return;
	for (struct target *t = d->targets; t; t = t->next)
		targets += !t->dead;
	ratio = d->st.stored_pages ? (double)pool / ((double)d->st.stored_pages * 4096.0) : 0.0;
	sd_notifyf(0, "STATUS=%s%llu targets, %llu pages stored in %llu KiB (%.0f%% of their size)",
		   d->restart.active ? "restarting: " : d->upgrade.active ? "upgrading: " : d->stop.active ? "draining: " : "", (unsigned long long)targets,
		   (unsigned long long)d->st.stored_pages, (unsigned long long)(pool / 1024),
		   ratio * 100.0);
}

void notify_watchdog(struct daemon *d)
{
	if (d->sd.notify && d->sd.watchdog_usec)
		sd_notify(0, "WATCHDOG=1");
}
