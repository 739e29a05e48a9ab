// SPDX-License-Identifier: GPL-2.0-only
/*
 * pressure.c - memory pressure on the host: a PSI trigger on
 * /proc/pressure/memory, watched by the loop.
 *
 * Without kernel swap the kernel can only drop page cache under pressure;
 * the anonymous memory of the processes zswapd serves is what it cannot
 * touch.  When the host's tasks stall on memory (PSI "some" over a
 * threshold, pressure_stall_ms in 2 s), proactive eviction (proactive.c) sweeps every
 * process at once, whatever its backoff, and goes on doing so once a
 * second until PRESSURE_HOLD_USEC pass without another event.  A group
 * whose cgroup reports pressure (group.c) acts on it the same way.  Tasks
 * waiting in a userfaultfd fault are not counted by PSI: this is the
 * pressure of everything else on the host, which is what the OOM killer
 * follows.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "daemon.h"
#include "log.h"

#define PRESSURE_HOLD_USEC 10000000 /* pressure is over 10 s after the last event */

bool pressure_active(const struct daemon *d)
{
	return d->pressure.until_usec && now_usec() < d->pressure.until_usec;
}

void pressure_note(struct daemon *d, const char *where)
{
	if (!pressure_active(d))
		log_info("memory pressure (%s): cold pages of every served process go now", where);
	d->pressure.until_usec = now_usec() + PRESSURE_HOLD_USEC;
	d->pressure.told = true;
	d->st.pressure_events++;
	d->turn.limit_usec = 0; /* limits and budgets are looked at this turn */
}

/* Once a second: says once that the pressure is over. */
void pressure_tick(struct daemon *d)
{
	if (d->pressure.told && !pressure_active(d)) {
		d->pressure.told = false;
		log_info("memory pressure over: proactive eviction back to its own pace");
	}
}

void pressure_close(struct daemon *d)
{
	if (d->pressure.w.fd < 0)
		return;
	watch_del(d->epfd, &d->pressure.w);
	close(d->pressure.w.fd);
	d->pressure.w.fd = -1;
}

static void pressure_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	(void)w;
	if (events & EPOLLERR) {
		/* The trigger is gone (never, short of the kernel's PSI going away). */
		log_warning("host memory pressure events stopped");
		pressure_close(d);
		return;
	}
	if (events & EPOLLPRI)
		pressure_note(d, "host");
}

int pressure_open(struct daemon *d)
{
	bool pri;
	int fd, r;

	fd = cgroup_pressure_fd("/", d->cfg.policy.pressure_stall_ms, &pri);
	if (fd == -ENOTSUP) {
		log_info("host memory pressure events off (pressure_stall_ms = 0)");
		return 0;
	}
	if (fd < 0) {
		log_info("no host memory pressure events (/proc/pressure/memory: %s): "
			 "proactive eviction keeps its own pace", strerror(-fd));
		return 0;
	}
	d->pressure.w.fd = fd;
	d->pressure.w.fn = pressure_ready;
	r = watch_add(d->epfd, &d->pressure.w, EPOLLPRI);
	if (r < 0) {
		close(fd);
		d->pressure.w.fd = -1;
	}
	return r;
}

