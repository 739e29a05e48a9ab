// SPDX-License-Identifier: GPL-2.0-only
/*
 * cfg.c - zswapd.conf: the table of keys, their parsers and their defaults.
 *
 * Every key is one row of cfg_keys[] {name, parser, field offset, default
 * text}.  cfg_defaults() runs each default text through the same parser a
 * value from the file goes through, so a default cannot be something the
 * file could not say, and conf/zswapd.conf (every key commented out at its
 * default) is checked against this table by tests/unit/check_cfg.c.
 * (After systemd-oomd's oomd-conf.c and oomd.conf.)
 *
 * The syntax is deliberately small:
 *
 *	# a comment: '#' first on the line, after optional whitespace
 *	key = value
 *
 * Whitespace around key and value is trimmed, blank lines are skipped, a
 * repeated key overrides the earlier one.  There are no inline comments: a
 * socket path may contain '#', and "20 # percent" is reported as a bad
 * value rather than silently cut.  Lines are at most CFG_LINE_MAX
 * characters, files at most CFG_FILE_MAX bytes.
 *
 * Everything is parsed into a copy of the caller's struct and copied back
 * only when the whole text is good, so a SIGHUP with a broken file leaves
 * the running configuration exactly as it was.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cfg.h"
#include "prefetch.h"
#include "log.h"
#include "size.h"
#include "zswap_proto.h"

#define CFG_LINE_MAX 4095		 /* characters, newline excluded */
#define CFG_FILE_MAX (1024 * 1024) /* bytes */

struct cfg_key {
	const char *name;
	/* Parses value into *field; -errno, *field untouched, on failure. */
	int (*parse)(const struct cfg_key *k, const char *value, void *field);
	size_t offset;
	const char *def;
	unsigned min, max;    /* cfg_parse_uint() only */
	const char *expected; /* what a good value looks like, for errors */
};

static int cfg_parse_path(const struct cfg_key *k, const char *value, void *field)
{
	size_t len = strlen(value);

	(void)k;
	if (value[0] != '/')
		return -EINVAL;
	if (len >= CFG_PATH_MAX)
		return -ENAMETOOLONG;
	memset(field, 0, CFG_PATH_MAX);
	memcpy(field, value, len);
	return 0;
}

/* An absolute path, or "none" for the empty string (a feature left off). */
static int cfg_parse_path_or_none(const struct cfg_key *k, const char *value, void *field)
{
	if (strcmp(value, "none") == 0) {
		memset(field, 0, CFG_PATH_MAX);
		return 0;
	}
	return cfg_parse_path(k, value, field);
}

static int cfg_parse_comp(const struct cfg_key *k, const char *value, void *field)
{
	enum comp_alg alg;
	int r;

	(void)k;
	r = comp_parse(value, &alg);
	if (r < 0)
		return r;
	*(enum comp_alg *)field = alg;
	return 0;
}

/* A compressor, or none: CFG_RECOMP_NONE. */
static int cfg_parse_recomp(const struct cfg_key *k, const char *value, void *field)
{
	enum comp_alg alg;
	int r;

	if (strcmp(value, "none") == 0) {
		*(int *)field = CFG_RECOMP_NONE;
		return 0;
	}
	r = cfg_parse_comp(k, value, &alg);
	if (r < 0)
		return r;
	*(int *)field = (int)alg;
	return 0;
}

/* Decimal digits only: no sign, no spaces, no hex, within [k->min, k->max]. */
static int cfg_parse_uint(const struct cfg_key *k, const char *value, void *field)
{
	unsigned long long v = 0;
	const char *p;

	if (*value == '\0')
		return -EINVAL;
	for (p = value; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		/* saturate: anything past UINT_MAX is out of range anyway */
		if (v <= k->max)
			v = v * 10 + (unsigned)(*p - '0');
	}
	if (v < k->min || v > k->max)
		return -ERANGE;
	*(unsigned *)field = (unsigned)v;
	return 0;
}

/* An octal file mode, 0..0777 (e.g. 0660). */
static int cfg_parse_mode(const struct cfg_key *k, const char *value, void *field)
{
	unsigned v = 0;

	(void)k;
	if (*value != '0')
		return -EINVAL;
	for (const char *p = value; *p; p++) {
		if (*p < '0' || *p > '7' || v > 0777)
			return -EINVAL;
		v = v * 8 + (unsigned)(*p - '0');
	}
	if (v > 0777)
		return -ERANGE;
	*(unsigned *)field = v;
	return 0;
}

/* A group name as groupadd takes it; looked up when the socket is made. */
static int cfg_parse_group(const struct cfg_key *k, const char *value, void *field)
{
	size_t len = strlen(value);

	(void)k;
	if (len >= 64)
		return -ENAMETOOLONG;
	for (const char *p = value; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '_' && *p != '-' && *p != '.')
			return -EINVAL;
	memset(field, 0, 64);
	memcpy(field, value, len);
	return 0;
}

/* A nice value, -20..19: an optional '-', then what cfg_parse_uint() takes. */
static int cfg_parse_nice(const struct cfg_key *k, const char *value, void *field)
{
	static const struct cfg_key magnitude = { .min = 0, .max = 20 };
	bool neg = *value == '-';
	unsigned v;
	int r;

	(void)k;
	r = cfg_parse_uint(&magnitude, value + neg, &v);
	if (r < 0)
		return r;
	if (!neg && v > 19)
		return -ERANGE;
	*(int *)field = neg ? -(int)v : (int)v;
	return 0;
}

static int cfg_parse_size(const struct cfg_key *k, const char *value, void *field)
{
	uint64_t v;
	int r;

	(void)k;
	r = size_parse(value, &v);
	if (r < 0)
		return r;
	*(uint64_t *)field = v;
	return 0;
}

static int cfg_parse_log_level(const struct cfg_key *k, const char *value, void *field)
{
	int level;
	int r;

	(void)k;
	r = log_level_parse(value, &level);
	if (r < 0)
		return r;
	*(int *)field = level;
	return 0;
}

static int cfg_parse_bool(const struct cfg_key *k, const char *value, void *field)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	(void)k;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(value, yes[i]) == 0) {
			*(bool *)field = true;
			return 0;
		}
		if (strcasecmp(value, no[i]) == 0) {
			*(bool *)field = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* yes, no (any spelling cfg_parse_bool takes) or auto: the daemon decides. */
static int cfg_parse_auto_bool(const struct cfg_key *k, const char *value, void *field)
{
	bool b;
	int r;

	if (strcasecmp(value, "auto") == 0) {
		*(enum cfg_auto_bool *)field = CFG_AUTO;
		return 0;
	}
	r = cfg_parse_bool(k, value, &b);
	if (r < 0)
		return r;
	*(enum cfg_auto_bool *)field = b ? CFG_YES : CFG_NO;
	return 0;
}

#define CFG_FIELD(f) offsetof(struct cfg, f)

/* In the order conf/zswapd.conf lists them. */
static const struct cfg_key cfg_keys[] = {
	{ "socket", cfg_parse_path, CFG_FIELD(socket), ZSWAP_DEFAULT_SOCKET, 0, 0,
	  "an absolute path shorter than 108 bytes" },
	/* Who may connect: the group's members and root (zswapd(8), "Security"). */
	{ "socket_mode", cfg_parse_mode, CFG_FIELD(socket_mode), "0660", 0, 0,
	  "an octal mode like 0660 or 0666" },
	{ "socket_group", cfg_parse_group, CFG_FIELD(socket_group), "zswapd", 0, 0,
	  "a group name (root: root alone)" },
	/*
	 * lzo1x-1, as kernel zswap, so the two compare like for like.  lz4
	 * decompresses faster for a slightly larger pool: the better choice
	 * where loads dominate (docs/benchmarks.md, "Compressor").
	 */
	{ "compressor", cfg_parse_comp, CFG_FIELD(pool.compressor), "lzo", 0, 0, "lzo, lz4 or zstd" },
	/*
	 * What stays in the pool recompress_seconds without being loaded is
	 * compressed again with the recompressor (recomp.c), paced to ~2.5% of
	 * a CPU: zstd packs the bench's pages into about a third of lzo's bytes
	 * (docs/benchmarks.md, "Recompressor"), and a fault on such a page is
	 * as rare as it is cold.  none, or
	 * the compressor itself, turns it off.
	 */
	{ "recompressor", cfg_parse_recomp, CFG_FIELD(pool.recompressor), "zstd", 0, 0,
	  "lzo, lz4, zstd or none" },
	{ "recompress_seconds", cfg_parse_uint, CFG_FIELD(pool.recompress_seconds), "300", 1, 86400, NULL },
	/* 20 and 90: the kernel's zswap defaults, so the two behave alike */
	{ "max_pool_percent", cfg_parse_uint, CFG_FIELD(pool.max_pool_percent), "20", 0, 100, NULL },
	{ "max_pool_bytes", cfg_parse_size, CFG_FIELD(pool.max_pool_bytes), "0", 0, 0,
	  "a size like 0, 4096, 64K, 192M or 1G" },
	{ "accept_threshold_percent", cfg_parse_uint, CFG_FIELD(pool.accept_threshold_percent), "90", 0,
	  100, NULL },
	{ "max_compressed_percent", cfg_parse_uint, CFG_FIELD(pool.max_compressed_percent), "90", 1, 100,
	  NULL },
	/*
	 * What becomes of a page that compresses worse than that: yes, it goes
	 * into the pool as it is (a whole page, no decompression on its way
	 * back); no, it stays resident.  Stored, it saves nothing by itself,
	 * but it is out of the process's resident memory (a limit then keeps
	 * the hot set, not cold random pages) and in the writeback LRU, which
	 * takes it to the swap file in its turn.  auto: yes when there is a
	 * swap file, as kernel zswap since 6.18 stores such pages when
	 * writeback is on and refuses them when it is off.
	 */
	{ "store_incompressible", cfg_parse_auto_bool, CFG_FIELD(pool.store_incompressible), "auto", 0,
	  0, "yes, no or auto" },
	/*
	 * 256 pages (1 MiB) a round trip: the daemon<->agent round trip then
	 * adds about a fifth to what copying and dropping the pages cost
	 * (docs/benchmarks.md, "Eviction batch").
	 */
	{ "evict_batch_pages", cfg_parse_uint, CFG_FIELD(agent.evict_batch_pages), "256", 1,
	  ZS_STAGING_MAX_SLOTS, NULL },
	/*
	 * A fault round trip to a handler asleep on another CPU costs several
	 * times one to a handler that polls (docs/benchmarks.md, "Fault
	 * polling"): faults come in bursts, so after serving one, poll 50 us
	 * for the next before sleeping again.
	 */
	{ "fault_spin_usec", cfg_parse_uint, CFG_FIELD(fault.fault_spin_usec), "50", 0, 10000, NULL },
	/*
	 * A thread waiting on a fault sleeps, and its CPU goes idle; waking a
	 * CPU that halted costs an interrupt, in a VM a trip through the
	 * hypervisor (idlepoll.h; docs/benchmarks.md, "Idle CPUs polling").
	 * 20 ms bridges the gaps of a burst without polling long after it.
	 */
	{ "fault_idle_poll_ms", cfg_parse_uint, CFG_FIELD(fault.fault_idle_poll_ms), "20", 0, 1000, NULL },
	{ "log_level", cfg_parse_log_level, CFG_FIELD(log_level), "info", 0, 0,
	  "error, warning, info or debug" },
	{ "mlock", cfg_parse_bool, CFG_FIELD(mlock), "yes", 0, 0, "yes or no" },
	/*
	 * yes: the agent takes pages out with UFFDIO_MOVE (Linux 6.8+), one
	 * ioctl and no uffd event, instead of MADV_DONTNEED, whose REMOVE event
	 * it must wait on and which makes the daemon's UFFDIO_COPY say EAGAIN
	 * meanwhile: several times the throughput under a limit
	 * (docs/benchmarks.md, "UFFDIO_MOVE").  A move reported as failed may
	 * still have moved the page: the agent looks (agent_slot_filled).  A
	 * kernel without UFFDIO_MOVE gets MADV_DONTNEED whatever this says.
	 * Read when a process registers.
	 */
	{ "agent_move", cfg_parse_bool, CFG_FIELD(agent.agent_move), "yes", 0, 0, "yes or no" },
	/*
	 * yes: the agent of a process with one thread of its own runs each
	 * batch on the CPU that thread last ran on.  Taking a page out of an
	 * mm flushes it from the TLB of every CPU the mm runs on: from the
	 * app's own CPU that flush is local, from another it is an IPI (a
	 * hypercall in a VM) that also stops the app (docs/benchmarks.md,
	 * "The agent on the app's CPU").  Read when a process registers.
	 */
	{ "agent_follow_app", cfg_parse_bool, CFG_FIELD(agent.agent_follow_app), "yes", 0, 0,
	  "yes or no" },
	/*
	 * yes: a batch of an agent that moves pages out is not write-protected
	 * first; the move itself is atomic against the app's writes, and the
	 * agent copies from its scratch (evict.c).  Each protect is a TLB
	 * flush per run, on top of the move's (docs/benchmarks.md, "Move
	 * first").  no: every batch write-protected.  Read at each batch.
	 */
	{ "agent_move_first", cfg_parse_bool, CFG_FIELD(agent.agent_move_first), "yes", 0, 0,
	  "yes or no" },
	/* The writeback tier is off until an operator names a file and a size. */
	{ "swap_file", cfg_parse_path_or_none, CFG_FIELD(swap.swap_file), "none", 0, 0,
	  "an absolute path shorter than 108 bytes, or none" },
	{ "swap_file_size", cfg_parse_size, CFG_FIELD(swap.swap_file_size), "0", 0, 0,
	  "a size like 4096, 512M or 8G" },
	/* The kernel's default swap readahead is 8 pages (vm.page-cluster = 3). */
	{ "readahead_pages", cfg_parse_uint, CFG_FIELD(swap.readahead_pages), "8", 0, 64, NULL },
	/*
	 * The same for the pool (prefetch.h): a window that starts at 4 pages
	 * and doubles while the process reads through it.  0 = off.
	 */
	{ "prefetch_pages", cfg_parse_uint, CFG_FIELD(fault.prefetch_pages), "16", 0, PREFETCH_MAX_PAGES, NULL },
	/*
	 * Refault protection: long enough that a page touched every few seconds
	 * stays resident, short enough that a phase change is followed.
	 */
	{ "hot_window_seconds", cfg_parse_uint, CFG_FIELD(policy.hot_window_seconds), "10", 1, 3600, NULL },
	/*
	 * Proactive eviction (proactive.c), on by default as the kernel's
	 * TMO/Senpai and Google's far memory are: a page not wanted back for
	 * this long (the cold age; Google's was 120 s) is compressed.  0 = off.
	 */
	{ "idle_evict_seconds", cfg_parse_uint, CFG_FIELD(policy.idle_evict_seconds), "120", 0, 86400, NULL },
	/*
	 * ... while the process's refault rate stays under this many pages per
	 * minute per 1000 pages of its anonymous memory (Google's target: 0.2%
	 * a minute) and the stall zswapd causes it under this many permille of
	 * each second (1%: a fault served in ~30 us, 330 of them a second).
	 * Over either, its sweeps come half as often, up to 16 times less.
	 */
	{ "proactive_refault_permille", cfg_parse_uint, CFG_FIELD(policy.proactive_refault_permille), "2", 0,
	  1000, NULL },
	{ "proactive_stall_permille", cfg_parse_uint, CFG_FIELD(policy.proactive_stall_permille), "10", 0, 1000,
	  NULL },
	/*
	 * A served process in a memory cgroup with a limit: keep the cgroup's
	 * usage this far under it by evicting its cold pages (group.c).
	 * Without swap, a cgroup that reaches its limit with nothing the kernel
	 * can reclaim calls the OOM killer; 10% of 1 GiB is 100 MiB, what a
	 * process faulting at 1 GB/s adds between two looks (100 ms).
	 */
	{ "follow_cgroup_limits", cfg_parse_bool, CFG_FIELD(policy.follow_cgroup_limits), "yes", 0, 0,
	  "yes or no" },
	{ "cgroup_headroom_percent", cfg_parse_uint, CFG_FIELD(policy.cgroup_headroom_percent), "10", 1, 50,
	  NULL },
	/*
	 * Memory pressure, as the kernel's PSI tells it (pressure.c): the host
	 * (/proc/pressure/memory) and each followed v2 cgroup
	 * (memory.pressure) signal when some task stalled on memory this long
	 * within 2 s (the shortest window the kernel grants a process without
	 * CAP_SYS_RESOURCE, which zswapd drops); every served process
	 * is then swept at once.  150 ms (7.5%, the PSI documentation's
	 * example) is past the noise of page-cache reclaim and well before the
	 * OOM killer.  0 = no PSI triggers (v1 cgroups' pressure_level events
	 * and usage against the limit still act).
	 */
	{ "pressure_stall_ms", cfg_parse_uint, CFG_FIELD(policy.pressure_stall_ms), "150", 0, 2000, NULL },
	/*
	 * A served thread waits on zswapd for each fault, and the kernel's own
	 * zswap decompresses in the faulting task, at its priority.  At nice 0
	 * among CPU-bound processes a woken zswapd queues behind them
	 * (docs/benchmarks.md, "Priority").
	 * Sweeps compress at this priority too; their work is bounded by what
	 * goes.  Set at start, while zswapd still holds CAP_SYS_NICE.
	 */
	{ "nice", cfg_parse_nice, CFG_FIELD(nice), "-10", 0, 0, "-20..19" },
	{ "default_limit_percent", cfg_parse_uint, CFG_FIELD(policy.default_limit_percent), "0", 0, 100, NULL },
	/*
	 * Under systemd (or zswapd's keeper) a zswapd that dies keeps every
	 * evicted page: the pool, the journal of what it holds and the
	 * processes' descriptors stay in the fd store, and the next zswapd
	 * serves on (journal.h, recover.c).  Needs NOTIFY_SOCKET; read at start.
	 */
	{ "survive_crash", cfg_parse_bool, CFG_FIELD(survive.survive_crash), "yes", 0, 0, "yes or no" },
	/*
	 * Meanwhile a process's faults on evicted pages wait.  A zswapd that
	 * has not come back after this long never will (systemd gave up on
	 * restarting it): the process then aborts at its first touch of an
	 * evicted page, as without survive_crash, rather than hang.  A restart
	 * takes well under a second; a minute covers systemd's RestartSec and
	 * a slow start under memory pressure.  Read when a process registers.
	 */
	{ "reattach_timeout_seconds", cfg_parse_uint, CFG_FIELD(survive.reattach_timeout_seconds), "60", 1,
	  86400, NULL },
	/* One user (not root) cannot take all of zswapd: users.c. */
	{ "max_connections_per_user", cfg_parse_uint, CFG_FIELD(users.max_connections_per_user), "64",
	  1, 65536, NULL },
	{ "max_processes_per_user", cfg_parse_uint, CFG_FIELD(users.max_processes_per_user), "1024", 1,
	  1048576, NULL },
	{ "max_pool_percent_per_user", cfg_parse_uint, CFG_FIELD(users.max_pool_percent_per_user),
	  "50", 1, 100, NULL },
};

#define CFG_NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

static const struct cfg_key *cfg_key_find(const char *name)
{
	for (size_t i = 0; i < CFG_NKEYS; i++)
		if (strcmp(cfg_keys[i].name, name) == 0)
			return &cfg_keys[i];
	return NULL;
}

void cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < CFG_NKEYS; i++) {
		const struct cfg_key *k = &cfg_keys[i];

		/* A default its own parser refuses is a bug in cfg_keys[]. */
		if (k->parse(k, k->def, (char *)c + k->offset) < 0)
			abort();
	}
}

/* "name:line: " and the message into err, cut to fit. */
__attribute__((format(printf, 5, 6))) static void cfg_error(char *err, size_t errlen, const char *name,
							     unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || errlen == 0)
		return;
	n = snprintf(err, errlen, "%s:%u: ", name, line);
	if (n < 0 || (size_t)n >= errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static char *cfg_strip(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

static int cfg_set(struct cfg *c, const struct cfg_key *k, const char *value, const char *name,
		   unsigned line, char *err, size_t errlen)
{
	char range[32];
	const char *expected = k->expected;
	int r;

	r = k->parse(k, value, (char *)c + k->offset);
	if (r >= 0)
		return 0;
	if (!expected) {
		snprintf(range, sizeof(range), "%u..%u", k->min, k->max);
		expected = range;
	}
	cfg_error(err, errlen, name, line, "bad value '%s' for %s: expected %s", value, k->name,
		  expected);
	return r;
}

/* One line, NUL-terminated and writable. */
static int cfg_parse_line(struct cfg *c, char *text, const char *name, unsigned line, char *err,
			  size_t errlen)
{
	const struct cfg_key *k;
	char *key, *value, *eq;
	int r = 0;

	key = cfg_strip(text);
	if (*key == '\0' || *key == '#')
		goto out;
	eq = strchr(key, '=');
	if (!eq) {
		r = -EINVAL;
		cfg_error(err, errlen, name, line, "expected 'key = value', got '%s'", key);
		goto out;
	}
	*eq = '\0';
	key = cfg_strip(key);
	value = cfg_strip(eq + 1);
	if (*key == '\0') {
		r = -EINVAL;
		cfg_error(err, errlen, name, line, "missing key before '='");
		goto out;
	}
	k = cfg_key_find(key);
	if (!k) {
		r = -EINVAL;
		cfg_error(err, errlen, name, line, "unknown key '%s'", key);
		goto out;
	}
	if (*value == '\0') {
		r = -EINVAL;
		cfg_error(err, errlen, name, line, "empty value for %s", key);
		goto out;
	}
	r = cfg_set(c, k, value, name, line, err, errlen);
out:
	return r;
}

int cfg_parse_text(struct cfg *c, const char *text, const char *name, char *err, size_t errlen)
{
	char buf[CFG_LINE_MAX + 1];
	struct cfg tmp = *c;
	const char *p = text, *eol;
	unsigned line;
	size_t len;
	int r = 0;

	for (line = 1; *p; line++) {
		eol = strchrnul(p, '\n');
		len = (size_t)(eol - p);
		if (len > CFG_LINE_MAX) {
			r = -EINVAL;
			cfg_error(err, errlen, name, line, "line longer than %d characters",
				  CFG_LINE_MAX);
			goto out;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		r = cfg_parse_line(&tmp, buf, name, line, err, errlen);
		if (r < 0)
			goto out;
		p = *eol ? eol + 1 : eol;
	}
	*c = tmp;
out:
	return r;
}

/* The whole of fd into a NUL-terminated buffer; -EFBIG past CFG_FILE_MAX. */
static int cfg_read_all(int fd, char **ret_buf, size_t *ret_len)
{
	size_t cap = 4096, len = 0;
	char *buf, *grown;
	ssize_t n;
	int r;

	buf = malloc(cap);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (cap - len == 1) {
			/* full, and already holding more than CFG_FILE_MAX */
			if (len > CFG_FILE_MAX) {
				r = -EFBIG;
				goto out_free;
			}
			cap = cap * 2 < CFG_FILE_MAX + 2 ? cap * 2 : CFG_FILE_MAX + 2;
			grown = realloc(buf, cap);
			if (!grown) {
				r = -ENOMEM;
				goto out_free;
			}
			buf = grown;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;

out_free:
	free(buf);
out:
	return r;
}

int cfg_parse_file(struct cfg *c, const char *path, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		snprintf(err, err ? errlen : 0, "%s: %s", path, strerror(-r));
		goto out;
	}
	r = cfg_read_all(fd, &text, &len);
	if (r == -EFBIG) {
		snprintf(err, err ? errlen : 0, "%s: larger than %d bytes", path, CFG_FILE_MAX);
		goto out_close;
	}
	if (r < 0) {
		snprintf(err, err ? errlen : 0, "%s: %s", path, strerror(-r));
		goto out_close;
	}
	if (memchr(text, '\0', len)) {
		r = -EINVAL;
		snprintf(err, err ? errlen : 0, "%s: contains a NUL byte, not a text file", path);
		goto out_free;
	}
	r = cfg_parse_text(c, text, path, err, errlen);
out_free:
	free(text);
out_close:
	close(fd);
out:
	return r;
}

uint64_t cfg_pool_limit(const struct cfg *c, uint64_t mem_total)
{
	uint64_t pct = c->pool.max_pool_percent;

	if (c->pool.max_pool_bytes)
		return c->pool.max_pool_bytes;
	/* mem_total * pct / 100 without overflowing for any mem_total */
	return mem_total / 100 * pct + mem_total % 100 * pct / 100;
}
