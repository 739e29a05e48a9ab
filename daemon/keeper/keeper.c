// SPDX-License-Identifier: GPL-2.0-only
/*
 * keeper.c - zswapd's own file-descriptor store, for when systemd is not
 * there to be one.
 *
 * zswapd survives its own SIGKILL by handing every descriptor that holds
 * its state (the pool's memfd, the journal, each client's uffd and socket,
 * the listening socket) to a store, with sd_pid_notify_with_fds(0, 0,
 * "FDSTORE=1\nFDNAME=...", fds, n), and taking them back at its next start
 * with sd_listen_fds_with_names().  Under systemd (FileDescriptorStoreMax=,
 * Restart=on-failure) systemd is that store.  Without it, the keeper is: a
 * parent that speaks the same protocol, so that the daemon has one code
 * path, plain sd-daemon calls, for both.  It follows systemd 252
 * (src/core/manager.c, manager_dispatch_notify_fd; src/core/service.c,
 * service_notify_message and the fd store):
 *
 *  - NOTIFY_SOCKET is an AF_UNIX datagram socket with SO_PASSCRED, in a
 *    directory only root may enter.
 *    A datagram is read only if its SCM_CREDENTIALS name the running child
 *    (NotifyAccess=main); one refused, truncated (MSG_CTRUNC, MSG_TRUNC,
 *    over 4096 bytes) or holding a NUL has its descriptors closed, and so do
 *    descriptors sent without FDSTORE=1.
 *  - Newline-separated KEY=VALUE lines: READY=1; FDSTORE=1 with FDNAME=
 *    (default "stored"; an invalid name is ignored) and FDPOLL=0;
 *    FDSTOREREMOVE=1 with FDNAME=, which wins over FDSTORE=1.  STATUS=,
 *    WATCHDOG=, STOPPING=1, ERRNO=, MAINPID= are not acted on.
 *  - A descriptor of an open file already stored is not stored twice
 *    (kcmp): a daemon may store again what it was given back.
 *  - Unless FDPOLL=0, a stored descriptor reporting EPOLLHUP or EPOLLERR (a
 *    socket whose peer is gone) is closed and forgotten; one that cannot be
 *    polled (a memfd) is kept.
 *  - At each start the child gets the store as descriptors 3, 4, ... with
 *    LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES (none of the three if the
 *    store is empty), and no other descriptor but its stdio.
 *  - Restart=on-failure: exit 0 is a clean stop and ends the keeper; a
 *    death by a signal, or a non-zero exit once a child said READY=1, is
 *    restarted at once with the store; a non-zero exit before any READY=1
 *    is a failed start (a bad config) and ends the keeper with its code.
 *  - `systemctl restart`: SIGUSR1 sends the child SIGTERM with
 *    ZS_RESTART_SIGVAL (keeper.h), which tells it from a stop, as systemd's
 *    restart job does (restart.c).  A child that exits 0 leaving "pool" in
 *    the store handed over: the next one is started at once, as systemd
 *    starts the restart job's.
 *
 * Where it differs from systemd, on purpose:
 *  - The store keeps the order of arrival.  systemd prepends each stored
 *    descriptor to a list and passes the list from its head, newest first,
 *    and takes those of one message out of a hash set: the daemon must find
 *    its descriptors by name, never by position.
 *  - The child starts with SIGTERM, SIGINT, SIGHUP and SIGUSR2 blocked:
 *    zswapd reads them from a signalfd, and one forwarded while it starts
 *    waits for it there instead of killing it.
 *  - No start limit once a child was ready: the store holds the pages of
 *    running processes, so it is kept and the child started again, after
 *    a wait of up to 5 s when it keeps dying within a second of its start.
 *    Before the first READY=1, five deaths by a signal in a row end the
 *    keeper (StartLimitBurst=5), or "zswapd" in a shell would never return.
 *  - Stopped (SIGTERM) while no child runs and the store is not empty, the
 *    keeper starts one and passes it the signal, so that it gives back
 *    what it stored instead of the store being closed under the clients.
 *  - A descriptor whose name would make LISTEN_FDNAMES longer than one
 *    environment string may be (MAX_ARG_STRLEN, 128 KiB) is refused as
 *    over the limit: systemd would store it, then fail every exec.
 *
 * The keeper must outlive what it keeps: its oom_score_adj is -1000 (the
 * child gets ours back), it maps nothing of the daemon's, holds no lock,
 * and does little but wait in epoll_wait().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "keeper_store.h"
#include "log.h"

#define KEEPER_MSG_MAX 4096	/* bytes of a datagram: systemd's NOTIFY_BUFFER_MAX (PIPE_BUF) */
#define KEEPER_MSG_FDS 768	/* systemd's NOTIFY_FD_MAX; the kernel passes 253 at most (SCM_MAX_FD) */
#define KEEPER_QUICK_USEC 1000000ull   /* a child dead unready sooner after its start died quickly */
#define KEEPER_QUICK_FREE 3	       /* quick deaths in a row before the first wait */
#define KEEPER_WAIT_MIN_USEC 100000ull /* the first wait, doubled at each further quick death */
#define KEEPER_WAIT_MAX_USEC 5000000ull
#define KEEPER_START_TRIES 5 /* deaths by a signal before any READY=1 (StartLimitBurst=) */
#define KEEPER_EXEC_FAILED 127 /* the child's exit code when it cannot be exec'd, as in a shell */
#define KEEPER_RCVBUF (8 << 20) /* bytes queued on NOTIFY_SOCKET: systemd's NOTIFY_RCVBUF_SIZE */

static const char listen_pid_eq[] = "LISTEN_PID=";

struct keeper {
	const char *exe;
	char *const *argv;
	int ready_fd; /* written and closed at the first READY=1, -1 then */
	int epfd, sig_fd, notify_fd, timer_fd;
	char notify_dir[64];  /* private (0700) directory of the socket, "" if none */
	char notify_env[128]; /* NOTIFY_SOCKET=<notify_dir>/notify */
	struct keeper_store store;
	pid_t child;	  /* 0 while none runs */
	uint64_t child_start_usec;
	bool child_ready; /* this child said READY=1 */
	bool ever_ready;  /* a child did, in our life */
	unsigned quick_deaths; /* children dead within KEEPER_QUICK_USEC of their start, in a row */
	unsigned early_deaths; /* killed before any READY=1, in a row */
	int last_code;	       /* of the last child: its exit code, 128 + signal if killed */
	int stop_signal;       /* SIGTERM or SIGINT once asked to stop, 0 before */
	bool done;
	int exit_code; /* ours, once done */
	/* What the child starts with: what we were given (and gave up for us). */
	sigset_t child_sigmask;
	struct rlimit nofile;
	char oom_score_adj[16]; /* "" if unknown */
};

static uint64_t keeper_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void keeper_done(struct keeper *k, int exit_code)
{
	k->done = true;
	k->exit_code = exit_code;
}

/* ---- notifications ------------------------------------------------------ */

/* What one datagram says; pointers into its text. */
struct notify_msg {
	bool ready, stopping, fdstore, fdstore_remove, fdpoll_off;
	const char *fdname; /* the first FDNAME=, NULL if none */
	const char *errno_value;
};

/* Pure: splits text (NUL-terminated, cut at each '\n') into what we act on. */
static void keeper_notify_parse(char *text, struct notify_msg *ret)
{
	*ret = (struct notify_msg){ 0 };
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strcmp(line, "READY=1"))
			ret->ready = true;
		else if (!strcmp(line, "STOPPING=1"))
			ret->stopping = true;
		else if (!strcmp(line, "FDSTORE=1"))
			ret->fdstore = true;
		else if (!strcmp(line, "FDSTOREREMOVE=1"))
			ret->fdstore_remove = true;
		else if (!strcmp(line, "FDPOLL=0"))
			ret->fdpoll_off = true;
		else if (!strncmp(line, "FDNAME=", 7) && !ret->fdname)
			ret->fdname = line + 7;
		else if (!strncmp(line, "ERRNO=", 6))
			ret->errno_value = line + 6;
	}
}

static void keeper_child_is_ready(struct keeper *k)
{
	if (k->child_ready) /* again, after an upgrade's exec */
		return;
	k->child_ready = k->ever_ready = true;
	k->early_deaths = 0;
	log_info("keeper: zswapd (pid %d) is ready, %zu descriptors in the store", (int)k->child,
		 k->store.n);
	if (k->ready_fd >= 0) {
		(void)!write(k->ready_fd, "1", 1);
		close(k->ready_fd);
		k->ready_fd = -1;
	}
}

/* One datagram from the child; takes fds, stored or closed. */
static void keeper_notify_dispatch(struct keeper *k, char *text, int *fds, size_t nfds)
{
	struct notify_msg m;

	keeper_notify_parse(text, &m);
	if (m.ready)
		keeper_child_is_ready(k);
	if (m.stopping)
		log_debug("keeper: zswapd (pid %d) is stopping", (int)k->child);
	if (m.errno_value)
		log_debug("keeper: zswapd (pid %d) failed: errno %s", (int)k->child, m.errno_value);
	if (m.fdstore_remove) {
		if (!m.fdname || !keeper_fdname_valid(m.fdname))
			log_warning("keeper: FDSTOREREMOVE=1 without a valid FDNAME=, ignoring");
		else
			keeper_store_remove(&k->store, m.fdname);
	} else if (m.fdstore) {
		const char *name = m.fdname;

		if (name && !keeper_fdname_valid(name)) {
			log_warning("keeper: invalid FDNAME= (printable ASCII but ':', at most %d "
				    "characters), storing as \"stored\"",
				    KEEPER_FDNAME_MAX);
			name = NULL;
		}
		keeper_store_add_all(&k->store, fds, nfds, name ? name : "stored", !m.fdpoll_off);
		nfds = 0;
	}
	if (nfds) {
		log_warning("keeper: closing %zu descriptors sent without FDSTORE=1", nfds);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

/* Reads one datagram: 1 if one was read (or a signal interrupted), 0 if none is left. */
static int keeper_notify_read_one(struct keeper *k)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * KEEPER_MSG_FDS)];
	} control;
	char text[KEEPER_MSG_MAX + 1];
	struct iovec iov = { .iov_base = text, .iov_len = KEEPER_MSG_MAX };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = &control,
			     .msg_controllen = sizeof(control) };
	struct ucred cred = { .pid = 0 };
	int fds[KEEPER_MSG_FDS];
	const char *why = NULL;
	size_t nfds = 0;
	ssize_t n;

	n = recvmsg(k->notify_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
	if (n < 0) {
		if (errno == EINTR)
			return 1;
		if (errno != EAGAIN)
			log_warning_errno(-errno, "keeper: cannot read NOTIFY_SOCKET: %m");
		return 0;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS) {
			size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (m > KEEPER_MSG_FDS - nfds) /* cannot be: the buffer holds no more */
				m = KEEPER_MSG_FDS - nfds;
			memcpy(fds + nfds, CMSG_DATA(c), m * sizeof(int));
			nfds += m;
		} else if (c->cmsg_type == SCM_CREDENTIALS &&
			   c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		why = "its descriptors were cut short (more than we receive, or RLIMIT_NOFILE)";
	else if (cred.pid <= 0)
		why = "it carries no credentials";
	else if (mh.msg_flags & MSG_TRUNC)
		why = "it is longer than 4096 bytes";
	else if (!k->child || cred.pid != k->child)
		why = "only zswapd's main process may send";
	else if (n > 1 && memchr(text, '\0', (size_t)n - 1))
		why = "it holds a NUL byte";
	if (why) {
		log_warning("keeper: refused a notification from pid %d: %s; closing its %zu "
			    "descriptors",
			    (int)cred.pid, why, nfds);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return 1;
	}
	text[n] = '\0';
	keeper_notify_dispatch(k, text, fds, nfds);
	return 1;
}

static void keeper_notify_drain(struct keeper *k)
{
	while (keeper_notify_read_one(k) > 0)
		;
}

/* ---- the child ---------------------------------------------------------- */

/* What a start needs, made before fork(): the child only makes syscalls. */
struct spawn {
	char **envp; /* entries borrowed from environ but these three: */
	char *listen_fds, *listen_pid, *listen_fdnames;
	int *held; /* held[t - 3]: the entry whose descriptor is t, -1 if none; t < n + 3 */
};

static bool keeper_env_is_ours(const char *e)
{
	static const char *const ours[] = { "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=",
					    "LISTEN_FDNAMES=" };

	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strncmp(e, ours[i], strlen(ours[i])))
			return true;
	return false;
}

static void keeper_spawn_free(struct spawn *sp)
{
	free(sp->envp);
	free(sp->listen_fds);
	free(sp->listen_pid);
	free(sp->listen_fdnames);
	free(sp->held);
}

/* Our environment without NOTIFY_SOCKET and LISTEN_*, then the child's own. */
static int keeper_spawn_prepare(struct keeper *k, struct spawn *sp)
{
	size_t n = 0, i = 0, len = 0;
	char *p;

	while (environ[n])
		n++;
	sp->envp = calloc(n + 5, sizeof(*sp->envp));
	if (!sp->envp)
		return -ENOMEM;
	for (char **e = environ; *e; e++)
		if (!keeper_env_is_ours(*e))
			sp->envp[i++] = *e;
	sp->envp[i++] = k->notify_env;
	if (!k->store.n)
		return 0;
	/* LISTEN_PID's digits are written by the child, which alone knows them. */
	sp->listen_pid = calloc(1, sizeof(listen_pid_eq) + 24);
	sp->held = malloc(k->store.n * sizeof(*sp->held));
	sp->listen_fdnames = malloc(sizeof(KEEPER_LISTEN_FDNAMES) + k->store.names_len);
	if (!sp->listen_pid || !sp->held || !sp->listen_fdnames ||
	    asprintf(&sp->listen_fds, "LISTEN_FDS=%zu", k->store.n) < 0)
		return -ENOMEM;
	memcpy(sp->listen_pid, listen_pid_eq, sizeof(listen_pid_eq) - 1);
	p = stpcpy(sp->listen_fdnames, KEEPER_LISTEN_FDNAMES);
	for (size_t j = 0; j < k->store.n; j++) {
		len = strlen(k->store.fds[j].name);
		memcpy(p, k->store.fds[j].name, len);
		p += len;
		*p++ = ':';
	}
	p[-1] = '\0';
	sp->envp[i++] = sp->listen_fds;
	sp->envp[i++] = sp->listen_pid;
	sp->envp[i++] = sp->listen_fdnames;
	for (size_t j = 0; j < k->store.n; j++)
		sp->held[j] = -1;
	for (size_t j = 0; j < k->store.n; j++)
		if (k->store.fds[j].fd >= 3 && (size_t)k->store.fds[j].fd < k->store.n + 3)
			sp->held[k->store.fds[j].fd - 3] = (int)j;
	return 0;
}

/*
 * In the child: the store's descriptors to 3, 4, ... in order, close-on-exec
 * cleared.  A target still held by one not yet moved has that one moved out
 * of the way first, to the lowest free number, which is above every target
 * filled so far; each original is closed once copied.  So the child holds at
 * most one descriptor more than we do, and a store as large as
 * RLIMIT_NOFILE allows can be handed over.  st is the child's copy.
 */
static int keeper_child_move_fds(struct keeper_fd *st, size_t n, int *held)
{
	for (size_t i = 0; i < n; i++) {
		int t = 3 + (int)i, from = st[i].fd;

		if (from == t) {
			if (fcntl(t, F_SETFD, 0) < 0)
				return -errno;
			continue;
		}
		if (held[i] >= 0) {
			int away = fcntl(t, F_DUPFD_CLOEXEC, 3);

			if (away < 0)
				return -errno;
			st[held[i]].fd = away;
			if ((size_t)away < n + 3)
				held[away - 3] = held[i];
		}
		if (dup2(from, t) < 0)
			return -errno;
		if (from >= 3 && (size_t)from < n + 3)
			held[from - 3] = -1;
		if (from >= 3) /* never our stdio */
			close(from);
		held[i] = (int)i;
	}
	return 0;
}

/* In the child: logs with write(2) alone, and exits. */
static _Noreturn void keeper_child_fail(const char *what, const char *arg, int err)
{
	const char *parts[] = { "<3>keeper: ", what, " ", arg, ": ", strerror(err), "\n" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		(void)!write(STDERR_FILENO, parts[i], strlen(parts[i]));
	_exit(KEEPER_EXEC_FAILED);
}

static void keeper_fmt_pid(char *dst, pid_t pid)
{
	char digits[24];
	size_t n = 0;

	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	while (n)
		*dst++ = digits[--n];
	*dst = '\0';
}

/* Between fork() and exec(), in the child: only syscalls. */
static _Noreturn void keeper_child_exec(struct keeper *k, struct spawn *sp)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int r, fd;

	sigaction(SIGPIPE, &dfl, NULL);
	sigprocmask(SIG_SETMASK, &k->child_sigmask, NULL);
	r = keeper_child_move_fds(k->store.fds, k->store.n, sp->held);
	if (r < 0)
		keeper_child_fail("cannot move the stored descriptors for", k->exe, -r);
	/* Nothing else, as under systemd: not ours, not what we were given. */
	close_range((unsigned)k->store.n + 3, ~0U, 0);
	if (sp->listen_pid)
		keeper_fmt_pid(sp->listen_pid + sizeof(listen_pid_eq) - 1, getpid());
	setrlimit(RLIMIT_NOFILE, &k->nofile);
	if (k->oom_score_adj[0]) {
		fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, k->oom_score_adj, strlen(k->oom_score_adj));
			close(fd);
		}
	}
	execve(k->exe, k->argv, sp->envp);
	keeper_child_fail("cannot exec", k->exe, errno);
}

static int keeper_child_start(struct keeper *k)
{
	struct spawn sp = { 0 };
	pid_t pid;
	int r;

	keeper_store_sweep(&k->store);
	r = keeper_spawn_prepare(k, &sp);
	if (r < 0) {
		log_error_errno(r, "keeper: cannot prepare the start of %s: %m", k->exe);
		goto out;
	}
	pid = fork();
	if (pid == 0)
		keeper_child_exec(k, &sp);
	if (pid < 0) {
		r = log_error_errno(-errno, "keeper: cannot fork: %m");
		goto out;
	}
	k->child = pid;
	k->child_ready = false;
	k->child_start_usec = keeper_now_usec();
	log_info("keeper: started %s (pid %d) with %zu stored descriptors", k->exe, (int)pid,
		 k->store.n);
	/* Stopped while none ran: it gets the store, and gives back what it holds. */
	if (k->stop_signal)
		kill(pid, k->stop_signal);
out:
	keeper_spawn_free(&sp);
	return r;
}

/* Pure: how long to wait before a start, after quick deaths in a row. */
static uint64_t keeper_restart_wait_usec(unsigned quick_deaths)
{
	uint64_t wait = KEEPER_WAIT_MIN_USEC;

	if (quick_deaths < KEEPER_QUICK_FREE)
		return 0;
	for (unsigned i = KEEPER_QUICK_FREE; i < quick_deaths && wait < KEEPER_WAIT_MAX_USEC; i++)
		wait *= 2;
	return wait < KEEPER_WAIT_MAX_USEC ? wait : KEEPER_WAIT_MAX_USEC;
}

/* Starts the child after usec (0: now); a start that fails is tried again later. */
static void keeper_child_restart(struct keeper *k, uint64_t usec)
{
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(usec / 1000000),
						.tv_nsec = (long)(usec % 1000000) * 1000 } };

	if (!usec && keeper_child_start(k) == 0)
		return;
	if (!usec)
		its.it_value.tv_sec = KEEPER_WAIT_MAX_USEC / 1000000;
	if (timerfd_settime(k->timer_fd, 0, &its, NULL) < 0) {
		log_error_errno(-errno, "keeper: cannot arm the restart timer: %m; giving up");
		keeper_done(k, 1);
	}
}

/* A clean stop, or (the pool left in the store) a hand-over for a restart. */
static void keeper_child_exited_0(struct keeper *k, pid_t pid)
{
	if (!keeper_store_find(&k->store, "pool")) {
		log_info("keeper: zswapd (pid %d) stopped cleanly; closing %zu stored descriptors",
			 (int)pid, k->store.n);
		keeper_done(k, 0);
		return;
	}
	/* Stopping: the next one gets the stop signal at its start, and gives
	 * back what it takes over. */
	log_info("keeper: zswapd (pid %d) handed over for a restart: starting the next with %zu "
		 "stored descriptors%s",
		 (int)pid, k->store.n, k->stop_signal ? ", to stop it" : "");
	keeper_store_sweep(&k->store);
	keeper_child_restart(k, 0);
}

static void keeper_child_died(struct keeper *k, int status)
{
	pid_t pid = k->child;
	bool killed = WIFSIGNALED(status);
	int code = killed ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	uint64_t wait;
	char how[48];

	k->child = 0;
	k->last_code = code;
	if (killed)
		snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "exited with code %d", code);
	if (!killed && code == 0) {
		keeper_child_exited_0(k, pid);
		return;
	}
	if (k->stop_signal) {
		log_info("keeper: zswapd (pid %d) %s while stopping", (int)pid, how);
		keeper_done(k, code);
		return;
	}
	if (!killed && !k->ever_ready) {
		log_error("keeper: zswapd (pid %d) failed to start: it %s before it was ready",
			  (int)pid, how);
		keeper_done(k, code);
		return;
	}
	if (killed && !k->ever_ready && ++k->early_deaths >= KEEPER_START_TRIES) {
		log_error("keeper: zswapd (pid %d) %s, %u times in a row before any was ready: "
			  "giving up",
			  (int)pid, how, k->early_deaths);
		keeper_done(k, code);
		return;
	}
	keeper_store_sweep(&k->store);
	/* One that was serving is started again at once, however soon it
	 * died: its processes wait on it.  Only starts that die before they
	 * are ready (a recovery that cannot succeed) back off. */
	k->quick_deaths = !k->child_ready &&
					  keeper_now_usec() - k->child_start_usec < KEEPER_QUICK_USEC ?
				  k->quick_deaths + 1 :
				  0;
	wait = keeper_restart_wait_usec(k->quick_deaths);
	if (wait)
		log_warning("keeper: zswapd (pid %d) %s: starting it again with %zu stored "
			    "descriptors in %llu ms (%u quick deaths in a row)",
			    (int)pid, how, k->store.n, (unsigned long long)(wait / 1000),
			    k->quick_deaths);
	else
		log_warning("keeper: zswapd (pid %d) %s: starting it again with %zu stored descriptors",
			    (int)pid, how, k->store.n);
	keeper_child_restart(k, wait);
}

static void keeper_child_reap(struct keeper *k)
{
	pid_t pid;
	int status;

	while (!k->done && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != k->child)
			continue;
		/* What it sent before it died is read first, as systemd reads
		 * NOTIFY_SOCKET before SIGCHLD: it is stored, and not refused
		 * as coming from a pid that is no longer the child. */
		keeper_notify_drain(k);
		keeper_child_died(k, status);
	}
}

static void keeper_on_timer(struct keeper *k)
{
	uint64_t expirations;

	if (read(k->timer_fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	if (!k->child && !k->done)
		keeper_child_restart(k, 0);
}

/* ---- signals and the loop ----------------------------------------------- */

static void keeper_on_stop_signal(struct keeper *k, int sig)
{
	struct itimerspec off = { 0 };

	if (!k->stop_signal)
		log_info("keeper: signal %d: stopping zswapd", sig);
	k->stop_signal = sig;
	if (k->child) {
		kill(k->child, sig);
	} else if (k->store.n) {
		log_info("keeper: starting zswapd to stop it, so that it gives back what it stored");
		timerfd_settime(k->timer_fd, 0, &off, NULL);
		if (keeper_child_start(k) < 0)
			keeper_done(k, 1);
	} else {
		keeper_done(k, k->last_code);
	}
}

/* A restart: the child hands over instead of draining, and is started again. */
static void keeper_on_restart_signal(struct keeper *k)
{
	union sigval v = { .sival_int = ZS_RESTART_SIGVAL };

	if (!k->child || k->stop_signal) {
		log_info("keeper: SIGUSR1, but no zswapd runs to restart");
		return;
	}
	log_info("keeper: SIGUSR1: restarting zswapd (pid %d)", (int)k->child);
	if (sigqueue(k->child, SIGTERM, v) < 0)
		log_error_errno(-errno, "keeper: cannot signal zswapd: %m");
}

static void keeper_on_signal(struct keeper *k)
{
	struct signalfd_siginfo si;

	while (!k->done && read(k->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD)
			keeper_child_reap(k);
		else if (sig == SIGTERM || sig == SIGINT)
			keeper_on_stop_signal(k, sig);
		else if (sig == SIGUSR1)
			keeper_on_restart_signal(k);
		else if (k->child) /* SIGHUP: re-read the config; SIGUSR2: upgrade in place */
			kill(k->child, sig);
		else
			log_info("keeper: signal %d, but no zswapd runs to pass it to", sig);
	}
}

static int keeper_loop(struct keeper *k)
{
	struct epoll_event ev[16];

	while (!k->done) {
		int n = epoll_wait(k->epfd, ev, 16, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return log_error_errno(-errno, "keeper: epoll_wait failed: %m");
		for (int i = 0; i < n && !k->done; i++) {
			int fd = ev[i].data.fd;

			if (fd == k->sig_fd)
				keeper_on_signal(k);
			else if (fd == k->notify_fd)
				keeper_notify_drain(k);
			else if (fd == k->timer_fd)
				keeper_on_timer(k);
			else
				keeper_store_sweep(&k->store);
		}
	}
	return 0;
}

/* Ours goes to -1000; the child gets back what we were started with. */
static void keeper_protect_from_oom(struct keeper *k)
{
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, k->oom_score_adj, sizeof(k->oom_score_adj) - 1);
	k->oom_score_adj[n > 0 ? n : 0] = '\0';
	if (pwrite(fd, "-1000", 5, 0) < 0)
		log_debug_errno(-errno, "keeper: cannot set our oom_score_adj: %m, ignoring");
	close(fd);
}

/* Each stored descriptor is one of ours: take the hard limit (the child gets the soft one back). */
static void keeper_raise_nofile(struct keeper *k)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &k->nofile) < 0)
		return;
	rl = (struct rlimit){ .rlim_cur = k->nofile.rlim_max, .rlim_max = k->nofile.rlim_max };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warning_errno(-errno, "keeper: cannot raise RLIMIT_NOFILE: %m, ignoring");
}

static int keeper_watch_in(struct keeper *k, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(k->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/*
 * NOTIFY_SOCKET is a path in a directory of our own, mode 0700: an
 * abstract name would be anyone's to bind first, or once we are gone, and
 * zswapd sends every served process's uffd there.
 */
static int keeper_notify_open(struct keeper *k)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int one = 1, rcvbuf = KEEPER_RCVBUF;

	snprintf(k->notify_dir, sizeof(k->notify_dir), "%s/zswapd-keeper.XXXXXX",
		 access("/run", W_OK) == 0 ? "/run" : "/tmp");
	if (!mkdtemp(k->notify_dir)) {
		k->notify_dir[0] = '\0';
		return -errno;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", k->notify_dir);
	snprintf(k->notify_env, sizeof(k->notify_env), "NOTIFY_SOCKET=%s", sa.sun_path);
	k->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (k->notify_fd < 0)
		return -errno;
	if (bind(k->notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(k->notify_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		return -errno;
	/* Many FDSTORE=1 datagrams at once (one per client) must not block the daemon. */
	if (setsockopt(k->notify_fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(k->notify_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return keeper_watch_in(k, k->notify_fd);
}

static int keeper_setup(struct keeper *k)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t mask;
	int r;

	prctl(PR_SET_NAME, "zswapd-keeper", 0, 0, 0); /* told apart from the daemon in ps */
	keeper_protect_from_oom(k);
	keeper_raise_nofile(k);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, &k->child_sigmask);
	/* The child's: ours as given, with the four it reads from a signalfd. */
	sigorset(&k->child_sigmask, &k->child_sigmask, &mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* The background parent may be gone when READY=1 comes. */
	sigaction(SIGPIPE, &ign, NULL);
	k->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (k->epfd < 0)
		return log_error_errno(-errno, "keeper: cannot create epoll: %m");
	k->store.epfd = k->epfd;
	k->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	k->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (k->sig_fd < 0 || k->timer_fd < 0)
		return log_error_errno(-errno, "keeper: cannot create signalfd or timerfd: %m");
	r = keeper_watch_in(k, k->sig_fd);
	if (r == 0)
		r = keeper_watch_in(k, k->timer_fd);
	if (r == 0)
		r = keeper_notify_open(k);
	if (r < 0)
		return log_error_errno(r, "keeper: cannot set up NOTIFY_SOCKET: %m");
	log_info("keeper: keeping zswapd's descriptors on %s", k->notify_env);
	return 0;
}

static void keeper_teardown(struct keeper *k)
{
	keeper_store_free(&k->store);
	if (k->ready_fd >= 0) /* never ready: the background parent says it failed */
		close(k->ready_fd);
	if (k->notify_fd >= 0)
		close(k->notify_fd);
	if (k->notify_dir[0]) {
		char path[sizeof(k->notify_dir) + 8];

		snprintf(path, sizeof(path), "%s/notify", k->notify_dir);
		unlink(path);
		rmdir(k->notify_dir);
	}
	if (k->timer_fd >= 0)
		close(k->timer_fd);
	if (k->sig_fd >= 0)
		close(k->sig_fd);
	if (k->epfd >= 0)
		close(k->epfd);
}

int keeper_run(const char *exe, char *const argv[], int ready_fd)
{
	struct keeper k = { .exe = exe,
			    .argv = argv,
			    .ready_fd = ready_fd,
			    .epfd = -1,
			    .sig_fd = -1,
			    .notify_fd = -1,
			    .timer_fd = -1,
			    .store.epfd = -1 };
	int r;

	r = keeper_setup(&k);
	if (r == 0)
		r = keeper_child_start(&k);
	if (r == 0)
		r = keeper_loop(&k);
	keeper_teardown(&k);
	return r < 0 ? r : k.exit_code;
}
