// SPDX-License-Identifier: GPL-2.0-only
/*
 * zswapctl - talk to zswapd over its control socket.
 *
 *   zswapctl stats [--json|--prometheus]  counters (zswap's names where one exists)
 *   zswapctl list [--json|--prometheus]  the processes served
 *   zswapctl reclaim PID SIZE        evict up to SIZE of PID's memory now
 *   zswapctl limit PID SIZE|none     keep PID's resident anonymous memory under SIZE
 *   zswapctl limit --all [SIZE|none]             one budget for every served process
 *   zswapctl limit --cgroup PATH [SIZE|none]     ... for those of a memory cgroup
 *   zswapctl groups [--json|--prometheus]        the groups: budgets, followed cgroup limits
 *   zswapctl restore PID             bring every evicted page of PID back
 *   zswapctl upgrade                 replace zswapd's binary in place (root)
 *   zswapctl run -- CMD [ARGS...]    start CMD opted in (LD_PRELOAD=libzswap.so)
 *
 * Exit codes: 0 done, 1 failed (the reason on stderr), 2 usage error.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "size.h"
#include "zswap_stats.h"

#define EXIT_USAGE 2

static uint64_t reply_buf[ZS_MSG_MAX / sizeof(uint64_t)];

static int usage(FILE *f, int code)
{
	fprintf(f,
		"Usage: zswapctl COMMAND [ARGS]\n\n"
		"  stats [--json|--prometheus]  show zswapd's counters\n"
		"  list [--json|--prometheus]  show the processes zswapd serves\n"
		"  reclaim PID SIZE        evict up to SIZE (K, M, G suffixes) of PID's memory now\n"
		"  limit PID SIZE|none     keep PID's resident anonymous memory at or under SIZE\n"
		"  limit --all [SIZE|none] one budget for all served processes, coldest give first\n"
		"  limit --cgroup PATH [SIZE|none]\n"
		"                          the same for the served processes of a memory cgroup\n"
		"  groups [--json|--prometheus]  show the groups: budgets, followed cgroup limits\n"
		"  restore PID             bring every evicted page of PID back, lifting its limit\n"
		"  upgrade                 replace zswapd's binary in place, every page kept (root)\n"
		"  run -- CMD [ARGS...]    run CMD with its memory served by zswapd\n\n"
		"The socket is $" ZSWAP_SOCKET_ENV ", else " ZSWAP_DEFAULT_SOCKET ".\n");
	return code;
}

static const char *socket_path(void)
{
	const char *p = getenv(ZSWAP_SOCKET_ENV);

	return p && *p ? p : ZSWAP_DEFAULT_SOCKET;
}

static int ctl_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = socket_path();
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "zswapctl: socket path too long: %s\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		fprintf(stderr, "zswapctl: cannot reach zswapd at %s: %s\n"
				"Is it running? (systemctl start zswapd, or set $" ZSWAP_SOCKET_ENV ")\n",
			path, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

/* One request, one reply of the expected type; ZS_ERROR is printed. */
static int ctl_call(uint16_t type, const void *req, size_t len, uint16_t want,
		    const struct zs_hdr **ret_hdr)
{
	const struct zs_hdr *h = (const struct zs_hdr *)reply_buf;
	int fd, nfds, fds[PROTO_MAX_FDS];
	ssize_t n;
	int r;

	fd = ctl_connect();
	if (fd < 0)
		return fd;
	r = proto_send(fd, type, 1, req, len, NULL, 0);
	if (r < 0)
		goto out;
	do
		n = proto_recv(fd, reply_buf, sizeof(reply_buf), fds, PROTO_MAX_FDS, &nfds);
	while (n == -EINTR);
	if (n <= 0) {
		r = n < 0 ? (int)n : -ECONNRESET;
		fprintf(stderr, "zswapctl: no answer from zswapd: %s\n", strerror(-r));
		goto out;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (h->type == ZS_ERROR) {
		const struct zs_error *e = proto_payload(h);

		fprintf(stderr, "zswapctl: %s (%s)\n", e->msg, strerror(e->err < 0 ? -e->err : EIO));
		r = e->err < 0 ? e->err : -EIO;
		goto out;
	}
	if (h->type != want) {
		fprintf(stderr, "zswapctl: unexpected reply type %u\n", h->type);
		r = -EPROTO;
		goto out;
	}
	*ret_hdr = h;
	r = 0;
out:
	close(fd);
	return r;
}

/* What zswap_stats.h says of a counter: its kind and help; NULL for one this
 * zswapctl does not know (a newer daemon's), shown as a counter. */
struct stat_info {
	const char *name;
	bool gauge;
	const char *help;
};

#define STAT_INFO(name, kind, source, help) { #name, STAT_KIND_##kind, help },
#define STAT_KIND_GAUGE true
#define STAT_KIND_COUNTER false
static const struct stat_info stat_infos[] = { ZS_STATS(STAT_INFO) };

static const struct stat_info *stat_info_of(const char *name)
{
	for (size_t i = 0; i < sizeof(stat_infos) / sizeof(stat_infos[0]); i++)
		if (strcmp(name, stat_infos[i].name) == 0)
			return &stat_infos[i];
	return NULL;
}

enum out_format { TEXT, JSON, PROM };

/* stats, list and groups take the same options: none, --json or --prometheus. */
static int parse_format(int argc, char **argv, enum out_format *ret)
{
	if (argc == 1)
		*ret = TEXT;
	else if (argc == 2 && strcmp(argv[1], "--json") == 0)
		*ret = JSON;
	else if (argc == 2 && strcmp(argv[1], "--prometheus") == 0)
		*ret = PROM;
	else
		return -EINVAL;
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	enum out_format fmt;
	const struct zs_hdr *h;
	const struct zs_stat *st;
	size_t n;

	if (parse_format(argc, argv, &fmt) < 0)
		return usage(stderr, EXIT_USAGE);
	if (ctl_call(ZS_STATS, NULL, 0, ZS_STATS_REPLY, &h) < 0)
		return 1;
	st = proto_payload(h);
	n = h->len / sizeof(*st);
	if (fmt == JSON)
		putchar('{');
	for (size_t i = 0; i < n; i++) {
		unsigned long long v = (unsigned long long)st[i].value;

		switch (fmt) {
		case JSON:
			printf("%s\"%s\":%llu", i ? "," : "", st[i].name, v);
			break;
		case PROM: {
			/* node-exporter textfile format: counters end in _total */
			const struct stat_info *info = stat_info_of(st[i].name);
			bool gauge = info && info->gauge;
			const char *suffix = gauge ? "" : "_total";

			if (info)
				printf("# HELP zswapd_%s%s %s\n", st[i].name, suffix, info->help);
			printf("# TYPE zswapd_%s%s %s\nzswapd_%s%s %llu\n", st[i].name, suffix,
			       gauge ? "gauge" : "counter", st[i].name, suffix, v);
			break;
		}
		default:
			printf("%-24s %llu\n", st[i].name, v);
		}
	}
	if (fmt == JSON)
		puts("}");
	return 0;
}

/* comm is the process's own choice (prctl PR_SET_NAME): escape it. */
static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* In the table, control characters become '?'. */
static void sanitize_comm(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void print_label(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
}

/* One family of per-process samples: HELP, TYPE, a sample per process. */
static void list_prometheus_family(const struct zs_target_info *ti, size_t n, const char *name,
				   const char *type, const char *help,
				   double (*value)(const struct zs_target_info *))
{
	printf("# HELP zswapd_process_%s %s\n# TYPE zswapd_process_%s %s\n", name, help, name, type);
	for (size_t i = 0; i < n; i++) {
		char comm[ZS_COMM_LEN], cg[ZS_TARGET_CGROUP_LEN];

		memcpy(comm, ti[i].comm, sizeof(comm));
		comm[sizeof(comm) - 1] = '\0';
		memcpy(cg, ti[i].cgroup, sizeof(cg));
		cg[sizeof(cg) - 1] = '\0';
		printf("zswapd_process_%s{pid=\"%u\",comm=\"", name, ti[i].pid);
		print_label(comm);
		fputs("\",cgroup=\"", stdout);
		print_label(cg);
		printf("\"} %.17g\n", value(&ti[i]));
	}
}

static double pv_resident(const struct zs_target_info *t) { return (double)t->resident_pages * 4096; }
static double pv_evicted(const struct zs_target_info *t) { return (double)t->evicted_pages * 4096; }
static double pv_saved(const struct zs_target_info *t)
{
	double ev = (double)t->evicted_pages * 4096;

	return ev > (double)t->compressed_bytes ? ev - (double)t->compressed_bytes : 0;
}
static double pv_limit(const struct zs_target_info *t) { return (double)t->limit_bytes; }
static double pv_loads(const struct zs_target_info *t) { return (double)t->loads; }
static double pv_refaults(const struct zs_target_info *t) { return (double)t->refaults_per_min; }
static double pv_stall(const struct zs_target_info *t) { return (double)t->stall_usec / 1e6; }
static double pv_backoff(const struct zs_target_info *t) { return t->proactive_backoff; }

/* `list --prometheus`: per-process figures for node_exporter's textfile collector. */
static void list_prometheus(const struct zs_target_info *ti, size_t n)
{
	list_prometheus_family(ti, n, "resident_bytes", "gauge",
			       "resident anonymous memory (RssAnon)", pv_resident);
	list_prometheus_family(ti, n, "evicted_bytes", "gauge", "memory evicted, as pages",
			       pv_evicted);
	list_prometheus_family(ti, n, "saved_bytes", "gauge",
			       "evicted less what it takes in the pool", pv_saved);
	list_prometheus_family(ti, n, "limit_bytes", "gauge", "its limit, 0 = none", pv_limit);
	list_prometheus_family(ti, n, "loads_total", "counter", "pages faulted back", pv_loads);
	list_prometheus_family(ti, n, "refaults_per_minute", "gauge",
			       "pages faulted back over the last minute", pv_refaults);
	list_prometheus_family(ti, n, "stall_seconds_total", "counter",
			       "time its threads waited on faults zswapd served", pv_stall);
	list_prometheus_family(ti, n, "proactive_backoff", "gauge",
			       "how many times less often its proactive sweeps come", pv_backoff);
}

static int cmd_list(int argc, char **argv)
{
	enum out_format fmt;
	const struct zs_target_info *ti;
	const struct zs_hdr *h;
	size_t n;

	if (parse_format(argc, argv, &fmt) < 0)
		return usage(stderr, EXIT_USAGE);
	if (ctl_call(ZS_LIST, NULL, 0, ZS_LIST_REPLY, &h) < 0)
		return 1;
	ti = proto_payload(h);
	n = h->len / sizeof(*ti);
	if (fmt == PROM) {
		list_prometheus(ti, n);
		return 0;
	}
	if (fmt == JSON) {
		putchar('[');
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"pid\":%u,\"comm\":", i ? "," : "", ti[i].pid);
			print_json_string(ti[i].comm);
			printf(",\"resident_pages\":%llu,"
			       "\"evicted_pages\":%llu,\"compressed_bytes\":%llu,\"stores\":%llu,"
			       "\"loads\":%llu,\"invalidates\":%llu,\"limit_bytes\":%llu,"
			       "\"hot_pages\":%llu,\"stall_usec\":%llu,\"stall_usec_per_min\":%llu,"
			       "\"refaults_per_min\":%llu,\"proactive_backoff\":%u,\"cgroup\":",
			       (unsigned long long)ti[i].resident_pages,
			       (unsigned long long)ti[i].evicted_pages,
			       (unsigned long long)ti[i].compressed_bytes,
			       (unsigned long long)ti[i].stores, (unsigned long long)ti[i].loads,
			       (unsigned long long)ti[i].invalidates,
			       (unsigned long long)ti[i].limit_bytes,
			       (unsigned long long)ti[i].hot_pages,
			       (unsigned long long)ti[i].stall_usec,
			       (unsigned long long)ti[i].stall_usec_per_min,
			       (unsigned long long)ti[i].refaults_per_min, ti[i].proactive_backoff);
			print_json_string(ti[i].cgroup);
			putchar('}');
		}
		puts("]");
		return 0;
	}
	printf("%8s %-16s %10s %10s %12s %10s %10s %10s %10s %10s %10s\n", "PID", "COMMAND",
	       "RESIDENT", "EVICTED", "COMPRESSED", "LIMIT", "HOT", "STORES", "LOADS", "REFAULT/M",
	       "STALL/M");
	for (size_t i = 0; i < n; i++) {
		char res[16], ev[16], comp[16], lim[16] = "-", hot[16], comm[ZS_COMM_LEN];

		size_format(ti[i].resident_pages * 4096, res, sizeof(res));
		size_format(ti[i].evicted_pages * 4096, ev, sizeof(ev));
		size_format(ti[i].compressed_bytes, comp, sizeof(comp));
		if (ti[i].limit_bytes)
			size_format(ti[i].limit_bytes, lim, sizeof(lim));
		size_format(ti[i].hot_pages * 4096, hot, sizeof(hot));
		memcpy(comm, ti[i].comm, sizeof(comm));
		comm[sizeof(comm) - 1] = '\0';
		sanitize_comm(comm);
		printf("%8u %-16s %10s %10s %12s %10s %10s %10llu %10llu %10llu %8llums\n", ti[i].pid,
		       comm, res, ev, comp, lim, hot, (unsigned long long)ti[i].stores,
		       (unsigned long long)ti[i].loads, (unsigned long long)ti[i].refaults_per_min,
		       (unsigned long long)(ti[i].stall_usec_per_min / 1000));
	}
	return 0;
}

static int parse_pid(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > INT_MAX || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int cmd_reclaim(int argc, char **argv)
{
	struct zs_reclaim req = { 0 };
	const struct zs_reclaim_reply *rep;
	const struct zs_hdr *h;
	char want[16], got[16], comp[16];

	if (argc != 3)
		return usage(stderr, EXIT_USAGE);
	if (parse_pid(argv[1], &req.pid) < 0) {
		fprintf(stderr, "zswapctl: '%s' is not a process id\n", argv[1]);
		return EXIT_USAGE;
	}
	if (size_parse(argv[2], &req.bytes) < 0 || req.bytes == 0) {
		fprintf(stderr, "zswapctl: '%s' is not a size (e.g. 4096, 64K, 192M, 1G)\n", argv[2]);
		return EXIT_USAGE;
	}
	if (ctl_call(ZS_RECLAIM, &req, sizeof(req), ZS_RECLAIM_REPLY, &h) < 0)
		return 1;
	rep = proto_payload(h);
	size_format(req.bytes, want, sizeof(want));
	size_format(rep->evicted_pages * 4096, got, sizeof(got));
	size_format(rep->compressed_bytes, comp, sizeof(comp));
	printf("pid %u: evicted %s of %s asked (%llu pages) into %s compressed; "
	       "%llu pages refused, %llu scanned\n",
	       req.pid, got, want, (unsigned long long)rep->evicted_pages, comp,
	       (unsigned long long)rep->rejected_pages, (unsigned long long)rep->scanned_pages);
	return 0;
}

static int cmd_restore(int argc, char **argv)
{
	struct zs_restore req = { 0 };
	const struct zs_restore_reply *rep;
	const struct zs_hdr *h;
	char back[16], res[16];

	if (argc != 2)
		return usage(stderr, EXIT_USAGE);
	if (parse_pid(argv[1], &req.pid) < 0) {
		fprintf(stderr, "zswapctl: '%s' is not a process id\n", argv[1]);
		return EXIT_USAGE;
	}
	if (ctl_call(ZS_RESTORE, &req, sizeof(req), ZS_RESTORE_REPLY, &h) < 0)
		return 1;
	rep = proto_payload(h);
	size_format(rep->restored_pages * 4096, back, sizeof(back));
	size_format(rep->resident_bytes, res, sizeof(res));
	printf("pid %u: %s brought back (%llu pages), resident %s, no limit\n", req.pid, back,
	       (unsigned long long)rep->restored_pages, res);
	if (rep->left_pages) {
		fprintf(stderr, "zswapctl: pid %u: %llu pages could not be brought back\n", req.pid,
			(unsigned long long)rep->left_pages);
		return 1;
	}
	return 0;
}

/* The answer comes from the new binary, once it has taken over. */
static int cmd_upgrade(int argc, char **argv)
{
	const struct zs_upgrade_reply *rep;
	const struct zs_hdr *h;

	(void)argv;
	if (argc != 1)
		return usage(stderr, EXIT_USAGE);
	if (ctl_call(ZS_UPGRADE, NULL, 0, ZS_UPGRADE_REPLY, &h) < 0)
		return 1;
	rep = proto_payload(h);
	printf("upgraded in place: %u processes and %llu evicted pages handed over in %u ms, "
	       "none faulted back\n",
	       rep->processes, (unsigned long long)rep->pages, rep->msec);
	return 0;
}

/* limit --all [SIZE|none], limit --cgroup PATH [SIZE|none]; no SIZE: how it stands. */
static int cmd_limit_group(int argc, char **argv)
{
	struct zs_group req = { 0 };
	const struct zs_group_reply *rep;
	const struct zs_hdr *h;
	bool all = strcmp(argv[1], "--all") == 0;
	const char *size, *name;
	char bud[16], res[16], lim[16], use[16], ev[16], saved[16];

	if (all ? argc > 3 : argc < 3 || argc > 4)
		return usage(stderr, EXIT_USAGE);
	size = argc == (all ? 3 : 4) ? argv[argc - 1] : NULL;
	if (all) {
		req.flags = ZS_GROUP_ALL;
	} else if (argv[2][0] != '/' || strlen(argv[2]) >= sizeof(req.cgroup)) {
		fprintf(stderr, "zswapctl: '%s' is not a cgroup path (as /proc/PID/cgroup names it, "
				"e.g. /system.slice/foo.service)\n", argv[2]);
		return EXIT_USAGE;
	} else {
		strcpy(req.cgroup, argv[2]);
	}
	if (!size)
		req.flags |= ZS_GROUP_QUERY;
	else if (strcmp(size, "none") != 0 && (size_parse(size, &req.bytes) < 0 || req.bytes == 0)) {
		fprintf(stderr, "zswapctl: '%s' is not a size (e.g. 64M, 1G) or 'none'\n", size);
		return EXIT_USAGE;
	}
	if (ctl_call(ZS_GROUP, &req, sizeof(req), ZS_GROUP_REPLY, &h) < 0)
		return 1;
	rep = proto_payload(h);
	name = all ? "all served processes" : req.cgroup;
	size_format(rep->resident_bytes, res, sizeof(res));
	if (rep->budget_bytes) {
		size_format(rep->budget_bytes, bud, sizeof(bud));
		printf("%s: %u processes, resident %s, budget %s", name, rep->members, res, bud);
	} else {
		printf("%s: %u processes, resident %s, no budget", name, rep->members, res);
	}
	if (rep->limit_bytes) {
		size_format(rep->limit_bytes, lim, sizeof(lim));
		size_format(rep->usage_bytes, use, sizeof(use));
		printf("; cgroup limit %s followed, usage %s", lim, use);
	}
	size_format(rep->evicted_bytes, ev, sizeof(ev));
	size_format(rep->evicted_bytes > rep->compressed_bytes ?
			    rep->evicted_bytes - rep->compressed_bytes : 0, saved, sizeof(saved));
	printf("; evicted %s, saving %s; %llu refaults and %llu ms of stall a minute\n", ev, saved,
	       (unsigned long long)rep->refaults_per_min,
	       (unsigned long long)(rep->stall_usec_per_min / 1000));
	return 0;
}

static const char *group_name(const struct zs_group_info *gi, char *buf, size_t len)
{
	if (gi->flags & ZS_GROUP_ALL)
		return "all";
	snprintf(buf, len, "%.*s", (int)sizeof(gi->cgroup) - 1, gi->cgroup);
	return buf;
}

static void groups_prometheus_family(const struct zs_group_info *gi, size_t n, const char *name,
				     const char *type, const char *help, size_t off, double scale)
{
	printf("# HELP zswapd_group_%s %s\n# TYPE zswapd_group_%s %s\n", name, help, name, type);
	for (size_t i = 0; i < n; i++) {
		char buf[ZS_TARGET_CGROUP_LEN];
		uint64_t v;

		memcpy(&v, (const char *)&gi[i].figures + off, sizeof(v));
		printf("zswapd_group_%s{group=\"", name);
		print_label(group_name(&gi[i], buf, sizeof(buf)));
		printf("\"} %.17g\n", (double)v * scale);
	}
}

#define GROUP_FIELD(f) offsetof(struct zs_group_reply, f)

/* `groups`: every group with a budget or a followed cgroup limit. */
static int cmd_groups(int argc, char **argv)
{
	enum out_format fmt;
	const struct zs_group_info *gi;
	const struct zs_hdr *h;
	size_t n;
	bool json;

	if (parse_format(argc, argv, &fmt) < 0)
		return usage(stderr, EXIT_USAGE);
	json = fmt == JSON;
	if (ctl_call(ZS_GROUPS, NULL, 0, ZS_GROUPS_REPLY, &h) < 0)
		return 1;
	gi = proto_payload(h);
	n = h->len / sizeof(*gi);
	if (fmt == PROM) {
		groups_prometheus_family(gi, n, "resident_bytes", "gauge", "its processes' RssAnon",
					 GROUP_FIELD(resident_bytes), 1);
		groups_prometheus_family(gi, n, "budget_bytes", "gauge", "its budget, 0 = none",
					 GROUP_FIELD(budget_bytes), 1);
		groups_prometheus_family(gi, n, "cgroup_limit_bytes", "gauge",
					 "the cgroup limit followed, 0 = none", GROUP_FIELD(limit_bytes), 1);
		groups_prometheus_family(gi, n, "evicted_bytes", "gauge", "its processes' evicted memory",
					 GROUP_FIELD(evicted_bytes), 1);
		groups_prometheus_family(gi, n, "pool_bytes", "gauge", "what that takes in the pool",
					 GROUP_FIELD(compressed_bytes), 1);
		groups_prometheus_family(gi, n, "refaults_per_minute", "gauge",
					 "pages faulted back over the last minute",
					 GROUP_FIELD(refaults_per_min), 1);
		groups_prometheus_family(gi, n, "stall_seconds_per_minute", "gauge",
					 "its threads' wait on zswapd's faults over the last minute",
					 GROUP_FIELD(stall_usec_per_min), 1e-6);
		return 0;
	}
	if (json)
		putchar('[');
	else
		printf("%-32s %9s %10s %10s %10s %10s %10s %10s %10s\n", "GROUP", "PROCESSES",
		       "RESIDENT", "BUDGET", "CG LIMIT", "EVICTED", "SAVED", "REFAULT/M", "STALL/M");
	for (size_t i = 0; i < n; i++) {
		const struct zs_group_reply *f = &gi[i].figures;
		char buf[ZS_TARGET_CGROUP_LEN], res[16], bud[16] = "-", lim[16] = "-", ev[16], sv[16];
		uint64_t saved = f->evicted_bytes > f->compressed_bytes ?
					 f->evicted_bytes - f->compressed_bytes : 0;
		const char *name = group_name(&gi[i], buf, sizeof(buf));

		if (json) {
			printf("%s{\"group\":", i ? "," : "");
			print_json_string(name);
			printf(",\"members\":%u,\"resident_bytes\":%llu,\"budget_bytes\":%llu,"
			       "\"cgroup_limit_bytes\":%llu,\"cgroup_usage_bytes\":%llu,"
			       "\"evicted_bytes\":%llu,\"compressed_bytes\":%llu,\"saved_bytes\":%llu,"
			       "\"refaults_per_min\":%llu,\"stall_usec_per_min\":%llu}",
			       f->members, (unsigned long long)f->resident_bytes,
			       (unsigned long long)f->budget_bytes, (unsigned long long)f->limit_bytes,
			       (unsigned long long)f->usage_bytes, (unsigned long long)f->evicted_bytes,
			       (unsigned long long)f->compressed_bytes, (unsigned long long)saved,
			       (unsigned long long)f->refaults_per_min,
			       (unsigned long long)f->stall_usec_per_min);
			continue;
		}
		size_format(f->resident_bytes, res, sizeof(res));
		if (f->budget_bytes)
			size_format(f->budget_bytes, bud, sizeof(bud));
		if (f->limit_bytes)
			size_format(f->limit_bytes, lim, sizeof(lim));
		size_format(f->evicted_bytes, ev, sizeof(ev));
		size_format(saved, sv, sizeof(sv));
		sanitize_comm(buf);
		printf("%-32s %9u %10s %10s %10s %10s %10s %10llu %8llums\n", name, f->members, res, bud,
		       lim, ev, sv, (unsigned long long)f->refaults_per_min,
		       (unsigned long long)(f->stall_usec_per_min / 1000));
	}
	if (json)
		puts("]");
	return 0;
}

static int cmd_limit(int argc, char **argv)
{
	struct zs_limit req = { 0 };
	const struct zs_limit_reply *rep;
	const struct zs_hdr *h;
	char lim[16], res[16];

	if (argc >= 2 && (!strcmp(argv[1], "--all") || !strcmp(argv[1], "--cgroup")))
		return cmd_limit_group(argc, argv);
	if (argc != 3)
		return usage(stderr, EXIT_USAGE);
	if (parse_pid(argv[1], &req.pid) < 0) {
		fprintf(stderr, "zswapctl: '%s' is not a process id\n", argv[1]);
		return EXIT_USAGE;
	}
	if (strcmp(argv[2], "none") != 0 && (size_parse(argv[2], &req.bytes) < 0 || req.bytes == 0)) {
		fprintf(stderr, "zswapctl: '%s' is not a size (e.g. 64M, 1G) or 'none'\n", argv[2]);
		return EXIT_USAGE;
	}
	if (ctl_call(ZS_LIMIT, &req, sizeof(req), ZS_LIMIT_REPLY, &h) < 0)
		return 1;
	rep = proto_payload(h);
	size_format(rep->resident_bytes, res, sizeof(res));
	if (rep->limit_bytes) {
		size_format(rep->limit_bytes, lim, sizeof(lim));
		printf("pid %u: resident anonymous memory limited to %s (now %s)\n", req.pid, lim, res);
	} else {
		printf("pid %u: no limit (resident %s)\n", req.pid, res);
	}
	return 0;
}

/* libzswap.so next to us (the build tree) or in ../lib (an install). */
static int find_shim(char *buf, size_t len)
{
	static const char *const rel[] = { "libzswap.so", "../lib/libzswap.so",
					   "../lib/zswapd/libzswap.so" };
	char exe[PATH_MAX], *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		slash[1] = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		struct stat stbuf;

		snprintf(buf, len, "%s%s", exe, rel[i]);
		if (stat(buf, &stbuf) == 0) {
			char *real = realpath(buf, NULL);

			if (real) {
				snprintf(buf, len, "%s", real);
				free(real);
			}
			return 0;
		}
	}
	return -ENOENT;
}

static int cmd_run(int argc, char **argv)
{
	char shim[PATH_MAX], *preload;
	const char *old;
	int i = 1;

	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		return usage(stderr, EXIT_USAGE);
	if (find_shim(shim, sizeof(shim)) < 0) {
		fprintf(stderr, "zswapctl: cannot find libzswap.so next to zswapctl or in ../lib\n");
		return 1;
	}
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		if (asprintf(&preload, "%s:%s", shim, old) < 0)
			return 1;
	} else {
		preload = shim;
	}
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[i], argv + i);
	fprintf(stderr, "zswapctl: cannot run %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "stats", cmd_stats },
		{ "list", cmd_list },
		{ "reclaim", cmd_reclaim },
		{ "limit", cmd_limit },
		{ "groups", cmd_groups },
		{ "restore", cmd_restore },
		{ "upgrade", cmd_upgrade },
		{ "run", cmd_run },
	};

	if (argc < 2)
		return usage(stderr, EXIT_USAGE);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0)
		return usage(stdout, 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) == 0) {
			if (argc == 3 && strcmp(argv[2], "--help") == 0)
				return usage(stdout, 0);
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "zswapctl: unknown command '%s'\n", argv[1]);
	return usage(stderr, EXIT_USAGE);
}
