// SPDX-License-Identifier: GPL-2.0-only
/*
 * orphan.c - what a served process does once zswapd has died without
 * ZS_BYE (SIGKILL, the OOM killer, a crash).
 *
 * Its evicted pages died with zswapd's pool.  Two things must then hold:
 * no thread reads zeros where one of them was, and no thread waits for
 * ever on a daemon that is gone.  The registrations stay (we hold a copy of
 * the uffd), so a touch of a missing page is still a uffd fault; we read
 * those faults ourselves and abort the process at the first one, saying
 * why.  Everything else we let go: a write-protected page (a batch the
 * daemon had begun) is unprotected, events are read (that is what lets
 * the app's madvise, munmap or fork return), and a child forked from now
 * on keeps its uffd with us, so that its own touch of an inherited evicted
 * page is a SIGBUS (UFFDIO_POISON), never zeros.
 *
 * Who notices: the watcher, a thread that waits on a pidfd of zswapd and
 * nothing else.  The agent cannot be relied on for it: it may be inside a
 * system call that waits on zswapd itself when zswapd dies (a REMOVE event
 * of its own MADV_DONTNEED, which only a reader of the uffd completes, or a
 * fault of its process_vm_readv), and then nobody would read the uffd
 * again.  Faults zswapd had read and not answered are not in the uffd any
 * more: a UFFDIO_WAKE of the whole address space sends their threads back
 * to fault again, into our read.  Without a pidfd (zswapd in another pid
 * namespace) the agent does all this itself when its connection closes.
 *
 * Like the agent, the watcher runs on its own stack in the agent's area
 * (excluded from eviction), blocks every signal and makes only raw system
 * calls: anything of libc's, even abort(), may touch a page of the app's
 * that is gone for good.  libzswap.so is linked with -z now for the same
 * reason: a first call through a lazily bound PLT entry runs the dynamic
 * linker, which reads its link maps from the app's heap, and would wait
 * there (in _dl_fixup) on a page that went with zswapd.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "shim.h"
#include "zswap_proto.h"

/* The lowest address a wake or a probe names: mmap_min_addr's default. */
#define ORPHAN_LOW 0x10000ull
/* Forked children whose uffd we keep; more are kept but not watched. */
#define ORPHAN_CHILDREN 64
/* How long the watcher lets the agent see ZS_BYE before taking over. */
#define ORPHAN_AGENT_GRACE_USEC 1000000u

/* What the watcher polls: our uffd, then forked children's.  Kept from
 * one poll to the next, not filled each time: a loop filling it is what a
 * compiler turns into a memset() call (orphan_say). */
struct orphan {
	struct pollfd pfd[1 + ORPHAN_CHILDREN];
	unsigned n;
};

/* Appends text (NUL-terminated) at buf + n; returns the new length. */
static size_t orphan_put(char *buf, size_t n, const char *text)
{
	while (*text)
		buf[n++] = *text++;
	return n;
}

/* Appends v in the given base (10 or 16) at buf + n; returns the new length. */
static size_t orphan_put_num(char *buf, size_t n, uint64_t v, unsigned base)
{
	char digits[20];
	size_t k = 0;

	do
		digits[k++] = "0123456789abcdef"[v % base];
	while ((v /= base) && k < sizeof(digits));
	while (k)
		buf[n++] = digits[--k];
	return n;
}

/*
 * Writes len bytes of text, then " (pid N, address 0x...)" and a newline:
 * the pid, so that an operator (and a test) can find what zswapd logged
 * of this process.  No stdio, and not even strlen() or memset(): under a
 * sanitizer those are its interceptors, which read its shadow memory,
 * evictable as any other.
 */
static void orphan_say(const char *text, size_t len, uint64_t addr)
{
	char tail[64];
	size_t n;

	syscall(SYS_write, STDERR_FILENO, text, len);
	n = orphan_put(tail, 0, " (pid ");
	n = orphan_put_num(tail, n, (uint64_t)syscall(SYS_getpid), 10);
	n = orphan_put(tail, n, ", address 0x");
	n = orphan_put_num(tail, n, addr, 16);
	n = orphan_put(tail, n, ")\n");
	syscall(SYS_write, STDERR_FILENO, tail, n);
}

/*
 * abort() without libc: the default action, whatever handler the app set
 * (a handler that returned would let the thread fault again, and again),
 * raised in this thread, which blocks every other signal.
 */
static void orphan_abort(void)
{
	/* The kernel's struct sigaction: all zero is SIG_DFL on every layout. */
	unsigned long dfl[4] = { 0 };
	uint64_t abrt = 1ull << (SIGABRT - 1);

	syscall(SYS_rt_sigaction, SIGABRT, dfl, NULL, sizeof(abrt));
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &abrt, NULL, sizeof(abrt));
	syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGABRT);
	syscall(SYS_exit_group, 128 + SIGABRT);
}

void shim_die(const char *text, size_t len, uint64_t addr)
{
	orphan_say(text, len, addr);
	orphan_abort();
	__builtin_unreachable();
}

/* Sends every thread waiting in a fault of this uffd back to fault again. */
static void orphan_wake_all(int uffd)
{
	/* The top of user space differs by paging mode: the widest the
	 * kernel accepts wins (it refuses a range past the mm's end). */
	static const uint64_t tops[] = { 1ull << 56, 1ull << 48, 1ull << 47, 1ull << 39 };

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		struct uffdio_range r = { ORPHAN_LOW, tops[i] - SHIM_PAGE - ORPHAN_LOW };

		if (syscall(SYS_ioctl, uffd, UFFDIO_WAKE, &r) == 0)
			return;
	}
}

/* Lifts write protection from one page, which wakes its writer. */
static void orphan_unprotect(int uffd, uint64_t addr)
{
	struct uffdio_writeprotect wp = {
		.range = { addr & ~(uint64_t)(SHIM_PAGE - 1), SHIM_PAGE },
	};

	syscall(SYS_ioctl, uffd, UFFDIO_WRITEPROTECT, &wp);
}

/* A forked child touched a page it inherited evicted: a SIGBUS there. */
static void orphan_poison(int uffd, uint64_t addr)
{
	struct uffdio_poison p = {
		.range = { addr & ~(uint64_t)(SHIM_PAGE - 1), SHIM_PAGE },
	};
	static const char text[] =
		"libzswap: zswapd exited without returning the evicted memory a forked child "
		"inherited; the child gets a SIGBUS rather than zeros";

	orphan_say(text, sizeof(text) - 1, addr);
	syscall(SYS_ioctl, uffd, UFFDIO_POISON, &p);
}

/*
 * Whether the mm behind a child's uffd is gone (it exited or exec'd).  A
 * poison of a page where no registered mapping can be says ESRCH for a
 * dead mm, and ENOENT (or EINVAL) for a live one, changing nothing.
 */
static bool orphan_child_gone(int uffd)
{
	struct uffdio_poison p = { .range = { ORPHAN_LOW, SHIM_PAGE } };

	return syscall(SYS_ioctl, uffd, UFFDIO_POISON, &p) < 0 && errno == ESRCH;
}

static void orphan_reap_children(struct orphan *o)
{
	for (unsigned i = 1; i < o->n;) {
		if (orphan_child_gone(o->pfd[i].fd)) {
			syscall(SYS_close, o->pfd[i].fd);
			o->pfd[i] = o->pfd[--o->n];
		} else {
			i++;
		}
	}
}

static void orphan_keep_child(struct orphan *o, int uffd)
{
	if (o->n == 1 + ORPHAN_CHILDREN)
		orphan_reap_children(o);
	/* Closing it would unregister the child's memory: it would read
	 * zeros.  Unwatched, a touch of an evicted page only waits. */
	if (o->n < 1 + ORPHAN_CHILDREN)
		o->pfd[o->n++] = (struct pollfd){ .fd = uffd, .events = POLLIN };
}

/* Reads and settles what one uffd has; ours (own) or a forked child's. */
static void orphan_read(struct orphan *o, int uffd, bool own)
{
	static const char text[] =
		"libzswap: zswapd exited without returning this process's evicted memory; "
		"aborting rather than letting it read zeros";
	struct uffd_msg msg;

	while (syscall(SYS_read, uffd, &msg, sizeof(msg)) == (long)sizeof(msg)) {
		switch (msg.event) {
		case UFFD_EVENT_PAGEFAULT:
			if (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
				orphan_unprotect(uffd, msg.arg.pagefault.address);
			} else if (own) {
				shim_die(text, sizeof(text) - 1, msg.arg.pagefault.address);
			} else {
				orphan_poison(uffd, msg.arg.pagefault.address);
			}
			break;
		case UFFD_EVENT_FORK:
			orphan_keep_child(o, (int)msg.arg.fork.ufd);
			break;
		default:
			break; /* reading REMOVE, UNMAP, REMAP is what lets the app go on */
		}
	}
}

/* Returns only if the uffd cannot be polled (never, short of a bug). */
void shim_orphan_serve(void)
{
	struct orphan o; /* not = { 0 }: that too is a memset() call */
	int uffd = __atomic_load_n(&shim.uffd, __ATOMIC_ACQUIRE);

	if (uffd < 0)
		return;
	o.pfd[0] = (struct pollfd){ .fd = uffd, .events = POLLIN };
	o.n = 1;
	orphan_wake_all(uffd);
	for (;;) {
		/* Woken once a second to let the uffds of gone children go. */
		long n = syscall(SYS_poll, o.pfd, (unsigned long)o.n, 1000L);

		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return;
		if (n <= 0) {
			orphan_reap_children(&o);
			continue;
		}
		/* A child forked meanwhile is polled from the next round on. */
		for (unsigned i = 0, polled = o.n; i < polled && i < o.n; i++)
			if (o.pfd[i].revents)
				orphan_read(&o, o.pfd[i].fd, i == 0);
	}
}

/*
 * zswapd died, and it survives its own death (survive_crash): its pages,
 * journal and our descriptors are in the fd store, and a new zswapd takes
 * over.  Until then faults on evicted pages wait, as they would on a busy
 * zswapd.  The new one writes its pid in staging once it serves us: we
 * watch it from then on (true).  After reattach_timeout_seconds without
 * one, or on ZS_BYE (a stop after all), false: settle it as below.
 */
static bool orphan_reattach(void)
{
	uint8_t *staging = __atomic_load_n(&shim.staging, __ATOMIC_ACQUIRE);
	const size_t pages = shim.staging_len / SHIM_PAGE;
	struct timespec ts = { 0, 10000000 };
	uint64_t start = shim_now_usec(), wait;

	if (!staging)
		return false;
	wait = __atomic_load_n(ZS_STAGING_REATTACH_SEC(staging, pages), __ATOMIC_ACQUIRE) *
	       1000000ull;
	while (wait && shim_now_usec() - start < wait &&
	       __atomic_load_n(&shim.agent_state, __ATOMIC_ACQUIRE) == SHIM_AGENT_RUNNING) {
		uint32_t pid = __atomic_load_n(ZS_STAGING_DAEMON(staging, pages), __ATOMIC_ACQUIRE);
		int fd;

		if (pid && (int)pid != shim.watch_pid &&
		    (fd = (int)syscall(SYS_pidfd_open, pid, 0)) >= 0) {
			syscall(SYS_close, shim.watch_fd);
			shim.watch_fd = fd;
			shim.watch_pid = (int)pid;
			return true;
		}
		syscall(SYS_nanosleep, &ts, NULL);
	}
	return false;
}

/*
 * zswapd has exited.  After a stop it said ZS_BYE first, and the agent,
 * reading it, has let the uffd go: true, nothing to do.  Otherwise false
 * once a registration under way (ours, or a forked child's) is settled: a
 * ZS_READY sent before zswapd died (or re-sent by the next one) may still
 * give it its staging, then its uffd (shim_publish_uffd()), or the
 * registration fails, which it does at once on a closed connection, or
 * within the handshake's timeout.
 */
static bool orphan_said_bye(void)
{
	struct timespec ts = { 0, 10000000 };
	uint64_t start = shim_now_usec();

	while (__atomic_load_n(&shim.agent_state, __ATOMIC_ACQUIRE) == SHIM_AGENT_RUNNING &&
	       shim_now_usec() - start < ORPHAN_AGENT_GRACE_USEC)
		syscall(SYS_nanosleep, &ts, NULL);
	if (__atomic_load_n(&shim.agent_state, __ATOMIC_ACQUIRE) == SHIM_AGENT_BYE)
		return true;
	while (__atomic_load_n(&shim.uffd, __ATOMIC_ACQUIRE) < 0 &&
	       __atomic_load_n(&shim.registering, __ATOMIC_ACQUIRE))
		syscall(SYS_nanosleep, &ts, NULL);
	return false;
}

static void *shim_watch_main(void *arg)
{
	struct pollfd pfd = { .fd = shim.watch_fd, .events = POLLIN };

	(void)arg;
	syscall(SYS_prctl, PR_SET_NAME, "zswap-watch", 0UL, 0UL, 0UL);
	for (;;) {
		bool staged;

		while (syscall(SYS_poll, &pfd, 1UL, -1L) < 0)
			if (errno != EINTR && errno != EAGAIN)
				return NULL;
		staged = __atomic_load_n(&shim.staging, __ATOMIC_ACQUIRE) != NULL;
		if (orphan_reattach()) {
			pfd.fd = shim.watch_fd;
			continue;
		}
		if (orphan_said_bye())
			return NULL; /* every page is back: libc's thread exit is safe */
		/* A registration (ours, or a forked child's) whose READY came
		 * only now had no staging to wait on above: with a store, its
		 * connection is kept and a new zswapd serves it. */
		if (staged || !orphan_reattach())
			break;
		pfd.fd = shim.watch_fd;
	}
	shim_orphan_serve(); /* the agent saw the connection close, or is stuck */
	shim_park();
}

void shim_park(void)
{
	/* Every signal is blocked in the shim's threads: this sleeps for good. */
	for (;;)
		syscall(SYS_pause);
}

int shim_watch_start(void)
{
	if (shim.watch_fd < 0)
		return -ENOENT;
	return shim_thread_start(shim.area + SHIM_WATCH_STACK_AT, SHIM_WATCH_STACK, shim_watch_main);
}
