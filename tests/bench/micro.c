// SPDX-License-Identifier: GPL-2.0-only
/*
 * micro - per-page store and load cost of zswapd, measured from inside a
 * process that runs under the shim.
 *
 *   micro MIB [ROUNDS [recompressed|kernel]]
 *
 * Fills MIB of anonymous memory with the same page mix as the integration
 * tests (zero, same-filled, text, structs, random), then ROUNDS times:
 *   store: asks zswapd to evict all of it (ZS_RECLAIM for itself) and times
 *          the whole request: scan + write-protect + agent copy and drop +
 *          compress + index, divided by the pages evicted;
 *   load:  touches the pages one by one in random order and times each
 *          touch that faults (fault round trip + decompress + UFFDIO_COPY),
 *          reporting mean, p50, p90, p99.
 * recompressed: after each store, waits until zswapd's recompressor
 * (recomp.c; start it with a short recompress_seconds) has been through
 * the pool, so that the pool size and the loads are those of recompressed
 * entries.
 * kernel: no zswapd; before each round's loads it says "micro: push out"
 * on stderr and waits for a line on stdin, while the benchmark pushes its
 * memory out to kernel swap or zswap (a memory cgroup's limit forced down,
 * then lifted): the loads are then the kernel's, measured the same way, in
 * the same run.  No store figure then.
 * Where a load's time goes: zswapd's counters over the loads give, per
 * load, the time from its read of the fault to the wake (fault_stall_usec),
 * and of that the decompression and the UFFDIO_COPY; the rest of the
 * touch is the kernel's (the fault's delivery, the wake-ups, the return).
 * Then verifies every byte, so a fast but wrong run fails (exit 1).
 * Prints one JSON object on stdout.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "zswap_proto.h"

#include "loads.h"

static long reclaim_self(uint64_t bytes)
{
	struct {
		struct zs_hdr h;
		struct zs_reclaim r;
	} req = { .h = { ZS_MAGIC, ZS_VERSION, ZS_RECLAIM, sizeof(struct zs_reclaim), 1 },
		  .r = { .pid = (uint32_t)getpid(), .bytes = bytes } };
	static uint8_t rep[ZS_MSG_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv(ZSWAP_SOCKET_ENV);
	struct zs_reclaim_reply r;
	struct zs_hdr h;
	long pages = -1;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path && *path ? path : ZSWAP_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) == sizeof(req) &&
	    recv(fd, rep, sizeof(rep), 0) >= (ssize_t)(sizeof(h) + sizeof(r))) {
		memcpy(&h, rep, sizeof(h));
		memcpy(&r, rep + sizeof(h), sizeof(r));
		if (h.type == ZS_RECLAIM_REPLY)
			pages = (long)r.evicted_pages;
	}
	close(fd);
	return pages;
}

/* One counter from ZS_STATS, or -1. */
static long long stat_of(const char *name)
{
	struct zs_hdr req = { ZS_MAGIC, ZS_VERSION, ZS_STATS, 0, 2 }, h;
	static uint8_t rep[ZS_MSG_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv(ZSWAP_SOCKET_ENV);
	long long v = -1;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path && *path ? path : ZSWAP_DEFAULT_SOCKET);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) == sizeof(req) &&
	    (n = recv(fd, rep, sizeof(rep), 0)) > (ssize_t)sizeof(h)) {
		for (size_t off = sizeof(h); off + sizeof(struct zs_stat) <= (size_t)n;
		     off += sizeof(struct zs_stat)) {
			struct zs_stat st;

			memcpy(&st, rep + off, sizeof(st));
			if (strcmp(st.name, name) == 0)
				v = (long long)st.value;
		}
	}
	close(fd);
	return v;
}

/* Until recompressed_pages has stood still for a second after growing; false after 10 minutes. */
static bool wait_recompressed(void)
{
	long long last = stat_of("recompressed_pages"), now;
	int still = 0, grew = 0;

	for (int i = 0; i < 2400 && (still < 4 || !grew); i++, last = now) {
		usleep(250000);
		now = stat_of("recompressed_pages");
		grew |= now > last;
		still = now == last ? still + 1 : 0;
	}
	return grew && still >= 4;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	bool recompressed = argc > 3 && strcmp(argv[3], "recompressed") == 0;
	bool kernel = argc > 3 && strcmp(argv[3], "kernel") == 0;
	size_t npages = mib * 1024 * 1024 / PAGE, nlat = 0, bad = 0;
	double store_us = 0, pool_per_page = 0, *lat;
	/* zswapd's counters over the load phases: loads, stall us, decompress and map ns */
	long long phase[4] = { 0 };
	static const char *const phase_stat[4] = { "loads", "fault_stall_usec",
						   "load_decompress_nsec", "load_map_nsec" };
	long stored = 0;
	uint8_t *m;
	size_t *order;

	m = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	lat = malloc(npages * rounds * sizeof(*lat));
	order = malloc(npages * sizeof(*order));
	if (m == MAP_FAILED || !lat || !order)
		return 2;
	for (size_t i = 0; i < npages; i++) {
		fill_page(m + i * PAGE, i);
		order[i] = i;
	}
	for (int r = 0; r < rounds; r++) {
		double t0 = now_us();
		long n;

		if (kernel) {
			char line[16];

			fprintf(stderr, "micro: push out\n");
			if (!fgets(line, sizeof(line), stdin))
				return 2;
			n = (long)npages;
			t0 = now_us();
		} else {
			n = reclaim_self(npages * PAGE);
		}
		store_us += now_us() - t0;
		if (n <= 0) {
			fprintf(stderr, "micro: reclaim evicted nothing (is zswapd running, shim loaded?)\n");
			return 1;
		}
		stored += n;
		if (recompressed && !wait_recompressed()) {
			fprintf(stderr, "micro: nothing recompressed (recompress_seconds, recompressor?)\n");
			return 1;
		}
		if (r == 0 && !kernel) {
			long long pool = stat_of("pool_total_size"), pages = stat_of("stored_pages");

			pool_per_page = pages > 0 ? (double)pool / (double)pages : 0;
		}
		shuffle_order(order, npages, r);
		for (int k = 0; k < 4 && !kernel; k++)
			phase[k] -= stat_of(phase_stat[k]);
		touch_timed(m, order, npages, lat + nlat);
		nlat += npages;
		for (int k = 0; k < 4 && !kernel; k++)
			phase[k] += stat_of(phase_stat[k]);
	}
	bad = count_wrong_pages(m, npages);
	/* Touches of pages that stayed resident (refused, or the page table's
	 * own zero page) cost well under a microsecond: keep only the faults. */
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	{
		size_t first = 0, nf;
		double sum = 0;

		while (first < nlat && lat[first] < 1.0)
			first++;
		nf = nlat - first;
		for (size_t i = first; i < nlat; i++)
			sum += lat[i];
		printf("{\"mib\":%zu,\"rounds\":%d,\"pages_stored\":%ld,\"store_us_per_page\":%.2f,"
		       "\"loads\":%zu,\"load_us_mean\":%.2f,\"load_us_p50\":%.2f,\"load_us_p90\":%.2f,"
		       "\"load_us_p99\":%.2f,\"pool_bytes_per_stored_page\":%.0f,\"bad_pages\":%zu,"
		       "\"zswapd_us_per_load\":%.2f,\"decompress_us_per_load\":%.2f,"
		       "\"map_us_per_load\":%.2f}\n",
		       mib, rounds, stored, store_us / (double)stored, nf, nf ? sum / nf : 0,
		       nf ? lat[first + nf / 2] : 0, nf ? lat[first + nf * 9 / 10] : 0,
		       nf ? lat[first + nf * 99 / 100] : 0, pool_per_page, bad,
		       phase[0] > 0 ? (double)phase[1] / (double)phase[0] : 0,
		       phase[0] > 0 ? (double)phase[2] / 1e3 / (double)phase[0] : 0,
		       phase[0] > 0 ? (double)phase[3] / 1e3 / (double)phase[0] : 0);
	}
	return bad ? 1 : 0;
}
