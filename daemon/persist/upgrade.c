// SPDX-License-Identifier: GPL-2.0-only
/*
 * upgrade.c - SIGUSR2 or `zswapctl upgrade`: replace the running binary in
 * place, keeping every page evicted, as nginx upgrades its binary on the
 * fly.
 *
 * A stop faults every evicted page back first (drain.c): restarting a host
 * whose pool holds gigabytes would need those gigabytes free at once.  An
 * upgrade instead execs the binary at the path zswapd was started from
 * (a newer build installed over it, or the same one) in the same process:
 * the pid, which every shim's watcher holds a pidfd of, stays, and so do
 * the descriptors the image names (handover_save.c).  The steps:
 *
 *  1. Ask the binary at that path whether it reads our image and speaks
 *     our protocol (--handover-versions): the shims in the processes stay,
 *     and speak only theirs.  The loop reads its answer and serves all
 *     along; one that says nothing within 5 s is killed.  An old, broken
 *     or incompatible binary is refused while nothing has changed yet.
 *  2. Quiesce, the loop serving faults meanwhile: no new batch, writeback
 *     or recompression; a reclaim ends with its batch in flight, answered
 *     with what it did; a restore is answered as stopped; new connections
 *     wait in the listening socket's backlog; batches in flight commit (an
 *     agent silent for 5 s has its batch put back, as in a stop); I/O
 *     lands; every fault read is answered.  Not quiet within
 *     UPGRADE_TIMEOUT_USEC: the upgrade is abandoned, its requesters get
 *     an error, and zswapd goes on as before.
 *  3. In the one loop turn that finds it quiet, write the image and exec.
 *     Faults and events arriving from then on wait, unread, in their uffds
 *     for the new binary; the app threads that raised them just wait longer.
 *
 * If the exec fails, the running binary is exec'd instead
 * (/proc/self/exe, there even if its file was replaced), and if that fails
 * too, zswapd goes on as it was: writing the image changed nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "persist.h"
#include "log.h"

#define UPGRADE_TIMEOUT_USEC (10 * 1000000ull)
#define UPGRADE_BATCH_TIMEOUT_USEC (5 * 1000000ull) /* as a stop waits on an agent */
#define UPGRADE_CHECK_MS 5000 /* for the new binary to say which image it reads */

extern char **environ;

/*
 * Whether `--handover-versions` output names our image version among
 * those it reads, and our protocol: "zswapd handover 1 2 3 protocol 5".
 */
static bool upgrade_versions_ok(const char *out)
{
	bool reads_ours = false;
	char *end;
	long v;

	if (strncmp(out, "zswapd handover ", 16))
		return false;
	out += 16;
	while ((v = strtol(out, &end, 10)) > 0 && end != out && *end == ' ') {
		reads_ours |= v == HANDOVER_VERSION;
		out = end + 1;
	}
	if (!reads_ours || strncmp(out, "protocol ", 9))
		return false;
	v = strtol(out + 9, &end, 10);
	return v == ZS_VERSION && !strcmp(end, "\n");
}

/* Tells each zswapctl waiting for the upgrade that it is off, and why. */
static void upgrade_answer_waiters(struct daemon *d, int err, const char *why)
{
	for (struct conn *c = d->conns.list; c; c = c->next)
		if (c->upgrade_waiting && !c->dead) {
			c->upgrade_waiting = false;
			proto_send_error(c->w.fd, c->upgrade_seq, err, why);
		}
}

bool upgrade_checking(const struct daemon *d)
{
	return d->upgrade.check_w.fd >= 0;
}

/* The checked binary is gone (it has answered, or must not stay), and its pipe. */
static void upgrade_check_end(struct daemon *d)
{
	int status;

	watch_del(d->epfd, &d->upgrade.check_w);
	close(d->upgrade.check_w.fd);
	d->upgrade.check_w.fd = -1;
	kill(d->upgrade.check_pid, SIGKILL); /* it has exited if it answered */
	while (waitpid(d->upgrade.check_pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* Step 2: quiesce, serving faults meanwhile; upgrade_step() goes on (or restart_step()). */
void upgrade_quiesce(struct daemon *d)
{
	d->stop.active = d->upgrade.active = true;
	d->stop.usec = now_usec();
	if (d->listen_w.fd >= 0)
		watch_del(d->epfd, &d->listen_w);
	for (struct target *t = d->targets; t; t = t->next) {
		restore_end(t, -ESHUTDOWN);
		evict_pick_free(t);
	}
	notify_status(d);
}

/* Logs why the binary at exe_path was refused; returns what its requesters are told. */
static const char *upgrade_refused(struct daemon *d, const char *failure)
{
	log_error("upgrade: %s cannot take over (%s): not upgrading; it must be a zswapd that "
		  "reads handover image version %d and speaks protocol %d",
		  d->upgrade.exe_path, failure, HANDOVER_VERSION, ZS_VERSION);
	return "the binary zswapd was started from cannot take over (see its log)";
}

/* The checked binary's answer is in, or it took too long: on with step 2, or refused. */
static void upgrade_check_done(struct daemon *d, const char *failure)
{
	upgrade_check_end(d);
	d->upgrade.check_out[d->upgrade.check_n] = '\0';
	if (!failure && !upgrade_versions_ok(d->upgrade.check_out))
		failure = "it does not read our image or speak our protocol";
	if (failure) {
		upgrade_answer_waiters(d, -EPROTO, upgrade_refused(d, failure));
		return;
	}
	log_info("upgrade: handing over to %s", d->upgrade.exe_path);
	upgrade_quiesce(d);
}

static void upgrade_check_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	size_t room = sizeof(d->upgrade.check_out) - 1 - d->upgrade.check_n;
	ssize_t k;

	(void)events;
	k = read(w->fd, d->upgrade.check_out + d->upgrade.check_n, room);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (k > 0)
		d->upgrade.check_n += (size_t)k;
	/* Its answer is one short line, then it exits: EOF, or too much. */
	if (k <= 0 || (size_t)k == room)
		upgrade_check_done(d, k < 0 ? "cannot read its answer" : NULL);
}

/*
 * Step 1: run `path --handover-versions`, its answer read by the loop, so
 * that a binary that hangs or is slow to start stalls no fault.
 */
static int upgrade_check_start(struct daemon *d)
{
	char *argv[] = { d->upgrade.exe_path, "--handover-versions", NULL };
	posix_spawn_file_actions_t fa;
	int p[2], r;

	if (access(d->upgrade.exe_path, X_OK) < 0)
		return -errno;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	r = -posix_spawn(&d->upgrade.check_pid, d->upgrade.exe_path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	d->upgrade.check_w = (struct watch){ .fd = p[0], .fn = upgrade_check_ready };
	d->upgrade.check_n = 0;
	d->upgrade.check_usec = now_usec();
	r = watch_add(d->epfd, &d->upgrade.check_w, EPOLLIN);
	if (r < 0)
		upgrade_check_end(d);
	return r;
}

int upgrade_begin(struct daemon *d, const char **ret_why)
{
	int r;

	if (d->upgrade.active || upgrade_checking(d)) /* one more requester waits for the same one */
		return 0;
	if (d->stop.active) {
		*ret_why = "zswapd is stopping";
		return log_warning_errno(-ESHUTDOWN, "upgrade: stopping already, not upgrading");
	}
	r = upgrade_check_start(d);
	if (r < 0)
		*ret_why = upgrade_refused(d, strerror(-r));
	return r;
}

/* Back to serving as before (no quiet moment, no image, a stop asked for). */
void upgrade_end(struct daemon *d, const char *why)
{
	if (upgrade_checking(d)) {
		upgrade_check_end(d);
		log_warning("upgrade abandoned while its binary was checked: %s", why);
		upgrade_answer_waiters(d, -EBUSY, why);
		return;
	}
	if (!d->upgrade.active)
		return;
	log_warning("upgrade abandoned: %s; zswapd goes on as before", why);
	d->stop.active = d->upgrade.active = false;
	upgrade_answer_waiters(d, -EBUSY, why);
	if (d->listen_w.fd >= 0 && watch_add(d->epfd, &d->listen_w, EPOLLIN) < 0)
		log_error("cannot watch the listening socket again");
	notify_status(d);
}

/* Nothing read and not answered, nothing in flight: the image says it all. */
static bool upgrade_target_quiet(struct target *t, uint64_t now)
{
	if (t->dead)
		return true;
	if (t->evict.batch && now - t->evict.batch->started_usec >= UPGRADE_BATCH_TIMEOUT_USEC) {
		log_warning("pid %d: agent silent for %llus, putting its batch back", (int)t->pid,
			    (unsigned long long)(UPGRADE_BATCH_TIMEOUT_USEC / 1000000));
		evict_abort(t);
	}
	/* A reclaim ends with its batch in flight, answered with what it did. */
	if (t->reclaim && !t->evict.batch)
		reclaim_end(t, 0);
	return !t->evict.batch && !t->evict.pick && !t->reclaim && !t->restore && !t->waits.nretry &&
	       !t->waits.nthrottled && !t->waits.nunprotect && !t->swapin.reads && !t->evict.batch_parent;
}

bool upgrade_quiet(struct daemon *d)
{
	uint64_t now = now_usec();
	bool quiet = !wb_busy(d);

	for (struct target *t = d->targets; t; t = t->next)
		quiet &= upgrade_target_quiet(t, now);
	return quiet;
}

/* Returns only if neither binary could be exec'd. */
static void upgrade_exec(struct daemon *d, int image_fd)
{
	char fd_str[16];

	snprintf(fd_str, sizeof(fd_str), "%d", image_fd);
	setenv(ZSWAPD_HANDOVER_ENV, fd_str, 1);
	execv(d->upgrade.exe_path, d->upgrade.argv);
	log_error_errno(-errno, "Failed to exec %s: %m; exec'ing the running binary instead",
			d->upgrade.exe_path);
	execv("/proc/self/exe", d->upgrade.argv);
	log_error_errno(-errno, "Failed to exec /proc/self/exe: %m");
	unsetenv(ZSWAPD_HANDOVER_ENV);
}

void upgrade_step(struct daemon *d)
{
	int fd, r;

	if (upgrade_checking(d)) {
		if (now_usec() - d->upgrade.check_usec > UPGRADE_CHECK_MS * 1000ull)
			upgrade_check_done(d, "no answer within 5 s");
		return;
	}
	if (!upgrade_quiet(d)) {
		if (now_usec() - d->stop.usec > UPGRADE_TIMEOUT_USEC)
			upgrade_end(d, "no quiet moment in 10 s");
		return;
	}
	fd = memfd_create("zswapd-handover", MFD_CLOEXEC);
	if (fd < 0) {
		upgrade_end(d, "no memfd for the image");
		return;
	}
	r = handover_save(d, fd);
	if (r < 0) {
		close(fd);
		upgrade_end(d, "the image could not be written");
		return;
	}
	fcntl(fd, F_SETFD, 0);
	/* Out of the fd store: the new binary puts back what it took over,
	 * under its own names. */
	persist_close(d);
	upgrade_exec(d, fd);
	handover_cancel(d);
	persist_open(d);
	close(fd);
	upgrade_end(d, "no binary could be exec'd");
}
