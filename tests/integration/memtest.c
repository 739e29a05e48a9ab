// SPDX-License-Identifier: GPL-2.0-only
/*
 * memtest - a process that checks its own memory while zswapd evicts it.
 *
 * Run under the shim (LD_PRELOAD=libzswap.so) by tests/integration/run.sh.
 * Each scenario fills anonymous memory with a realistic mix of pages (zero,
 * one repeated word, text, small structs, random bytes), asks zswapd to
 * evict it (ZS_RECLAIM for its own pid, the same request zswapctl sends),
 * does the thing the scenario is about, and verifies every byte.  It exits
 * 0 only if every check held; any mismatch prints where and exits 1.
 *
 *   memtest basic MIB RECLAIM_MIB MIN_DROP_MIB   RSS drop and byte check
 *   memtest threads                              writers vs reclaim loop
 *   memtest fork                                 parent/child share, then diverge
 *   memtest discard                              DONTNEED, FREE, munmap, mremap
 *   memtest discard_agent                        with agentdiscard.so: a discard or an
 *                                                unmap of the app's right before the
 *                                                agent's drop there
 *   memtest exec                                 exec of a shimmed image
 *   memtest kernel                               kernel reads/writes of evicted pages
 *   memtest wait-signal MIB                      evict, print "evicted", wait for SIGUSR1, verify
 *   memtest plain MIB                            fill and verify, no zswapd needed
 *   memtest sigbus MIB                           evict, print "evicted", wait for SIGUSR1,
 *                                                then read every page: each is its data or
 *                                                a SIGBUS (poisoned), never anything else
 *   memtest evict-then-touch MIB                 evict, print "evicted", wait for SIGUSR1, touch
 *   memtest fork-then-touch MIB                  the same, with a child forked first that
 *                                                reads every page; says how it ended
 *   memtest fork-wait MIB                        evict, fork a child sharing it all, print
 *                                                "evicted", wait for SIGUSR1, both verify
 *   memtest churn                                reclaim and verify while another thread
 *                                                keeps the mm changing (madvise): refused
 *                                                pages must come back even when the kernel
 *                                                says EAGAIN to putting them back
 *   memtest mremap_race                          reclaim while a thread moves a region back
 *                                                and forth and reads it: a page dropped
 *                                                before a move is faulted at its new place
 *   memtest follow [two]                         evict from one thread (or with a second
 *                                                one asleep), say "threads: N", verify
 *   memtest scan MIB                             evicted memory read in order, then half-written
 *                                                in order, then read in random order (prefetch);
 *                                                "scan: PHASE done", then a line on stdin
 *   memtest fork-unclaimed MIB                   evict, "evicted", a line on stdin, fork a child
 *                                                that cannot reach zswapd ("child: PID"), which
 *                                                reads every page after another line
 *   memtest orphan MIB                           writers, reclaims and forks until SIGUSR1, with
 *                                                zswapd killed meanwhile: each page reads as its
 *                                                data or the process ends loudly, never zeros
 *   memtest hold MIB [hot|grow|idle|locked|forked] fill, print "ready", read and write random
 *                                                pages until SIGUSR1, then verify (for limits);
 *                                                "hot": only ever touch the first quarter;
 *                                                "grow": the same, filled 4 MiB every 50 ms;
 *                                                "idle": touch nothing until then;
 *                                                "locked": idle, its memory mlocked;
 *                                                "forked": idle, a child shares its pages
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zswap_proto.h"

#define PAGE 4096u
#define MIB (1024u * 1024u)

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "memtest[%d] FAIL %s:%d: ", (int)getpid(), __FILE__,  \
				__LINE__);                                                 \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			failures++;                                                        \
		}                                                                          \
	} while (0)

/* ---- page contents: a function of (seed, page index), so any copy can be checked ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static const char *const words[] = { "the ",	"memory ", "of ",    "a ",     "process ",
				     "that ",	"went ",   "cold ",  "comes ", "back ",
				     "when ",	"touched ", "page ", "swap ",  "zswap " };

static void fill_page(uint8_t *p, uint64_t seed, uint64_t idx)
{
	uint64_t h = mix64(seed * 1000003u + idx);

	switch (h % 8) {
	case 0: /* zero */
		memset(p, 0, PAGE);
		break;
	case 1: { /* one repeated word */
		uint64_t w = mix64(h);

		for (unsigned i = 0; i < PAGE / 8; i++)
			memcpy(p + i * 8, &w, 8);
		break;
	}
	case 2:
	case 3:
	case 4: { /* text */
		unsigned off = 0;

		for (unsigned i = 0; off < PAGE; i++) {
			const char *wd = words[mix64(h + i) % (sizeof(words) / sizeof(words[0]))];
			size_t l = strlen(wd);

			if (l > PAGE - off)
				l = PAGE - off;
			memcpy(p + off, wd, l);
			off += (unsigned)l;
		}
		break;
	}
	case 5:
	case 6: { /* small structs with counters */
		struct {
			uint32_t id, flags;
			uint64_t counter;
			char name[16];
		} s;

		for (unsigned i = 0; i < PAGE / sizeof(s); i++) {
			memset(&s, 0, sizeof(s));
			s.id = (uint32_t)(idx * 128 + i);
			s.flags = (uint32_t)(h & 0xff);
			s.counter = h + i;
			snprintf(s.name, sizeof(s.name), "obj%u", i);
			memcpy(p + i * sizeof(s), &s, sizeof(s));
		}
		break;
	}
	default: /* incompressible */
		for (unsigned i = 0; i < PAGE / 8; i++) {
			uint64_t v = mix64(h + i + 1);

			memcpy(p + i * 8, &v, 8);
		}
		break;
	}
	/* Make every page unique where it is not meant to be uniform. */
	if (h % 8 >= 2)
		memcpy(p + PAGE - 8, &idx, 8);
}

static void fill(uint8_t *base, size_t npages, uint64_t seed)
{
	for (size_t i = 0; i < npages; i++)
		fill_page(base + i * PAGE, seed, i);
}

/* Checks pages [first, first + n) of base. */
static size_t verify_at(const uint8_t *base, size_t first, size_t n, uint64_t seed,
			const char *what)
{
	static uint8_t want[PAGE];
	size_t bad = 0, npages = first + n;

	for (size_t i = first; i < npages; i++) {
		fill_page(want, seed, i);
		if (memcmp(base + i * PAGE, want, PAGE)) {
			if (bad < 5)
				fprintf(stderr, "memtest[%d] %s: page %zu differs\n", (int)getpid(), what, i);
			bad++;
		}
	}
	CHECK(bad == 0, "%s: %zu of %zu pages differ", what, bad, n);
	return bad;
}

static size_t verify(const uint8_t *base, size_t npages, uint64_t seed, const char *what)
{
	return verify_at(base, 0, npages, seed, what);
}

static bool is_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static uint8_t *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* ---- talking to zswapd (what zswapctl reclaim does) ---- */

/* A connection to zswapd, or -errno. */
static int zs_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv(ZSWAP_SOCKET_ENV);
	int fd, r;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path && *path ? path : ZSWAP_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* Evicts up to bytes of this process; returns pages evicted, -1 on error. */
static long reclaim_self(uint64_t bytes)
{
	struct {
		struct zs_hdr h;
		struct zs_reclaim r;
	} req = { .h = { ZS_MAGIC, ZS_VERSION, ZS_RECLAIM, sizeof(struct zs_reclaim), 7 },
		  .r = { .pid = (uint32_t)getpid(), .bytes = bytes } };
	union {
		struct zs_hdr h;
		uint8_t raw[ZS_MSG_MAX];
	} rep;
	int fd = zs_connect();
	/* A reclaim the daemon forgets must fail the test, not hang it; but a
	 * slow one must not (under ThreadSanitizer, run at nice 19 beside a
	 * benchmark, a 64 MiB reclaim took over 60 s).  The suite's watchdog
	 * ends a test that hangs anyway. */
	struct timeval tv = { .tv_sec = 300 };
	ssize_t n;
	long pages = -1;

	if (fd < 0) {
		fprintf(stderr, "memtest: connect to zswapd: %s\n", strerror(-fd));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
		perror("send");
		goto out;
	}
	do
		n = recv(fd, &rep, sizeof(rep), 0);
	while (n < 0 && errno == EINTR);
	if (n >= (ssize_t)(sizeof(rep.h) + sizeof(struct zs_reclaim_reply)) &&
	    rep.h.type == ZS_RECLAIM_REPLY) {
		struct zs_reclaim_reply r;

		memcpy(&r, rep.raw + sizeof(rep.h), sizeof(r));
		pages = (long)r.evicted_pages;
	} else if (n > (ssize_t)sizeof(rep.h) + 4 && rep.h.type == ZS_ERROR) {
		fprintf(stderr, "memtest: reclaim refused: %s\n", (char *)rep.raw + sizeof(rep.h) + 4);
	} else if (n < 0) {
		fprintf(stderr, "memtest: no answer to a reclaim: %s\n", strerror(errno));
	}
out:
	close(fd);
	return pages;
}

/* One number from /proc/self/status, read with fmt ("RssAnon: %ld kB"), or -1. */
static long self_status(const char *fmt)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static long rss_anon_kb(void)
{
	return self_status("RssAnon: %ld kB");
}

/* ---- scenarios ---- */

static int t_basic(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	size_t rec = argc > 3 ? strtoul(argv[3], NULL, 10) : mib;
	long min_drop = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(mib * MIB);
	long before, after, pages;

	fill(m, npages, 1);
	before = rss_anon_kb();
	pages = reclaim_self((uint64_t)rec * MIB);
	after = rss_anon_kb();
	printf("basic: %zu MiB, reclaim %zu MiB: evicted %ld pages, RssAnon %ld -> %ld kB (-%ld MiB)\n",
	       mib, rec, pages, before, after, (before - after) / 1024);
	CHECK(pages > 0, "nothing was evicted");
	CHECK((before - after) / 1024 >= min_drop, "RssAnon dropped %ld MiB, wanted >= %ld",
	      (before - after) / 1024, min_drop);
	verify(m, npages, 1, "after reclaim");
	/* Twice: pages loaded back can be evicted again. */
	pages = reclaim_self((uint64_t)rec * MIB);
	CHECK(pages > 0, "second reclaim evicted nothing");
	verify(m, npages, 1, "after second reclaim");
	return failures ? 1 : 0;
}

/* Writers own disjoint slots: thread t writes word t of each page it picks. */
#define NWRITERS 4
static uint8_t *tw_mem;
static uint64_t *tw_shadow; /* [page][writer]: the last value written */
static size_t tw_npages;
static atomic_bool tw_stop;

static void *tw_writer(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t x = t + 1, v = 0;

	while (!atomic_load(&tw_stop)) {
		size_t p;

		x = mix64(x);
		p = x % tw_npages;
		v++;
		memcpy(tw_mem + p * PAGE + t * 64, &v, 8);
		tw_shadow[p * NWRITERS + t] = v;
	}
	return NULL;
}

/* Whether page p of tw_mem is its fill (seed) with the writers' last writes in it. */
static bool tw_page_ok(size_t p, uint64_t seed)
{
	uint8_t want[PAGE];

	fill_page(want, seed, p);
	for (unsigned t = 0; p < tw_npages && t < NWRITERS; t++) {
		uint64_t v = tw_shadow[p * NWRITERS + t];

		if (v)
			memcpy(want + t * 64, &v, 8);
	}
	return memcmp(tw_mem + p * PAGE, want, PAGE) == 0;
}

static int t_threads(int argc, char **argv)
{
	pthread_t th[NWRITERS];
	size_t bad = 0;
	long total = 0;

	(void)argc;
	(void)argv;
	tw_npages = 64 * MIB / PAGE;
	tw_mem = map_anon(tw_npages * PAGE);
	tw_shadow = calloc(tw_npages * NWRITERS, sizeof(uint64_t));
	fill(tw_mem, tw_npages, 3);
	for (unsigned t = 0; t < NWRITERS; t++)
		pthread_create(&th[t], NULL, tw_writer, (void *)(uintptr_t)t);
	for (int i = 0; i < 40; i++) {
		long n = reclaim_self(16 * MIB);

		CHECK(n >= 0, "reclaim %d failed", i);
		total += n > 0 ? n : 0;
	}
	atomic_store(&tw_stop, true);
	for (unsigned t = 0; t < NWRITERS; t++)
		pthread_join(th[t], NULL);
	for (size_t p = 0; p < tw_npages; p++) {
		if (!tw_page_ok(p, 3)) {
			if (bad < 5)
				fprintf(stderr, "threads: page %zu lost a write\n", p);
			bad++;
		}
	}
	printf("threads: %d writers, %ld pages evicted over 40 reclaims, %zu pages wrong\n", NWRITERS,
	       total, bad);
	CHECK(total > 0, "nothing was evicted");
	CHECK(bad == 0, "%zu pages lost writes", bad);
	return failures ? 1 : 0;
}

/*
 * Forks under continuous reclaim: a reclaim thread keeps the daemon
 * evicting what the main thread keeps reading back, and each child at once
 * reads every page, scattered.  Every child and the parent must read their
 * data.  (It rarely lands a child's fault inside its parent's batch: a
 * child faults only after its shim's handshake, which outlasts a batch.
 * That window, where a dropped page has no entry yet, is handled by
 * target.batch_parent but is not forced by any test.)
 */
static atomic_bool fm_stop, fm_reclaim_failed;
static uint8_t *fm_mem;

static void *fm_reclaimer(void *arg)
{
	long *evicted = arg;

	while (!atomic_load(&fm_stop)) {
		long n = reclaim_self(8 * MIB);

		if (n < 0) {
			atomic_store(&fm_reclaim_failed, true);
			break;
		}
		*evicted += n;
	}
	return NULL;
}

static int t_fork_reclaim(int argc, char **argv)
{
	unsigned nchildren = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 10, bad = 0;
	size_t npages = (argc > 3 ? strtoul(argv[3], NULL, 10) : 16) * MIB / PAGE;
	long evicted = 0;
	pthread_t th;

	fm_mem = map_anon(npages * PAGE);
	fill(fm_mem, npages, 9);
	pthread_create(&th, NULL, fm_reclaimer, &evicted);
	for (unsigned i = 0; i < nchildren; i++) {
		int status = 0;
		pid_t pid;

		/* Bring pages back so that the reclaims always have a batch to do,
		 * then fork at a different point of one each time. */
		verify(fm_mem, npages, 9, "parent");
		usleep(200 * (i % 8));
		pid = fork();
		if (pid == 0) {
			uint8_t want[PAGE];
			size_t wrong = 0;

			/* Scattered order: the pages of the batch in flight are
			 * somewhere, and must be met before it commits. */
			for (size_t k = 0; k < npages; k++) {
				size_t p = k * 7919 % npages; /* coprime to npages: every page once */

				fill_page(want, 9, p);
				if (memcmp(fm_mem + p * PAGE, want, PAGE) && wrong++ < 3)
					fprintf(stderr, "fork_reclaim: child: page %zu wrong\n", p);
			}
			_exit(wrong ? 1 : 0);
		}
		CHECK(pid > 0, "fork failed");
		if (pid > 0 && (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
				WEXITSTATUS(status) != 0)) {
			/* A signal rather than a wrong page: its own memory came back wrong. */
			if (WIFSIGNALED(status))
				fprintf(stderr, "fork_reclaim: child %u killed by signal %d\n", i,
					WTERMSIG(status));
			bad++;
		}
	}
	atomic_store(&fm_stop, true);
	pthread_join(th, NULL);
	verify(fm_mem, npages, 9, "parent");
	printf("fork_reclaim: %u children, %u saw wrong data, %ld pages evicted meanwhile\n",
	       nchildren, bad, evicted);
	CHECK(!atomic_load(&fm_reclaim_failed), "a reclaim failed or got no answer");
	CHECK(evicted > 0, "nothing was evicted");
	CHECK(bad == 0, "%u children read wrong data", bad);
	return failures ? 1 : 0;
}

/*
 * A child forked while a batch is in flight, whose parent exits at once.
 * Under agentslow.so the agent pauses after each move, before it copies:
 * the fork meets pages moved out of the parent but not copied to staging,
 * whose only copy is the parent's scratch area, gone with the parent.  The
 * child must read every page right.  The child's verdict is its line on
 * stdout ("N pages wrong"); the parent's exit status says nothing.
 */
static int t_fork_orphan(int argc, char **argv)
{
	size_t npages = (argc > 2 ? strtoul(argv[2], NULL, 10) : 16) * MIB / PAGE;
	long evicted = 0;
	pthread_t th;
	pid_t pid;

	fm_mem = map_anon(npages * PAGE);
	fill(fm_mem, npages, 11);
	/* A first batch, write-protected, sets the agent's scratch up: the
	 * batches after it move first. */
	CHECK(reclaim_self(64 * 1024) > 0, "nothing evicted");
	verify(fm_mem, npages, 11, "parent");
	if (failures)
		return 1;
	pthread_create(&th, NULL, fm_reclaimer, &evicted);
	usleep(100000);
	pid = fork();
	if (pid == 0) {
		uint8_t want[PAGE];
		size_t wrong = 0;

		for (size_t k = 0; k < npages; k++) {
			size_t p = k * 7919 % npages;

			fill_page(want, 11, p);
			if (memcmp(fm_mem + p * PAGE, want, PAGE) && wrong++ < 3)
				fprintf(stderr, "fork_orphan: child: page %zu wrong\n", p);
		}
		printf("fork_orphan: child: %zu pages wrong\n", wrong);
		fflush(stdout);
		_exit(wrong ? 1 : 0);
	}
	CHECK(pid > 0, "fork failed");
	_exit(failures ? 1 : 0); /* at once: the agent dies mid-batch */
}

/*
 * Pages shared with a child that has exited are the parent's alone again,
 * but not marked exclusive until written, and UFFDIO_MOVE refuses such a
 * page (EBUSY): the agent must unshare it first, or a read-mostly parent
 * (redis after BGSAVE) could never be evicted again.
 */
static int t_fork_exclusive(int argc, char **argv)
{
	size_t npages = (argc > 2 ? strtoul(argv[2], NULL, 10) : 16) * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	int status = 0;
	long n;
	pid_t pid;

	fill(m, npages, 12);
	pid = fork();
	if (pid == 0) {
		verify(m, npages, 12, "child");
		_exit(failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "child failed (status %#x)", status);
	verify(m, npages, 12, "parent, its child gone"); /* reads only */
	n = reclaim_self(npages * PAGE);
	printf("fork_exclusive: %ld of %zu pages evicted after the child exited\n", n, npages);
	CHECK(n >= (long)(npages / 2), "only %ld of %zu pages evicted", n, npages);
	verify(m, npages, 12, "parent, evicted");
	return failures ? 1 : 0;
}

static int t_fork(int argc, char **argv)
{
	size_t npages = 32 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	int status;
	pid_t pid;

	(void)argc;
	(void)argv;
	fill(m, npages, 5);
	CHECK(reclaim_self(32 * MIB) > 0, "nothing evicted before fork");
	pid = fork();
	if (pid == 0) {
		failures = 0;
		verify(m, npages, 5, "child, inherited");
		/* Diverge: the child rewrites the first half with another seed. */
		fill(m, npages / 2, 6);
		CHECK(reclaim_self(32 * MIB) > 0, "child evicted nothing");
		verify(m, npages / 2, 6, "child, own half after its reclaim");
		verify_at(m, npages / 2, npages - npages / 2, 5, "child, inherited half");
		_exit(failures ? 1 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child failed (status %#x)", status);
	verify(m, npages, 5, "parent, after the child wrote");
	CHECK(reclaim_self(32 * MIB) > 0, "parent evicted nothing after fork");
	verify(m, npages, 5, "parent, evicted again");
	/* A child forked while nothing is resident, then a grandchild. */
	CHECK(reclaim_self(32 * MIB) > 0, "nothing evicted before second fork");
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();

		failures = 0;
		if (g == 0) {
			verify(m, npages, 5, "grandchild");
			_exit(failures ? 1 : 0);
		}
		CHECK(waitpid(g, &status, 0) == g && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "grandchild failed");
		verify(m, npages, 5, "second child");
		_exit(failures ? 1 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "second child failed");
	verify(m, npages, 5, "parent, end");
	printf("fork: parent, children and grandchild all read their own data\n");
	return failures ? 1 : 0;
}

/*
 * Discard, then write, pages of batches in flight, under agentslow.so with
 * a pause long enough that each batch is stuck (FAULT_THROTTLE_USEC): the
 * write faults on the discarded page, which zswapd then fills with zeros
 * for it at once rather than wait on the agent.  The agent may come to the
 * page after that, and must leave it: the commit skips a discarded page,
 * and one taken out anyway would lose the write.  Each page must read back
 * as zeros with the last word written.
 */
static int t_discard_stuck(int argc, char **argv)
{
	size_t npages = (argc > 2 ? strtoul(argv[2], NULL, 10) : 8) * MIB / PAGE, bad = 0;
	unsigned rounds = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 4;
	long evicted = 0;
	pthread_t th;

	fm_mem = map_anon(npages * PAGE);
	fill(fm_mem, npages, 13);
	CHECK(reclaim_self(64 * 1024) > 0, "nothing evicted"); /* the scratch, for move-first */
	pthread_create(&th, NULL, fm_reclaimer, &evicted);
	for (unsigned r = 1; r <= rounds; r++) {
		for (size_t k = 0; k < npages; k++) {
			size_t p = k * 7919 % npages;
			uint64_t *w = (uint64_t *)(fm_mem + p * PAGE);

			madvise(w, PAGE, MADV_DONTNEED);
			*w = ((uint64_t)r << 32) | p;
		}
	}
	atomic_store(&fm_stop, true);
	pthread_join(th, NULL);
	for (size_t p = 0; p < npages; p++) {
		uint64_t *w = (uint64_t *)(fm_mem + p * PAGE);

		if ((*w != (((uint64_t)rounds << 32) | p) || !is_zero(fm_mem + p * PAGE + 8, PAGE - 8)) &&
		    bad++ < 3)
			fprintf(stderr, "discard_stuck: page %zu holds %#llx\n", p, (unsigned long long)*w);
	}
	printf("discard_stuck: %zu pages, %u rounds of discard then write, %ld pages evicted meanwhile, "
	       "%zu wrong\n", npages, rounds, evicted, bad);
	CHECK(!atomic_load(&fm_reclaim_failed), "a reclaim failed or got no answer");
	CHECK(bad == 0, "%zu pages lost their last write", bad);
	return failures ? 1 : 0;
}

static int t_discard(int argc, char **argv)
{
	size_t npages = 16 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE), *again;
	size_t q = npages / 4;

	(void)argc;
	(void)argv;
	/* DONTNEED on evicted pages: zeros after, the rest intact. */
	fill(m, npages, 7);
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted");
	CHECK(madvise(m, q * PAGE, MADV_DONTNEED) == 0, "madvise");
	CHECK(is_zero(m, q * PAGE), "DONTNEED'd evicted pages are not zero");
	verify_at(m, q, npages - q, 7, "beside the DONTNEED");

	/* MADV_FREE then a write: the write must stick, untouched ones read data or zero. */
	fill(m, npages, 8);
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted");
	CHECK(madvise(m, q * PAGE, MADV_FREE) == 0, "madvise free");
	for (size_t i = 0; i < q; i++) {
		uint8_t want[PAGE];

		m[i * PAGE] = 0x5a;
		fill_page(want, 8, i);
		want[0] = 0x5a;
		/* After MADV_FREE the kernel may have dropped the page (zeros) or not. */
		CHECK(m[i * PAGE] == 0x5a, "write after MADV_FREE lost");
		if (memcmp(m + i * PAGE + 1, want + 1, PAGE - 1) && !is_zero(m + i * PAGE + 1, PAGE - 1))
			CHECK(0, "page %zu after MADV_FREE is neither its data nor zeros", i);
	}
	verify_at(m, q, npages - q, 8, "beside the MADV_FREE");

	/* munmap + mmap at the same address: fresh zeros, not the old entries. */
	fill(m, npages, 9);
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted");
	CHECK(munmap(m + q * PAGE, q * PAGE) == 0, "munmap");
	again = mmap(m + q * PAGE, q * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(again == m + q * PAGE, "mmap fixed");
	CHECK(is_zero(again, q * PAGE), "remapped range is not zero");
	verify(m, q, 9, "before the munmap hole");
	verify_at(m, 2 * q, npages - 2 * q, 9, "after the hole");
	return failures ? 1 : 0;
}

/*
 * Under agentdiscard.so (agent_move = no): drops of the agent in the area
 * begin, by turns, with a discard of their first page or an unmap of their
 * middle page by "the app".  Discarded pages read zeros, unmapped ones are
 * left alone, every other page keeps its data.
 */
static int t_discard_agent(int argc, char **argv)
{
	void (*set_area)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT,
									   "agentdiscard_area");
	size_t (*taken)(const uint64_t **, const uint64_t **, size_t *) =
		(size_t(*)(const uint64_t **, const uint64_t **, size_t *))dlsym(
			RTLD_DEFAULT, "agentdiscard_pages");
	size_t npages = 16 * MIB / PAGE, n, nholes, bad = 0;
	uint8_t *m = map_anon(npages * PAGE);
	const uint64_t *dropped, *holes;
	static uint8_t want[PAGE];
	long pages;

	(void)argc;
	(void)argv;
	if (!set_area || !taken) {
		fprintf(stderr, "memtest discard_agent: agentdiscard.so is not preloaded\n");
		return 2;
	}
	fill(m, npages, 23);
	set_area(m, npages * PAGE);
	/* Until the clock hand has come round the area (under ThreadSanitizer
	 * its own memory comes first). */
	pages = 0;
	for (int round = 0; round < 64; round++) {
		long got = reclaim_self(16 * MIB);

		pages += got > 0 ? got : 0;
		n = taken(&dropped, &holes, &nholes);
		if (n > 1 && nholes > 1)
			break;
	}
	set_area(NULL, 0);
	n = taken(&dropped, &holes, &nholes);
	for (size_t i = 0; i < npages; i++) {
		uint64_t at = (uint64_t)(uintptr_t)(m + i * PAGE);
		bool discarded = false, unmapped = false;

		for (size_t k = 0; k < n; k++)
			discarded |= dropped[k] == at;
		for (size_t k = 0; k < nholes; k++)
			unmapped |= holes[k] == at;
		if (unmapped)
			continue;
		fill_page(want, 23, i);
		if (discarded ? !is_zero(m + i * PAGE, PAGE) : memcmp(m + i * PAGE, want, PAGE) != 0) {
			if (bad++ < 5)
				fprintf(stderr, "memtest discard_agent: page %zu %s\n", i,
					discarded ? "was discarded but is not zero" : "differs");
		}
	}
	printf("discard_agent: %ld pages evicted, %zu discarded and %zu unmapped right before "
	       "the agent's drop\n",
	       pages, n, nholes);
	CHECK(pages > 0, "nothing evicted");
	CHECK(n > 0 && nholes > 0, "no drop of the agent's was preceded by a discard and a hole");
	CHECK(bad == 0, "%zu of %zu pages wrong", bad, npages);
	return failures ? 1 : 0;
}

static int t_mremap(int argc, char **argv)
{
	size_t npages = 16 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE), *moved, *hole;

	(void)argc;
	(void)argv;
	fill(m, npages, 10);
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted");
	/* Move the whole mapping elsewhere: the evicted pages follow. */
	hole = map_anon(npages * PAGE * 2);
	munmap(hole, npages * PAGE * 2);
	moved = mremap(m, npages * PAGE, npages * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	CHECK(moved == hole, "mremap: %s", strerror(errno));
	verify(moved, npages, 10, "after mremap");
	/* Grow in place or move, after another eviction. */
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted after mremap");
	m = mremap(moved, npages * PAGE, 2 * npages * PAGE, MREMAP_MAYMOVE);
	CHECK(m != MAP_FAILED, "mremap grow");
	verify(m, npages, 10, "after growing mremap");
	CHECK(is_zero(m + npages * PAGE, npages * PAGE), "grown part is not zero");
	return failures ? 1 : 0;
}

static uint8_t *race_at[2];
static size_t race_pages;
static atomic_bool race_stop;
static atomic_size_t race_moves, race_bad;

/* Moves the region to the other place, then reads all of it, until told to stop. */
static void *race_thread(void *arg)
{
	static uint8_t want[PAGE];
	size_t len = race_pages * PAGE;
	int at = 0;

	(void)arg;
	while (!atomic_load(&race_stop) && !atomic_load(&race_bad)) {
		void *to = mremap(race_at[at], len, len, MREMAP_MAYMOVE | MREMAP_FIXED, race_at[!at]);

		if (to != race_at[!at]) {
			fprintf(stderr, "mremap_race: mremap: %s\n", strerror(errno));
			atomic_fetch_add(&race_bad, 1);
			break;
		}
		/* Hold the vacated place, so that nothing else lands there. */
		mmap(race_at[at], len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		     0);
		at = !at;
		atomic_fetch_add(&race_moves, 1);
		for (size_t i = 0; i < race_pages; i++) {
			fill_page(want, 18, i);
			if (memcmp(race_at[at] + i * PAGE, want, PAGE)) {
				if (atomic_fetch_add(&race_bad, 1) < 5)
					fprintf(stderr, "mremap_race: page %zu (%p) differs after move %zu%s\n",
						i, (void *)(race_at[at] + i * PAGE),
						atomic_load(&race_moves),
						is_zero(race_at[at] + i * PAGE, PAGE) ? ": zeros" : "");
			}
		}
	}
	return NULL;
}

static int t_mremap_race(int argc, char **argv)
{
	uint8_t *other;
	long total = 0;
	pthread_t th;

	(void)argc;
	(void)argv;
	race_pages = 8 * MIB / PAGE;
	race_at[0] = map_anon(race_pages * PAGE);
	other = map_anon(race_pages * PAGE);
	munmap(other, race_pages * PAGE);
	race_at[1] = mmap(other, race_pages * PAGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(race_at[1] == other, "cannot reserve the second place");
	fill(race_at[0], race_pages, 18);
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted"); /* registers the region */
	pthread_create(&th, NULL, race_thread, NULL);
	/* Three seconds, and enough moves to have met batches in flight. */
	for (time_t end = time(NULL) + 3; !atomic_load(&race_bad) &&
					   (time(NULL) < end || atomic_load(&race_moves) < 50);) {
		long n = reclaim_self(4 * MIB);

		total += n > 0 ? n : 0;
	}
	atomic_store(&race_stop, true);
	pthread_join(th, NULL);
	printf("result: mremap_race: %ld pages evicted, %zu moves, %zu pages wrong\n", total,
	       atomic_load(&race_moves), atomic_load(&race_bad));
	CHECK(atomic_load(&race_bad) == 0, "%zu pages read wrong after a move",
	      atomic_load(&race_bad));
	CHECK(total > 0 && atomic_load(&race_moves) > 0, "no eviction or no move happened");
	return failures ? 1 : 0;
}

static int t_kernel(int argc, char **argv)
{
	size_t npages = 8 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	uint8_t *buf = malloc(npages * PAGE);
	int p[2], fd;
	char path[] = "/tmp/memtest.XXXXXX";

	(void)argc;
	(void)argv;
	fill(m, npages, 11);
	CHECK(reclaim_self(8 * MIB) > 0, "nothing evicted");
	/* The kernel reads evicted pages: write(2) from them into a file. */
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	unlink(path);
	CHECK(write(fd, m, npages * PAGE) == (ssize_t)(npages * PAGE), "write from evicted pages: %s",
	      strerror(errno));
	CHECK(pread(fd, buf, npages * PAGE, 0) == (ssize_t)(npages * PAGE), "pread");
	verify(buf, npages, 11, "file written from evicted pages");
	/* The kernel writes into evicted pages: read(2) over them. */
	CHECK(reclaim_self(8 * MIB) > 0, "nothing evicted");
	fill(buf, npages, 12);
	CHECK(pwrite(fd, buf, npages * PAGE, 0) == (ssize_t)(npages * PAGE), "pwrite");
	CHECK(pread(fd, m, npages * PAGE, 0) == (ssize_t)(npages * PAGE), "read into evicted pages: %s",
	      strerror(errno));
	verify(m, npages, 12, "read(2) into evicted pages");
	/* And a pipe, one page at a time. */
	CHECK(reclaim_self(8 * MIB) > 0, "nothing evicted");
	CHECK(pipe(p) == 0, "pipe");
	for (size_t i = 0; i < 16; i++) {
		uint8_t one[PAGE];

		CHECK(write(p[1], m + i * PAGE, PAGE) == PAGE, "write to pipe");
		CHECK(read(p[0], one, PAGE) == PAGE, "read from pipe");
		CHECK(memcmp(one, m + i * PAGE, PAGE) == 0, "pipe copy of page %zu differs", i);
	}
	verify(m, npages, 12, "after the pipe");
	close(fd);
	free(buf);
	return failures ? 1 : 0;
}

static int t_exec(int argc, char **argv)
{
	size_t npages = 8 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);

	(void)argc;
	fill(m, npages, 13);
	CHECK(reclaim_self(8 * MIB) > 0, "nothing evicted before exec");
	verify(m, npages / 2, 13, "before exec");
	CHECK(reclaim_self(8 * MIB) > 0, "nothing evicted before exec");
	/* Evicted pages at exec time; the new image registers afresh. */
	execl("/proc/self/exe", argv[0], "basic", "8", "8", "0", (char *)NULL);
	perror("exec");
	return 1;
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* SIGUSR1 held back until wait_usr1(), so that none is missed before it. */
static void block_usr1(void)
{
	sigset_t usr1;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
}

/* Takes one SIGUSR1: a scenario that waits twice waits for a second one. */
static void wait_usr1(void)
{
	sigset_t none;

	sigemptyset(&none);
	while (!got_usr1)
		sigsuspend(&none);
	got_usr1 = 0;
}

/* Says what is left resident, then waits for the test's SIGUSR1 to go on. */
static void evicted_then_wait(void)
{
	printf("evicted %ld kB resident\n", rss_anon_kb());
	fflush(stdout);
	wait_usr1();
}

/*
 * MEMTEST_SHUTDOWN_ZSWAPD: the process ends its connection to zswapd as a
 * program that closes every descriptor it did not open would, its memory
 * still served (zswapd keeps a copy of its uffd): shutdown(), since its
 * agent thread waits in a read of it.
 */
static void shutdown_zswapd(void)
{
	const char *want = getenv("ZSWAP_SOCKET");
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;

	while (dir && want && (de = readdir(dir))) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		int fd = atoi(de->d_name);

		if (fd > 2 && getpeername(fd, (struct sockaddr *)&sa, &len) == 0 &&
		    sa.sun_family == AF_UNIX && strcmp(sa.sun_path, want) == 0)
			shutdown(fd, SHUT_RDWR);
	}
	if (dir)
		closedir(dir);
}

/* Evicts, says so, waits for the test to stop (or kill) zswapd, then verifies. */
static int t_wait_signal(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);

	block_usr1();
	fill(m, npages, 14);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	/* A hole in a registered chunk: after the daemon is gone, touching it
	 * must not hang. */
	madvise(m, PAGE, MADV_DONTNEED);
	if (getenv("MEMTEST_SHUTDOWN_ZSWAPD"))
		shutdown_zswapd();
	evicted_then_wait();
	if (strcmp(argv[1], "fork-then-touch") == 0) {
		/* zswapd is gone: a child forked now must not read zeros either.
		 * A raw fork: glibc's touches its .bss, evicted too, and that
		 * alone would end the parent first. */
		pid_t c = (pid_t)syscall(SYS_fork);
		int status = 0;

		if (c == 0) {
			verify(m + PAGE, npages - 1, 14, "child");
			_exit(failures ? 1 : 0);
		}
		CHECK(c > 0 && waitpid(c, &status, 0) == c, "fork or wait failed");
		if (WIFSIGNALED(status))
			printf("child: signal %d\n", WTERMSIG(status));
		else
			printf("child: exit %d\n", WEXITSTATUS(status));
	}
	CHECK(is_zero(m, PAGE), "discarded page not zero");
	fill_page(m, 14, 0);
	verify(m, npages, 14, strcmp(argv[1], "wait-signal") ? "touch" : "after zswapd stopped");
	memset(map_anon(4 * MIB), 1, 4 * MIB); /* fresh memory still works */
	return failures ? 1 : 0;
}

/* A parent and the child it forked after eviction share every entry: both wait, then verify. */
static int t_fork_wait(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	int status = 0, go[2];
	char byte = 0;
	pid_t c;

	block_usr1();
	fill(m, npages, 15);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	CHECK(pipe(go) == 0, "pipe failed");
	c = fork();
	if (c == 0) {
		/* A pipe, not a signal: a forked child of a threaded process
		 * under ThreadSanitizer may never run its handler. */
		close(go[1]);
		CHECK(read(go[0], &byte, 1) == 1, "no word from the parent");
		verify(m, npages, 15, "child");
		_exit(failures ? 1 : 0);
	}
	CHECK(c > 0, "fork failed");
	close(go[0]);
	evicted_then_wait();
	CHECK(write(go[1], &byte, 1) == 1, "cannot wake the child");
	verify(m, npages, 15, "parent");
	CHECK(waitpid(c, &status, 0) == c && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child failed");
	return failures ? 1 : 0;
}

static sigjmp_buf bus_jmp;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static int t_sigbus(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
	size_t npages = mib * MIB / PAGE;
	volatile size_t poisoned = 0, bad = 0;
	uint8_t *m = map_anon(npages * PAGE);
	static uint8_t want[PAGE];
	struct sigaction sa = { .sa_handler = on_bus };

	block_usr1();
	fill(m, npages, 29);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	evicted_then_wait();
	sigaction(SIGBUS, &sa, NULL);
	for (size_t i = 0; i < npages; i++) {
		fill_page(want, 29, i);
		if (sigsetjmp(bus_jmp, 1)) {
			poisoned++;
			continue;
		}
		if (memcmp(m + i * PAGE, want, PAGE))
			bad++;
	}
	printf("sigbus: %zu pages poisoned (SIGBUS), %zu verified, %zu wrong\n", (size_t)poisoned,
	       npages - poisoned - bad, (size_t)bad);
	CHECK(bad == 0, "%zu pages neither their data nor SIGBUS", (size_t)bad);
	return failures ? 1 : 0;
}

static void *sleeper(void *arg)
{
	char c;

	(void)!read(*(int *)arg, &c, 1); /* until the pipe is closed */
	return NULL;
}

/* The agent's thread id, when the shim's threads (the agent, the watcher:
 * comm "zswap-*") are our only others; 0 otherwise. */
static pid_t agent_tid(void)
{
	DIR *dir = opendir("/proc/self/task");
	pid_t self = (pid_t)syscall(SYS_gettid), found = 0;
	struct dirent *de;
	int others = 0;

	while (dir && (de = readdir(dir))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		char path[64], comm[32] = "";
		FILE *f;

		if (tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		if (strcmp(comm, "zswap-agent\n") == 0)
			found = tid;
		else if (strcmp(comm, "zswap-watch\n") != 0)
			others++;
	}
	if (dir)
		closedir(dir);
	return others == 0 ? found : 0;
}

/*
 * The agent is pinned to our CPU only for its batch: afterwards it may run
 * where it could before, and what an operator set meanwhile (taskset -a
 * -p) is what it keeps.
 */
static void check_agent_cpus(uint8_t *m, size_t npages)
{
	pid_t agent = agent_tid();
	cpu_set_t before, after, one;
	int last = -1;

	if (!agent)
		return; /* a runtime thread too: the agent stays where it is */
	CHECK(sched_getaffinity(agent, sizeof(before), &before) == 0, "affinity: %m");
	fill(m, npages, 19);
	CHECK(reclaim_self(npages * PAGE) > 0, "nothing evicted");
	CHECK(sched_getaffinity(agent, sizeof(after), &after) == 0, "affinity: %m");
	CHECK(CPU_EQUAL(&before, &after), "after a batch the agent may run on %d CPUs, not %d",
	      CPU_COUNT(&after), CPU_COUNT(&before));
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &before))
			last = c;
	if (CPU_COUNT(&before) < 2)
		return;
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	/* Us too: the agent follows us only to a CPU it may use, and the test
	 * counts every batch of a one-thread app as taken out from its CPU. */
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "pin ourselves: %m");
	CHECK(sched_setaffinity(agent, sizeof(one), &one) == 0, "pin the agent: %m");
	fill(m, npages, 20);
	CHECK(reclaim_self(npages * PAGE) > 0, "nothing evicted");
	CHECK(sched_getaffinity(agent, sizeof(after), &after) == 0, "affinity: %m");
	CHECK(CPU_EQUAL(&one, &after), "the agent dropped the CPU it was given (%d CPUs now)",
	      CPU_COUNT(&after));
	verify(m, npages, 20, "after the agent was pinned");
}

/*
 * One batch of ours, from one thread or ("two") with a second one asleep;
 * says how many threads we had, so that the test knows whether the agent
 * should have taken it out from our CPU (agent_follow_app).
 */
static int t_follow(int argc, char **argv)
{
	bool two = argc > 2 && strcmp(argv[2], "two") == 0;
	size_t npages = 16 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	pthread_t extra;
	int pfd[2];

	fill(m, npages, 17);
	if (two) {
		CHECK(pipe(pfd) == 0, "pipe: %m");
		CHECK(pthread_create(&extra, NULL, sleeper, &pfd[0]) == 0, "pthread_create");
	}
	/* ours, the agent, the watcher and any runtime thread (ThreadSanitizer's) */
	printf("threads: %ld\n", self_status("Threads: %ld"));
	CHECK(reclaim_self(16 * MIB) > 0, "nothing evicted");
	if (two) {
		close(pfd[1]);
		pthread_join(extra, NULL);
	}
	verify(m, npages, 17, "after the batch");
	if (!two)
		check_agent_cpus(m, npages);
	return failures ? 1 : 0;
}

/* Reads and writes pages at random while zswapd enforces a limit on us. */
static int t_hold(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	size_t npages = mib * MIB / PAGE, bad = 0;
	uint8_t *m = map_anon(npages * PAGE);
	uint64_t *shadow = calloc(npages, sizeof(*shadow)), x = 1, v = 0, touches = 0;
	bool grow = argc > 3 && strcmp(argv[3], "grow") == 0;
	bool hot_only = grow || (argc > 3 && strcmp(argv[3], "hot") == 0);
	bool locked = argc > 3 && strcmp(argv[3], "locked") == 0;
	bool forked = argc > 3 && strcmp(argv[3], "forked") == 0;
	bool idle = locked || forked || (argc > 3 && strcmp(argv[3], "idle") == 0);
	sigset_t usr1;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* Growing at 80 MiB/s, as a service loading its data does: what holds
	 * its cgroup under a limit has time to act between two looks. */
	for (size_t done = 0; done < npages; done += grow ? 1024 : npages) {
		size_t n = npages - done < 1024 || !grow ? npages - done : 1024;

		for (size_t i = 0; i < n; i++)
			fill_page(m + (done + i) * PAGE, 16, done + i);
		if (grow)
			usleep(50000);
	}
	/* The system call itself: AddressSanitizer's mlock() does nothing. */
	CHECK(!locked || syscall(SYS_mlock, m, npages * PAGE) == 0, "mlock: %s", strerror(errno));
	if (forked) {
		pid_t child = fork();

		CHECK(child >= 0, "fork: %s", strerror(errno));
		if (child == 0) {
			/* Copy-on-write sharer of every page until the parent goes. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0); /* the parent went before the line above */
			for (;;)
				pause();
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (!got_usr1) {
		size_t p;

		if (idle) {
			usleep(10000);
			continue;
		}
		x = mix64(x);
		/* Mostly the first quarter (hot), sometimes anywhere. */
		p = x % 8 || hot_only ? (x >> 8) % (npages / 4) : (x >> 8) % npages;
		if (x & 0x10000) {
			v++;
			memcpy(m + p * PAGE + 8, &v, 8);
			shadow[p] = v;
		} else {
			(void)*(volatile uint8_t *)(m + p * PAGE + 100);
		}
		if (++touches % 4096 == 0)
			usleep(1000); /* a working set, not a CPU hog */
	}
	for (size_t p = 0; p < npages; p++) {
		uint8_t want[PAGE];

		fill_page(want, 16, p);
		if (shadow[p])
			memcpy(want + 8, &shadow[p], 8);
		if (memcmp(m + p * PAGE, want, PAGE)) {
			if (bad < 5)
				fprintf(stderr, "hold: page %zu differs\n", p);
			bad++;
		}
	}
	printf("hold: %llu touches, %llu writes, %zu pages wrong\n", (unsigned long long)touches,
	       (unsigned long long)v, bad);
	CHECK(bad == 0, "%zu pages differ", bad);
	free(shadow);
	return failures ? 1 : 0;
}

static uint8_t *churn_area[2];
static atomic_bool churn_stop;

/* Touch and discard one region over and over: each MADV_DONTNEED of a
 * registered range is a REMOVE event, during which UFFDIO_COPY says EAGAIN. */
static void *churn_thread(void *arg)
{
	uint8_t *area = churn_area[(uintptr_t)arg];

	while (!atomic_load(&churn_stop)) {
		for (unsigned i = 0; i < 256; i++)
			area[i * PAGE] = (uint8_t)i;
		madvise(area, 256 * PAGE, MADV_DONTNEED);
	}
	return NULL;
}

static int t_churn(int argc, char **argv)
{
	size_t npages = 32 * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	long total = 0;
	pthread_t th[2];

	(void)argc;
	(void)argv;
	for (int i = 0; i < 2; i++) {
		churn_area[i] = map_anon(256 * PAGE);
		memset(churn_area[i], 1, 256 * PAGE);
	}
	fill(m, npages, 17);
	CHECK(reclaim_self(64 * MIB) > 0, "nothing evicted"); /* registers the churn area too */
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, churn_thread, (void *)(uintptr_t)i);
	for (int i = 0; i < 15; i++) {
		long n = reclaim_self(32 * MIB);

		total += n > 0 ? n : 0;
		verify(m, npages, 17, "under churn");
	}
	atomic_store(&churn_stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("churn: %ld pages evicted in 15 rounds while the mm kept changing\n", total);
	CHECK(total > 0, "nothing evicted under churn");
	return failures ? 1 : 0;
}

/*
 * Evicts MIB MiB, says "evicted", and on SIGUSR1 changes its memory the way
 * the kernel tells zswapd only by events: discards every fourth page of the
 * first half (MADV_DONTNEED) and moves the last quarter elsewhere (mremap).
 * The test has killed zswapd by then, and holds the next one back: the
 * madvise and the mremap wait for a zswapd to read their events.  Then
 * every page: discarded ones zero, moved ones right at their new place,
 * the rest right where they were.
 */
static int t_change_while_away(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	size_t npages = mib * MIB / PAGE, moved = npages / 4, kept = npages - moved;
	uint8_t *m = map_anon(npages * PAGE), *to;

	block_usr1();
	fill(m, npages, 23);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	evicted_then_wait();
	for (size_t i = 0; i < kept / 2; i += 4)
		madvise(m + i * PAGE, PAGE, MADV_DONTNEED);
	to = mremap(m + kept * PAGE, moved * PAGE, moved * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		    map_anon(moved * PAGE));
	CHECK(to != MAP_FAILED, "mremap failed");
	for (size_t i = 0; i < kept; i++) {
		if (i < kept / 2 && i % 4 == 0)
			CHECK(is_zero(m + i * PAGE, PAGE), "discarded page %zu not zero", i);
		else
			verify_at(m, i, 1, 23, "kept");
	}
	verify_at(to - kept * PAGE, kept, moved, 23, "moved");
	printf("changed while away: %zu pages checked\n", npages);
	return failures ? 1 : 0;
}

/*
 * The test SIGKILLs zswapd while this runs: writers in the first half,
 * a reclaim loop, and a fork every 100 ms whose child reads 256 pages of
 * the second half (which nobody writes) and exits.  Then SIGUSR1: stop and
 * read everything.  Every page must read as its data or end the process
 * loudly (an abort, or a SIGBUS in a child forked after the kill); a wrong
 * page, a child that read one, or a hang fails.
 */
static atomic_bool orphan_stop;

static void *orphan_reclaimer(void *arg)
{
	(void)arg;
	/* Until zswapd is gone: then each reclaim fails at once. */
	while (!atomic_load(&orphan_stop) && reclaim_self(16 * MIB) >= 0)
		;
	return NULL;
}

static void orphan_child(size_t npages)
{
	uint64_t x = (uint64_t)getpid();
	size_t half = npages / 2;

	for (int i = 0; i < 256; i++) {
		uint8_t want[PAGE];
		size_t p;

		x = mix64(x);
		p = half + x % (npages - half);
		fill_page(want, 21, p);
		CHECK(memcmp(tw_mem + p * PAGE, want, PAGE) == 0, "child: page %zu differs (%s)", p,
		      is_zero(tw_mem + p * PAGE, PAGE) ? "zeros" : "not zeros");
	}
	_exit(failures ? 1 : 0);
}

/* Counts a child that ended: exited 0, ended loudly by a signal (named,
 * for the test to look up in zswapd's log), or read a wrong page. */
static void orphan_reap(pid_t pid, int status, unsigned *ok, unsigned *loud, unsigned *bad)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		(*ok)++;
	} else if (WIFSIGNALED(status) &&
		   (WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT)) {
		(*loud)++;
		printf("loud child %d\n", (int)pid);
	} else {
		(*bad)++;
	}
}

/* What a run of orphan or chaos counted of its children. */
struct orphan_counts {
	unsigned forks, ok, loud, wrong;
	size_t bad; /* pages of the parent that read wrong */
};

/*
 * Writers in the first half of MIB MiB, the reclaimer thread given, and a
 * child forked every fork_ms reading the second half, until SIGUSR1; then
 * everything read back.
 */
static void orphan_run(size_t mib, void *(*reclaimer)(void *), unsigned fork_ms,
		       struct orphan_counts *n)
{
	size_t npages = mib * MIB / PAGE;
	pthread_t th[NWRITERS + 1];
	int status;
	pid_t c;

	signal(SIGUSR1, on_usr1);
	tw_npages = npages / 2;
	tw_mem = map_anon(npages * PAGE);
	tw_shadow = calloc(tw_npages * NWRITERS, sizeof(uint64_t));
	fill(tw_mem, npages, 21);
	for (unsigned t = 0; t < NWRITERS; t++)
		pthread_create(&th[t], NULL, tw_writer, (void *)(uintptr_t)t);
	pthread_create(&th[NWRITERS], NULL, reclaimer, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!got_usr1) {
		c = fork();
		if (c == 0)
			orphan_child(npages);
		n->forks += c > 0;
		usleep(fork_ms * 1000);
		while ((c = waitpid(-1, &status, WNOHANG)) > 0)
			orphan_reap(c, status, &n->ok, &n->loud, &n->wrong);
	}
	atomic_store(&tw_stop, true);
	atomic_store(&orphan_stop, true);
	for (unsigned t = 0; t <= NWRITERS; t++)
		pthread_join(th[t], NULL);
	while ((c = waitpid(-1, &status, 0)) > 0)
		orphan_reap(c, status, &n->ok, &n->loud, &n->wrong);
	for (size_t p = 0; p < npages; p++) {
		if (!tw_page_ok(p, 21)) {
			if (n->bad < 5)
				fprintf(stderr, "memtest: page %zu differs\n", p);
			n->bad++;
		}
	}
}

static int t_orphan(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	struct orphan_counts n = { 0 };

	orphan_run(mib, orphan_reclaimer, 100, &n);
	printf("orphan: %u children: %u read their pages, %u ended loudly, %u read a wrong page\n",
	       n.forks, n.ok, n.loud, n.wrong);
	CHECK(n.wrong == 0, "%u children read a wrong page", n.wrong);
	printf("orphan: %zu pages wrong\n", n.bad);
	CHECK(n.bad == 0, "%zu pages differ", n.bad);
	return failures ? 1 : 0;
}

/*
 * The same load for a zswapd that survives its death (survive_crash, under
 * a keeper): the test SIGKILLs it again and again, a new one takes over
 * each time.  The reclaimer goes on through each death (a request cut
 * short fails, the next waits for the new zswapd); children are forked
 * every CHAOS_FORK_MS (default 200).  After SIGUSR1 every page of parent
 * and children must read right, and nothing may have ended loudly: a
 * crash costs a wait, never a process.
 */
static atomic_ulong chaos_reclaims;

static void *chaos_reclaimer(void *arg)
{
	struct timespec ts = { 0, 20000000 };

	(void)arg;
	while (!atomic_load(&orphan_stop)) {
		if (reclaim_self(16 * MIB) < 0)
			nanosleep(&ts, NULL); /* zswapd died mid-request: the next one answers */
		else
			atomic_fetch_add(&chaos_reclaims, 1);
	}
	return NULL;
}

static int t_chaos(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	const char *env = getenv("CHAOS_FORK_MS");
	struct orphan_counts n = { 0 };

	orphan_run(mib, chaos_reclaimer, env ? (unsigned)strtoul(env, NULL, 10) : 200, &n);
	printf("chaos: %u children: %u read their pages, %u ended loudly, %u read a wrong page; "
	       "%lu reclaims; %zu of %zu pages wrong\n",
	       n.forks, n.ok, n.loud, n.wrong, atomic_load(&chaos_reclaims), n.bad, mib * MIB / PAGE);
	/* CHAOS_LOUD_OK: the caller counts loud ends itself (a sanitizer's own failures). */
	CHECK(n.wrong == 0 && (n.loud == 0 || getenv("CHAOS_LOUD_OK")),
	      "%u children read a wrong page, %u ended loudly", n.wrong, n.loud);
	CHECK(n.bad == 0, "%zu pages differ", n.bad);
	return failures ? 1 : 0;
}

/*
 * A child forked while it cannot reach zswapd (the test moved the socket
 * away): it never gets the copy of its uffd that zswapd hands a child it
 * pairs with, so zswapd holds the only one, and had zswapd died then, the
 * kernel would have dropped the child's registrations: its inherited
 * evicted pages would read as zeros.  Says "evicted", waits for a line on
 * stdin, forks ("forked"); the child says "child: PID", waits for another
 * line (zswapd is killed meanwhile), then reads every page; the parent says
 * how the child ended ("child: exit N" or "child: signal N").  Also with
 * childhold.so, which holds the child's shim at one point of its
 * registration.
 */
static int t_fork_unclaimed(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	char line[16];
	int status = 0;
	pid_t c;

	fill(m, npages, 23);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	printf("evicted\n");
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	c = fork();
	if (c == 0) {
		printf("child: %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			_exit(2);
		verify(m, npages, 23, "child");
		_exit(failures ? 1 : 0);
	}
	printf("forked\n");
	CHECK(c > 0 && waitpid(c, &status, 0) == c, "fork or wait failed");
	if (WIFSIGNALED(status))
		printf("child: signal %d\n", WTERMSIG(status));
	else
		printf("child: exit %d\n", WEXITSTATUS(status));
	/* Not exit(): zswapd may be dead, and LeakSanitizer's check at exit
	 * stops our threads, the watcher too, with ptrace and reads every
	 * page we map from a task that shares our mm; a page of a registered
	 * chunk we never touched then faults to a watcher that cannot run. */
	fflush(stdout);
	_exit(failures ? 1 : 0);
}

/*
 * Reads evicted memory in address order, then in random order, then
 * overwrites it in address order, each time after a reclaim of all of it,
 * and checks every byte: what prefetch brings back ahead of the faults
 * must be what was there, and a page written right after it was brought
 * back must keep the write.  Says "scan: PHASE" before each, and waits for
 * a line on stdin after each, so that the test reads zswapd's counters
 * per phase.
 */
static void scan_phase(const char *phase)
{
	char line[16];

	printf("scan: %s done\n", phase);
	if (!fgets(line, sizeof(line), stdin))
		exit(2);
}

/* Whether page i of the scan's memory is its fill, with its first half 0xa5 once written. */
static bool scan_page_ok(const uint8_t *m, size_t i, bool written)
{
	uint8_t want[PAGE];

	fill_page(want, 22, i);
	if (written)
		memset(want, 0xa5, PAGE / 2);
	return memcmp(m + i * PAGE, want, PAGE) == 0;
}

static int t_scan(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);
	size_t *order = malloc(npages * sizeof(*order));
	uint64_t x = 5;

	fill(m, npages, 22);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	verify(m, npages, 22, "in order");
	scan_phase("sequential");
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	for (size_t i = 0; i < npages; i++) /* half a page each: the rest must stay */
		memset(m + i * PAGE, 0xa5, PAGE / 2);
	for (size_t i = 0; i < npages && failures <= 5; i++)
		CHECK(scan_page_ok(m, i, true), "written: page %zu differs", i);
	scan_phase("written");
	/* Last: the windows a random pattern may open and leave turn
	 * prefetch off for a while, which would skew a phase after it. */
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	for (size_t i = 0; i < npages; i++)
		order[i] = i;
	for (size_t i = npages - 1; i > 0; i--) {
		size_t j, t;

		x = mix64(x);
		j = x % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < npages && failures <= 5; i++)
		CHECK(scan_page_ok(m, order[i], true), "in random order: page %zu differs", order[i]);
	scan_phase("random");
	free(order);
	return failures ? 1 : 0;
}

/*
 * Evicts MIB and waits for SIGUSR1; then discards every other page: each
 * slab of the pool is left half used, which compaction should give back
 * while we wait for SIGUSR1 again.  Then the pages kept are checked, the
 * discarded ones read zeros.
 */
static int t_fragment(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);

	block_usr1();
	fill(m, npages, 16);
	CHECK(reclaim_self(mib * MIB) > 0, "nothing evicted");
	evicted_then_wait();
	for (size_t i = 0; i < npages; i += 2)
		CHECK(madvise(m + i * PAGE, PAGE, MADV_DONTNEED) == 0, "madvise");
	printf("fragmented\n");
	fflush(stdout);
	wait_usr1();
	for (size_t i = 0; i < npages && failures <= 5; i += 2) {
		CHECK(is_zero(m + i * PAGE, PAGE), "discarded page %zu not zero", i);
		verify_at(m, i + 1, 1, 16, "kept beside the discarded");
	}
	return failures ? 1 : 0;
}

static int t_plain(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	size_t npages = mib * MIB / PAGE;
	uint8_t *m = map_anon(npages * PAGE);

	fill(m, npages, 15);
	verify(m, npages, 15, "plain");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} tests[] = {
		{ "basic", t_basic },	  { "threads", t_threads },
		{ "fork", t_fork },	  { "discard", t_discard },
		{ "discard_agent", t_discard_agent }, { "sigbus", t_sigbus },
		{ "mremap", t_mremap },	  { "kernel", t_kernel },
		{ "exec", t_exec },	  { "wait-signal", t_wait_signal },
		{ "evict-then-touch", t_wait_signal }, { "plain", t_plain },
		{ "fork-then-touch", t_wait_signal }, { "fork-wait", t_fork_wait },
		{ "fork_reclaim", t_fork_reclaim }, { "fork_orphan", t_fork_orphan },
		{ "fork_exclusive", t_fork_exclusive }, { "discard_stuck", t_discard_stuck },
		{ "hold", t_hold },	  { "churn", t_churn },
		{ "mremap_race", t_mremap_race }, { "follow", t_follow },
		{ "orphan", t_orphan },	  { "scan", t_scan },
		{ "chaos", t_chaos }, { "change-while-away", t_change_while_away },
		{ "fork-unclaimed", t_fork_unclaimed }, { "fragment", t_fragment },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: memtest SCENARIO [ARGS]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (strcmp(argv[1], tests[i].name) == 0)
			return tests[i].fn(argc, argv);
	fprintf(stderr, "memtest: unknown scenario %s\n", argv[1]);
	return 2;
}
