// SPDX-License-Identifier: GPL-2.0-only
/*
 * mcload - the client of the memcached benchmark (tests/bench/run.sh
 * memcached), in the manner of mc-crusher: a few connections, each one
 * request at a time, as fast as the server answers; every value that comes
 * back is checked.
 *
 *   mcload fill SOCK KEYS                    set key:%012d for 0 <= n < KEYS
 *   mcload run SOCK KEYS SECONDS CONNS SETPCT  CONNS threads, one connection
 *                                            each: a GET of a uniformly random
 *                                            key, or (SETPCT % of requests) a
 *                                            SET of it to its own value again;
 *                                            JSON figures on stdout
 *   mcload check SOCK KEYS                   read every key back
 *
 * SOCK is memcached's unix socket (memcached -s).  Each value is 1000 bytes
 * made from n alone: a JSON-like header with ids and numbers, then a slice
 * of a fixed word salad (place names, order words, hex ids) that lzo packs
 * to a little over half, like an application cache's (the redis benchmark's
 * values are built the same way).  A SET writes a key's own value, so that
 * every GET and the final check know what each key must hold.  Exit 1 if
 * any value read was wrong or missing (a miss: memcached evicted or lost
 * it), 2 on a usage or connection error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "benchtime.h"
#include "pagemix.h" /* mix64() */

#define VALUE_LEN 1000
#define CORPUS_LEN (1u << 20)
#define LAT_BUCKETS 100000 /* microseconds: a GET slower than 100 ms counts as 100 ms */
#define CHECK_BATCH 100	   /* keys per multi-get of the check */

static char *corpus;

/* 1 MiB of word salad, the same on every run: values are slices of it. */
static void corpus_make(void)
{
	static const char *const words[] = {
		"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
		"amber", "basalt", "cobalt", "dune", "ember", "fjord", "granite", "harbor",
		"order", "invoice", "customer", "shipped", "pending", "refunded", "warehouse",
		"berlin", "lisbon", "osaka", "toronto", "nairobi", "denver", "quito", "madrid",
	};
	const size_t nwords = sizeof(words) / sizeof(words[0]);
	size_t len = 0;
	uint64_t x = 12345;

	corpus = malloc(CORPUS_LEN + VALUE_LEN + 32);
	if (!corpus)
		exit(2);
	while (len < CORPUS_LEN + VALUE_LEN) {
		x = mix64(x + 1);
		if (x % 5)
			len += (size_t)sprintf(corpus + len, "%s ", words[(x >> 8) % nwords]);
		else
			len += (size_t)sprintf(corpus + len, "%llx ", (unsigned long long)((x >> 8) % 1000000000));
	}
}

/* Key n's value into v (VALUE_LEN bytes). */
static void value_of(uint64_t n, char *v)
{
	int head = snprintf(v, VALUE_LEN, "{\"id\":%llu,\"user\":\"user%06llu\",\"score\":0.%06llu,\"note\":\"",
			    (unsigned long long)n, (unsigned long long)(n * 7919 % 1000000),
			    (unsigned long long)(n * 104729 % 1000000));
	size_t off = (size_t)(n * 2654435761u % CORPUS_LEN);

	memcpy(v + head, corpus + off, VALUE_LEN - 2 - (size_t)head);
	memcpy(v + VALUE_LEN - 2, "\"}", 2);
}

struct conn {
	int fd;
	char buf[65536];
	size_t start, end; /* unread bytes of buf */
};

static int conn_open(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c->start = c->end = 0;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(c->fd);
		return r;
	}
	return 0;
}

static int conn_write(struct conn *c, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(c->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Makes at least want bytes readable at buf + start. */
static int conn_fill(struct conn *c, size_t want)
{
	if (c->end - c->start >= want)
		return 0;
	if (want > sizeof(c->buf))
		return -E2BIG;
	memmove(c->buf, c->buf + c->start, c->end - c->start);
	c->end -= c->start;
	c->start = 0;
	while (c->end < want) {
		ssize_t n = read(c->fd, c->buf + c->end, sizeof(c->buf) - c->end);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		c->end += (size_t)n;
	}
	return 0;
}

/* The next line, without its "\r\n", NUL-terminated in place. */
static char *conn_line(struct conn *c)
{
	for (size_t scanned = 0;;) {
		char *nl = memchr(c->buf + c->start + scanned, '\n', c->end - c->start - scanned);

		if (nl) {
			char *line = c->buf + c->start;

			*nl = '\0';
			if (nl > line && nl[-1] == '\r')
				nl[-1] = '\0';
			c->start = (size_t)(nl + 1 - c->buf);
			return line;
		}
		scanned = c->end - c->start;
		if (conn_fill(c, scanned + 1) < 0)
			return NULL;
	}
}

static int set_send(struct conn *c, uint64_t n, char *v)
{
	char head[64];
	int len = snprintf(head, sizeof(head), "set key:%012llu 0 0 %d\r\n", (unsigned long long)n,
			   VALUE_LEN);

	value_of(n, v);
	memcpy(v + VALUE_LEN, "\r\n", 2);
	if (conn_write(c, head, (size_t)len) < 0)
		return -EIO;
	return conn_write(c, v, VALUE_LEN + 2);
}

static int set_reply(struct conn *c)
{
	char *line = conn_line(c);

	return line && strcmp(line, "STORED") == 0 ? 0 : -EIO;
}

/*
 * Reads one "VALUE key flags bytes" block or the "END" after the last:
 * 1 with *n set and the value compared with key n's (*wrong if not), 0 at
 * END, -EIO on anything else.
 */
static int get_reply(struct conn *c, uint64_t *n, bool *wrong, char *want)
{
	unsigned long long key, flags, bytes;
	char *line = conn_line(c);

	if (!line)
		return -EIO;
	if (strcmp(line, "END") == 0)
		return 0;
	if (sscanf(line, "VALUE key:%llu %llu %llu", &key, &flags, &bytes) != 3 ||
	    conn_fill(c, bytes + 2) < 0)
		return -EIO;
	value_of(key, want);
	*n = key;
	*wrong = bytes != VALUE_LEN || memcmp(c->buf + c->start, want, VALUE_LEN) != 0;
	c->start += bytes + 2;
	return 1;
}

static int mc_fill(const char *path, uint64_t keys)
{
	char v[VALUE_LEN + 2];
	struct conn *c = malloc(sizeof(*c));
	uint64_t sent = 0, got = 0;

	if (!c || conn_open(c, path) < 0)
		return 2;
	/* Pipelined: up to 64 sets ahead of their replies. */
	while (got < keys) {
		while (sent < keys && sent - got < 64)
			if (set_send(c, sent++, v) < 0)
				return 2;
		if (set_reply(c) < 0) {
			fprintf(stderr, "mcload: set of key %llu failed\n", (unsigned long long)got);
			return 2;
		}
		got++;
	}
	close(c->fd);
	free(c);
	return 0;
}

struct runner {
	pthread_t th;
	const char *path;
	uint64_t keys, seed;
	unsigned set_pct;
	double until;
	uint64_t gets, sets, wrong, missing;
	int err;
	uint32_t *lat; /* GET latencies, one bucket a microsecond */
};

static atomic_bool stop_all;

static void *run_one(void *arg)
{
	struct runner *r = arg;
	char want[VALUE_LEN + 2], req[64];
	struct conn *c = malloc(sizeof(*c));
	uint64_t x = r->seed;

	if (!c || conn_open(c, r->path) < 0) {
		r->err = 2;
		return NULL;
	}
	while (!atomic_load(&stop_all)) {
		uint64_t n, got;
		bool wrong = false;
		double t0;
		size_t us;
		int len, k;

		if (((r->gets + r->sets) & 63) == 0 && now_us() >= r->until)
			break;
		x = mix64(x + 1);
		n = x % r->keys;
		if ((x >> 40) % 100 < r->set_pct) {
			if (set_send(c, n, want) < 0 || set_reply(c) < 0)
				goto fail;
			r->sets++;
			continue;
		}
		len = snprintf(req, sizeof(req), "get key:%012llu\r\n", (unsigned long long)n);
		t0 = now_us();
		if (conn_write(c, req, (size_t)len) < 0)
			goto fail;
		k = get_reply(c, &got, &wrong, want);
		if (k < 0)
			goto fail;
		if (k == 0) {
			r->missing++;
		} else {
			r->wrong += wrong || got != n;
			if (get_reply(c, &got, &wrong, want) != 0)
				goto fail;
		}
		us = (size_t)(now_us() - t0);
		r->lat[us < LAT_BUCKETS ? us : LAT_BUCKETS - 1]++;
		r->gets++;
	}
	close(c->fd);
	free(c);
	return NULL;
fail:
	fprintf(stderr, "mcload: connection broke\n");
	r->err = 2;
	atomic_store(&stop_all, true);
	return NULL;
}

static double percentile(const uint64_t *hist, uint64_t total, double q)
{
	uint64_t want = (uint64_t)(q * (double)total), seen = 0;

	for (size_t i = 0; i < LAT_BUCKETS; i++) {
		seen += hist[i];
		if (seen > want)
			return (double)i + 0.5;
	}
	return LAT_BUCKETS;
}

static int mc_run(const char *path, uint64_t keys, double seconds, unsigned conns, unsigned set_pct)
{
	struct runner *rs = calloc(conns, sizeof(*rs));
	uint64_t *hist = calloc(LAT_BUCKETS, sizeof(*hist));
	uint64_t gets = 0, sets = 0, wrong = 0, missing = 0;
	double t0 = now_us(), elapsed;
	int err = 0;

	if (!rs || !hist)
		return 2;
	for (unsigned i = 0; i < conns; i++) {
		rs[i] = (struct runner){ .path = path, .keys = keys, .seed = mix64(i + 1) + (uint64_t)t0,
					 .set_pct = set_pct, .until = t0 + seconds * 1e6,
					 .lat = calloc(LAT_BUCKETS, sizeof(uint32_t)) };
		if (!rs[i].lat || pthread_create(&rs[i].th, NULL, run_one, &rs[i]))
			return 2;
	}
	for (unsigned i = 0; i < conns; i++) {
		pthread_join(rs[i].th, NULL);
		gets += rs[i].gets;
		sets += rs[i].sets;
		wrong += rs[i].wrong;
		missing += rs[i].missing;
		err = rs[i].err ? rs[i].err : err;
		for (size_t b = 0; b < LAT_BUCKETS; b++)
			hist[b] += rs[i].lat[b];
		free(rs[i].lat);
	}
	elapsed = (now_us() - t0) / 1e6;
	printf("{\"seconds\": %.3f, \"conns\": %u, \"set_pct\": %u, \"gets\": %llu, \"sets\": %llu, "
	       "\"ops_per_s\": %.1f, \"gets_per_s\": %.1f, \"get_p50_us\": %.1f, \"get_p99_us\": %.1f, "
	       "\"get_p999_us\": %.1f, \"wrong\": %llu, \"missing\": %llu}\n",
	       elapsed, conns, set_pct, (unsigned long long)gets, (unsigned long long)sets,
	       (double)(gets + sets) / elapsed, (double)gets / elapsed, percentile(hist, gets, 0.5),
	       percentile(hist, gets, 0.99), percentile(hist, gets, 0.999), (unsigned long long)wrong,
	       (unsigned long long)missing);
	free(hist);
	free(rs);
	if (wrong || missing)
		fprintf(stderr, "mcload: %llu wrong and %llu missing values read\n",
			(unsigned long long)wrong, (unsigned long long)missing);
	return err ? err : (wrong || missing) ? 1 : 0;
}

static int mc_check(const char *path, uint64_t keys)
{
	char want[VALUE_LEN + 2], req[CHECK_BATCH * 18 + 8];
	struct conn *c = malloc(sizeof(*c));
	uint64_t wrong = 0, missing = 0;

	if (!c || conn_open(c, path) < 0)
		return 2;
	for (uint64_t base = 0; base < keys; base += CHECK_BATCH) {
		uint64_t last = base + CHECK_BATCH < keys ? base + CHECK_BATCH : keys, found = 0, n;
		size_t len = (size_t)sprintf(req, "get");
		bool bad;
		int k;

		for (n = base; n < last; n++)
			len += (size_t)sprintf(req + len, " key:%012llu", (unsigned long long)n);
		len += (size_t)sprintf(req + len, "\r\n");
		if (conn_write(c, req, len) < 0)
			return 2;
		/* Hits come back in the order asked, misses are left out. */
		while ((k = get_reply(c, &n, &bad, want)) == 1) {
			found++;
			if (bad || n < base || n >= last) {
				if (wrong++ < 5)
					fprintf(stderr, "mcload: key:%012llu holds a wrong value\n",
						(unsigned long long)n);
			}
		}
		if (k < 0)
			return 2;
		missing += (last - base) - found;
	}
	fprintf(stderr, "mcload: %llu keys read back: %llu wrong, %llu missing\n",
		(unsigned long long)keys, (unsigned long long)wrong, (unsigned long long)missing);
	close(c->fd);
	free(c);
	return wrong || missing ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: mcload fill|check SOCK KEYS | run SOCK KEYS SECONDS CONNS SETPCT\n");
		return 2;
	}
	corpus_make();
	if (strcmp(argv[1], "fill") == 0)
		return mc_fill(argv[2], strtoull(argv[3], NULL, 10));
	if (strcmp(argv[1], "check") == 0)
		return mc_check(argv[2], strtoull(argv[3], NULL, 10));
	if (strcmp(argv[1], "run") == 0 && argc == 7)
		return mc_run(argv[2], strtoull(argv[3], NULL, 10), atof(argv[4]),
			      (unsigned)atoi(argv[5]), (unsigned)atoi(argv[6]));
	fprintf(stderr, "mcload: unknown command %s\n", argv[1]);
	return 2;
}
