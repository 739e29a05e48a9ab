// SPDX-License-Identifier: GPL-2.0-only
/*
 * workload - the memory-access workload of the side-by-side benchmark
 * (tests/bench/run.sh): the same program runs all in RAM, under kernel swap,
 * under kernel zswap and under zswapd, so the only thing that changes is who
 * serves its page faults.
 *
 *   workload --size MIB (--seconds T | --accesses N) [--warmup S]
 *            [--pattern hotcold|uniform|sequential] [--hot-pct 20]
 *            [--hot-access-pct 80] [--write-pct 50] [--seed N]
 *            [--fill-mibps N] [--handshake] [--json]
 *
 * Fills MIB of anonymous memory with the page mix of tests/bench/micro.c
 * (zero, same-filled word, text, small structs, incompressible bytes; with
 * --fill-mibps at most N MiB a second, a service loading its data), then
 * accesses it for S seconds of warm-up and T measured seconds (or, with
 * --accesses, exactly N accesses, rounded up to a multiple of 64: a job of
 * fixed work, for the concurrent-workers benchmark).  One access is
 * one 8-byte read, or one read-modify-write, at a random word of the chosen
 * page:
 *   hotcold     hot-pct % of the pages (scattered over the whole range, not
 *               one block) take hot-access-pct % of the accesses;
 *   uniform     every page alike;
 *   sequential  page after page, wrapping around.
 * One access in 64 is timed with clock_gettime (two vDSO calls per 64
 * accesses keep the overhead near 1%); the samples go to a log-linear
 * histogram (~1.5% resolution) so that the workload's own memory does not
 * grow with the run and skew the budget.  The longest time between two
 * timed accesses is kept too (lat_us.gap_max): a pause of the process.
 *
 * Writes are checkable.  A write flips bit 0 of the word, so every word is
 * always its fill value or the fill value ^ 1, and the program keeps, per
 * page, h = sum(word[i] * (2i+1)) mod 2^64, updated on every write.  At the
 * end every page is read back and must (a) hash to h -- a lost write changes
 * one word by 1, and an odd multiplier keeps that visible -- and (b) differ
 * from its recomputed fill value only in bit 0 of words -- a zeroed page, or
 * another page's content, fails.  Any bad page: exit 1.
 *
 * --handshake lets run.sh take its measurements at the right instants: the
 * program stops at three points (before filling, after warm-up, after the
 * measured window), prints "workload: PHASE, waiting for SIGUSR1" on stderr
 * and waits (at most 10 min) for SIGUSR1.  Before the fill, that is when
 * run.sh places a zswapd limit; the other two bracket the counters
 * (/proc/vmstat, zswapctl stats, daemon CPU) it reads.
 *
 * Output: one JSON object on stdout with --json, else a short summary.  Times
 * in the window are measured, faults/CPU are getrusage deltas over the
 * measured window, rss_anon_kb / vm_swap_kb are read at the window's end.
 * The pages are 4 KiB (MADV_NOHUGEPAGE): every contender moves 4 KiB pages.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pagemix.h"

#define WORDS (PAGE / 8)
#define SAMPLE_EVERY 64 /* one access in 64 is timed */

enum pattern { PAT_HOTCOLD, PAT_UNIFORM, PAT_SEQUENTIAL };

struct opts {
	size_t mib;
	double seconds, warmup;
	uint64_t accesses; /* fixed work instead of a time window (0: off) */
	enum pattern pattern;
	unsigned hot_pct, hot_access_pct, write_pct;
	uint64_t seed;
	unsigned fill_mibps; /* 0: as fast as it goes */
	bool handshake, json;
};


/* sum(word[i] * (2i+1)) mod 2^64: linear, so a write updates it in O(1). */
static uint64_t page_hash(const uint8_t *p)
{
	uint64_t h = 0;

	for (unsigned i = 0; i < WORDS; i++) {
		uint64_t w;

		memcpy(&w, p + i * 8, 8);
		h += w * (2 * (uint64_t)i + 1);
	}
	return h;
}

/* ---- latency histogram: log-linear, 32 sub-buckets per power of two ---- */

#define HIST_LINEAR 64 /* 0..63 ns exactly */
#define HIST_SUB 32
#define HIST_BUCKETS (HIST_LINEAR + 58 * HIST_SUB)

struct hist {
	uint64_t n, sum_ns, max_ns;
	/* The longest time between two timed accesses (SAMPLE_EVERY accesses):
	 * a pause of the whole process shows here, sampled or not. */
	uint64_t gap_max_ns, last_ns;
	uint64_t b[HIST_BUCKETS];
};

static unsigned hist_index(uint64_t v)
{
	unsigned e, shift;

	if (v < HIST_LINEAR)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	shift = e - 5;
	return HIST_LINEAR + (e - 6) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

/* Middle of bucket i, in ns. */
static double hist_value(unsigned i)
{
	unsigned e, shift;

	if (i < HIST_LINEAR)
		return i;
	e = (i - HIST_LINEAR) / HIST_SUB + 6;
	shift = e - 5;
	return (double)(((uint64_t)((i - HIST_LINEAR) % HIST_SUB + HIST_SUB) << shift) +
			((uint64_t)1 << shift) / 2);
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->n++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->b[hist_index(ns)]++;
}

/* q-quantile in µs (q in [0,1]). */
static double hist_quantile_us(const struct hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->n)
		return 0;
	want = (uint64_t)(q * (double)h->n);
	if (want >= h->n)
		want = h->n - 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return hist_value(i) / 1e3;
	}
	return (double)h->max_ns / 1e3;
}

/* ---- the access loop ---------------------------------------------------- */

struct state {
	uint8_t *mem;
	uint64_t *hash; /* per-page expected page_hash() */
	size_t npages, nhot, cursor;
	uint64_t rng, perm_mul, perm_add;
	uint32_t hot_thr, write_thr; /* out of 2^32 */
	enum pattern pattern;
	uint64_t accesses, writes, sink;
};

static inline uint64_t next_rand(struct state *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) from 32 random bits (Lemire's multiply-shift). */
static inline size_t below(uint32_t r, size_t n)
{
	return (size_t)(((uint64_t)r * n) >> 32);
}

static inline size_t pick_page(struct state *s, uint64_t r)
{
	size_t k;

	switch (s->pattern) {
	case PAT_SEQUENTIAL:
		k = s->cursor;
		s->cursor = k + 1 == s->npages ? 0 : k + 1;
		return k;
	case PAT_UNIFORM:
		return below((uint32_t)(r >> 32), s->npages);
	default:
		if (s->nhot && ((uint32_t)r < s->hot_thr || s->nhot == s->npages))
			k = below((uint32_t)(r >> 32), s->nhot);
		else
			k = s->nhot + below((uint32_t)(r >> 32), s->npages - s->nhot);
		/* a bijection of [0, n): the hot set is scattered, as hot data is */
		return (size_t)((k * s->perm_mul + s->perm_add) % s->npages);
	}
}

static inline void access_one(struct state *s)
{
	uint64_t r = next_rand(s), r2 = next_rand(s);
	size_t p = pick_page(s, r);
	unsigned i = (unsigned)(r2 & (WORDS - 1));
	uint64_t *w = (uint64_t *)(s->mem + p * PAGE) + i;
	uint64_t old = *w;

	if ((uint32_t)(r2 >> 32) < s->write_thr) {
		*w = old ^ 1;
		s->hash[p] += ((old ^ 1) - old) * (2 * (uint64_t)i + 1);
		s->writes++;
	} else {
		s->sink += old;
	}
	s->accesses++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Runs accesses for `seconds`, or until s->accesses reaches `count` if that
 * is not 0; times one in SAMPLE_EVERY into h (if set).
 */
static void run_for(struct state *s, double seconds, uint64_t count, struct hist *h)
{
	uint64_t deadline = now_ns() + (uint64_t)(seconds * 1e9);

	for (;;) {
		uint64_t t0, t1;

		for (unsigned k = 0; k < SAMPLE_EVERY - 1; k++)
			access_one(s);
		t0 = now_ns();
		access_one(s);
		t1 = now_ns();
		if (h) {
			hist_add(h, t1 - t0);
			if (h->last_ns && t1 - h->last_ns > h->gap_max_ns)
				h->gap_max_ns = t1 - h->last_ns;
			h->last_ns = t1;
		}
		if (count ? s->accesses >= count : t1 >= deadline)
			return;
	}
}

/* ---- helpers ------------------------------------------------------------ */

static long status_kb(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* With --handshake: say where we are, wait for run.sh's SIGUSR1. */
static void handshake(const struct opts *o, const char *phase)
{
	sigset_t set;
	struct timespec limit = { .tv_sec = 600 };

	if (!o->handshake)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	fprintf(stderr, "workload: %s, waiting for SIGUSR1\n", phase);
	if (sigtimedwait(&set, NULL, &limit) < 0) {
		fprintf(stderr, "workload: no SIGUSR1 after %s: %s\n", phase, strerror(errno));
		exit(2);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: workload --size MIB (--seconds T | --accesses N) [--warmup S] "
		   "[--pattern hotcold|uniform|sequential]\n"
		   "                [--hot-pct 20] [--hot-access-pct 80] [--write-pct 50] "
		   "[--seed N] [--fill-mibps N] [--handshake] [--json]\n");
}

static unsigned pct_arg(const char *name, const char *v)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (*end || n > 100) {
		fprintf(stderr, "workload: %s must be 0..100\n", name);
		exit(2);
	}
	return (unsigned)n;
}

static double secs_arg(const char *name, const char *v)
{
	char *end;
	double d = strtod(v, &end);

	if (*end || !(d >= 0) || d > 86400) {
		fprintf(stderr, "workload: bad %s '%s'\n", name, v);
		exit(2);
	}
	return d;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "accesses", required_argument, NULL, 'a' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "hot-pct", required_argument, NULL, 'H' },
		{ "hot-access-pct", required_argument, NULL, 'A' },
		{ "write-pct", required_argument, NULL, 'W' },
		{ "seed", required_argument, NULL, 'S' },
		{ "fill-mibps", required_argument, NULL, 'F' },
		{ "handshake", no_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	*o = (struct opts){ .mib = 256, .seconds = 10, .warmup = 3, .pattern = PAT_HOTCOLD,
			    .hot_pct = 20, .hot_access_pct = 80, .write_pct = 50, .seed = 1 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o->mib = strtoul(optarg, NULL, 10);
			break;
		case 't':
			o->seconds = secs_arg("--seconds", optarg);
			break;
		case 'w':
			o->warmup = secs_arg("--warmup", optarg);
			break;
		case 'a': {
			char *end;

			errno = 0;
			o->accesses = strtoull(optarg, &end, 10);
			if (errno || *end || !o->accesses || optarg[0] == '-') {
				fprintf(stderr, "workload: bad --accesses '%s'\n", optarg);
				exit(2);
			}
			break;
		}
		case 'p':
			if (strcmp(optarg, "hotcold") == 0)
				o->pattern = PAT_HOTCOLD;
			else if (strcmp(optarg, "uniform") == 0)
				o->pattern = PAT_UNIFORM;
			else if (strcmp(optarg, "sequential") == 0)
				o->pattern = PAT_SEQUENTIAL;
			else {
				usage(stderr);
				exit(2);
			}
			break;
		case 'H':
			o->hot_pct = pct_arg("--hot-pct", optarg);
			break;
		case 'A':
			o->hot_access_pct = pct_arg("--hot-access-pct", optarg);
			break;
		case 'W':
			o->write_pct = pct_arg("--write-pct", optarg);
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'F':
			o->fill_mibps = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'k':
			o->handshake = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc || o->mib == 0 || o->mib > (1u << 20) || o->seconds <= 0) {
		usage(stderr);
		exit(2);
	}
}

static const char *pattern_name(enum pattern p)
{
	return p == PAT_UNIFORM ? "uniform" : p == PAT_SEQUENTIAL ? "sequential" : "hotcold";
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static struct hist lat; /* ~15 KB, static: no allocation during the run */
	struct opts o;
	struct state s = { 0 };
	struct rusage ru0, ru1;
	uint64_t t_fill0, t_fill1, t_m0, t_m1, t_v0, t_v1;
	size_t bad = 0;
	long rss_kb, swap_kb;
	uint8_t want[PAGE];
	sigset_t usr1;

	/* Blocked from the start, so that a SIGUSR1 sent as soon as we print a
	 * handshake line is kept pending rather than killing us. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	parse(argc, argv, &o);
	/* The histogram is the program's instruments, not its working set: it
	 * stays resident under any budget (16 KB; a failure only means it may
	 * not).  Evicted, a sample written into it could wait on an eviction
	 * batch whose agent a test has stopped on purpose (agent_stopped). */
	(void)mlock(&lat, sizeof(lat));

	s.npages = o.mib * (1024 * 1024 / PAGE);
	s.nhot = s.npages * o.hot_pct / 100;
	s.pattern = o.pattern;
	s.rng = o.seed;
	s.hot_thr = (uint32_t)((uint64_t)o.hot_access_pct * 0xffffffffu / 100);
	s.write_thr = (uint32_t)((uint64_t)o.write_pct * 0xffffffffu / 100);
	/* 2654435761 is prime and larger than any npages allowed (2^28), so it
	 * is coprime with npages and k -> k * mul + add (mod n) is a bijection. */
	s.perm_mul = 2654435761u;
	s.perm_add = mix64(o.seed) % s.npages;

	s.mem = mmap(NULL, s.npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	s.hash = calloc(s.npages, sizeof(*s.hash));
	if (s.mem == MAP_FAILED || !s.hash) {
		fprintf(stderr, "workload: cannot allocate %zu MiB: %s\n", o.mib, strerror(errno));
		return 2;
	}
	madvise(s.mem, s.npages * PAGE, MADV_NOHUGEPAGE);

	handshake(&o, "allocated");
	t_fill0 = now_ns();
	for (size_t p = 0; p < s.npages; p++) {
		fill_page(s.mem + p * PAGE, p);
		s.hash[p] = page_hash(s.mem + p * PAGE);
		if (o.fill_mibps && (p + 1) % 256 == 0) {
			/* MiB number (p + 1) / 256 is due at that many 1/N seconds */
			uint64_t due = t_fill0 + (uint64_t)((p + 1) / 256) * 1000000000u / o.fill_mibps;
			uint64_t now = now_ns();

			if (due > now)
				usleep((useconds_t)((due - now) / 1000));
		}
	}
	t_fill1 = now_ns();
	fprintf(stderr, "workload: filled %zu MiB in %.2f s\n", o.mib, (double)(t_fill1 - t_fill0) / 1e9);

	if (o.warmup > 0)
		run_for(&s, o.warmup, 0, NULL);
	handshake(&o, "warmed up");

	getrusage(RUSAGE_SELF, &ru0);
	s.accesses = s.writes = 0;
	t_m0 = now_ns();
	run_for(&s, o.seconds, o.accesses, &lat);
	t_m1 = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	rss_kb = status_kb("RssAnon");
	swap_kb = status_kb("VmSwap");
	handshake(&o, "measured");

	/* Verify every page (this faults every evicted page back in). */
	t_v0 = now_ns();
	for (size_t p = 0; p < s.npages; p++) {
		const uint8_t *pg = s.mem + p * PAGE;
		bool hash_ok = page_hash(pg) == s.hash[p];
		unsigned foreign = 0, zero = 0; /* words not fill(^1), words 0 */

		fill_page(want, p);
		for (unsigned i = 0; i < WORDS; i++) {
			uint64_t a, b;

			memcpy(&a, pg + i * 8, 8);
			memcpy(&b, want + i * 8, 8);
			foreign += (a ^ b) > 1;
			zero += a == 0;
		}
		/* What went wrong tells where: a lost write leaves the contents
		 * plausible and only the hash off; zeros or another page's
		 * contents are a page lost or mapped at the wrong place. */
		if ((!hash_ok || foreign) && bad++ < 10)
			fprintf(stderr,
				"workload: CORRUPT page %zu (offset 0x%zx): hash %s, %u of %u words "
				"foreign, %u zero\n",
				p, p * PAGE, hash_ok ? "ok" : "differs", foreign, WORDS, zero);
	}
	t_v1 = now_ns();
	if (bad)
		fprintf(stderr, "workload: %zu of %zu pages corrupt\n", bad, s.npages);

	{
		double el = (double)(t_m1 - t_m0) / 1e9;
		double aps = el > 0 ? (double)s.accesses / el : 0;
		double usr = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
		double sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);

		if (o.json) {
			printf("{\"size_mib\":%zu,\"pages\":%zu,\"pattern\":\"%s\",\"hot_pct\":%u,"
			       "\"hot_access_pct\":%u,\"write_pct\":%u,\"warmup_s\":%.1f,\"seconds\":%.1f,"
			       "\"fill_s\":%.3f,\"accesses\":%" PRIu64 ",\"writes\":%" PRIu64 ","
			       "\"elapsed_s\":%.3f,\"accesses_per_s\":%.0f,\"samples\":%" PRIu64 ","
			       "\"lat_us\":{\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
			       "\"p999\":%.3f,\"max\":%.1f,\"gap_max\":%.1f},"
			       "\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f,\"minflt\":%ld,\"majflt\":%ld,"
			       "\"rss_anon_kb\":%ld,\"vm_swap_kb\":%ld,\"verify_s\":%.3f,"
			       "\"bad_pages\":%zu,\"ok\":%s,\"sink\":%" PRIu64 "}\n",
			       o.mib, s.npages, pattern_name(o.pattern), o.hot_pct, o.hot_access_pct,
			       o.write_pct, o.warmup, o.seconds, (double)(t_fill1 - t_fill0) / 1e9,
			       s.accesses, s.writes, el, aps, lat.n,
			       lat.n ? (double)lat.sum_ns / (double)lat.n / 1e3 : 0,
			       hist_quantile_us(&lat, 0.50), hist_quantile_us(&lat, 0.90),
			       hist_quantile_us(&lat, 0.99), hist_quantile_us(&lat, 0.999),
			       (double)lat.max_ns / 1e3, (double)lat.gap_max_ns / 1e3, usr, sys,
			       ru1.ru_minflt - ru0.ru_minflt,
			       ru1.ru_majflt - ru0.ru_majflt, rss_kb, swap_kb,
			       (double)(t_v1 - t_v0) / 1e9, bad, bad ? "false" : "true", s.sink);
		} else {
			printf("%zu MiB %s, %.1f s: %.0f accesses/s, latency µs p50 %.2f p90 %.2f "
			       "p99 %.2f p99.9 %.2f max %.0f\n"
			       "cpu %.2f s user %.2f s sys, faults %ld minor %ld major, RssAnon %ld kB, "
			       "VmSwap %ld kB; verify %.2f s: %s\n",
			       o.mib, pattern_name(o.pattern), el, aps, hist_quantile_us(&lat, 0.50),
			       hist_quantile_us(&lat, 0.90), hist_quantile_us(&lat, 0.99),
			       hist_quantile_us(&lat, 0.999), (double)lat.max_ns / 1e3, usr, sys,
			       ru1.ru_minflt - ru0.ru_minflt, ru1.ru_majflt - ru0.ru_majflt, rss_kb,
			       swap_kb, (double)(t_v1 - t_v0) / 1e9,
			       bad ? "CORRUPT" : "every page verified");
		}
	}
	free(s.hash);
	munmap(s.mem, s.npages * PAGE);
	return bad ? 1 : 0;
}
