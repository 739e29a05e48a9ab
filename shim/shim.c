// SPDX-License-Identifier: GPL-2.0-only
/*
 * shim.c - libzswap.so: opting a process in to zswapd, from LD_PRELOAD.
 *
 * The constructor registers the process (the handshake is written down in
 * include/zswap_proto.h) and starts the agent thread.  Any failure, first of
 * all no daemon, leaves the program running exactly as without the shim, and
 * silent unless ZSWAP_DEBUG is set: we live inside someone else's process.
 *
 * The uffd comes from zswapd's /dev/userfaultfd descriptor through
 * USERFAULTFD_IOC_NEW, so an unprivileged process gets a full uffd (kernel
 * faults included: a write(2) from an evicted buffer must work) without
 * vm.unprivileged_userfaultfd.
 *
 * fork: the child inherits our registrations on a new uffd that only zswapd
 * holds (UFFD_EVENT_FORK).  The atfork child handler drops what belongs to
 * the parent, connects anew, and faults on the beacon page: that fault
 * reaches zswapd on the child's uffd with the child's tid, which is how it
 * pairs that uffd with this pid and sends us a copy to keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "proto.h"
#include "shim.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define SHIM_HANDSHAKE_TIMEOUT_SEC 5

struct shim shim = { .sock = -1, .uffd = -1, .watch_fd = -1 };

static int shim_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = SHIM_HANDSHAKE_TIMEOUT_SEC };
	const char *path = getenv(ZSWAP_SOCKET_ENV);
	int fd;

	if (!path || !*path)
		path = ZSWAP_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Waits for a message of one type; ZS_ERROR and anything else fail. */
static int shim_expect(uint16_t type, int *fds, int want_fds)
{
	uint64_t *buf = (uint64_t *)(shim.area + SHIM_AGENT_STACK);
	const struct zs_hdr *h = (const struct zs_hdr *)buf;
	int nfds = 0, r;
	ssize_t n;

	do
		n = proto_recv(shim.sock, buf, ZS_MSG_MAX, fds, want_fds, &nfds);
	while (n == -EINTR);
	if (n <= 0)
		return n < 0 ? (int)n : -ECONNRESET;
	if (h->type == type && nfds == want_fds)
		return 0;
	if (h->type == ZS_ERROR) {
		const struct zs_error *e = proto_payload(h);

		shim_log("zswapd refused: %s", e->msg);
		r = e->err < 0 ? e->err : -EPROTO;
	} else {
		r = -EPROTO;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return r;
}

static int shim_map_staging(int memfd)
{
	const struct zs_ready *ready =
		proto_payload((const struct zs_hdr *)(shim.area + SHIM_AGENT_STACK));
	void *p;

	if (ready->page_size != SHIM_PAGE || ready->staging_pages == 0)
		return -EPROTO;
	shim.staging_len = (size_t)ready->staging_pages * SHIM_PAGE;
	shim.move = ready->flags & ZS_READY_MOVE;
	shim.follow = ready->flags & ZS_READY_FOLLOW;
	shim.mark = ready->flags & ZS_READY_MARK;
	/* + the page of veto bytes */
	p = mmap(NULL, shim.staging_len + SHIM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	__atomic_store_n(&shim.staging, p, __ATOMIC_RELEASE); /* the watcher reads it */
	return 0;
}

static void shim_teardown(void)
{
	if (shim.sock >= 0)
		close(shim.sock);
	if (shim.uffd >= 0)
		close(shim.uffd);
	if (shim.staging)
		munmap(shim.staging, shim.staging_len + SHIM_PAGE);
	shim.sock = shim.uffd = -1;
	shim.staging = NULL;
	shim.agent_state = SHIM_AGENT_RUNNING;
}

/*
 * A pidfd of the zswapd at the other end of our connection, for the
 * watcher (orphan.c); -1 if there is none to have (zswapd in another pid
 * namespace: the agent then watches the connection alone).  Taken right
 * after connecting: had zswapd died since, and its pid been reused within
 * that moment, the registration would still fail on the closed connection.
 */
static int shim_daemon_pidfd(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(shim.sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return -1;
	shim.watch_pid = cred.pid;
	return (int)syscall(SYS_pidfd_open, cred.pid, 0);
}

/*
 * Starts the watcher, right after connecting and before registering: from
 * the registration on, what we do ourselves (pthread_create() for the
 * agent: the thread list, the dynamic linker's allocations) may fault on a
 * page only zswapd can give back (a forked child's inherited ones), and if
 * zswapd dies then, only the watcher ends the wait.  Its pidfd is its own:
 * a teardown leaves it, and the watcher, if zswapd dies, finds nothing to
 * serve and parks.  The process runs on without a watcher.
 */
static void shim_watch_begin(void)
{
	shim.watch_fd = shim_daemon_pidfd();
	if (shim.watch_fd >= 0 && shim_watch_start() < 0) {
		close(shim.watch_fd);
		shim.watch_fd = -1;
	}
}

/*
 * The uffd is published (shim.uffd) last, once the staging is mapped, and
 * only if the registration succeeded: a watcher that saw zswapd die while
 * we registered waits for it (orphan_said_bye()), then looks in the
 * staging for the zswapd that took over.  Published before, it could find
 * a uffd and no staging, take the uffd for orphaned, and abort the process
 * at its next fault though a new zswapd serves it; or poll a uffd a failed
 * registration then closes.
 */
static int shim_publish_uffd(int uffd, int err)
{
	if (err < 0) {
		close(uffd);
		return err;
	}
	__atomic_store_n(&shim.uffd, uffd, __ATOMIC_RELEASE);
	return 0;
}

/* The first registration of this mm. */
static int shim_register(void)
{
	struct zs_hello hello = { .pid = (uint32_t)getpid() };
	struct zs_uffd u;
	int fds[2], devfd, uffd, r;

	r = proto_send(shim.sock, ZS_HELLO, 1, &hello, sizeof(hello), NULL, 0);
	if (r < 0)
		return r;
	r = shim_expect(ZS_DEVFD, fds, 1);
	if (r < 0)
		return r;
	devfd = fds[0];
	uffd = ioctl(devfd, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	r = uffd < 0 ? -errno : 0;
	close(devfd);
	if (r < 0)
		return r;
	u.beacon = (uint64_t)(uintptr_t)shim.beacon;
	r = proto_send(shim.sock, ZS_UFFD, 2, &u, sizeof(u), &uffd, 1);
	if (r == 0)
		r = shim_expect(ZS_READY, fds, 1);
	if (r == 0) {
		r = shim_map_staging(fds[0]);
		close(fds[0]);
	}
	r = shim_publish_uffd(uffd, r);
	/*
	 * zswapd proved the uffd ours by a nonce it wrote in the beacon
	 * through it and read back through our /proc/PID/mem: empty it again,
	 * for our children to name themselves by (shim_register_child).  Once
	 * we hold our uffd, as there: the REMOVE event waits to be read.
	 */
	if (r == 0)
		madvise(shim.beacon, SHIM_PAGE, MADV_DONTNEED);
	return r;
}

/* In a forked child: get our own uffd (which zswapd holds) and staging. */
static int shim_register_child(void)
{
	struct zs_hello hello = { .pid = (uint32_t)getpid(), .flags = ZS_HELLO_FORKED };
	int fds[2], r;

	r = proto_send(shim.sock, ZS_HELLO, 1, &hello, sizeof(hello), NULL, 0);
	if (r < 0)
		return r;
	/* The fault that names us to zswapd. */
	(void)*(volatile uint8_t *)shim.beacon;
	r = shim_expect(ZS_READY, fds, 2);
	if (r < 0)
		return r;
	r = shim_map_staging(fds[0]);
	close(fds[0]);
	r = shim_publish_uffd(fds[1], r);
	if (r < 0)
		return r;
	/*
	 * Then empty the beacon again, so that our own children can name
	 * themselves the same way.  Only now that we hold our uffd: the
	 * MADV_DONTNEED is a REMOVE event, which waits until someone reads it,
	 * and if zswapd has died meanwhile, that is our watcher, which can read
	 * only a uffd we have.
	 */
	madvise(shim.beacon, SHIM_PAGE, MADV_DONTNEED);
	return 0;
}

/*
 * The app's side of the fork gate (ZS_STAGING_FORK_GATE): a fork waits
 * while the agent is between a move and its copy, for at most
 * ZS_FORK_GATE_MAX_USEC (an agent stopped by a debugger), and holds the
 * agent's next move until it is done.  fork() only: vfork and
 * posix_spawn share the mm, and copy no page.
 */
static volatile uint32_t *shim_fork_gate(void)
{
	if (shim.sock < 0 || !shim.staging)
		return NULL;
	return ZS_STAGING_FORK_GATE(shim.staging, shim.staging_len / SHIM_PAGE);
}

static void shim_atfork_prepare(void)
{
	volatile uint32_t *gate = shim_fork_gate();

	if (!gate)
		return;
	__atomic_fetch_add(&gate[2], 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&gate[0], 1, __ATOMIC_SEQ_CST);
	shim_gate_wait(&gate[1], shim_now_usec());
}

/* Also after a fork that failed.  Not in the child: the gate is the parent's. */
static void shim_atfork_parent(void)
{
	volatile uint32_t *gate = shim_fork_gate();

	if (gate)
		__atomic_fetch_sub(&gate[0], 1, __ATOMIC_SEQ_CST);
}

/* The value of the hex digits at *p, which it moves past them. */
static uint64_t shim_hex(const char **p)
{
	uint64_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/*
 * One line of /proc/self/smaps: a vma's first line sets *inside (whether
 * addr is in it); its VmFlags line says whether that vma is registered
 * with a uffd ("um"): 1 or 0, or -1 for any other line.
 */
static int shim_smaps_line(const char *line, uint64_t addr, bool *inside)
{
	static const char flags[] = "VmFlags:";
	const char *p = line;
	uint64_t start, end;

	if (strncmp(line, flags, sizeof(flags) - 1) == 0) {
		if (!*inside)
			return -1;
		for (p = line + sizeof(flags) - 1; *p; p++)
			if (p[0] == ' ' && p[1] == 'u' && p[2] == 'm' && (p[3] == ' ' || !p[3]))
				return 1;
		return 0;
	}
	start = shim_hex(&p);
	if (p == line || *p != '-')
		return -1; /* "Rss:" and the like */
	p++;
	end = shim_hex(&p);
	*inside = start <= addr && addr < end;
	return -1;
}

/*
 * Whether the page at addr is in a vma registered with a uffd, by
 * /proc/self/smaps: 1 or 0, or -errno if it cannot tell.  Raw system calls
 * into the agent's message buffer: when the answer is no, pages of the
 * app's may be lost, libc's among them.
 */
static int shim_page_registered(uint64_t addr)
{
	char *buf = (char *)shim.area + SHIM_AGENT_STACK;
	const size_t cap = 65536;
	size_t have = 0;
	bool inside = false;
	int fd, r = -ENOENT;

	fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = syscall(SYS_read, fd, buf + have, cap - 1 - have);
		char *line = buf, *nl;

		if (n <= 0) {
			r = n < 0 ? -errno : r;
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			r = shim_smaps_line(line, addr, &inside);
			if (r >= 0)
				goto out;
			line = nl + 1;
		}
		r = -ENOENT;
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
	}
out:
	syscall(SYS_close, fd);
	return r;
}

/*
 * A forked child that zswapd does not serve may run on only if its
 * registrations stand: then whoever holds its uffd, zswapd (which brings
 * an unclaimed child's pages back: restore_unclaimed) or, once zswapd has
 * died, our parent's watcher (a SIGBUS at such a page), answers its faults
 * on the pages it inherited evicted.  Gone, they went with the last copy
 * of its uffd: zswapd died holding it, and those pages would read as
 * zeros, unless zswapd stopped in order and returned them first, which
 * its drain wrote in the beacon page.
 */
static void shim_child_check(void)
{
	static const char text[] =
		"libzswap: zswapd died while this process was forked, with the evicted memory "
		"the child inherited; aborting rather than letting it read zeros";
	uint64_t beacon = (uint64_t)(uintptr_t)shim.beacon;

	if (shim_page_registered(beacon) != 0)
		return; /* registered; or we cannot tell, and then we let it be */
	if (memcmp(shim.beacon, ZS_BEACON_DRAINED, sizeof(ZS_BEACON_DRAINED)) == 0)
		return;
	shim_die(text, sizeof(text) - 1, beacon);
}

static void shim_atfork_child(void)
{
	int r;

	if (shim.sock < 0)
		return;
	/* The parent's connection, uffd, staging and watcher are not ours. */
	shim_teardown();
	if (shim.watch_fd >= 0)
		close(shim.watch_fd);
	shim.watch_fd = -1;
	r = shim_connect();
	if (r < 0)
		goto fail;
	shim.sock = r;
	__atomic_store_n(&shim.registering, true, __ATOMIC_RELEASE);
	shim_watch_begin();
	r = shim_register_child();
	__atomic_store_n(&shim.registering, false, __ATOMIC_RELEASE);
	if (r == 0)
		r = shim_agent_start();
	if (r == 0)
		return;
fail:
	shim_teardown();
	shim_child_check();
	shim_log("forked child not served: %s", strerror(-r));
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *dbg = getenv("ZSWAP_DEBUG");
	void *p;
	int r;

	shim.debug = dbg && *dbg && strcmp(dbg, "0");
	if (getenv("ZSWAP_DISABLE"))
		return;
	r = shim_connect();
	if (r < 0) {
		shim_log("no zswapd (%s), running without it", strerror(-r));
		return;
	}
	shim.sock = r;
	p = mmap(NULL, SHIM_AGENT_AREA + SHIM_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	shim.area = p;
	shim.beacon = shim.area + SHIM_AGENT_AREA;
	/* The beacon must stay an empty page: never let THP fill it in. */
	madvise(shim.beacon, SHIM_PAGE, MADV_NOHUGEPAGE);
	__atomic_store_n(&shim.registering, true, __ATOMIC_RELEASE);
	shim_watch_begin();
	r = shim_register();
	__atomic_store_n(&shim.registering, false, __ATOMIC_RELEASE);
	if (r < 0)
		goto fail;
	r = shim_agent_start();
	if (r < 0)
		goto fail;
	pthread_atfork(shim_atfork_prepare, shim_atfork_parent, shim_atfork_child);
	shim_log("registered with zswapd");
	return;
fail:
	shim_log("cannot register with zswapd (%s), running without it", strerror(-r));
	shim_teardown();
}
