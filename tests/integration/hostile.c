// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostile - a client that speaks zswapd's protocol itself, not through the
 * shim, and tries what docs/design.md's threat model says zswapd refuses.
 * Each scenario exits 0 if zswapd held (the attack failed and zswapd still
 * answers), 1 if the attack got through, 2 on a usage or set-up error, 77
 * if the machine cannot run it.  Every line it prints starts with
 * "hostile: ".
 *
 *   hostile stale-pid SHIM MEMTEST   a connection kept open by a helper after
 *                                    its process exited, its pid given on
 *                                    purpose to a served process of another
 *                                    user (clone3 set_tid) that closed its
 *                                    own connection: a plain and a forked
 *                                    hello on it get nothing of the victim's,
 *                                    and the victim verifies every page
 *   hostile foreign-uffd             a uffd made in another process (a
 *                                    forked helper) registered as one's own
 *   hostile exec                     registered, then exec's another program
 *                                    with the connection kept open: prints
 *                                    "hostile: pid N" and becomes `sleep 60`
 *   hostile blocking-uffd            its uffd set blocking, and another
 *                                    reader racing zswapd for its messages
 *   hostile truncate-staging         the shared staging memfd truncated
 *   hostile bad-scratch              its agent's scratch words name memory
 *                                    that is not its private anonymous memory
 *   hostile misreport                its agent reports 2^40 misreported moves
 *   hostile conn-flood N             N connections at once (run as a user)
 *   hostile ctl-flood SECONDS        control requests pipelined without end
 *                                    on 4 connections
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>

#include "compat.h"
#include "proto.h"

#define PAGE 4096
#define HELD 0
#define BROKEN 1
#define SETUP 2
#define NOT_HERE 77

static const char *sock_path;

#define say(...) (printf("hostile: " __VA_ARGS__), putchar('\n'), fflush(stdout))

static int zconnect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	return fd;
}

/* The next message within ms: its type, or 0 on a closed connection, -errno. */
static int zrecv(int fd, uint64_t *buf, int *fds, int maxfds, int *nfds, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	*nfds = 0;
	if (poll(&p, 1, ms) == 0)
		return -ETIMEDOUT;
	n = proto_recv(fd, buf, ZS_MSG_MAX, fds, maxfds, nfds);
	if (n == 0 || n == -ECONNRESET)
		return 0;
	if (n < 0)
		return (int)n;
	return ((const struct zs_hdr *)buf)->type;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Whether zswapd answers a STATS request on a fresh connection within ms. */
static bool zswapd_answers(int ms)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	int fds[4], nfds, fd = zconnect(), t;

	if (fd < 0)
		return false;
	t = proto_send(fd, ZS_STATS, 7, NULL, 0, NULL, 0) < 0 ? -1
							     : zrecv(fd, buf, fds, 4, &nfds, ms);
	close_fds(fds, nfds);
	close(fd);
	return t == ZS_STATS_REPLY;
}

/* One statistic by name, or -1. */
static long long zswapd_stat(const char *name)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	int fds[4], nfds, fd = zconnect();
	long long v = -1;

	if (fd < 0)
		return -1;
	if (proto_send(fd, ZS_STATS, 8, NULL, 0, NULL, 0) == 0 &&
	    zrecv(fd, buf, fds, 4, &nfds, 5000) == ZS_STATS_REPLY) {
		const struct zs_hdr *h = (const struct zs_hdr *)buf;
		const struct zs_stat *s = proto_payload(h);

		for (size_t i = 0; i < h->len / sizeof(*s); i++)
			if (strcmp(s[i].name, name) == 0)
				v = (long long)s[i].value;
	}
	close(fd);
	return v;
}

/* ZS_RECLAIM of our own pid, on a connection of its own: its reply is not waited for. */
static int ask_reclaim(uint64_t bytes)
{
	struct zs_reclaim rq = { .pid = (uint32_t)getpid(), .bytes = bytes };
	int fd = zconnect();

	if (fd < 0)
		return fd;
	if (proto_send(fd, ZS_RECLAIM, 9, &rq, sizeof(rq), NULL, 0) < 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

struct reg {
	int sock, uffd, staging_fd;
	uint8_t *beacon, *staging;
	uint32_t staging_pages;
};

/* A uffd of our own mm from zswapd's /dev/userfaultfd descriptor, as the shim makes it. */
static int uffd_from_devfd(int devfd)
{
	int u = ioctl(devfd, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);

	return u < 0 ? -errno : u;
}

/* HELLO on r->sock; the reply's type (ZS_DEVFD with its descriptor in *devfd). */
static int hello_as(int sock, pid_t pid, uint32_t flags, int *devfd)
{
	struct zs_hello h = { .pid = (uint32_t)pid, .flags = flags };
	uint64_t buf[ZS_MSG_MAX / 8];
	int fds[4], nfds, t;

	*devfd = -1;
	if (proto_send(sock, ZS_HELLO, 1, &h, sizeof(h), NULL, 0) < 0)
		return -EIO;
	t = zrecv(sock, buf, fds, 4, &nfds, 5000);
	if (t == ZS_DEVFD && nfds == 1)
		*devfd = fds[0];
	else
		close_fds(fds, nfds);
	return t;
}

static int hello(int sock, uint32_t flags, int *devfd)
{
	return hello_as(sock, getpid(), flags, devfd);
}

/*
 * Sends uffd (ours, or not) with our beacon, and reads the answer: 0 and
 * the staging mapped if zswapd sent READY, else the reply's type or -errno.
 */
static int send_uffd(struct reg *r, int uffd)
{
	struct zs_uffd u = { .beacon = (uint64_t)(uintptr_t)r->beacon };
	uint64_t buf[ZS_MSG_MAX / 8];
	int fds[4], nfds, t;
	const struct zs_ready *rd;

	if (proto_send(r->sock, ZS_UFFD, 2, &u, sizeof(u), &uffd, 1) < 0)
		return -EIO;
	t = zrecv(r->sock, buf, fds, 4, &nfds, 5000);
	if (t != ZS_READY || nfds != 1) {
		close_fds(fds, nfds);
		return t == ZS_READY ? -EPROTO : t == 0 ? -ECONNRESET : t;
	}
	rd = proto_payload((const struct zs_hdr *)buf);
	r->staging_fd = fds[0];
	r->staging_pages = rd->staging_pages;
	r->staging = mmap(NULL, ((size_t)rd->staging_pages + 1) * PAGE, PROT_READ | PROT_WRITE,
			  MAP_SHARED, fds[0], 0);
	return r->staging == MAP_FAILED ? -errno : 0;
}

/* Registers this process as an honest shim would, without an agent. */
static int register_self(struct reg *r)
{
	int devfd, t;

	memset(r, 0, sizeof(*r));
	r->uffd = r->staging_fd = -1;
	r->beacon = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r->sock = zconnect();
	if (r->sock < 0 || r->beacon == MAP_FAILED)
		return -EIO;
	t = hello(r->sock, 0, &devfd);
	if (t != ZS_DEVFD)
		return t < 0 ? t : -EPROTO;
	r->uffd = uffd_from_devfd(devfd);
	close(devfd);
	if (r->uffd < 0)
		return r->uffd;
	t = send_uffd(r, r->uffd);
	if (t != 0)
		return t < 0 ? t : -EPROTO;
	madvise(r->beacon, PAGE, MADV_DONTNEED); /* as the shim empties it */
	return 0;
}

/* ---- a connection kept after its process exited, its pid given to a victim ---- */

static int send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = { &c, 1 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { &c, 1 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* A child of pid exactly `pid` (free, we are root), running fn. */
static pid_t spawn_at(pid_t pid, void (*fn)(void *), void *arg)
{
	pid_t tid = pid;
	struct clone_args ca = { .exit_signal = SIGCHLD, .set_tid = (uint64_t)(uintptr_t)&tid,
				 .set_tid_size = 1 };
	long c = syscall(SYS_clone3, &ca, sizeof(ca));

	if (c == 0) {
		fn(arg);
		_exit(127);
	}
	return c < 0 ? -errno : (pid_t)c;
}

struct victim {
	const char *shim, *memtest;
	int out; /* its stdout */
};

/* The rest of our environment goes along (a sanitizer's options, say). */
static void victim_run(void *arg)
{
	const struct victim *v = arg;

	if (setenv("LD_PRELOAD", v->shim, 1) || setenv("ZSWAP_SOCKET", sock_path, 1) ||
	    setenv("MEMTEST_SHUTDOWN_ZSWAPD", "1", 1))
		_exit(126);
	dup2(v->out, 1);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(126);
	execl(v->memtest, "memtest", "wait-signal", "16", (char *)NULL);
	_exit(127);
}

static int t_stale_pid(int argc, char **argv)
{
	int sp[2], pipefd[2], stale[2], rc = HELD;
	struct victim v;
	char line[256];
	pid_t a, vp;
	FILE *out;

	if (argc < 4 || geteuid() != 0)
		return argc < 4 ? SETUP : NOT_HERE;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return SETUP;
	/* The process whose pid the connections carry: it connects twice and exits. */
	a = fork();
	if (a == 0) {
		if (setresgid(4242, 4242, 4242) || setresuid(4242, 4242, 4242))
			_exit(1);
		for (int i = 0; i < 2; i++) {
			int fd = zconnect();

			if (fd < 0 || send_fd(sp[1], fd) < 0)
				_exit(1);
		}
		_exit(0);
	}
	stale[0] = recv_fd(sp[0]);
	stale[1] = recv_fd(sp[0]);
	if (a < 0 || waitpid(a, NULL, 0) != a || stale[0] < 0 || stale[1] < 0)
		return SETUP;
	/* Its pid, free now, for a served process of another user. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return SETUP;
	v = (struct victim){ argv[2], argv[3], pipefd[1] };
	vp = spawn_at(a, victim_run, &v);
	close(pipefd[1]);
	if (vp != a) {
		say("cannot start a process at pid %d (%s)", (int)a, strerror(vp < 0 ? -vp : 0));
		return NOT_HERE;
	}
	out = fdopen(pipefd[0], "r");
	while (fgets(line, sizeof(line), out) && !strstr(line, "evicted"))
		fputs(line, stdout);
	usleep(300000); /* its connection's close reaches zswapd */
	say("victim pid %d has evicted pages; two connections of an exited process carry its pid",
	    (int)vp);
	{
		uint64_t buf[ZS_MSG_MAX / 8];
		int fds[4], nfds, devfd, t;

		t = hello_as(stale[0], vp, ZS_HELLO_FORKED, &devfd);
		if (t == ZS_DEVFD)
			close(devfd);
		/* A forked hello that pairs gets READY with the victim's uffd next. */
		if (t == -ETIMEDOUT)
			t = zrecv(stale[0], buf, fds, 4, &nfds, 2000);
		else
			nfds = 0;
		if (t == ZS_READY) {
			say("BROKEN: a forked hello on a stale connection got the victim's staging and uffd");
			rc = BROKEN;
		}
		close_fds(fds, nfds);
		t = hello_as(stale[1], vp, 0, &devfd);
		if (t == ZS_DEVFD) {
			say("BROKEN: a hello on a stale connection was taken as the victim's");
			close(devfd);
			rc = BROKEN;
		}
		say("replies to the stale hellos: %s", rc == HELD ? "refused" : "accepted");
	}
	usleep(300000);
	kill(vp, SIGUSR1);
	while (fgets(line, sizeof(line), out))
		fputs(line, stdout);
	{
		int status = 0;

		waitpid(vp, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			say("BROKEN: the victim did not get its pages back intact (status %#x)", status);
			rc = BROKEN;
		}
	}
	if (!zswapd_answers(5000)) {
		say("BROKEN: zswapd does not answer");
		rc = BROKEN;
	}
	return rc;
}

/* ---- a uffd made in another process, registered as one's own ---- */

static int t_foreign_uffd(void)
{
	struct reg r = { .uffd = -1 };
	int devfd, t, sp[2], foreign;
	pid_t k;

	r.beacon = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r.sock = zconnect();
	if (r.sock < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return SETUP;
	if (hello(r.sock, 0, &devfd) != ZS_DEVFD)
		return SETUP;
	/* A helper: same layout (a fork), another mm.  It makes the uffd. */
	k = fork();
	if (k == 0) {
		int u = uffd_from_devfd(devfd);

		if (u < 0 || send_fd(sp[1], u) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(devfd);
	foreign = recv_fd(sp[0]);
	if (foreign < 0)
		return SETUP;
	t = send_uffd(&r, foreign);
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);
	if (t == 0) {
		say("BROKEN: zswapd took another process's uffd as ours");
		return BROKEN;
	}
	say("registering another process's uffd: refused (reply %d)", t);
	return zswapd_answers(5000) ? HELD : BROKEN;
}

/* ---- exec with the connection kept open ---- */

static int t_exec(void)
{
	struct reg r;
	int t = register_self(&r);

	if (t < 0) {
		say("cannot register: %d", t);
		return SETUP;
	}
	/* Kept across the exec, as a helper holding it would keep it. */
	if (fcntl(r.sock, F_SETFD, 0) < 0 || fcntl(r.staging_fd, F_SETFD, 0) < 0)
		return SETUP;
	say("pid %d", (int)getpid());
	execlp("sleep", "sleep", "60", (char *)NULL);
	return SETUP;
}

/* ---- a uffd made blocking, its messages raced for ---- */

/*
 * zswapd reads a uffd it shares with the process, until EAGAIN: a process
 * that clears O_NONBLOCK on its copy (the flag is the open file's) between
 * zswapd's wake-up and its last read would block zswapd's one loop until
 * its next message, for good if none comes.  Each round is a process of
 * its own that registers, flips the flag as fast as it can and makes
 * events (discards of its registered beacon), which another of its threads
 * reads too, so that its own discards never wait for good; then it exits.
 */
static void *steal(void *arg)
{
	struct uffd_msg m;
	int fd = *(int *)arg;

	for (;;)
		if (read(fd, &m, sizeof(m)) < 0 && errno != EINTR && errno != EAGAIN)
			return NULL;
}

static void *flip(void *arg)
{
	int fd = *(int *)arg;

	for (;;) {
		fcntl(fd, F_SETFL, 0);
		fcntl(fd, F_SETFL, O_NONBLOCK);
	}
	return NULL;
}

static void blocking_round(void)
{
	struct reg r;
	pthread_t th;
	struct timespec ts, end;

	if (register_self(&r) < 0)
		_exit(SETUP);
	pthread_create(&th, NULL, steal, &r.uffd);
	pthread_create(&th, NULL, flip, &r.uffd);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 1;
	do {
		for (int i = 0; i < 64; i++)
			madvise(r.beacon, PAGE, MADV_DONTNEED);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec < end.tv_sec || (ts.tv_sec == end.tv_sec && ts.tv_nsec < end.tv_nsec));
	_exit(HELD);
}

static int t_blocking_uffd(void)
{
	int rounds = 0;

	for (; rounds < 8; rounds++) {
		pid_t c = fork();

		if (c == 0)
			blocking_round();
		waitpid(c, NULL, 0);
		if (!zswapd_answers(3000)) {
			say("BROKEN: zswapd stopped answering after round %d of a client flipping "
			    "its uffd blocking", rounds + 1);
			return BROKEN;
		}
	}
	say("zswapd kept answering through %d rounds of a uffd flipped blocking", rounds);
	return HELD;
}

/* ---- the staging memfd truncated under zswapd ---- */

static int t_truncate_staging(void)
{
	struct reg r;

	if (register_self(&r) < 0)
		return SETUP;
	if (ftruncate(r.staging_fd, 0) < 0 && ftruncate(r.staging_fd, PAGE) < 0) {
		say("truncating the staging: %s", strerror(errno));
		return zswapd_answers(5000) ? HELD : BROKEN;
	}
	say("the staging was truncated; asking zswapd, which reads it, for its figures");
	if (!zswapd_answers(5000)) {
		say("BROKEN: zswapd does not answer after its staging was truncated");
		return BROKEN;
	}
	return HELD;
}

/* ---- an agent that lies ---- */

static uint8_t *filled_memory(size_t bytes)
{
	uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	for (size_t i = 0; i < bytes; i += 64)
		m[i] = (uint8_t)(i * 2654435761u >> 13) | 1;
	return m;
}

/* Says we are the agent: our tid, no excluded range. */
static int send_agent(struct reg *r)
{
	struct zs_agent a = { .tid = (uint32_t)syscall(SYS_gettid), .nexcl = 0 };

	return proto_send(r->sock, ZS_AGENT, 3, &a, sizeof(a), NULL, 0);
}

/* Answers a ZS_EVICT in buf: every run vanished (-EFAULT), nothing taken. */
static int answer_evict(struct reg *r, const uint64_t *buf)
{
	const struct zs_evict *ev = proto_payload((const struct zs_hdr *)buf);
	size_t len = sizeof(struct zs_evict_done) + ev->nruns * sizeof(int32_t);
	struct zs_evict_done *done = calloc(1, len);
	int rc;

	done->batch = ev->batch;
	done->nruns = ev->nruns;
	for (uint32_t i = 0; i < ev->nruns; i++)
		done->result[i] = -EFAULT;
	rc = proto_send(r->sock, ZS_EVICT_DONE, 4, done, len, NULL, 0);
	free(done);
	return rc;
}

static int t_bad_scratch(void)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	volatile uint64_t *pub;
	int fds[4], nfds, t, ctl, rc = HELD;
	struct reg r;

	if (register_self(&r) < 0 || !filled_memory(8 << 20) || send_agent(&r) < 0)
		return SETUP;
	/* The scratch "is" the shared staging: not our private memory. */
	pub = ZS_STAGING_SCRATCH(r.staging, r.staging_pages);
	pub[0] = (uint64_t)(uintptr_t)r.staging;
	pub[1] = (uint64_t)r.staging_pages * PAGE;
	ctl = ask_reclaim(4 << 20);
	for (;;) {
		t = zrecv(r.sock, buf, fds, 4, &nfds, 5000);
		close_fds(fds, nfds);
		if (t != ZS_EVICT)
			break;
		if (((const struct zs_evict *)proto_payload((const struct zs_hdr *)buf))->flags &
		    ZS_EVICT_MOVE_FIRST) {
			say("BROKEN: zswapd sent move-first batches to an agent whose scratch is not its own");
			rc = BROKEN;
			break;
		}
		answer_evict(&r, buf);
	}
	if (rc == HELD && t != 0) {
		say("BROKEN: the agent's connection was kept (last reply %d)", t);
		rc = BROKEN;
	}
	if (rc == HELD)
		say("an agent with a scratch that is not its own: its connection dropped");
	close(ctl);
	return rc == HELD && zswapd_answers(5000) ? HELD : BROKEN;
}

static int t_misreport(void)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	long long before, after;
	uint64_t pages = 0;
	int fds[4], nfds, t, ctl;
	struct reg r;

	if (register_self(&r) < 0 || !filled_memory(8 << 20) || send_agent(&r) < 0)
		return SETUP;
	before = zswapd_stat("agent_move_misreports");
	ctl = ask_reclaim(4 << 20);
	while ((t = zrecv(r.sock, buf, fds, 4, &nfds, 3000)) == ZS_EVICT) {
		const struct zs_evict *ev = proto_payload((const struct zs_hdr *)buf);

		close_fds(fds, nfds);
		for (uint32_t i = 0; i < ev->nruns; i++)
			pages += ev->runs[i].npages;
		*ZS_STAGING_MISMOVES(r.staging, r.staging_pages) += 1ull << 40;
		answer_evict(&r, buf);
	}
	close(ctl);
	usleep(200000);
	after = zswapd_stat("agent_move_misreports");
	say("batches of %llu pages in all; agent_move_misreports %lld -> %lld", (unsigned long long)pages,
	    before, after);
	if (before < 0 || after < 0 || pages == 0)
		return SETUP;
	return after - before <= (long long)pages ? HELD : BROKEN;
}

/* ---- floods ---- */

static int t_conn_flood(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 1000, open_ = 0, refused = 0;
	int *fds = calloc((size_t)n, sizeof(int));

	for (int i = 0; i < n; i++) {
		fds[i] = zconnect();
		if (fds[i] < 0)
			refused++;
	}
	usleep(500000);
	/* What zswapd kept: a hello is answered on those, the others are closed. */
	for (int i = 0; i < n; i++) {
		uint64_t buf[ZS_MSG_MAX / 8];
		int f[4], nf, t;

		if (fds[i] < 0)
			continue;
		if (proto_send(fds[i], ZS_STATS, 1, NULL, 0, NULL, 0) < 0) {
			refused++;
			continue;
		}
		t = zrecv(fds[i], buf, f, 4, &nf, 2000);
		close_fds(f, nf);
		if (t == ZS_STATS_REPLY)
			open_++;
		else
			refused++;
	}
	say("connections: %d answered, %d refused or closed", open_, refused);
	printf("answered %d\n", open_);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return HELD;
}

/*
 * Control requests pipelined without end: on each of 4 connections a
 * thread sends STATS requests as fast as the socket takes them while
 * another reads the replies, so that a zswapd reading a connection until
 * it has nothing more would never stop reading it.
 */
struct flood {
	int fd;
	bool *stop;
	uint64_t sent, answered;
};

static void *flood_send(void *arg)
{
	struct flood *f = arg;
	struct zs_hdr h = { .magic = ZS_MAGIC, .version = ZS_VERSION, .type = ZS_STATS };

	while (!__atomic_load_n(f->stop, __ATOMIC_RELAXED)) {
		if (send(f->fd, &h, sizeof(h), MSG_NOSIGNAL) == (ssize_t)sizeof(h))
			f->sent++;
		else if (errno != EAGAIN && errno != EINTR)
			break;
	}
	return NULL;
}

static void *flood_read(void *arg)
{
	struct flood *f = arg;
	char buf[ZS_MSG_MAX];

	while (!__atomic_load_n(f->stop, __ATOMIC_RELAXED)) {
		ssize_t n = recv(f->fd, buf, sizeof(buf), 0);

		if (n > 0)
			f->answered++;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	return NULL;
}

static int t_ctl_flood(int argc, char **argv)
{
	int secs = argc > 2 ? atoi(argv[2]) : 5;
	bool stop = false;
	struct flood f[4];
	pthread_t th[8];
	uint64_t sent = 0, answered = 0;

	for (int i = 0; i < 4; i++) {
		struct timeval tv = { .tv_sec = 1 };

		f[i] = (struct flood){ .fd = zconnect(), .stop = &stop };
		if (f[i].fd < 0)
			return SETUP;
		setsockopt(f[i].fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(f[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		pthread_create(&th[2 * i], NULL, flood_send, &f[i]);
		pthread_create(&th[2 * i + 1], NULL, flood_read, &f[i]);
	}
	sleep((unsigned)secs);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		sent += f[i].sent;
		answered += f[i].answered;
		close(f[i].fd);
	}
	say("%llu control requests sent, %llu answered", (unsigned long long)sent,
	    (unsigned long long)answered);
	return zswapd_answers(5000) ? HELD : BROKEN;
}

int main(int argc, char **argv)
{
	const char *s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sock_path = getenv(ZSWAP_SOCKET_ENV);
	if (!sock_path)
		sock_path = ZSWAP_DEFAULT_SOCKET;
	if (argc < 2) {
		fprintf(stderr, "usage: hostile SCENARIO [ARGS]\n");
		return SETUP;
	}
	s = argv[1];
	if (!strcmp(s, "stale-pid"))
		return t_stale_pid(argc, argv);
	if (!strcmp(s, "foreign-uffd"))
		return t_foreign_uffd();
	if (!strcmp(s, "exec"))
		return t_exec();
	if (!strcmp(s, "blocking-uffd"))
		return t_blocking_uffd();
	if (!strcmp(s, "truncate-staging"))
		return t_truncate_staging();
	if (!strcmp(s, "bad-scratch"))
		return t_bad_scratch();
	if (!strcmp(s, "misreport"))
		return t_misreport();
	if (!strcmp(s, "conn-flood"))
		return t_conn_flood(argc, argv);
	if (!strcmp(s, "ctl-flood"))
		return t_ctl_flood(argc, argv);
	fprintf(stderr, "hostile: unknown scenario %s\n", s);
	return SETUP;
}
