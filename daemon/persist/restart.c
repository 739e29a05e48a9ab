// SPDX-License-Identifier: GPL-2.0-only
/*
 * restart.c - a SIGTERM that asks for a restart, not a stop: everything is
 * handed to the next zswapd through the fd store instead of faulted back.
 *
 * A stop gives every page back first (drain.c): nothing would hold them
 * once we are gone.  A restart has a successor, and the fd store
 * (persist.c) already holds all it needs, as after a crash; draining first
 * would need every evicted byte free at once, for nothing.  But a service
 * gets the same SIGTERM for both, so we ask who sent it:
 *  - systemd: whether the job on our unit is a restart (`systemctl
 *    restart`, try-restart), over its private bus, as systemctl asks it.
 *    A stop job, no job (a plain kill), or no answer within 2 s is a stop.
 *    systemd keeps a unit's fd store while a job is queued for it, and
 *    starts the next zswapd with it.
 *  - zswapd's keeper: its restart (SIGUSR1) is a SIGTERM carrying
 *    ZS_RESTART_SIGVAL, sent with sigqueue(); the keeper starts the next
 *    zswapd when we exit leaving the pool in its store.
 * Then we quiesce as an upgrade does, serving faults meanwhile, until no
 * batch, I/O or fault read is left unanswered (at most 10 s: what is still
 * in flight then is what a crash leaves, and recover.c takes it), write
 * JR_HANDED_OVER, so that the next zswapd knows it is no crash, and exit 0
 * keeping the store.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "daemon.h"
#include "persist.h"
#include "journal.h"
#include "keeper/keeper.h"
#include "log.h"

#define RESTART_QUIET_USEC (10 * 1000000ull)
#define RESTART_BUS_TIMEOUT_USEC (2 * 1000000ull)

/* systemd's own bus for root, no dbus-daemon between: what systemctl uses as root. */
static const char systemd_private_bus[] = "unix:path=/run/systemd/private";

/* The object path of the unit we run in, into *ret (freed by the caller). */
static int restart_systemd_our_unit(sd_bus *bus, sd_bus_error *err, char **ret)
{
	sd_bus_message *reply = NULL;
	const char *path;
	int r;

	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "GetUnitByPID", err, &reply, "u",
			       (uint32_t)getpid());
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0) {
		*ret = strdup(path);
		r = *ret ? 0 : -ENOMEM;
	}
	sd_bus_message_unref(reply);
	return r;
}

/* The type of the job queued on unit ("restart", "stop"...) into buf; -ENOENT if none. */
static int restart_systemd_unit_job(sd_bus *bus, sd_bus_error *err, const char *unit, char *buf,
			    size_t size)
{
	sd_bus_message *reply = NULL;
	int r;

	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "ListJobs", err, &reply, NULL);
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "(usssoo)");
	while (r >= 0) {
		const char *name, *type, *state, *job, *job_unit;
		uint32_t id;

		r = sd_bus_message_read(reply, "(usssoo)", &id, &name, &type, &state, &job,
					&job_unit);
		if (r == 0)
			r = -ENOENT;
		else if (r > 0 && strcmp(job_unit, unit) == 0) {
			snprintf(buf, size, "%s", type);
			r = 0;
			break;
		}
	}
	sd_bus_message_unref(reply);
	return r;
}

/* Whether systemd runs a restart job on our unit; false if it cannot tell us. */
static bool restart_systemd_restarting(void)
{
	const char *addr = getenv(ZSWAPD_SYSTEMD_BUS_ENV);
	sd_bus_error err = SD_BUS_ERROR_NULL;
	char job[32] = "", *unit = NULL;
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, addr ? addr : systemd_private_bus);
	if (r >= 0)
		r = sd_bus_set_method_call_timeout(bus, RESTART_BUS_TIMEOUT_USEC);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r >= 0)
		r = restart_systemd_our_unit(bus, &err, &unit);
	if (r >= 0)
		r = restart_systemd_unit_job(bus, &err, unit, job, sizeof(job));
	if (r < 0 && r != -ENOENT)
		log_debug("SIGTERM: cannot ask systemd for our job: %s",
			  sd_bus_error_is_set(&err) ? err.message : strerror(-r));
	else if (r == 0)
		log_info("SIGTERM: systemd runs a %s job on %s", job, unit);
	sd_bus_error_free(&err);
	sd_bus_flush_close_unref(bus);
	free(unit);
	return r == 0 && (strcmp(job, "restart") == 0 || strcmp(job, "try-restart") == 0);
}

bool restart_asked(struct daemon *d, const struct signalfd_siginfo *si)
{
	/* Without a store, a successor would find nothing: a stop. */
	if (!d->persist.fdstore || d->stop.active)
		return false;
	if (si->ssi_code == SI_QUEUE && si->ssi_int == ZS_RESTART_SIGVAL &&
	    (pid_t)si->ssi_pid == getppid())
		return true;
	d->restart.by_systemd = restart_systemd_restarting();
	return d->restart.by_systemd;
}

void restart_begin(struct daemon *d)
{
	upgrade_end(d, "asked to restart");
	d->restart.active = true;
	log_info("restart: handing everything to the next zswapd through the fd store");
	upgrade_quiesce(d);
}

bool restart_step(struct daemon *d)
{
	if (!upgrade_quiet(d)) {
		if (now_usec() - d->stop.usec < RESTART_QUIET_USEC)
			return false;
		log_warning("restart: no quiet moment in %llu s; the next zswapd takes over what is "
			    "in flight, as after a crash",
			    (unsigned long long)(RESTART_QUIET_USEC / 1000000));
	}
	/* A stop asked for meanwhile replaces the restart job: systemd would
	 * then close the store once we are gone. */
	if (d->restart.by_systemd && !restart_systemd_restarting()) {
		log_warning("restart: systemd no longer restarts zswapd; stopping instead");
		d->restart.active = d->upgrade.active = d->stop.active = false;
		drain_begin(d);
		return false;
	}
	journal_handed_over(d);
	log_info("restart: exiting; the fd store keeps every page for the next zswapd");
	return true;
}
