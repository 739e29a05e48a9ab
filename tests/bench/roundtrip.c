// SPDX-License-Identifier: GPL-2.0-only
/*
 * roundtrip - the floor under a zswapd load: a page fault served by another
 * process through userfaultfd, with nothing to do but copy a ready page in.
 *
 *   roundtrip MIB [ROUNDS]
 *
 * Fills MIB of anonymous memory with micro's page mix, forks a server that
 * keeps a copy of it, registers the memory with a userfaultfd (missing
 * pages) and drops it; then ROUNDS times touches every page in random order
 * and times each touch, as micro does.  The server reads each fault and
 * answers it with UFFDIO_COPY of its own copy of the page: no lookup, no
 * decompression, no bookkeeping.  It waits for the next fault as zswapd
 * does in a burst of faults, only more eagerly: a non-blocking read of the
 * uffd, sched_yield() between two, never a sleep (fault_spin_usec), and
 * idle CPUs held polling by a CPU latency request of 0 for the whole run
 * (fault_idle_poll_ms).
 * So a zswapd load's time over this one is what zswapd adds: its event
 * loop, the index, decompression, its counters.  What this one costs over
 * a kernel zswap load (micro's kernel row, in the same run) is the price of
 * the round trip itself, which no userfaultfd server can go under.
 * Then verifies every byte (exit 1 on a wrong one) and prints one JSON
 * object on stdout: the loads' mean, p50, p90, p99, and the server's time
 * per load from its read of the fault to the copy's return, and of that
 * the UFFDIO_COPY (which wakes the faulting thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "loads.h"

/* Shared between the app and its server (MAP_SHARED before the fork). */
struct shared {
	volatile int stop;
	volatile int failed; /* errno of a copy that failed, or 0 */
	volatile uint64_t faults, served_ns, copy_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Answers one fault with the server's own copy of the page, at the same address. */
static void serve(int uffd, const struct uffd_msg *msg, struct shared *sh, uint64_t t0)
{
	uint64_t addr = msg->arg.pagefault.address & ~(uint64_t)(PAGE - 1), t1, t2;
	struct uffdio_copy copy = { .dst = addr, .src = addr, .len = PAGE };

	t1 = now_ns();
	if (ioctl(uffd, UFFDIO_COPY, &copy) < 0 && errno != EEXIST && !sh->failed)
		sh->failed = errno;
	t2 = now_ns();
	sh->faults++;
	sh->served_ns += t2 - t0;
	sh->copy_ns += t2 - t1;
}

static void server(int uffd, struct shared *sh, pid_t app)
{
	struct uffd_msg msgs[32];

	/* A spinner must not outlive the app it serves (a benchmark killed). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != app)
		_exit(1);

	while (!sh->stop) {
		ssize_t n = read(uffd, msgs, sizeof(msgs));
		uint64_t t0 = now_ns();

		if (n < 0) {
			if (errno != EAGAIN)
				break;
			sched_yield();
			continue;
		}
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++)
			if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
				serve(uffd, &msgs[i], sh, t0);
	}
	_exit(0);
}

/* Holds idle CPUs polling while open (the kernel's CPU latency QoS). */
static int hold_idle_polling(void)
{
	int32_t zero = 0;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int rounds = argc > 2 ? atoi(argv[2]) : 3, qos = -1, status = 0;
	size_t npages = mib * 1024 * 1024 / PAGE, nlat = 0, bad = 0, *order;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct shared *sh;
	uint8_t *m;
	double *lat;
	pid_t pid, app = getpid();
	int uffd;

	m = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lat = malloc(npages * (size_t)rounds * sizeof(*lat));
	order = malloc(npages * sizeof(*order));
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (m == MAP_FAILED || sh == MAP_FAILED || !lat || !order || uffd < 0 ||
	    ioctl(uffd, UFFDIO_API, &api) < 0) {
		perror("roundtrip: setup");
		return 2;
	}
	for (size_t i = 0; i < npages; i++) {
		fill_page(m + i * PAGE, i);
		order[i] = i;
	}
	/* The server's copy of the pages is its own, from the fork: registered
	 * after it, the range faults to the server in this process only. */
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		server(uffd, sh, app);
	reg.range.start = (uint64_t)(uintptr_t)m;
	reg.range.len = npages * PAGE;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		perror("roundtrip: UFFDIO_REGISTER");
		kill(pid, SIGKILL);
		return 2;
	}
	/* The server's is the only copy now: should it die, the registration
	 * goes with it, and our touches read zeros (counted as wrong below)
	 * instead of waiting for ever on a uffd nobody reads. */
	close(uffd);
	qos = hold_idle_polling();
	for (int r = 0; r < rounds; r++) {
		madvise(m, npages * PAGE, MADV_DONTNEED);
		shuffle_order(order, npages, r);
		touch_timed(m, order, npages, lat + nlat);
		nlat += npages;
	}
	if (qos >= 0)
		close(qos);
	bad = count_wrong_pages(m, npages);
	sh->stop = 1;
	waitpid(pid, &status, 0);
	if (sh->failed)
		fprintf(stderr, "roundtrip: UFFDIO_COPY: %s\n", strerror(sh->failed));
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	{
		double sum = 0;
		uint64_t f = sh->faults ? sh->faults : 1;

		for (size_t i = 0; i < nlat; i++)
			sum += lat[i];
		printf("{\"mib\":%zu,\"rounds\":%d,\"idle_polling\":%s,\"loads\":%zu,"
		       "\"faults_served\":%llu,\"load_us_mean\":%.2f,\"load_us_p50\":%.2f,"
		       "\"load_us_p90\":%.2f,\"load_us_p99\":%.2f,\"server_us_per_load\":%.2f,"
		       "\"copy_us_per_load\":%.2f,\"bad_pages\":%zu}\n",
		       mib, rounds, qos >= 0 ? "true" : "false", nlat,
		       (unsigned long long)sh->faults, nlat ? sum / (double)nlat : 0,
		       nlat ? lat[nlat / 2] : 0, nlat ? lat[nlat * 9 / 10] : 0,
		       nlat ? lat[nlat * 99 / 100] : 0, (double)sh->served_ns / 1e3 / (double)f,
		       (double)sh->copy_ns / 1e3 / (double)f, bad);
	}
	return bad || sh->failed ? 1 : 0;
}
