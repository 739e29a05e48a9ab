// SPDX-License-Identifier: GPL-2.0-only
/*
 * idlepoll_qos.c - the CPU latency request behind idlepoll.h.
 *
 * /dev/cpu_dma_latency is the kernel's CPU latency QoS (PM QoS): each
 * open descriptor is one request, the strictest of all requests applies,
 * and closing the descriptor withdraws it.  zswapd opens it once at start
 * (root's file: no capability needed) and writes 0 to hold idle CPUs
 * polling, PM_QOS_DEFAULT_VALUE to let them sleep again.  Without it (no
 * such device, a unit that does not allow it) faults are served the same,
 * idle CPUs left to sleep.
 */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

#define CPU_LATENCY_DEV "/dev/cpu_dma_latency"
#define CPU_LATENCY_POLL 0	/* usec: no idle state but polling */
#define CPU_LATENCY_ANY (-1)	/* PM_QOS_DEFAULT_VALUE: the request says nothing */

static int idlepoll_request(struct daemon *d, int32_t usec)
{
	ssize_t n = write(d->idlepoll.fd, &usec, sizeof(usec));

	if (n == (ssize_t)sizeof(usec))
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* Closing withdraws any request we made as surely as writing: nothing held. */
static void idlepoll_close(struct daemon *d)
{
	close(d->idlepoll.fd);
	d->idlepoll.fd = -1;
	d->idlepoll.burst.held = false;
}

void idlepoll_open(struct daemon *d)
{
	d->idlepoll.fd = open(CPU_LATENCY_DEV, O_WRONLY | O_CLOEXEC);
	if (d->idlepoll.fd < 0)
		log_info("Cannot open %s: %m; idle CPUs sleep through fault bursts (fault_idle_poll_ms)",
			 CPU_LATENCY_DEV);
}

void idlepoll_fault_served(struct daemon *d)
{
	uint64_t now;
	int r;

	if (d->idlepoll.fd < 0)
		return;
	now = now_usec();
	if (!idlepoll_fault(&d->idlepoll.burst, now, (uint64_t)d->cfg.fault.fault_idle_poll_ms * 1000))
		return;
	r = idlepoll_request(d, CPU_LATENCY_POLL);
	if (r < 0) {
		log_warning_errno(r, "Failed to write %s: %m; idle CPUs sleep through fault bursts from now on",
				  CPU_LATENCY_DEV);
		idlepoll_close(d);
		return;
	}
	d->st.idle_poll_holds++;
}

void idlepoll_turn(struct daemon *d)
{
	uint64_t now;

	if (d->idlepoll.fd < 0 || !d->idlepoll.burst.held)
		return;
	now = now_usec();
	if (!idlepoll_expired(&d->idlepoll.burst, now))
		return;
	d->st.idle_poll_usec += now - d->idlepoll.burst.since_usec;
	if (idlepoll_request(d, CPU_LATENCY_ANY) < 0)
		idlepoll_close(d);
}
