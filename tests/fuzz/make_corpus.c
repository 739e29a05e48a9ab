// SPDX-License-Identifier: GPL-2.0-only
/*
 * make_corpus.c - writes the seed corpus of fuzz_proto: one well-formed
 * datagram of every message type of include/zswap_proto.h (two where a
 * flag or an array length changes which checks run), one file each.
 *
 * A C program rather than a shell script of printf escapes so that the
 * seeds are built from the header's own structs: when a struct grows, the
 * seeds follow at the next `make fuzz-corpus` instead of silently turning
 * into malformed messages that only exercise the first length check.
 *
 * Every seed is put through proto_check() before it is written: a seed the
 * checker refuses (a struct's tail padding counted into len, say) would
 * leave the fuzzer starting from nothing for that type.
 *
 * Usage: make_corpus DIR   (DIR must exist; files in it are overwritten)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define PAGE UINT64_C(4096)

static const char *out_dir;
static int failed;

/*
 * Header, then the payload's fixed part and its array, into DIR/name: one
 * datagram exactly as proto_send() would send it.
 */
static void put2(const char *name, uint16_t type, const void *head, size_t head_len,
		 const void *tail, size_t tail_len)
{
	static uint64_t msg[ZS_MSG_MAX / sizeof(uint64_t)];
	struct zs_hdr h = { .magic = ZS_MAGIC, .version = ZS_VERSION, .type = type,
			    .len = (uint32_t)(head_len + tail_len), .seq = 1 };
	size_t len = sizeof(h) + head_len + tail_len;
	const struct zs_hdr *checked;
	char path[4096];
	FILE *f;
	int r;

	memcpy(msg, &h, sizeof(h));
	if (head_len)
		memcpy((char *)msg + sizeof(h), head, head_len);
	if (tail_len)
		memcpy((char *)msg + sizeof(h) + head_len, tail, tail_len);
	r = proto_check(msg, len, &checked);
	if (r < 0) {
		fprintf(stderr, "make_corpus: %s: proto_check refuses it: %s\n", name, strerror(-r));
		failed = 1;
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", out_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(msg, len, 1, f) != 1 || fclose(f) != 0) {
		fprintf(stderr, "make_corpus: %s: %s\n", path, strerror(errno));
		failed = 1;
	}
}

static void put(const char *name, uint16_t type, const void *payload, size_t len)
{
	put2(name, type, payload, len, NULL, 0);
}

int main(int argc, char **argv)
{
	/* Flexible-array structs: the fixed part, then the entries. */
	struct zs_agent agent = { 4242, 2 };
	struct zs_range excl[2] = { { 0x7f0000000000, 0x21000 }, { 0x7f0000021000, PAGE } };
	struct zs_evict evict = { 7, 3, 0 };
	struct zs_run runs[3] = { { 0x7f0000100000, 16, 0 },
				  { 0x7f0000200000, 1, 16 },
				  { (UINT64_C(1) << 48) - 2 * PAGE, 1, 17 } };
	struct zs_evict_done done = { 7, 3, 0 };
	int32_t result[3] = { 16, -EFAULT, 1 };
	struct zs_error error = { -ESRCH };
	static const char error_msg[] = "pid 4242 is not served by zswapd";
	struct zs_stat stats[3] = { { "stored_pages", 49152 },
				    { "pool_total_size", 25165824 },
				    { "proto_errors", 0 } };
	struct zs_target_info list[2] = {
		{ .pid = 4242, .comm = "redis-server", .resident_pages = 16384,
		  .evicted_pages = 49152, .compressed_bytes = 25165824, .stores = 50000,
		  .loads = 848 },
		{ .pid = 4243, .comm = "memtest" },
	};
	struct zs_hello hello = { 4242, 0 }, hello_forked = { 4243, ZS_HELLO_FORKED };
	/* What tests/integration/hostile.c sends: a pid that is not the
	 * sender's (a stale connection's, a container's own), an agent with no
	 * excluded range, every run of a batch said vanished, or more pages
	 * taken than the run had. */
	struct zs_hello hello_other = { 1, 0 }, hello_forked_other = { 1, ZS_HELLO_FORKED };
	struct zs_agent agent_bare = { 1, 0 };
	struct zs_evict_done done_vanished = { 8, 2, 0 }, done_over = { 9, 1, 0 };
	int32_t result_vanished[2] = { -EFAULT, -EFAULT }, result_over[1] = { 99999 };
	struct zs_uffd uffd = { 0x7f0000022000 };
	struct zs_ready ready = { 256, 4096, 0, 0 };
	struct zs_reclaim reclaim = { 4242, 0, 192u << 20 };
	struct zs_reclaim_reply reclaim_reply = { 49152, 25165824, 120, 65536 };
	struct zs_limit limit = { 4242, 0, 64u << 20 }, limit_none = { 4242, 0, 0 };
	struct zs_limit_reply limit_reply = { 64u << 20, 256u << 20 };
	struct zs_group group_all = { .bytes = 8ull << 30, .flags = ZS_GROUP_ALL };
	struct zs_group group_cg = { .bytes = 2ull << 30, .cgroup = "/system.slice/foo.service" };
	struct zs_group_info groups_reply[2] = {
		{ .flags = ZS_GROUP_ALL, .figures = { .budget_bytes = 8ull << 30, .members = 12 } },
		{ .cgroup = "/system.slice/foo.service", .flags = ZS_GROUP_FOLLOWS,
		  .figures = { .limit_bytes = 2ull << 30, .members = 3 } },
	};
	struct zs_group_reply group_reply = { 2ull << 30, 3ull << 30, 1ull << 30, 1536ull << 20, 3, 0,
					      4ull << 30, 1ull << 30, 1200, 30000 };

	if (argc != 2) {
		fprintf(stderr, "Usage: make_corpus DIR\n");
		return 2;
	}
	out_dir = argv[1];
	put("hello", ZS_HELLO, &hello, sizeof(hello));
	put("hello-forked", ZS_HELLO, &hello_forked, sizeof(hello_forked));
	put("uffd", ZS_UFFD, &uffd, sizeof(uffd));
	put2("agent", ZS_AGENT, &agent, sizeof(agent), excl, sizeof(excl));
	put2("evict-done", ZS_EVICT_DONE, &done, sizeof(done), result, sizeof(result));
	put("devfd", ZS_DEVFD, NULL, 0);
	put("ready", ZS_READY, &ready, sizeof(ready));
	put2("evict", ZS_EVICT, &evict, sizeof(evict), runs, sizeof(runs));
	put("bye", ZS_BYE, NULL, 0);
	put("stats", ZS_STATS, NULL, 0);
	put("list", ZS_LIST, NULL, 0);
	put("reclaim", ZS_RECLAIM, &reclaim, sizeof(reclaim));
	put("limit", ZS_LIMIT, &limit, sizeof(limit));
	put("limit-none", ZS_LIMIT, &limit_none, sizeof(limit_none));
	put("stats-reply", ZS_STATS_REPLY, stats, sizeof(stats));
	put("list-reply", ZS_LIST_REPLY, list, sizeof(list));
	put("reclaim-reply", ZS_RECLAIM_REPLY, &reclaim_reply, sizeof(reclaim_reply));
	put("limit-reply", ZS_LIMIT_REPLY, &limit_reply, sizeof(limit_reply));
	put("group-all", ZS_GROUP, &group_all, sizeof(group_all));
	put("group-cgroup", ZS_GROUP, &group_cg, sizeof(group_cg));
	put("group-reply", ZS_GROUP_REPLY, &group_reply, sizeof(group_reply));
	put("groups", ZS_GROUPS, NULL, 0);
	put("groups-reply", ZS_GROUPS_REPLY, groups_reply, sizeof(groups_reply));
	put("hello-other-pid", ZS_HELLO, &hello_other, sizeof(hello_other));
	put("hello-forked-other-pid", ZS_HELLO, &hello_forked_other, sizeof(hello_forked_other));
	put("agent-bare", ZS_AGENT, &agent_bare, sizeof(agent_bare));
	put2("evict-done-vanished", ZS_EVICT_DONE, &done_vanished, sizeof(done_vanished),
	     result_vanished, sizeof(result_vanished));
	put2("evict-done-over", ZS_EVICT_DONE, &done_over, sizeof(done_over), result_over,
	     sizeof(result_over));
	/* the message's NUL is the payload's last byte, as proto_send_error() sends it */
	put2("error", ZS_ERROR, &error, sizeof(error), error_msg, sizeof(error_msg));
	return failed;
}
