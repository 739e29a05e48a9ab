// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_proto.c - the wire protocol: every message type through a real
 * SOCK_SEQPACKET socketpair (descriptors included), a table of malformed
 * datagrams that proto_check() and proto_recv() must refuse with the right
 * code and without leaking a descriptor, and a deterministic fuzz loop.
 *
 * Datagrams handed to proto_check() are copied into heap blocks of exactly
 * their length, so under -fsanitize=address any read past the end is caught.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "proto.h"

#define HDR sizeof(struct zs_hdr)
#define PAYLOAD_MAX (ZS_MSG_MAX - HDR)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PAGE UINT64_C(4096)
#define ADDR_LIMIT (UINT64_C(1) << 48)

/* Same layouts as the flexible-array structs, with room for a few entries. */
struct agent_n {
	uint32_t tid, nexcl;
	struct zs_range excl[ZS_AGENT_MAX_EXCL + 1];
};

struct evict_n {
	uint64_t batch;
	uint32_t nruns, pad;
	struct zs_run runs[3];
};

struct done_n {
	uint64_t batch;
	uint32_t nruns, pad;
	int32_t result[3];
};

struct error_n {
	int32_t err;
	char msg[12];
};

#define RANGE(i) { 0x10000 * (i + 1), 0x2000 }
#define AGENT_FULL                                                                               \
	{                                                                                        \
		RANGE(0), RANGE(1), RANGE(2), RANGE(3), RANGE(4), RANGE(5), RANGE(6), RANGE(7) \
	}

struct msg_case {
	const char *name;
	uint16_t type;
	const void *payload;
	size_t len;
};

/* One or more well-formed messages of every type. */
static const struct msg_case valid[] = {
	{ "hello", ZS_HELLO, &(const struct zs_hello){ 1234, 0 }, sizeof(struct zs_hello) },
	{ "hello forked", ZS_HELLO, &(const struct zs_hello){ 1235, ZS_HELLO_FORKED }, 8 },
	{ "uffd", ZS_UFFD, &(const struct zs_uffd){ 0x7f0000001000 }, sizeof(struct zs_uffd) },
	{ "agent none", ZS_AGENT, &(const struct agent_n){ 77, 0, { { 0, 0 } } }, 8 },
	{ "agent one", ZS_AGENT, &(const struct agent_n){ 77, 1, { { 0x7f0000000000, 0x3000 } } },
	  8 + 16 },
	{ "agent full", ZS_AGENT, &(const struct agent_n){ 77, ZS_AGENT_MAX_EXCL, AGENT_FULL },
	  8 + 16 * ZS_AGENT_MAX_EXCL },
	{ "evict done", ZS_EVICT_DONE, &(const struct done_n){ 9, 3, 0, { 16, -EFAULT, 1 } },
	  16 + 3 * 4 },
	{ "devfd", ZS_DEVFD, NULL, 0 },
	{ "ready", ZS_READY, &(const struct zs_ready){ 1024, 4096, 0, 0 }, sizeof(struct zs_ready) },
	{ "evict one", ZS_EVICT, &(const struct evict_n){ 9, 1, 0, { { 0x1000, 1, 0 } } }, 32 },
	{ "evict three", ZS_EVICT,
	  &(const struct evict_n){ 10,
				   3,
				   0,
				   { { 0x7f0000000000, 16, 0 },
				     { 0x7f0000100000, 1, 16 },
				     { ADDR_LIMIT - 2 * PAGE, 1, 17 } } },
	  16 + 3 * 16 },
	{ "evict longest run", ZS_EVICT,
	  &(const struct evict_n){ 11, 1, 0, { { 0xf00000000000, UINT32_MAX, 0 } } }, 32 },
	{ "bye", ZS_BYE, NULL, 0 },
	{ "stats", ZS_STATS, NULL, 0 },
	{ "list", ZS_LIST, NULL, 0 },
	{ "reclaim", ZS_RECLAIM, &(const struct zs_reclaim){ 4321, 0, 1 << 20 },
	  sizeof(struct zs_reclaim) },
	{ "limit", ZS_LIMIT, &(const struct zs_limit){ 4321, 0, 1 << 20 }, sizeof(struct zs_limit) },
	{ "limit none", ZS_LIMIT, &(const struct zs_limit){ 4321, 0, 0 }, sizeof(struct zs_limit) },
	{ "limit reply", ZS_LIMIT_REPLY, &(const struct zs_limit_reply){ 1 << 20, 5 << 20 },
	  sizeof(struct zs_limit_reply) },
	{ "restore", ZS_RESTORE, &(const struct zs_restore){ 4321, 0 }, sizeof(struct zs_restore) },
	{ "restore reply", ZS_RESTORE_REPLY, &(const struct zs_restore_reply){ 256, 0, 5 << 20 },
	  sizeof(struct zs_restore_reply) },
	{ "group all", ZS_GROUP, &(const struct zs_group){ .bytes = 1 << 30, .flags = ZS_GROUP_ALL },
	  sizeof(struct zs_group) },
	{ "group cgroup query", ZS_GROUP,
	  &(const struct zs_group){ .flags = ZS_GROUP_QUERY, .cgroup = "/system.slice" },
	  sizeof(struct zs_group) },
	{ "groups", ZS_GROUPS, NULL, 0 },
	{ "upgrade", ZS_UPGRADE, NULL, 0 },
	{ "upgrade reply", ZS_UPGRADE_REPLY, &(const struct zs_upgrade_reply){ 262144, 12, 320 },
	  sizeof(struct zs_upgrade_reply) },
	{ "groups reply empty", ZS_GROUPS_REPLY, NULL, 0 },
	{ "groups reply", ZS_GROUPS_REPLY,
	  (const struct zs_group_info[]){ { .flags = ZS_GROUP_ALL },
					  { .cgroup = "/a.slice", .flags = ZS_GROUP_FOLLOWS } },
	  2 * sizeof(struct zs_group_info) },
	{ "group reply", ZS_GROUP_REPLY, &(const struct zs_group_reply){ .budget_bytes = 1 << 30, .resident_bytes = 5 << 20, .members = 3 },
	  sizeof(struct zs_group_reply) },
	{ "stats reply empty", ZS_STATS_REPLY, NULL, 0 },
	{ "stats reply", ZS_STATS_REPLY,
	  (const struct zs_stat[]){ { "stored_pages", 42 },
				    { "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 7 } },
	  2 * sizeof(struct zs_stat) },
	{ "list reply", ZS_LIST_REPLY,
	  (const struct zs_target_info[]){ { 1, 0, "redis-server", 100, 50, 9000, 60, 10, 1, 0, 5,
					     400, 40, 10, 1, 0, "/system.slice/redis.service" },
					   { 2, 1, "xxxxxxxxxxxxxxx", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
					     12, 0, "" } },
	  2 * sizeof(struct zs_target_info) },
	{ "reclaim reply", ZS_RECLAIM_REPLY, &(const struct zs_reclaim_reply){ 256, 400000, 3, 300 },
	  sizeof(struct zs_reclaim_reply) },
	{ "error", ZS_ERROR, &(const struct error_n){ -ENOENT, "no such pid" }, 4 + 12 },
	{ "error empty", ZS_ERROR, &(const struct error_n){ -EIO, "" }, 5 },
};

static const uint16_t all_types[] = {
	ZS_HELLO,	ZS_UFFD,	ZS_AGENT,	  ZS_EVICT_DONE,    ZS_DEVFD,
	ZS_READY,	ZS_EVICT,	ZS_BYE,		  ZS_STATS,	    ZS_LIST,
	ZS_RECLAIM,	ZS_STATS_REPLY, ZS_LIST_REPLY, ZS_RECLAIM_REPLY, ZS_ERROR,
	ZS_LIMIT,	ZS_LIMIT_REPLY, ZS_RESTORE,	  ZS_RESTORE_REPLY, ZS_GROUP,
	ZS_GROUP_REPLY, ZS_GROUPS,	ZS_GROUPS_REPLY, ZS_UPGRADE,	    ZS_UPGRADE_REPLY,
};

/* Writes header and payload into buf; returns the datagram length. */
static size_t build(void *buf, uint16_t type, uint32_t seq, const void *payload, size_t len)
{
	struct zs_hdr h = {
		.magic = ZS_MAGIC, .version = ZS_VERSION, .type = type, .len = (uint32_t)len, .seq = seq
	};

	memcpy(buf, &h, HDR);
	if (len)
		memcpy((char *)buf + HDR, payload, len);
	return HDR + len;
}

/* proto_check() on an exact-size heap copy, so ASan sees any overread. */
static int check_bytes(const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);
	const struct zs_hdr *h = NULL;
	int r;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, data, len);
	r = proto_check(copy, len, &h);
	if (r == 0)
		ck_assert_ptr_eq(h, copy);
	else
		ck_assert_ptr_null(h);
	free(copy);
	return r;
}

static void pair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static uint64_t *rbuf_new(void)
{
	uint64_t *b = malloc(ZS_MSG_MAX);

	ck_assert_ptr_nonnull(b);
	return b;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* sendmsg() of raw bytes with any number of descriptors. */
static void raw_send(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 32)];
	} ctl;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	ck_assert_int_le(nfds, 32);
	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ck_assert_int_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

START_TEST(test_valid_check)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	size_t n = build(buf, valid[_i].type, 1, valid[_i].payload, valid[_i].len);
	int r = check_bytes(buf, n);

	ck_assert_msg(r == 0, "%s: %d", valid[_i].name, r);
}
END_TEST

START_TEST(test_every_type_covered)
{
	for (size_t t = 0; t < ARRAY_LEN(all_types); t++) {
		bool found = false;

		for (size_t i = 0; i < ARRAY_LEN(valid); i++)
			found |= valid[i].type == all_types[t];
		ck_assert_msg(found, "type %u has no valid case", all_types[t]);
	}
}
END_TEST

START_TEST(test_round_trip)
{
	const struct msg_case *m = &valid[_i];
	uint64_t *b = rbuf_new();
	const struct zs_hdr *h;
	int sv[2], fds[2] = { -1, -1 }, nfds = -1;
	ssize_t n;

	pair(sv);
	ck_assert_int_eq(proto_send(sv[0], m->type, 0xabcd0000u + (uint32_t)_i, m->payload, m->len,
				    NULL, 0),
			 0);
	n = proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds);
	ck_assert_msg(n == (ssize_t)(HDR + m->len), "%s: %zd", m->name, n);
	ck_assert_int_eq(nfds, 0);
	h = (const struct zs_hdr *)b;
	ck_assert_uint_eq(h->magic, ZS_MAGIC);
	ck_assert_uint_eq(h->version, ZS_VERSION);
	ck_assert_uint_eq(h->type, m->type);
	ck_assert_uint_eq(h->len, m->len);
	ck_assert_uint_eq(h->seq, 0xabcd0000u + (uint32_t)_i);
	if (m->len)
		ck_assert_mem_eq(proto_payload(h), m->payload, m->len);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* The largest EVICT that fits: 4094 runs make exactly ZS_MSG_MAX. */
START_TEST(test_evict_max)
{
	size_t nruns = (PAYLOAD_MAX - 16) / sizeof(struct zs_run), len = 16 + nruns * 16;
	struct zs_evict *e = calloc(1, len + sizeof(struct zs_run));
	uint64_t *b = rbuf_new();
	int sv[2], nfds;

	ck_assert_uint_eq(nruns, 4094);
	e->batch = 1;
	e->nruns = (uint32_t)nruns;
	for (size_t i = 0; i < nruns; i++)
		e->runs[i] = (struct zs_run){ 0x10000000 + i * 2 * PAGE, 1, (uint32_t)i };
	pair(sv);
	ck_assert_int_eq(proto_send(sv[0], ZS_EVICT, 5, e, len, NULL, 0), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), ZS_MSG_MAX);
	ck_assert_mem_eq(proto_payload((const struct zs_hdr *)b), e, len);

	/* one run more no longer fits */
	e->nruns++;
	ck_assert_int_eq(proto_send(sv[0], ZS_EVICT, 5, e, len + 16, NULL, 0), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
	free(b);
	free(e);
}
END_TEST

/* DEVFD with a pipe's write end: what goes into the received fd comes out of the pipe. */
START_TEST(test_fd_passing)
{
	uint64_t *b = rbuf_new();
	int sv[2], p[2], fds[2] = { -1, -1 }, nfds = -1;
	char c = 0;

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(proto_send(sv[0], ZS_DEVFD, 3, NULL, 0, &p[1], 1), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds), (ssize_t)HDR);
	ck_assert_int_eq(nfds, 1);
	ck_assert_int_ne(fds[0], p[1]);
	ck_assert_int_eq(fds[1], -1);
	ck_assert_int_eq(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(p[1]);
	ck_assert_int_eq(write(fds[0], "z", 1), 1);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	ck_assert_int_eq(c, 'z');
	close(fds[0]);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* READY with both descriptors, as after fork: staging memfd and a pipe. */
START_TEST(test_fd_passing_two)
{
	struct zs_ready ready = { 16, 4096, 0, 0 };
	uint64_t *b = rbuf_new();
	int sv[2], p[2], send_fds[2], fds[2] = { -1, -1 }, nfds = -1;
	char got[6] = "";

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	send_fds[0] = memfd_create("staging", MFD_CLOEXEC);
	ck_assert_int_ge(send_fds[0], 0);
	send_fds[1] = p[1];
	ck_assert_int_eq(proto_send(sv[0], ZS_READY, 4, &ready, sizeof(ready), send_fds, 2), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds),
			 (ssize_t)(HDR + sizeof(ready)));
	ck_assert_int_eq(nfds, 2);
	ck_assert_mem_eq(proto_payload((const struct zs_hdr *)b), &ready, sizeof(ready));
	ck_assert_int_eq(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(fcntl(fds[1], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

	ck_assert_int_eq(pwrite(fds[0], "pages", 5, 4096), 5);
	ck_assert_int_eq(pread(send_fds[0], got, 5, 4096), 5);
	ck_assert_str_eq(got, "pages");
	close(p[1]);
	ck_assert_int_eq(write(fds[1], "p", 1), 1);
	ck_assert_int_eq(read(p[0], got, 1), 1);
	ck_assert_int_eq(got[0], 'p');

	close(fds[0]);
	close(fds[1]);
	close(send_fds[0]);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* Descriptors beyond maxfds are closed, whatever their number. */
START_TEST(test_extra_fds_closed)
{
	uint64_t *b = rbuf_new();
	int sv[2], p[2], many[3], fds[2] = { -1, -1 }, nfds = -1, base;
	uint64_t dg[2];
	size_t n = build(dg, ZS_BYE, 1, NULL, 0);

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	base = count_fds();

	/* two sent, one wanted */
	ck_assert_int_eq(proto_send(sv[0], ZS_DEVFD, 1, NULL, 0, p, 2), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 1, &nfds), (ssize_t)HDR);
	ck_assert_int_eq(nfds, 1);
	ck_assert_int_eq(fds[1], -1);
	ck_assert_int_eq(count_fds(), base + 1);
	close(fds[0]);

	/* none wanted */
	ck_assert_int_eq(proto_send(sv[0], ZS_DEVFD, 1, NULL, 0, p, 2), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), (ssize_t)HDR);
	ck_assert_int_eq(nfds, 0);
	ck_assert_int_eq(count_fds(), base);

	/* more than PROTO_MAX_FDS, from a peer that does not use proto_send() */
	many[0] = p[0];
	many[1] = p[1];
	many[2] = p[0];
	raw_send(sv[0], dg, n, many, 3);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds), (ssize_t)HDR);
	ck_assert_int_eq(nfds, 2);
	ck_assert_int_eq(count_fds(), base + 2);
	close(fds[0]);
	close(fds[1]);
	ck_assert_int_eq(count_fds(), base);

	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* Far too many descriptors: MSG_CTRUNC, -EMSGSIZE, nothing left open. */
START_TEST(test_ctrunc)
{
	uint64_t *b = rbuf_new();
	int sv[2], p[2], many[32], fds[2] = { -1, -1 }, nfds = -7, base;
	uint64_t dg[2];
	size_t n = build(dg, ZS_BYE, 1, NULL, 0);

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < 32; i++)
		many[i] = p[i & 1];
	base = count_fds();
	raw_send(sv[0], dg, n, many, 32);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds), -EMSGSIZE);
	ck_assert_int_eq(nfds, -7);
	ck_assert_int_eq(fds[0], -1);
	ck_assert_int_eq(count_fds(), base);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* 70000 bytes with a descriptor: -EMSGSIZE and the descriptor closed. */
START_TEST(test_oversized)
{
	size_t big = 70000;
	unsigned char *data = calloc(1, big);
	uint64_t *b = rbuf_new();
	int sv[2], p[2], fds[2] = { -1, -1 }, nfds = -7, base, sndbuf = 1 << 20;
	struct zs_hdr h = { ZS_MAGIC, ZS_VERSION, ZS_STATS_REPLY, (uint32_t)(big - HDR), 1 };

	ck_assert_ptr_nonnull(data);
	memcpy(data, &h, HDR);
	pair(sv);
	ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	base = count_fds();
	raw_send(sv[0], data, big, &p[1], 1);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds), -EMSGSIZE);
	ck_assert_int_eq(nfds, -7);
	ck_assert_int_eq(count_fds(), base);

	/* the same bytes are refused by proto_check() too */
	ck_assert_int_eq(check_bytes(data, big), -EBADMSG);
	ck_assert_int_eq(check_bytes(data, ZS_MSG_MAX + 1), -EBADMSG);

	/* and proto_send() will not produce one */
	ck_assert_int_eq(proto_send(sv[0], ZS_STATS_REPLY, 1, data, PAYLOAD_MAX + 1, NULL, 0),
			 -EMSGSIZE);
	ck_assert_int_eq(proto_send(sv[0], ZS_STATS_REPLY, 1, data, SIZE_MAX, NULL, 0), -EMSGSIZE);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	free(b);
	free(data);
}
END_TEST

START_TEST(test_send_error)
{
	size_t huge = 100000;
	char *msg = malloc(huge + 1);
	uint64_t *b = rbuf_new();
	const struct zs_hdr *h = (const struct zs_hdr *)b;
	const struct zs_error *e;
	int sv[2], nfds;

	ck_assert_ptr_nonnull(msg);
	pair(sv);
	ck_assert_int_eq(proto_send_error(sv[0], 77, -ESRCH, "no such process"), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), (ssize_t)(HDR + 4 + 16));
	e = proto_payload(h);
	ck_assert_uint_eq(h->type, ZS_ERROR);
	ck_assert_uint_eq(h->seq, 77);
	ck_assert_int_eq(e->err, -ESRCH);
	ck_assert_str_eq(e->msg, "no such process");

	ck_assert_int_eq(proto_send_error(sv[0], 78, -EIO, NULL), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), (ssize_t)(HDR + 5));
	ck_assert_str_eq(e->msg, "");

	/* too long: cut so that the datagram is exactly ZS_MSG_MAX */
	memset(msg, 'm', huge);
	msg[huge] = '\0';
	ck_assert_int_eq(proto_send_error(sv[0], 79, -E2BIG, msg), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), ZS_MSG_MAX);
	ck_assert_int_eq(e->err, -E2BIG);
	ck_assert_uint_eq(strlen(e->msg), ZS_MSG_MAX - HDR - 4 - 1);
	close(sv[0]);
	close(sv[1]);
	free(b);
	free(msg);
}
END_TEST

START_TEST(test_recv_eof_and_eagain)
{
	uint64_t *b = rbuf_new();
	int sv[2], nfds = -7;

	pair(sv);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), -EAGAIN);
	ck_assert_int_eq(nfds, -7);
	close(sv[0]);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), 0);
	ck_assert_int_eq(nfds, 0);
	close(sv[1]);
	free(b);
}
END_TEST

/* MSG_NOSIGNAL: a dead peer is -EPIPE, and this process is still alive. */
START_TEST(test_send_epipe)
{
	int sv[2];

	pair(sv);
	close(sv[1]);
	ck_assert_int_eq(proto_send(sv[0], ZS_BYE, 1, NULL, 0, NULL, 0), -EPIPE);
	ck_assert_int_eq(proto_send_error(sv[0], 1, -EIO, "x"), -EPIPE);
	close(sv[0]);
}
END_TEST

START_TEST(test_bad_arguments)
{
	uint64_t *b = rbuf_new();
	const struct zs_hdr *h = (const void *)0x1;
	int sv[2], fds[3] = { 0, 0, 0 }, nfds = -7;
	size_t n;

	pair(sv);
	n = build(b, ZS_BYE, 1, NULL, 0);
	ck_assert_int_eq(proto_check((char *)b + 4, n, &h), -EINVAL);
	ck_assert_int_eq(proto_check(NULL, n, &h), -EINVAL);
	ck_assert_ptr_eq(h, (const void *)0x1);
	ck_assert_int_eq(proto_send(sv[0], ZS_BYE, 1, NULL, 0, fds, 3), -EINVAL);
	ck_assert_int_eq(proto_send(sv[0], ZS_BYE, 1, NULL, 0, fds, -1), -EINVAL);
	ck_assert_int_eq(proto_send(sv[0], ZS_BYE, 1, NULL, 0, NULL, 1), -EINVAL);
	ck_assert_int_eq(proto_send(sv[0], ZS_HELLO, 1, NULL, 8, NULL, 0), -EINVAL);

	ck_assert_int_eq(proto_send(sv[0], ZS_BYE, 1, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(proto_recv(sv[1], (char *)b + 4, ZS_MSG_MAX, NULL, 0, &nfds), -EINVAL);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX - 1, NULL, 0, &nfds), -EINVAL);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 1, &nfds), -EINVAL);
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, fds, -1, &nfds), -EINVAL);
	ck_assert_int_eq(nfds, -7);
	/* the message is still there for a correct call */
	ck_assert_int_eq(proto_recv(sv[1], b, ZS_MSG_MAX, NULL, 0, &nfds), (ssize_t)HDR);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/*
 * Malformed datagrams.  Each is a header over a payload, then tweaked:
 * magic xor-ed, version moved, hdr.len moved, or bytes cut off the end.
 */
struct bad_case {
	const char *name;
	uint16_t type;
	const void *payload;
	size_t len;
	int want;
	uint32_t magic_xor;
	int version_add;
	int64_t len_add;
	size_t cut;
};

#define BYTES(...) (const unsigned char[]){ __VA_ARGS__ }
/* unterminated strings, spelled so no compiler warns about them */
#define X4 'x', 'x', 'x', 'x'
#define X16 X4, X4, X4, X4
#define X40 X16, X16, X4, X4
#define ERRNO_BYTES 0xfb, 0xff, 0xff, 0xff /* -5 */

static const struct bad_case bad[] = {
	/* header */
	{ "empty datagram", ZS_BYE, NULL, 0, .want = -EBADMSG, .cut = HDR },
	{ "truncated header", ZS_BYE, NULL, 0, .want = -EBADMSG, .cut = 1 },
	{ "half a header", ZS_BYE, NULL, 0, .want = -EBADMSG, .cut = 8 },
	{ "bad magic", ZS_BYE, NULL, 0, .want = -EPROTO, .magic_xor = 0x1 },
	{ "byte-swapped magic", ZS_BYE, NULL, 0, .want = -EPROTO, .magic_xor = ZS_MAGIC ^ 0x5057535au },
	{ "version 0", ZS_BYE, NULL, 0, .want = -EPROTO, .version_add = -1 },
	{ "version 2", ZS_BYE, NULL, 0, .want = -EPROTO, .version_add = 1 },
	{ "bad magic beats bad len", ZS_BYE, NULL, 0, .want = -EPROTO, .magic_xor = 0x100, .len_add = 3 },
	{ "len one more", ZS_HELLO, &(const struct zs_hello){ 1, 0 }, 8, .want = -EBADMSG, .len_add = 1 },
	{ "len one less", ZS_HELLO, &(const struct zs_hello){ 1, 0 }, 8, .want = -EBADMSG, .len_add = -1 },
	{ "len huge", ZS_BYE, NULL, 0, .want = -EBADMSG, .len_add = 0xffffffff },
	{ "payload cut", ZS_HELLO, &(const struct zs_hello){ 1, 0 }, 8, .want = -EBADMSG, .cut = 4 },
	{ "type 0", 0, NULL, 0, .want = -EBADMSG },
	{ "type 5", 5, NULL, 0, .want = -EBADMSG },
	{ "type 51", 51, NULL, 0, .want = -EBADMSG },
	{ "type 0xffff", 0xffff, NULL, 0, .want = -EBADMSG },
	/* HELLO */
	{ "hello short", ZS_HELLO, BYTES(1, 0, 0, 0, 0, 0, 0), 7, .want = -EBADMSG },
	{ "hello long", ZS_HELLO, BYTES(1, 0, 0, 0, 0, 0, 0, 0, 0), 9, .want = -EBADMSG },
	{ "hello empty", ZS_HELLO, NULL, 0, .want = -EBADMSG },
	{ "hello flag 2", ZS_HELLO, &(const struct zs_hello){ 1, 2 }, 8, .want = -EBADMSG },
	{ "hello flag 3", ZS_HELLO, &(const struct zs_hello){ 1, 3 }, 8, .want = -EBADMSG },
	{ "hello flag top", ZS_HELLO, &(const struct zs_hello){ 1, 0x80000000u }, 8, .want = -EBADMSG },
	/* UFFD */
	{ "uffd beacon 0", ZS_UFFD, &(const struct zs_uffd){ 0 }, 8, .want = -EBADMSG },
	{ "uffd beacon unaligned", ZS_UFFD, &(const struct zs_uffd){ 0x7f0000001008 }, 8, .want = -EBADMSG },
	{ "uffd beacon 4095", ZS_UFFD, &(const struct zs_uffd){ 4095 }, 8, .want = -EBADMSG },
	{ "uffd short", ZS_UFFD, BYTES(0, 0x10, 0, 0), 4, .want = -EBADMSG },
	{ "uffd long", ZS_UFFD, (const struct zs_uffd[]){ { 0x1000 }, { 0x1000 } }, 16, .want = -EBADMSG },
	{ "uffd empty", ZS_UFFD, NULL, 0, .want = -EBADMSG },
	/* AGENT */
	{ "agent empty", ZS_AGENT, NULL, 0, .want = -EBADMSG },
	{ "agent short", ZS_AGENT, BYTES(1, 0, 0, 0), 4, .want = -EBADMSG },
	{ "agent 9 ranges", ZS_AGENT,
	  &(const struct agent_n){ 1, 9, { RANGE(0), RANGE(1), RANGE(2), RANGE(3), RANGE(4),
					   RANGE(5), RANGE(6), RANGE(7), RANGE(8) } },
	  8 + 9 * 16, .want = -EBADMSG },
	{ "agent nexcl huge", ZS_AGENT, &(const struct agent_n){ 1, 0xffffffffu, { RANGE(0) } }, 24,
	  .want = -EBADMSG },
	{ "agent count 1 len 0", ZS_AGENT, &(const struct agent_n){ 1, 1, { RANGE(0) } }, 8,
	  .want = -EBADMSG },
	{ "agent count 0 len 1", ZS_AGENT, &(const struct agent_n){ 1, 0, { RANGE(0) } }, 24,
	  .want = -EBADMSG },
	{ "agent count 2 len 1", ZS_AGENT, &(const struct agent_n){ 1, 2, { RANGE(0), RANGE(1) } },
	  24, .want = -EBADMSG },
	{ "agent partial range", ZS_AGENT, &(const struct agent_n){ 1, 1, { RANGE(0) } }, 16,
	  .want = -EBADMSG },
	{ "agent start unaligned", ZS_AGENT,
	  &(const struct agent_n){ 1, 2, { RANGE(0), { 0x10001, 0x1000 } } }, 40, .want = -EBADMSG },
	{ "agent len unaligned", ZS_AGENT,
	  &(const struct agent_n){ 1, 2, { RANGE(0), { 0x10000, 0xfff } } }, 40, .want = -EBADMSG },
	/* EVICT */
	{ "evict empty", ZS_EVICT, NULL, 0, .want = -EBADMSG },
	{ "evict short", ZS_EVICT, BYTES(1, 0, 0, 0, 0, 0, 0, 0), 8, .want = -EBADMSG },
	{ "evict 0 runs", ZS_EVICT, &(const struct evict_n){ 1, 0, 0, { { 0 } } }, 16, .want = -EBADMSG },
	{ "evict 0 runs with one", ZS_EVICT,
	  &(const struct evict_n){ 1, 0, 0, { { 0x1000, 1, 0 } } }, 32, .want = -EBADMSG },
	{ "evict 1 run missing", ZS_EVICT, &(const struct evict_n){ 1, 1, 0, { { 0x1000, 1, 0 } } },
	  16, .want = -EBADMSG },
	{ "evict 2 runs 1 sent", ZS_EVICT,
	  &(const struct evict_n){ 1, 2, 0, { { 0x1000, 1, 0 }, { 0x3000, 1, 1 } } }, 32, .want = -EBADMSG },
	{ "evict partial run", ZS_EVICT, &(const struct evict_n){ 1, 1, 0, { { 0x1000, 1, 0 } } },
	  24, .want = -EBADMSG },
	{ "evict nruns huge", ZS_EVICT,
	  &(const struct evict_n){ 1, 0x10000001u, 0, { { 0x1000, 1, 0 } } }, 32, .want = -EBADMSG },
	{ "evict unaligned addr", ZS_EVICT,
	  &(const struct evict_n){ 1, 2, 0, { { 0x1000, 1, 0 }, { 0x3800, 1, 1 } } }, 48, .want = -EBADMSG },
	{ "evict addr 1", ZS_EVICT, &(const struct evict_n){ 1, 1, 0, { { 1, 1, 0 } } }, 32,
	  .want = -EBADMSG },
	{ "evict npages 0", ZS_EVICT,
	  &(const struct evict_n){ 1, 2, 0, { { 0x1000, 1, 0 }, { 0x3000, 0, 1 } } }, 48, .want = -EBADMSG },
	{ "evict addr overflows", ZS_EVICT,
	  &(const struct evict_n){ 1, 1, 0, { { UINT64_MAX - PAGE + 1, 2, 0 } } }, 32, .want = -EBADMSG },
	{ "evict npages crosses 2^48", ZS_EVICT,
	  &(const struct evict_n){ 1, 1, 0, { { 0xf00000001000, UINT32_MAX, 0 } } }, 32,
	  .want = -EBADMSG },
	{ "evict at 2^48", ZS_EVICT, &(const struct evict_n){ 1, 1, 0, { { ADDR_LIMIT, 1, 0 } } },
	  32, .want = -EBADMSG },
	{ "evict ends at 2^48", ZS_EVICT,
	  &(const struct evict_n){ 1, 1, 0, { { ADDR_LIMIT - PAGE, 1, 0 } } }, 32, .want = -EBADMSG },
	{ "evict crosses 2^48", ZS_EVICT,
	  &(const struct evict_n){ 1, 1, 0, { { ADDR_LIMIT - 2 * PAGE, 3, 0 } } }, 32, .want = -EBADMSG },
	{ "evict kernel addr", ZS_EVICT,
	  &(const struct evict_n){ 1, 1, 0, { { 0xffff800000000000, 1, 0 } } }, 32, .want = -EBADMSG },
	/* EVICT_DONE */
	{ "evict done empty", ZS_EVICT_DONE, NULL, 0, .want = -EBADMSG },
	{ "evict done short", ZS_EVICT_DONE, BYTES(1, 0, 0, 0, 0, 0, 0, 0), 8, .want = -EBADMSG },
	{ "evict done 0 runs", ZS_EVICT_DONE, &(const struct done_n){ 1, 0, 0, { 0 } }, 16,
	  .want = -EBADMSG },
	{ "evict done 0 runs with one", ZS_EVICT_DONE, &(const struct done_n){ 1, 0, 0, { 1 } }, 20,
	  .want = -EBADMSG },
	{ "evict done 2 of 3", ZS_EVICT_DONE, &(const struct done_n){ 1, 3, 0, { 1, 1, 1 } }, 24,
	  .want = -EBADMSG },
	{ "evict done 3 of 2", ZS_EVICT_DONE, &(const struct done_n){ 1, 2, 0, { 1, 1, 1 } }, 28,
	  .want = -EBADMSG },
	{ "evict done partial", ZS_EVICT_DONE, &(const struct done_n){ 1, 1, 0, { 1 } }, 18,
	  .want = -EBADMSG },
	{ "evict done nruns huge", ZS_EVICT_DONE,
	  &(const struct done_n){ 1, 0x40000001u, 0, { 1 } }, 20, .want = -EBADMSG },
	/* payload-free types */
	{ "devfd with payload", ZS_DEVFD, BYTES(0), 1, .want = -EBADMSG },
	{ "bye with payload", ZS_BYE, BYTES(0, 0, 0, 0, 0, 0, 0, 0), 8, .want = -EBADMSG },
	{ "stats with payload", ZS_STATS, BYTES(1), 1, .want = -EBADMSG },
	{ "list with payload", ZS_LIST, BYTES(1, 2, 3, 4), 4, .want = -EBADMSG },
	/* READY */
	{ "ready short", ZS_READY, BYTES(1, 0, 0, 0), 4, .want = -EBADMSG },
	{ "ready long", ZS_READY, BYTES(1, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0), 12, .want = -EBADMSG },
	{ "ready empty", ZS_READY, NULL, 0, .want = -EBADMSG },
	/* RECLAIM */
	{ "reclaim 0 bytes", ZS_RECLAIM, &(const struct zs_reclaim){ 1, 0, 0 }, 16, .want = -EBADMSG },
	{ "reclaim pid 0", ZS_RECLAIM, &(const struct zs_reclaim){ 0, 0, 4096 }, 16, .want = -EBADMSG },
	{ "reclaim short", ZS_RECLAIM, &(const struct zs_reclaim){ 1, 0, 4096 }, 8, .want = -EBADMSG },
	{ "reclaim long", ZS_RECLAIM, (const struct zs_reclaim[]){ { 1, 0, 1 }, { 1, 0, 1 } }, 24,
	  .want = -EBADMSG },
	/* STATS_REPLY */
	{ "stats reply short", ZS_STATS_REPLY, (const struct zs_stat[]){ { "a", 1 } }, 47,
	  .want = -EBADMSG },
	{ "stats reply long", ZS_STATS_REPLY, (const struct zs_stat[]){ { "a", 1 }, { "b", 2 } },
	  49, .want = -EBADMSG },
	{ "stats reply name unterminated", ZS_STATS_REPLY,
	  (const struct zs_stat[]){ { { X40 }, 1 } }, 48,
	  .want = -EBADMSG },
	{ "stats reply 2nd name unterminated", ZS_STATS_REPLY,
	  (const struct zs_stat[]){ { "a", 1 }, { { X40 }, 2 } }, 96,
	  .want = -EBADMSG },
	/* LIST_REPLY */
	{ "list reply short", ZS_LIST_REPLY, (const struct zs_target_info[]){ { .pid = 1 } }, 71,
	  .want = -EBADMSG },
	{ "list reply long", ZS_LIST_REPLY,
	  (const struct zs_target_info[]){ { .pid = 1 }, { .pid = 2 } }, 73, .want = -EBADMSG },
	{ "list reply comm unterminated", ZS_LIST_REPLY,
	  (const struct zs_target_info[]){ { .pid = 1 },
					   { .pid = 2, .comm = { X16 } } },
	  2 * sizeof(struct zs_target_info), .want = -EBADMSG },
	/* LIMIT */
	{ "limit pid 0", ZS_LIMIT, &(const struct zs_limit){ 0, 0, 4096 }, 16, .want = -EBADMSG },
	{ "limit short", ZS_LIMIT, &(const struct zs_limit){ 1, 0, 4096 }, 8, .want = -EBADMSG },
	{ "limit reply short", ZS_LIMIT_REPLY, &(const struct zs_limit_reply){ 1, 2 }, 8,
	  .want = -EBADMSG },
	/* RESTORE */
	{ "restore pid 0", ZS_RESTORE, &(const struct zs_restore){ 0, 0 }, 8, .want = -EBADMSG },
	{ "restore short", ZS_RESTORE, &(const struct zs_restore){ 1, 0 }, 4, .want = -EBADMSG },
	{ "restore reply short", ZS_RESTORE_REPLY, &(const struct zs_restore_reply){ 1, 2, 3 }, 16,
	  .want = -EBADMSG },
	/* GROUP: all, or one cgroup, never both or neither; its path terminated */
	{ "group all with a path", ZS_GROUP,
	  &(const struct zs_group){ .flags = ZS_GROUP_ALL, .cgroup = "/a" }, sizeof(struct zs_group),
	  .want = -EBADMSG },
	{ "group neither", ZS_GROUP, &(const struct zs_group){ .bytes = 1 }, sizeof(struct zs_group),
	  .want = -EBADMSG },
	{ "group unknown flag", ZS_GROUP, &(const struct zs_group){ .flags = ZS_GROUP_ALL | 0x8 },
	  sizeof(struct zs_group), .want = -EBADMSG },
	{ "group path unterminated", ZS_GROUP,
	  &(const struct zs_group){ .cgroup = { [0 ... ZS_CGROUP_LEN - 1] = 'x' } },
	  sizeof(struct zs_group), .want = -EBADMSG },
	{ "group short", ZS_GROUP, &(const struct zs_group){ .flags = ZS_GROUP_ALL }, 16,
	  .want = -EBADMSG },
	{ "groups with a payload", ZS_GROUPS, &(const struct zs_group){ .flags = ZS_GROUP_ALL }, 8,
	  .want = -EBADMSG },
	/* UPGRADE: nothing; its reply exactly its size */
	{ "upgrade with a payload", ZS_UPGRADE, &(const struct zs_restore){ 1, 0 }, 8,
	  .want = -EBADMSG },
	{ "upgrade reply short", ZS_UPGRADE_REPLY, &(const struct zs_upgrade_reply){ 1, 2, 3 }, 8,
	  .want = -EBADMSG },
	{ "groups reply cut", ZS_GROUPS_REPLY, (const struct zs_group_info[]){ { .flags = 1 } }, 100,
	  .want = -EBADMSG },
	{ "groups reply name unterminated", ZS_GROUPS_REPLY,
	  (const struct zs_group_info[]){ { .cgroup = { [0 ... ZS_TARGET_CGROUP_LEN - 1] = 'x' } } },
	  sizeof(struct zs_group_info), .want = -EBADMSG },
	{ "group reply short", ZS_GROUP_REPLY, &(const struct zs_group_reply){ .budget_bytes = 1 }, 32,
	  .want = -EBADMSG },
	/* RECLAIM_REPLY */
	{ "reclaim reply short", ZS_RECLAIM_REPLY, &(const struct zs_reclaim_reply){ 1, 2, 3, 4 },
	  24, .want = -EBADMSG },
	{ "reclaim reply long", ZS_RECLAIM_REPLY,
	  (const struct zs_reclaim_reply[]){ { 1, 2, 3, 4 }, { 1, 2, 3, 4 } }, 40, .want = -EBADMSG },
	{ "reclaim reply empty", ZS_RECLAIM_REPLY, NULL, 0, .want = -EBADMSG },
	/* ERROR */
	{ "error empty", ZS_ERROR, NULL, 0, .want = -EBADMSG },
	{ "error no msg", ZS_ERROR, BYTES(ERRNO_BYTES), 4, .want = -EBADMSG },
	{ "error short", ZS_ERROR, BYTES(0xfb, 0xff), 2, .want = -EBADMSG },
	{ "error no NUL", ZS_ERROR, BYTES(ERRNO_BYTES, 'a', 'b', 'c'), 7, .want = -EBADMSG },
	{ "error early NUL", ZS_ERROR, BYTES(ERRNO_BYTES, 'a', 0, 'b', 0), 8, .want = -EBADMSG },
	{ "error junk after NUL", ZS_ERROR, BYTES(ERRNO_BYTES, 'a', 0, 'b'), 7, .want = -EBADMSG },
	{ "error two NULs", ZS_ERROR, BYTES(ERRNO_BYTES, 'a', 0, 0), 7, .want = -EBADMSG },
};

static size_t build_bad(void *buf, const struct bad_case *c)
{
	size_t n = build(buf, c->type, 9, c->payload, c->len);
	struct zs_hdr h;

	memcpy(&h, buf, HDR);
	h.magic ^= c->magic_xor;
	h.version = (uint16_t)(h.version + c->version_add);
	h.len = (uint32_t)(h.len + (uint64_t)c->len_add);
	memcpy(buf, &h, HDR);
	return n - c->cut;
}

START_TEST(test_bad_check)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	size_t n = build_bad(buf, &bad[_i]);
	int r = check_bytes(buf, n);

	ck_assert_msg(r == bad[_i].want, "%s: got %d, want %d", bad[_i].name, r, bad[_i].want);
}
END_TEST

/* The same through a socket, with a descriptor attached that must not leak. */
START_TEST(test_bad_recv)
{
	uint64_t buf[ZS_MSG_MAX / 8];
	uint64_t *b = rbuf_new();
	size_t n = build_bad(buf, &bad[_i]);
	int sv[2], p[2], fds[2] = { -1, -1 }, nfds = -7, base;
	ssize_t r;

	pair(sv);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	base = count_fds();
	raw_send(sv[0], buf, n, p, 2);
	r = proto_recv(sv[1], b, ZS_MSG_MAX, fds, 2, &nfds);
	if (n == 0) /* indistinguishable from the peer's shutdown */
		ck_assert_int_eq(r, 0);
	else
		ck_assert_msg(r == bad[_i].want, "%s: got %zd, want %d", bad[_i].name, r,
			      bad[_i].want);
	ck_assert_int_eq(fds[0], -1);
	ck_assert_int_eq(count_fds(), base);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	free(b);
}
END_TEST

/* xorshift64*: the same sequence on every machine and libc. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static const uint64_t interesting[] = {
	0,
	1,
	2,
	8,
	9,
	0xfff,
	0x1000,
	4094,
	4095,
	0x7fffffff,
	0xffffffff,
	ADDR_LIMIT - PAGE,
	ADDR_LIMIT - 2 * PAGE,
	ADDR_LIMIT,
	UINT64_MAX - PAGE + 1,
	UINT64_MAX,
};

static void mutate(unsigned char *m, size_t *len, uint64_t *s)
{
	uint64_t v = interesting[rng_next(s) % ARRAY_LEN(interesting)];
	size_t n = *len;
	uint16_t type;

	switch (rng_next(s) % 7) {
	case 0:
		if (n)
			m[rng_next(s) % n] ^= (unsigned char)(1u << (rng_next(s) % 8));
		break;
	case 1:
		if (n)
			m[rng_next(s) % n] = (unsigned char)rng_next(s);
		break;
	case 2: /* counts and 32-bit fields sit at 4-byte offsets */
		if (n >= 4)
			memcpy(m + (rng_next(s) % (n / 4)) * 4, &v, 4);
		break;
	case 3: /* addresses and 64-bit fields at 8-byte offsets */
		if (n >= 8)
			memcpy(m + (rng_next(s) % (n / 8)) * 8, &v, 8);
		break;
	case 4: /* shorter or longer, the new tail random */
		*len = rng_next(s) % (n + 80);
		for (size_t i = n; i < *len; i++)
			m[i] = (unsigned char)rng_next(s);
		break;
	case 5:
		type = all_types[rng_next(s) % ARRAY_LEN(all_types)];
		if (n >= 8)
			memcpy(m + 6, &type, 2);
		break;
	default: /* extra trailing bytes, as in one record too many */
		for (size_t i = rng_next(s) % 64; i && *len < 2048; i--)
			m[(*len)++] = (unsigned char)rng_next(s);
		break;
	}
}

/* What an accepted message promises, re-derived without proto.c's code. */
static void assert_accepted_sane(const unsigned char *m, size_t len)
{
	struct zs_hdr h;
	struct zs_evict e;
	struct zs_run run;

	memcpy(&h, m, HDR);
	ck_assert_uint_eq(h.magic, ZS_MAGIC);
	ck_assert_uint_eq(h.len + HDR, len);
	if (h.type == ZS_EVICT) {
		memcpy(&e, m + HDR, 16);
		ck_assert_uint_ge(e.nruns, 1);
		ck_assert_uint_eq(h.len, 16 + e.nruns * 16ull);
		for (uint32_t i = 0; i < e.nruns; i++) {
			memcpy(&run, m + HDR + 16 + i * 16, 16);
			ck_assert_uint_eq(run.addr % PAGE, 0);
			ck_assert_uint_ge(run.npages, 1);
			ck_assert_uint_lt((run.addr >> 12) + run.npages, UINT64_C(1) << 36);
		}
	} else if (h.type == ZS_ERROR) {
		ck_assert_uint_eq(strlen((const char *)m + HDR + 4) + 5, h.len);
	}
}

#define FUZZ_ROUNDS 200000

START_TEST(test_fuzz)
{
	static uint64_t work[(ZS_MSG_MAX + 4096) / 8];
	unsigned char *m = (unsigned char *)work;
	uint64_t seed = UINT64_C(0x5a535750c0ffee01);
	unsigned long accepted = 0, bad_msg = 0, bad_proto = 0;

	for (unsigned long round = 0; round < FUZZ_ROUNDS; round++) {
		const struct msg_case *c = &valid[rng_next(&seed) % ARRAY_LEN(valid)];
		size_t len = build(m, c->type, (uint32_t)round, c->payload, c->len);
		unsigned nmut = 1 + (unsigned)(rng_next(&seed) % 4);
		struct zs_hdr h;
		void *copy;
		const struct zs_hdr *got = NULL;
		int r;

		for (unsigned i = 0; i < nmut; i++)
			mutate(m, &len, &seed);
		/* mostly keep the header consistent, so the payload checks run */
		if (len >= HDR && rng_next(&seed) % 8) {
			memcpy(&h, m, HDR);
			h.magic = ZS_MAGIC;
			h.version = ZS_VERSION;
			if (rng_next(&seed) % 4)
				h.len = (uint32_t)(len - HDR);
			memcpy(m, &h, HDR);
		}

		copy = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, m, len);
		r = proto_check(copy, len, &got);
		if (r == 0) {
			accepted++;
			ck_assert_ptr_eq(got, copy);
			assert_accepted_sane(copy, len);
		} else if (r == -EBADMSG) {
			bad_msg++;
		} else {
			ck_assert_int_eq(r, -EPROTO);
			bad_proto++;
		}
		free(copy);
	}
	/* the loop must reach both sides of the checks to mean anything */
	ck_assert_uint_gt(accepted, FUZZ_ROUNDS / 50);
	ck_assert_uint_gt(bad_msg, FUZZ_ROUNDS / 4);
	ck_assert_uint_gt(bad_proto, FUZZ_ROUNDS / 200);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("messages");

	tcase_add_loop_test(tc, test_valid_check, 0, ARRAY_LEN(valid));
	tcase_add_test(tc, test_every_type_covered);
	tcase_add_loop_test(tc, test_round_trip, 0, ARRAY_LEN(valid));
	tcase_add_test(tc, test_evict_max);
	tcase_add_test(tc, test_send_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("fds");
	tcase_add_test(tc, test_fd_passing);
	tcase_add_test(tc, test_fd_passing_two);
	tcase_add_test(tc, test_extra_fds_closed);
	tcase_add_test(tc, test_ctrunc);
	suite_add_tcase(s, tc);

	tc = tcase_create("socket");
	tcase_add_test(tc, test_oversized);
	tcase_add_test(tc, test_recv_eof_and_eagain);
	tcase_add_test(tc, test_send_epipe);
	tcase_add_test(tc, test_bad_arguments);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_add_loop_test(tc, test_bad_check, 0, ARRAY_LEN(bad));
	tcase_add_loop_test(tc, test_bad_recv, 0, ARRAY_LEN(bad));
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());

	return check_run(sr);
}
