// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto.c - the one gate every datagram of include/zswap_proto.h passes.
 *
 * proto_check() is where the daemon, zswapctl and the shim decide whether a
 * message is well formed; nothing downstream re-validates shapes, so it
 * checks everything the payload's type promises: fixed sizes, array counts
 * that match len exactly, strings NUL-terminated inside their field, page
 * aligned addresses and runs that stay inside a 48-bit address space.  A
 * message from a confused or hostile peer is refused here, before any of it
 * is acted on, and the caller drops the connection.
 *
 * Buffers are read with memcpy(): the checker itself must not depend on the
 * caller's alignment or on type punning.  Callers do read payload structs in
 * place afterwards, so proto_check() and proto_recv() insist on an 8-byte
 * aligned buffer (a uint64_t array) and say -EINVAL otherwise; after the
 * 16-byte header every payload struct is then aligned too.
 *
 * Sending gathers header and payload with an iovec into one sendmsg(), one
 * datagram, with no copy, no static buffer and no 64 KiB on the stack: the
 * shim calls this from threads it does not own, with stacks of unknown size.
 * Linked into the shim too, so libc only, and no logging.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto.h"

#define PROTO_PAGE_SIZE UINT64_C(4096)
/* x86-64 and arm64 user space with 4-level tables ends below 2^47 */
#define PROTO_ADDR_LIMIT (UINT64_C(1) << 48)
#define PROTO_ALIGN 8
#define PROTO_PAYLOAD_MAX (ZS_MSG_MAX - sizeof(struct zs_hdr))

/* The wire layout the checks below (and the peers) rely on. */
_Static_assert(sizeof(struct zs_hdr) == 16, "zs_hdr");
_Static_assert(sizeof(struct zs_hello) == 8, "zs_hello");
_Static_assert(sizeof(struct zs_uffd) == 8, "zs_uffd");
_Static_assert(sizeof(struct zs_ready) == 16, "zs_ready");
_Static_assert(sizeof(struct zs_range) == 16, "zs_range");
_Static_assert(offsetof(struct zs_agent, excl) == 8, "zs_agent");
_Static_assert(sizeof(struct zs_run) == 16, "zs_run");
_Static_assert(offsetof(struct zs_evict, runs) == 16, "zs_evict");
_Static_assert(offsetof(struct zs_evict_done, result) == 16, "zs_evict_done");
_Static_assert(sizeof(struct zs_reclaim) == 16, "zs_reclaim");
_Static_assert(sizeof(struct zs_reclaim_reply) == 32, "zs_reclaim_reply");
_Static_assert(sizeof(struct zs_stat) == 48, "zs_stat");
_Static_assert(sizeof(struct zs_target_info) == 216, "zs_target_info");
_Static_assert(sizeof(struct zs_group) == 272, "zs_group");
_Static_assert(sizeof(struct zs_group_reply) == 72, "zs_group_reply");
_Static_assert(sizeof(struct zs_group_info) == 176, "zs_group_info");
_Static_assert(sizeof(struct zs_limit) == 16, "zs_limit");
_Static_assert(sizeof(struct zs_limit_reply) == 16, "zs_limit_reply");
_Static_assert(offsetof(struct zs_error, msg) == 4, "zs_error");

static bool proto_page_aligned(uint64_t v)
{
	return (v & (PROTO_PAGE_SIZE - 1)) == 0;
}

static int proto_check_size(uint32_t len, size_t want)
{
	return len == want ? 0 : -EBADMSG;
}

static int proto_check_hello(const unsigned char *p, uint32_t len)
{
	struct zs_hello h;

	if (len != sizeof(h))
		return -EBADMSG;
	memcpy(&h, p, sizeof(h));
	return h.flags & ~ZS_HELLO_FORKED ? -EBADMSG : 0;
}

static int proto_check_uffd(const unsigned char *p, uint32_t len)
{
	struct zs_uffd u;

	if (len != sizeof(u))
		return -EBADMSG;
	memcpy(&u, p, sizeof(u));
	return u.beacon && proto_page_aligned(u.beacon) ? 0 : -EBADMSG;
}

static int proto_check_agent(const unsigned char *p, uint32_t len)
{
	const size_t off = offsetof(struct zs_agent, excl);
	struct zs_agent a;
	struct zs_range r;

	if (len < off)
		return -EBADMSG;
	memcpy(&a, p, off);
	if (a.nexcl > ZS_AGENT_MAX_EXCL || len != off + (size_t)a.nexcl * sizeof(r))
		return -EBADMSG;
	for (uint32_t i = 0; i < a.nexcl; i++) {
		memcpy(&r, p + off + i * sizeof(r), sizeof(r));
		if (!proto_page_aligned(r.start) || !proto_page_aligned(r.len))
			return -EBADMSG;
	}
	return 0;
}

/* A run is at least one page, page aligned, and ends below 2^48. */
static int proto_check_run(const struct zs_run *run)
{
	uint64_t span = (uint64_t)run->npages * PROTO_PAGE_SIZE; /* <= 2^44 */

	if (!run->npages || !proto_page_aligned(run->addr))
		return -EBADMSG;
	/* addr + span < 2^48, written so that it cannot overflow */
	if (run->addr >= PROTO_ADDR_LIMIT - span)
		return -EBADMSG;
	return 0;
}

static int proto_check_evict(const unsigned char *p, uint32_t len)
{
	const size_t off = offsetof(struct zs_evict, runs);
	struct zs_evict e;
	struct zs_run run;
	int r;

	if (len < off)
		return -EBADMSG;
	memcpy(&e, p, off);
	if (e.nruns < 1 || len != off + (uint64_t)e.nruns * sizeof(run))
		return -EBADMSG;
	for (uint32_t i = 0; i < e.nruns; i++) {
		memcpy(&run, p + off + i * sizeof(run), sizeof(run));
		r = proto_check_run(&run);
		if (r < 0)
			return r;
	}
	return 0;
}

static int proto_check_evict_done(const unsigned char *p, uint32_t len)
{
	const size_t off = offsetof(struct zs_evict_done, result);
	struct zs_evict_done d;

	if (len < off)
		return -EBADMSG;
	memcpy(&d, p, off);
	if (d.nruns < 1 || len != off + (uint64_t)d.nruns * sizeof(int32_t))
		return -EBADMSG;
	return 0;
}

static int proto_check_reclaim(const unsigned char *p, uint32_t len)
{
	struct zs_reclaim rc;

	if (len != sizeof(rc))
		return -EBADMSG;
	memcpy(&rc, p, sizeof(rc));
	return rc.pid > 0 && rc.bytes > 0 ? 0 : -EBADMSG;
}

/* A request of size bytes that names a process first: ZS_LIMIT, ZS_RESTORE. */
static int proto_check_pid_request(const unsigned char *p, uint32_t len, size_t size)
{
	uint32_t pid;

	if (len != size)
		return -EBADMSG;
	memcpy(&pid, p, sizeof(pid));
	return pid > 0 ? 0 : -EBADMSG;
}

_Static_assert(offsetof(struct zs_limit, pid) == 0 && offsetof(struct zs_restore, pid) == 0,
	       "requests that name a process name it first");

/*
 * An array of len / size records, each with a char field at name_off of
 * name_len bytes that must hold a NUL.
 */
static int proto_check_records(const unsigned char *p, uint32_t len, size_t size, size_t name_off,
			       size_t name_len)
{
	if (len % size)
		return -EBADMSG;
	for (size_t off = 0; off < len; off += size)
		if (!memchr(p + off + name_off, '\0', name_len))
			return -EBADMSG;
	return 0;
}

static int proto_check_group(const unsigned char *p, uint32_t len)
{
	struct zs_group g;

	if (len != sizeof(g))
		return -EBADMSG;
	memcpy(&g, p, sizeof(g));
	if (!memchr(g.cgroup, '\0', sizeof(g.cgroup)) || (g.flags & ~(ZS_GROUP_ALL | ZS_GROUP_QUERY)))
		return -EBADMSG;
	/* exactly one of: every process, or a cgroup path */
	return (g.flags & ZS_GROUP_ALL) == !g.cgroup[0] ? 0 : -EBADMSG;
}

/* {err, msg}: msg's only NUL is the payload's last byte. */
static int proto_check_error(const unsigned char *p, uint32_t len)
{
	const size_t off = offsetof(struct zs_error, msg);

	if (len < off + 1)
		return -EBADMSG;
	return memchr(p + off, '\0', len - off) == p + len - 1 ? 0 : -EBADMSG;
}

static int proto_check_payload(uint16_t type, const unsigned char *p, uint32_t len)
{
	switch (type) {
	case ZS_HELLO:
		return proto_check_hello(p, len);
	case ZS_UFFD:
		return proto_check_uffd(p, len);
	case ZS_AGENT:
		return proto_check_agent(p, len);
	case ZS_EVICT_DONE:
		return proto_check_evict_done(p, len);
	case ZS_DEVFD:
	case ZS_BYE:
	case ZS_STATS:
	case ZS_LIST:
		return proto_check_size(len, 0);
	case ZS_READY:
		return proto_check_size(len, sizeof(struct zs_ready));
	case ZS_EVICT:
		return proto_check_evict(p, len);
	case ZS_RECLAIM:
		return proto_check_reclaim(p, len);
	case ZS_LIMIT:
		return proto_check_pid_request(p, len, sizeof(struct zs_limit));
	case ZS_LIMIT_REPLY:
		return proto_check_size(len, sizeof(struct zs_limit_reply));
	case ZS_RESTORE:
		return proto_check_pid_request(p, len, sizeof(struct zs_restore));
	case ZS_RESTORE_REPLY:
		return proto_check_size(len, sizeof(struct zs_restore_reply));
	case ZS_GROUP:
		return proto_check_group(p, len);
	case ZS_GROUP_REPLY:
		return proto_check_size(len, sizeof(struct zs_group_reply));
	case ZS_GROUPS:
	case ZS_UPGRADE:
		return proto_check_size(len, 0);
	case ZS_UPGRADE_REPLY:
		return proto_check_size(len, sizeof(struct zs_upgrade_reply));
	case ZS_GROUPS_REPLY:
		return proto_check_records(p, len, sizeof(struct zs_group_info),
					   offsetof(struct zs_group_info, cgroup), ZS_TARGET_CGROUP_LEN);
	case ZS_STATS_REPLY:
		return proto_check_records(p, len, sizeof(struct zs_stat),
					   offsetof(struct zs_stat, name), ZS_STAT_NAME);
	case ZS_LIST_REPLY:
		return proto_check_records(p, len, sizeof(struct zs_target_info),
					   offsetof(struct zs_target_info, comm), ZS_COMM_LEN);
	case ZS_RECLAIM_REPLY:
		return proto_check_size(len, sizeof(struct zs_reclaim_reply));
	case ZS_ERROR:
		return proto_check_error(p, len);
	default:
		return -EBADMSG;
	}
}

int proto_check(const void *buf, size_t len, const struct zs_hdr **ret_hdr)
{
	struct zs_hdr h;
	int r;

	if (!buf || (uintptr_t)buf % PROTO_ALIGN)
		return -EINVAL;
	if (len < sizeof(h) || len > ZS_MSG_MAX)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != ZS_MAGIC || h.version != ZS_VERSION)
		return -EPROTO;
	if (h.len != len - sizeof(h))
		return -EBADMSG;
	r = proto_check_payload(h.type, (const unsigned char *)buf + sizeof(h), h.len);
	if (r < 0)
		return r;
	*ret_hdr = buf;
	return 0;
}

/*
 * Sends the header and iov[1..niov-1] as one datagram; iov[0] is filled in
 * here with the header.
 */
static int proto_sendv(int fd, uint16_t type, uint32_t seq, struct iovec *iov, size_t niov,
		       const int *fds, int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
	} ctl;
	struct zs_hdr h = { .magic = ZS_MAGIC, .version = ZS_VERSION, .type = type, .seq = seq };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = niov };
	struct cmsghdr *cm;
	size_t len = 0;
	ssize_t n;

	if (nfds < 0 || nfds > PROTO_MAX_FDS || (nfds > 0 && !fds))
		return -EINVAL;
	for (size_t i = 1; i < niov; i++)
		len += iov[i].iov_len;
	if (len > PROTO_PAYLOAD_MAX)
		return -EMSGSIZE;
	h.len = (uint32_t)len;
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);

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

	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* a SOCK_SEQPACKET datagram goes whole or not at all */
	return (size_t)n == sizeof(h) + len ? 0 : -EIO;
}

int proto_send(int fd, uint16_t type, uint32_t seq, const void *payload, size_t len,
	       const int *fds, int nfds)
{
	struct iovec iov[2] = { [1] = { .iov_base = (void *)payload, .iov_len = len } };

	if (len > PROTO_PAYLOAD_MAX)
		return -EMSGSIZE;
	if (len > 0 && !payload)
		return -EINVAL;
	return proto_sendv(fd, type, seq, iov, 2, fds, nfds);
}

int proto_send_error(int fd, uint32_t seq, int err, const char *msg)
{
	const size_t off = offsetof(struct zs_error, msg);
	int32_t e = err;
	struct iovec iov[4];

	if (!msg)
		msg = "";
	iov[1] = (struct iovec){ .iov_base = &e, .iov_len = off };
	/* truncated so that the NUL still fits in ZS_MSG_MAX */
	iov[2] = (struct iovec){ .iov_base = (void *)msg,
				 .iov_len = strnlen(msg, PROTO_PAYLOAD_MAX - off - 1) };
	iov[3] = (struct iovec){ .iov_base = (void *)"", .iov_len = 1 };
	return proto_sendv(fd, ZS_ERROR, seq, iov, 4, NULL, 0);
}

static void proto_close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * Takes every SCM_RIGHTS descriptor out of mh into fds[] (max of them;
 * closes any beyond, though the control buffer is sized so none can be).
 */
static size_t proto_collect_fds(struct msghdr *mh, int *fds, size_t max)
{
	struct cmsghdr *cm;
	size_t n = 0;
	int fd;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/*
 * The control buffer has room for PROTO_MAX_FDS descriptors and for
 * SCM_CREDENTIALS, should a caller turn on SO_PASSCRED (ignored here): a
 * peer that sends a few descriptors too many has them closed below, and one
 * that sends many more gets MSG_CTRUNC, which the kernel handles by
 * dropping what did not fit.
 */
#define PROTO_CTL_SPACE (CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS) + CMSG_SPACE(sizeof(struct ucred)))

ssize_t proto_recv(int fd, void *buf, size_t cap, int *fds, int maxfds, int *ret_nfds)
{
	union {
		struct cmsghdr align;
		char buf[PROTO_CTL_SPACE];
	} ctl;
	int got[PROTO_CTL_SPACE / sizeof(int)];
	struct iovec iov = { .iov_base = buf, .iov_len = ZS_MSG_MAX };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	const struct zs_hdr *h;
	size_t ngot = 0, keep = 0;
	ssize_t n;
	int r;

	if (!buf || (uintptr_t)buf % PROTO_ALIGN || cap < ZS_MSG_MAX || maxfds < 0 ||
	    (maxfds > 0 && !fds)) {
		n = -EINVAL;
		goto out;
	}

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		n = -errno;
		goto out;
	}
	ngot = proto_collect_fds(&mh, got, sizeof(got) / sizeof(got[0]));

	/* longer than ZS_MSG_MAX, or more descriptors than we have room for */
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		n = -EMSGSIZE;
		goto out_close;
	}
	if (n > 0) {
		r = proto_check(buf, (size_t)n, &h);
		if (r < 0) {
			n = r;
			goto out_close;
		}
		keep = ngot < (size_t)maxfds ? ngot : (size_t)maxfds;
		if (keep)
			memcpy(fds, got, keep * sizeof(int));
	}
	if (ret_nfds)
		*ret_nfds = (int)keep;
out_close:
	/* on success only the extras; on failure (or EOF) all of them */
	proto_close_fds(got + keep, ngot - keep);
out:
	return n;
}
