// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent.c - the thread zswapd keeps inside each served process.
 *
 * It does the one thing the daemon cannot do from outside: drop pages of
 * this mm (process_madvise refuses MADV_DONTNEED on another process, and
 * UFFDIO_MOVE works only in the mm it moves in).  For each ZS_EVICT it
 * takes the runs out and leaves their contents in the shared staging area,
 * then answers ZS_EVICT_DONE.  Once it has a scratch area, zswapd sends
 * ZS_EVICT_MOVE_FIRST batches: it moves each run into the scratch (atomic:
 * a write of the app lands before the move, in the page moved, or after it,
 * in a fault zswapd holds until the commit) and copies it from there; the
 * first batch, and every batch on kernels without UFFDIO_MOVE, is
 * write-protected by zswapd, and it copies, then drops.  Copies use
 * process_vm_readv on ourselves, not memcpy: if the app unmapped a run
 * meanwhile, that is an EFAULT we report, not a SIGSEGV in someone else's
 * program; and nothing of libc's runs between a move and its copy.
 *
 * It blocks every signal (the app's handlers must not run on it), uses only
 * its own mapped stack and buffer (excluded from eviction), allocates
 * nothing, and makes its system calls with syscall(2): a wrapper someone
 * interposed (a sanitizer, a tracing library) could otherwise write to app
 * memory that is write-protected for the very batch the agent is working
 * on, and the agent would wait on itself.  Should it happen anyway, zswapd
 * vetoes the drop of that page (ZS_STAGING_VETO) and lets the agent go on.
 * If zswapd vanishes without ZS_BYE, the pages it held are gone: orphan.c
 * says what happens then.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "compat.h"
#include "proto.h"
#include "shim.h"

static uint64_t *agent_buf(void)
{
	return (uint64_t *)(shim.area + SHIM_AGENT_STACK);
}

static pid_t agent_pid;

/* Gives zswapd the gap it asked for (ZS_STAGING_HOLD), but never waits long on it. */
static void agent_hold(void)
{
	volatile uint32_t *hold = ZS_STAGING_HOLD(shim.staging, shim.staging_len / SHIM_PAGE);
	struct timespec ts = { 0, 20000 };

	for (unsigned waited = 0; __atomic_load_n(hold, __ATOMIC_ACQUIRE) && waited < ZS_HOLD_MAX_USEC;
	     waited += 20)
		syscall(SYS_nanosleep, &ts, NULL);
}

/*
 * The agent's own state lives on its stack, never in our .bss: that is app
 * memory, evictable like any other, and a write to it between two moves of
 * a batch holding its page would have the page vetoed, then moved anyway.
 */
struct agent {
	uint8_t *scratch;
	size_t scratch_moved; /* pages moved there in this batch */
	bool may_unshare;     /* no fork was under way as zswapd made this batch */
	bool scratch_tried;
	cpu_set_t cpus_before; /* the CPUs it may run on outside batches */
	bool pinned;	       /* to the app's CPU, for this batch */
};

/* The decimal number at p, or -1. */
static long agent_atol(const char *p)
{
	long v = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9' && v < 1000000; p++)
		v = v * 10 + (*p - '0');
	return v;
}

/* The CPU the app's thread last ran on, if the app has one thread besides
 * us and the watcher; -1 otherwise (or if /proc cannot tell: no /proc, no
 * descriptor left). */
static long agent_app_cpu(void)
{
	char buf[1024];
	const char *p = NULL;
	long fd, n, threads = -1;
	unsigned field = 2; /* the one that ends in ')' */

	fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields are
	 * counted from its last ')'. */
	for (long i = 0; i < n; i++)
		if (buf[i] == ')')
			p = buf + i;
	for (; p && *p; p++) {
		if (*p != ' ')
			continue;
		if (++field == 20)
			threads = agent_atol(p + 1);
		else if (field == 39)
			return threads == (shim.watch_fd >= 0 ? 3 : 2) ? agent_atol(p + 1) : -1;
	}
	return -1;
}

/*
 * Takes the agent, for one batch, to the CPU the app's thread last ran on.
 * Every page taken out of an mm is flushed from the TLB of each CPU the mm
 * is live on: from the app's own CPU that flush is local, from another an
 * IPI (in a VM a hypercall) that interrupts the app as well.  Under a limit
 * the app's thread spends much of its time waiting for faults, which is
 * when the agent gets its CPU.  Between batches the agent may run anywhere
 * again: pinned for good it can keep a CPU the scheduler has since moved
 * the app (and the daemon) away from (docs/benchmarks.md, "The agent on
 * the app's CPU").  With more threads the mm is live on several CPUs
 * anyway.  What it may run on is read afresh each time, so that an
 * operator's `taskset -a -p` since the last batch is what it goes back
 * to.  Returns whether it moved; a failure (a cpuset changed) costs only
 * the IPIs.
 */
static bool agent_follow_app(struct agent *a)
{
	long cpu = agent_app_cpu();
	cpu_set_t one;

	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    syscall(SYS_sched_getaffinity, 0, sizeof(a->cpus_before), &a->cpus_before) < 0 ||
	    !CPU_ISSET((int)cpu, &a->cpus_before))
		return false;
	CPU_ZERO(&one);
	CPU_SET((int)cpu, &one);
	a->pinned = syscall(SYS_sched_setaffinity, 0, sizeof(one), &one) == 0;
	return a->pinned;
}

static void agent_unfollow(struct agent *a)
{
	if (a->pinned)
		syscall(SYS_sched_setaffinity, 0, sizeof(a->cpus_before), &a->cpus_before);
	a->pinned = false;
}

/*
 * Where the agent moves the pages it drops.  MADV_DONTNEED on registered
 * memory is a REMOVE event that holds us until zswapd has read it, and
 * holds every UFFDIO_COPY of zswapd meanwhile (EAGAIN, "mm changing"): a
 * round trip per run that the app's faults meet (docs/benchmarks.md,
 * "UFFDIO_MOVE").  UFFDIO_MOVE (Linux 6.8+) takes the pages out in one
 * ioctl and no event; they are dropped from here once per batch.  The
 * kernel wants a move's destination registered with the same uffd;
 * WIPEONFORK keeps zswapd from evicting it (vmscan.c) and a forked child
 * from inheriting its pages.
 */
#define AGENT_MOVE_TRIES 50 /* EAGAIN while the app changes its mm: 20 us apart */
#define AGENT_UNMOVE_TRIES 50000 /* a move back must not be given up lightly: 1 s */

static void agent_scratch_setup(struct agent *a)
{
	volatile uint64_t *pub = ZS_STAGING_SCRATCH(shim.staging, shim.staging_len / SHIM_PAGE);
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	long p;

	a->scratch_tried = true;
	p = syscall(SYS_mmap, NULL, shim.staging_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == -1)
		return;
	reg.range.start = (uint64_t)p;
	reg.range.len = shim.staging_len;
	if (syscall(SYS_madvise, p, shim.staging_len, MADV_WIPEONFORK) < 0 ||
	    syscall(SYS_madvise, p, shim.staging_len, MADV_NOHUGEPAGE) < 0 ||
	    syscall(SYS_ioctl, shim.uffd, UFFDIO_REGISTER, &reg) < 0 ||
	    !(reg.ioctls & ((__u64)1 << _UFFDIO_MOVE))) {
		syscall(SYS_munmap, p, shim.staging_len);
		return;
	}
	a->scratch = (uint8_t *)p;
	/* Published before the first move: from now on zswapd takes every
	 * REMOVE event outside the scratch for the app's. */
	__atomic_store_n(&pub[0], (uint64_t)p, __ATOMIC_RELEASE);
	__atomic_store_n(&pub[1], (uint64_t)shim.staging_len, __ATOMIC_RELEASE);
}

/*
 * A veto that came in between our look at the vetoes and the move (our own
 * write to that page, from something interposed on our system calls) finds
 * the page moved out already, with that write in it.  zswapd leaves a
 * vetoed page out of the commit, so it must go back, or it is lost.  If an
 * app thread read it meanwhile (served from the staging copy) the move back
 * finds the place taken and only that one write is lost.
 */
static void agent_unmove_vetoed(struct agent *a, uint64_t addr, size_t npages, uint32_t slot)
{
	const volatile uint8_t *veto = ZS_STAGING_VETO(shim.staging, shim.staging_len / SHIM_PAGE);
	struct timespec ts = { 0, 20000 };

	for (size_t k = 0; k < npages; k++) {
		struct uffdio_move mv = {
			.dst = addr + k * SHIM_PAGE,
			.src = (uint64_t)(uintptr_t)a->scratch + ((uint64_t)slot + k) * SHIM_PAGE,
			.len = SHIM_PAGE,
		};

		if (!veto[slot + k])
			continue;
		/* EAGAIN while the app changes its mm (zswapd reads that event
		 * soon): given up, the page would go with the scratch. */
		for (unsigned tries = 0; tries < AGENT_UNMOVE_TRIES; tries++) {
			if (syscall(SYS_ioctl, shim.uffd, UFFDIO_MOVE, &mv) == 0 || errno != EAGAIN)
				break;
			syscall(SYS_nanosleep, &ts, NULL);
		}
	}
}

/*
 * Marks pages just taken out of the app (ZS_READY_MARK): a write-protect
 * of their now empty page table entries leaves a marker in each, which
 * stays there until the page is put back, or the app discards it (hazard
 * 8 in docs/design.md).  A vetoed page went back: it is the app's, and not
 * marked.
 */
static void agent_mark(uint64_t addr, size_t npages, uint32_t slot)
{
	const volatile uint8_t *veto = ZS_STAGING_VETO(shim.staging, shim.staging_len / SHIM_PAGE);
	size_t i = 0, j;

	if (!shim.mark)
		return;
	while (i < npages) {
		if (veto[slot + i]) {
			i++;
			continue;
		}
		for (j = i; j < npages && !veto[slot + j]; j++)
			;
		struct uffdio_writeprotect wp = {
			.range = { addr + i * SHIM_PAGE, (j - i) * SHIM_PAGE },
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		syscall(SYS_ioctl, shim.uffd, UFFDIO_WRITEPROTECT, &wp);
		i = j;
	}
}

/*
 * Whether scratch slot `slot` holds a page.  Only our moves of this batch
 * fill it (the scratch is dropped after each batch), so a page there was
 * moved, whatever the ioctl said: a move that reports failure but has
 * taken the page would otherwise be vetoed, and the page lost.
 * mincore() sees anonymous pages.
 */
static bool agent_slot_filled(const struct agent *a, uint32_t slot)
{
	unsigned char vec = 0;

	return syscall(SYS_mincore, a->scratch + (size_t)slot * SHIM_PAGE, SHIM_PAGE, &vec) == 0 &&
	       (vec & 1);
}

/*
 * In a ZS_EVICT_MOVE_FIRST batch: copies the n pages just moved into the
 * scratch slots from `slot` on into the same staging slots, and marks them
 * copied.  Right after the move (and the move back of any vetoed, which is
 * not copied: its scratch slot is empty, or its page is the app's again):
 * until then the scratch holds their only copy.  A page it could not copy
 * is vetoed and moved back where it was.
 */
static void agent_copy_moved(struct agent *a, uint64_t addr, uint32_t slot, size_t n)
{
	volatile uint8_t *veto = ZS_STAGING_VETO(shim.staging, shim.staging_len / SHIM_PAGE);
	volatile uint64_t *copied = ZS_STAGING_COPIED(shim.staging, shim.staging_len / SHIM_PAGE);
	bool failed = false;

	for (size_t i = 0, j; i < n; i = j) {
		struct iovec local, remote;
		size_t done;
		long r;

		if (veto[slot + i]) {
			j = i + 1;
			continue;
		}
		for (j = i; j < n && !veto[slot + j]; j++)
			;
		local = (struct iovec){ shim.staging + (size_t)(slot + i) * SHIM_PAGE, (j - i) * SHIM_PAGE };
		remote = (struct iovec){ a->scratch + (size_t)(slot + i) * SHIM_PAGE, (j - i) * SHIM_PAGE };
		r = syscall(SYS_process_vm_readv, agent_pid, &local, 1UL, &remote, 1UL, 0UL);
		done = r > 0 ? (size_t)r / SHIM_PAGE : 0;
		for (size_t k = i; k < j; k++) {
			uint32_t s = slot + (uint32_t)k;

			if (k < i + done) {
				__atomic_fetch_or(&copied[s / 64], 1ull << (s % 64), __ATOMIC_RELEASE);
			} else {
				veto[s] = 1;
				failed = true;
			}
		}
	}
	if (failed)
		agent_unmove_vetoed(a, addr, n, slot);
}

/*
 * UFFDIO_MOVE refuses (EBUSY) an anonymous page not marked exclusive to
 * this mm, and a page once shared with a forked child stays unmarked after
 * the child has gone, until it is written: a read-mostly app after a fork
 * (redis after BGSAVE) could no longer be evicted.  Pinning it for a read,
 * as process_vm_readv does, unshares it, in place when we are its only
 * user.  The copy-first order does that to every page by the way; a
 * move-first batch does it to the rest of a run where a move stopped, into
 * their staging slots, which the copy after the move overwrites; and only
 * if no fork began since zswapd made the batch (a->may_unshare), when a
 * page the pick found ours alone is so still.  Else a child forked meanwhile
 * shares it, and would get zswapd's entry for the parent's copy as well.
 */
static bool agent_may_unshare(const struct agent *a)
{
	volatile uint32_t *gate = ZS_STAGING_FORK_GATE(shim.staging, shim.staging_len / SHIM_PAGE);

	return a->may_unshare &&
	       __atomic_load_n(&gate[2], __ATOMIC_SEQ_CST) == __atomic_load_n(&gate[3], __ATOMIC_SEQ_CST);
}

static void agent_unshare(uint64_t addr, size_t len, uint32_t slot)
{
	struct iovec local = { shim.staging + (size_t)slot * SHIM_PAGE, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	syscall(SYS_process_vm_readv, agent_pid, &local, 1UL, &remote, 1UL, 0UL);
}

/*
 * Moves pages from addr on, up to len bytes, out of the app into the
 * scratch slots from `slot` on, and returns how many it dealt with: moved,
 * or vetoed because the kernel will not move it (shared with a forked
 * child, KSM, an mm that keeps changing; it stays, and zswapd leaves it out
 * of the commit, as if the agent had written to it).  It stops at the first
 * short move: the caller reads the vetoes again before the next one, since
 * one may have come in meanwhile (our own write to a page further on, from
 * something interposed) and a vetoed page moved anyway would be lost.
 *
 * A move-first batch moves without UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES: a hole
 * (a page the app discarded) stops the move there (ENOENT), so that every
 * page reported moved is in its scratch slot, and only those are copied.
 * Neither kind wakes anyone at the scratch, where nobody waits.
 */
static size_t agent_move(struct agent *a, uint64_t addr, size_t len, uint32_t slot,
			 bool move_first)
{
	volatile uint8_t *veto = ZS_STAGING_VETO(shim.staging, shim.staging_len / SHIM_PAGE);
	struct timespec ts = { 0, 20000 };
	bool unshared = false;

	for (unsigned tries = 0;; tries++) {
		struct uffdio_move mv = {
			.dst = (uint64_t)(uintptr_t)a->scratch + (uint64_t)slot * SHIM_PAGE,
			.src = addr,
			.len = len,
			.mode = UFFDIO_MOVE_MODE_DONTWAKE |
				(move_first ? 0 : UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES),
		};
		long r = syscall(SYS_ioctl, shim.uffd, UFFDIO_MOVE, &mv);
		int err = r < 0 ? errno : 0;
		size_t moved = r == 0 ? len : mv.move > 0 ? (size_t)mv.move : 0;

		a->scratch_moved += moved / SHIM_PAGE;
		if (moved > 0) {
			agent_unmove_vetoed(a, addr, moved / SHIM_PAGE, slot);
			agent_mark(addr, moved / SHIM_PAGE, slot);
			if (move_first)
				agent_copy_moved(a, addr, slot, moved / SHIM_PAGE);
			return moved / SHIM_PAGE;
		}
		if (agent_slot_filled(a, slot)) {
			/* Reported as not moved, but it is in our scratch slot: moved. */
			__atomic_fetch_add(ZS_STAGING_MISMOVES(shim.staging, shim.staging_len / SHIM_PAGE),
					   1, __ATOMIC_RELAXED);
			a->scratch_moved++;
			agent_unmove_vetoed(a, addr, 1, slot);
			agent_mark(addr, 1, slot);
			if (move_first)
				agent_copy_moved(a, addr, slot, 1);
			return 1;
		}
		if (err == EBUSY && move_first && !unshared && agent_may_unshare(a)) {
			agent_unshare(addr, len, slot);
			unshared = true;
			continue;
		}
		if (err == EAGAIN && tries + 1 < AGENT_MOVE_TRIES) {
			syscall(SYS_nanosleep, &ts, NULL);
			continue;
		}
		veto[slot] = 1;
		return 1;
	}
}

/* Page j, or the first page of the run past i in the next 2 MiB chunk if sooner. */
static size_t agent_chunk_end(uint64_t addr, size_t i, size_t j)
{
	uint64_t chunk_end = ((addr + i * SHIM_PAGE) | (ZS_REGISTER_CHUNK - 1)) + 1;
	size_t last = (size_t)((chunk_end - addr) / SHIM_PAGE);

	return last < j ? last : j;
}

/*
 * The agent's side of the fork gate (ZS_STAGING_FORK_GATE): no move while a
 * fork is under way, and none under way while it moves, until its copy.
 * Both sides store, then look at the other's word (sequentially
 * consistent): at least one of them sees the other.
 */
static void agent_gate_enter(void)
{
	volatile uint32_t *gate = ZS_STAGING_FORK_GATE(shim.staging, shim.staging_len / SHIM_PAGE);
	uint64_t start = shim_now_usec();

	for (;;) {
		/* Bounded: a thread stopped in fork(), or one that left the
		 * prepare handler by a longjmp, must not stop eviction for good. */
		bool clear = shim_gate_wait(&gate[0], start);

		__atomic_store_n(&gate[1], 1, __ATOMIC_SEQ_CST);
		if (!clear || !__atomic_load_n(&gate[0], __ATOMIC_SEQ_CST))
			return;
		__atomic_store_n(&gate[1], 0, __ATOMIC_SEQ_CST);
	}
}

static void agent_gate_leave(void)
{
	__atomic_store_n(&ZS_STAGING_FORK_GATE(shim.staging, shim.staging_len / SHIM_PAGE)[1], 0,
			 __ATOMIC_SEQ_CST);
}

/* Drops [first, end) pages of a run, leaving out those zswapd vetoed. */
static void agent_drop(struct agent *a, const struct zs_run *run, size_t end, bool move_first)
{
	const volatile uint8_t *veto = ZS_STAGING_VETO(shim.staging, shim.staging_len / SHIM_PAGE);
	size_t i = 0, j;

	while (i < end) {
		agent_hold();
		if (veto[run->staging_slot + i]) {
			i++;
			continue;
		}
		for (j = i; j < end && !veto[run->staging_slot + j]; j++)
			;
		if (a->scratch) {
			/* Every batch: one that copied first still has the moment
			 * between a vetoed page's move and its move back. */
			agent_gate_enter();
			i += agent_move(a, run->addr + i * SHIM_PAGE, (j - i) * SHIM_PAGE,
					run->staging_slot + (uint32_t)i, move_first);
			agent_gate_leave();
			continue;
		}
		/* One 2 MiB chunk at a time: zswapd registers memory in such
		 * chunks, so that is where the mappings split, and a drop that
		 * spans two is reported as two REMOVE events.  Announced first:
		 * zswapd then tells this drop's event from a discard of the
		 * app's in the same place. */
		j = agent_chunk_end(run->addr, i, j);
		__atomic_store_n(&ZS_STAGING_DROPS(shim.staging, shim.staging_len / SHIM_PAGE)
					  [run->staging_slot + i],
				 (uint16_t)(j - i), __ATOMIC_SEQ_CST);
		syscall(SYS_madvise, (uintptr_t)run->addr + i * SHIM_PAGE, (j - i) * SHIM_PAGE,
			MADV_DONTNEED);
		agent_mark(run->addr + i * SHIM_PAGE, j - i, run->staging_slot + (uint32_t)i);
		i = j;
	}
}

/*
 * Takes one run out.  Returns the pages dealt with: copied to staging and
 * dropped unless vetoed (so: vetoed pages stay, and zswapd leaves them out
 * of the commit), or -errno.
 */
static int32_t agent_evict_run(struct agent *a, const struct zs_run *run, bool move_first)
{
	size_t len = (size_t)run->npages * SHIM_PAGE;
	struct iovec local, remote;
	long n;

	if ((size_t)run->staging_slot * SHIM_PAGE + len > shim.staging_len)
		return -EINVAL;
	if (move_first) {
		if (!a->scratch)
			return -EINVAL; /* zswapd sends these only once we published one */
		agent_drop(a, run, run->npages, true);
		return (int32_t)run->npages;
	}
	local.iov_base = shim.staging + (size_t)run->staging_slot * SHIM_PAGE;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)run->addr;
	remote.iov_len = len;
	n = syscall(SYS_process_vm_readv, agent_pid, &local, 1UL, &remote, 1UL, 0UL);
	if (n < 0)
		return -errno;
	n /= SHIM_PAGE;
	/* Report what we copied even if the drop fails part way: zswapd then
	 * holds an entry for a page that may still be mapped, which is
	 * harmless, while the opposite would lose it. */
	if (n > 0)
		agent_drop(a, run, (size_t)n, false);
	return (int32_t)n;
}

/* proto_send() without libc's sendmsg wrapper (see the banner). */
static int agent_send(uint16_t type, uint32_t seq, const void *payload, size_t len)
{
	struct zs_hdr h = { .magic = ZS_MAGIC, .version = ZS_VERSION, .type = type,
			    .len = (uint32_t)len, .seq = seq };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	long r;

	do
		r = syscall(SYS_sendmsg, shim.sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* proto_recv() likewise; descriptors (none are expected) are closed. */
static ssize_t agent_recv(void *buf, size_t cap)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { buf, cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf) };
	const struct zs_hdr *h;
	long n;

	n = syscall(SYS_recvmsg, shim.sock, &m, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int fds[PROTO_MAX_FDS];
			size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
			for (size_t i = 0; i < nfds; i++)
				syscall(SYS_close, fds[i]);
		}
	}
	if (n == 0)
		return 0;
	if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	return proto_check(buf, (size_t)n, &h) < 0 ? -EBADMSG : n;
}

static int agent_evict(struct agent *a, const struct zs_hdr *h)
{
	const struct zs_evict *ev = proto_payload(h);
	/* The reply goes where the request was: the buffer is ours alone. */
	struct {
		struct zs_evict_done done;
		int32_t result[(ZS_MSG_MAX - sizeof(struct zs_hdr) - sizeof(struct zs_evict)) /
			       sizeof(struct zs_run)];
	} *reply = (void *)((uint8_t *)agent_buf() + ZS_MSG_MAX);
	uint32_t nruns = ev->nruns;
	uint64_t batch = ev->batch;

	if (!a->scratch_tried && shim.move)
		agent_scratch_setup(a); /* here: zswapd has set our uffd up by now */
	a->scratch_moved = 0;
	a->may_unshare = !(ev->flags & ZS_EVICT_NO_UNSHARE);
	reply->done.flags = shim.follow && agent_follow_app(a) ? ZS_DONE_ON_APP_CPU : 0;
	for (uint32_t i = 0; i < nruns; i++)
		reply->result[i] = agent_evict_run(a, &ev->runs[i], ev->flags & ZS_EVICT_MOVE_FIRST);
	if (a->scratch_moved) {
		agent_hold();
		syscall(SYS_madvise, a->scratch, shim.staging_len, MADV_DONTNEED);
	}
	agent_unfollow(a);
	reply->done.batch = batch;
	reply->done.nruns = nruns;
	return agent_send(ZS_EVICT_DONE, h->seq, reply,
			  sizeof(struct zs_evict_done) + nruns * sizeof(int32_t));
}

static void *agent_main(void *arg)
{
	struct {
		struct zs_agent a;
		struct zs_range excl[2];
	} hello = {
		.a = { .tid = (uint32_t)syscall(SYS_gettid), .nexcl = 2 },
		.excl = {
			{ (uint64_t)(uintptr_t)shim.area, SHIM_AGENT_AREA },
			{ (uint64_t)(uintptr_t)shim.beacon, SHIM_PAGE },
		},
	};
	const struct zs_hdr *h = (const struct zs_hdr *)agent_buf();
	/* A forked child's agent starts afresh: the parent's scratch was wiped,
	 * and its registration is not ours to rely on.  Set up at the first batch. */
	struct agent a = { 0 };
	struct timeval tv = { 0 };
	ssize_t n;

	(void)arg;
	agent_pid = (pid_t)syscall(SYS_getpid);
	/* So that top -H, a debugger and the tests can tell it from the app's. */
	syscall(SYS_prctl, PR_SET_NAME, "zswap-agent", 0UL, 0UL, 0UL);
	/* Requests may be minutes apart: no receive timeout from now on. */
	setsockopt(shim.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (shim.mark)
		__atomic_store_n(ZS_STAGING_AGENT_MARKS(shim.staging, shim.staging_len / SHIM_PAGE), 1,
				 __ATOMIC_RELEASE);
	if (agent_send(ZS_AGENT, 3, &hello, sizeof(hello)) < 0)
		return NULL;
	for (;;) {
		n = agent_recv(agent_buf(), ZS_MSG_MAX);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n <= 0)
			break;
		if (h->type == ZS_EVICT) {
			if (agent_evict(&a, h) < 0)
				break;
		} else if (h->type == ZS_BYE) {
			__atomic_store_n(&shim.agent_state, SHIM_AGENT_BYE, __ATOMIC_RELEASE);
			shim_log("zswapd stopped and returned every page");
			close(shim.uffd);
			shim.uffd = -1;
			return NULL;
		}
	}
	/* zswapd died holding our pages (orphan.c).  With a watcher, it
	 * settles what follows; it may already be at it. */
	__atomic_store_n(&shim.agent_state, SHIM_AGENT_GONE, __ATOMIC_RELEASE);
	if (shim.watch_fd < 0)
		shim_orphan_serve();
	shim_park();
}

int shim_agent_start(void)
{
	return shim_thread_start(shim.area, SHIM_AGENT_STACK, agent_main);
}
