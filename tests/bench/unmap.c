// SPDX-License-Identifier: GPL-2.0-only
/*
 * unmap - what taking a page out of a process costs, per page, through each
 * interface the kernel gives userspace: the floor under zswapd's eviction.
 *
 *   unmap [PAGES [ROUNDS]]
 *
 * Takes every 4th of PAGES resident pages out (scattered, as the cold pages
 * of a hot/cold mix are), ROUNDS times, each way:
 *   move1      UFFDIO_MOVE of one page per ioctl (the agent, for 1-page runs)
 *   move8      UFFDIO_MOVE of 8 contiguous pages per ioctl (every 8 of 32)
 *   wp1        UFFDIO_WRITEPROTECT of one page (zswapd's lock before a copy)
 *   dontneed1  madvise(MADV_DONTNEED) of one page
 *   pmadvise   process_madvise(MADV_DONTNEED) of 512 single pages per call
 *   pmadvise_uffd  the same on memory registered with a uffd that reports
 *              REMOVE events (as zswapd's must: hazard 4 in
 *              docs/design.md), read by another thread of this process as
 *              fast as it can
 * each with this process's other thread idle, then spinning on another CPU:
 * a page taken out must then leave that CPU's TLB too, by IPI (in a VM a
 * hypercall).  The kernel's own reclaim batches that flush over many pages;
 * of these, only process_madvise can, and REMOVE events cost it the batch.
 * Checks that every page taken out is gone and every moved one arrived
 * intact (exit 1 otherwise).  Prints one JSON object on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "../../common/compat.h"
#include "benchtime.h"

#define PG 4096UL
#define STRIDE 4      /* one page in four is taken out */
#define PMADV_VEC 512 /* pages per process_madvise call (IOV_MAX is 1024) */

static volatile int spin_stop;
static volatile int reader_stop;
static int uffd_events = -1; /* the uffd whose REMOVE events the reader drains */

static void pin_to(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* The app's other thread, running on CPU 1: the mm stays live there. */
static void *spinner(void *arg)
{
	volatile uint64_t *p = arg;

	pin_to(1);
	while (!spin_stop)
		p[0]++;
	return NULL;
}

/* The daemon's part for REMOVE events: read each as soon as it comes. */
static void *reader(void *arg)
{
	struct pollfd pfd = { .fd = uffd_events, .events = POLLIN };
	struct uffd_msg msg;

	(void)arg;
	while (!reader_stop) {
		if (poll(&pfd, 1, 10) > 0)
			(void)!read(uffd_events, &msg, sizeof(msg));
	}
	return NULL;
}

static int new_uffd(uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) < 0) {
		perror("userfaultfd");
		exit(1);
	}
	return fd;
}

static void uffd_register(int fd, void *p, size_t len, uint64_t mode)
{
	struct uffdio_register reg = { .range = { (uint64_t)(uintptr_t)p, len }, .mode = mode };

	if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
		perror("UFFDIO_REGISTER");
		exit(1);
	}
}

static uint8_t *map_pages(size_t pages)
{
	void *p = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	/* 4 KiB pages, as zswapd's targets have where it evicts. */
	madvise(p, pages * PG, MADV_NOHUGEPAGE);
	return p;
}

static void fill(uint8_t *p, size_t pages, uint32_t round)
{
	for (size_t i = 0; i < pages; i++)
		memset(p + i * PG, (int)((i * 7 + round) & 0xff) | 1, PG);
}

static bool resident(const uint8_t *p)
{
	unsigned char vec = 0;

	return mincore((void *)p, PG, &vec) == 0 && (vec & 1);
}

/* Each taken page gone from src; with dst, arrived there with its bytes. */
static bool check(const uint8_t *src, const uint8_t *dst, size_t pages, uint32_t round,
		  size_t run, size_t stride)
{
	for (size_t i = 0; i < pages; i += stride) {
		for (size_t k = 0; k < run; k++) {
			size_t pg = i + k;
			int want = (int)((pg * 7 + round) & 0xff) | 1;

			if (resident(src + pg * PG))
				return false;
			/* A missing page of dst would be a fault nobody serves. */
			if (dst && !resident(dst + pg * PG))
				return false;
			if (dst && (dst[pg * PG] != want || dst[pg * PG + PG - 1] != want))
				return false;
		}
	}
	return true;
}

enum way { MOVE1, MOVE8, WP1, DONTNEED1, PMADVISE, PMADVISE_UFFD, NWAYS };
static const char *const way_name[NWAYS] = { "move1", "move8", "wp1", "dontneed1", "pmadvise",
					     "pmadvise_uffd" };

/* Takes the pages out one way; returns µs per page taken, or -1 if wrong. */
static double take_out(enum way w, size_t pages, uint32_t round)
{
	uint8_t *src = map_pages(pages), *dst = NULL;
	size_t run = w == MOVE8 ? 8 : 1, stride = w == MOVE8 ? 32 : STRIDE, taken = 0;
	int fd = -1, pidfd = -1;
	pthread_t rd;
	bool ok = true;
	double t0, t1;

	/* Before any registration: a MISSING-registered range would trap it. */
	fill(src, pages, round);
	if (w == MOVE1 || w == MOVE8) {
		fd = new_uffd(UFFD_FEATURE_MOVE);
		dst = map_pages(pages);
		uffd_register(fd, dst, pages * PG, UFFDIO_REGISTER_MODE_MISSING);
	} else if (w == WP1) {
		fd = new_uffd(0);
		uffd_register(fd, src, pages * PG, UFFDIO_REGISTER_MODE_WP);
	} else if (w == PMADVISE_UFFD) {
		fd = uffd_events = new_uffd(UFFD_FEATURE_EVENT_REMOVE);
		uffd_register(fd, src, pages * PG, UFFDIO_REGISTER_MODE_MISSING);
		reader_stop = 0;
		pthread_create(&rd, NULL, reader, NULL);
	}
	if (w == PMADVISE || w == PMADVISE_UFFD)
		pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	t0 = now_us();
	if (w == PMADVISE || w == PMADVISE_UFFD) {
		struct iovec iov[PMADV_VEC];
		int n = 0;

		for (size_t i = 0; i < pages; i += stride) {
			iov[n].iov_base = src + i * PG;
			iov[n++].iov_len = PG;
			if (n == PMADV_VEC || i + stride >= pages) {
				if (syscall(SYS_process_madvise, pidfd, iov, n, MADV_DONTNEED, 0) < 0) {
					perror("process_madvise");
					exit(1);
				}
				taken += (size_t)n;
				n = 0;
			}
		}
	} else {
		for (size_t i = 0; i < pages; i += stride) {
			uint64_t addr = (uint64_t)(uintptr_t)(src + i * PG);
			int r = 0;

			if (w == MOVE1 || w == MOVE8) {
				struct uffdio_move mv = { .dst = (uint64_t)(uintptr_t)(dst + i * PG),
							  .src = addr, .len = run * PG };

				r = ioctl(fd, UFFDIO_MOVE, &mv);
			} else if (w == WP1) {
				struct uffdio_writeprotect wp = { .range = { addr, PG },
								  .mode = UFFDIO_WRITEPROTECT_MODE_WP };

				r = ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
			} else {
				r = madvise(src + i * PG, PG, MADV_DONTNEED);
			}
			if (r < 0) {
				perror(way_name[w]);
				exit(1);
			}
			taken += run;
		}
	}
	t1 = now_us();

	/* Write-protected pages stay: the check is for the ways that drop. */
	if (w != WP1)
		ok = check(src, dst, pages, round, run, stride);
	if (w == PMADVISE_UFFD) {
		reader_stop = 1;
		pthread_join(rd, NULL);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (fd >= 0)
		close(fd);
	munmap(src, pages * PG);
	if (dst)
		munmap(dst, pages * PG);
	return ok ? (t1 - t0) / (double)taken : -1;
}

int main(int argc, char **argv)
{
	size_t pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 16384;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	uint64_t *spin_word = calloc(8, sizeof(uint64_t));
	double us[64];
	int failed = 0;

	if (pages < 1024 || rounds < 1 || rounds > 64 || !spin_word) {
		fprintf(stderr, "usage: %s [PAGES >= 1024 [ROUNDS 1-64]]\n", argv[0]);
		return 2;
	}
	pages &= ~(size_t)31;
	pin_to(0);
	printf("{\"pages\": %zu, \"rounds\": %d, \"cpus\": %ld", pages, rounds,
	       sysconf(_SC_NPROCESSORS_ONLN));
	for (int busy = 0; busy <= 1; busy++) {
		pthread_t sp;

		if (busy) {
			spin_stop = 0;
			pthread_create(&sp, NULL, spinner, spin_word);
			usleep(20000);
		}
		for (enum way w = 0; w < NWAYS; w++) {
			for (int r = 0; r < rounds; r++) {
				us[r] = take_out(w, pages, (uint32_t)r);
				if (us[r] < 0) {
					fprintf(stderr, "unmap: %s left a page behind or lost one\n",
						way_name[w]);
					failed = 1;
				}
			}
			qsort(us, (size_t)rounds, sizeof(us[0]), cmp_double);
			printf(", \"%s_%s\": %.2f", way_name[w], busy ? "busy" : "idle",
			       us[rounds / 2]);
		}
		if (busy) {
			spin_stop = 1;
			pthread_join(sp, NULL);
		}
	}
	printf("}\n");
	free(spin_word);
	return failed;
}
