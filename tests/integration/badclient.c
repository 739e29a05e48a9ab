// SPDX-License-Identifier: GPL-2.0-only
/*
 * badclient - feeds zswapd what a broken or hostile peer would, and checks
 * after each that the daemon still answers a well-formed STATS request.
 *
 * Usage: badclient SOCKET    exits 0 if zswapd survived everything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "zswap_proto.h"

static const char *sock_path;
static int failures;

static int conn(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/* Sends a hello in buf and expects it taken as the sender's own: ZS_DEVFD, and its descriptor. */
static void expect_own_hello(const char *what, const void *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t rep[ZS_MSG_MAX];
	struct iovec iov = { rep, sizeof(rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct timeval tv = { .tv_sec = 5 };
	struct cmsghdr *cm;
	struct zs_hdr h;
	int fd = conn();
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = send(fd, buf, len, MSG_NOSIGNAL) < 0 ? -1 : recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	memcpy(&h, rep, sizeof(h));
	cm = n >= (ssize_t)sizeof(h) ? CMSG_FIRSTHDR(&mh) : NULL;
	if (!cm || h.type != ZS_DEVFD || cm->cmsg_type != SCM_RIGHTS) {
		printf("%s: expected the sender's own registration to go on (ZS_DEVFD)\n", what);
		failures++;
	} else {
		int devfd;

		memcpy(&devfd, CMSG_DATA(cm), sizeof(devfd));
		close(devfd);
	}
	close(fd);
}

/*
 * A registration whose "uffd" is a pipe (whose read would block): refused
 * before zswapd reads or ioctls it (counted in denied), the connection
 * dropped.
 */
static void not_a_uffd(void)
{
	struct {
		struct zs_hdr h;
		uint64_t body[2];
	} m = { .h = { ZS_MAGIC, ZS_VERSION, ZS_HELLO, sizeof(struct zs_hello), 1 } };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &m, sizeof(m.h) + sizeof(struct zs_uffd) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct timeval tv = { .tv_sec = 5 };
	uint8_t rep[ZS_MSG_MAX];
	struct cmsghdr *cm;
	int fd = conn(), p[2];
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memcpy(m.body, &(struct zs_hello){ .pid = (uint32_t)getpid() }, sizeof(struct zs_hello));
	if (send(fd, &m, sizeof(m.h) + sizeof(struct zs_hello), MSG_NOSIGNAL) < 0 ||
	    recv(fd, rep, sizeof(rep), 0) < (ssize_t)sizeof(struct zs_hdr) || pipe(p) < 0) {
		printf("a pipe as a uffd: no registration to try\n");
		failures++;
		close(fd);
		return;
	}
	m.h = (struct zs_hdr){ ZS_MAGIC, ZS_VERSION, ZS_UFFD, sizeof(struct zs_uffd), 2 };
	m.body[0] = 0x7f0000000000;
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[0], sizeof(int));
	sendmsg(fd, &mh, MSG_NOSIGNAL);
	n = recv(fd, rep, sizeof(rep), 0);
	if (n > 0 && ((struct zs_hdr *)rep)->type == ZS_READY) {
		printf("a pipe as a uffd: zswapd took it\n");
		failures++;
	}
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* Sends buf, then expects the daemon to close this connection (recv 0 or an error reply). */
static void expect_dropped(const char *what, const void *buf, size_t len, uint16_t want_err_type)
{
	struct timeval tv = { .tv_sec = 5 };
	uint8_t rep[ZS_MSG_MAX];
	int fd = conn();
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, buf, len, MSG_NOSIGNAL) < 0 && errno != EMSGSIZE) {
		printf("%s: send: %s\n", what, strerror(errno));
		failures++;
	}
	n = recv(fd, rep, sizeof(rep), 0);
	if (want_err_type) {
		struct zs_hdr h;

		memcpy(&h, rep, sizeof(h));
		if (n < (ssize_t)sizeof(h) || h.type != want_err_type) {
			printf("%s: expected an error reply, got %zd bytes\n", what, n);
			failures++;
		}
		n = recv(fd, rep, sizeof(rep), 0);
	}
	if (n != 0 && !(n < 0 && errno == ECONNRESET)) {
		printf("%s: connection not dropped (recv %zd)\n", what, n);
		failures++;
	}
	close(fd);
}

static void expect_alive(const char *after)
{
	struct zs_hdr h = { ZS_MAGIC, ZS_VERSION, ZS_STATS, 0, 1 };
	struct timeval tv = { .tv_sec = 5 };
	uint8_t rep[ZS_MSG_MAX];
	struct zs_hdr r;
	int fd = conn();
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	send(fd, &h, sizeof(h), MSG_NOSIGNAL);
	n = recv(fd, rep, sizeof(rep), 0);
	memcpy(&r, rep, sizeof(r));
	if (n < (ssize_t)sizeof(r) || r.type != ZS_STATS_REPLY) {
		printf("zswapd does not answer after %s\n", after);
		failures++;
	}
	close(fd);
}

int main(int argc, char **argv)
{
	struct {
		struct zs_hdr h;
		uint8_t body[64];
	} m;
	static uint8_t big[70000];
	int silent, *many;
	struct rlimit rl;
	enum { NMANY = 3000 };

	if (argc != 2) {
		fprintf(stderr, "usage: badclient SOCKET\n");
		return 2;
	}
	sock_path = argv[1];
	silent = conn(); /* connects and never speaks, for the whole run */

	expect_dropped("3 bytes of garbage", "abc", 3, 0);
	expect_alive("garbage");

	memset(&m, 0, sizeof(m));
	m.h = (struct zs_hdr){ 0xdeadbeef, ZS_VERSION, ZS_STATS, 0, 1 };
	expect_dropped("bad magic", &m, sizeof(m.h), 0);
	expect_alive("bad magic");

	m.h = (struct zs_hdr){ ZS_MAGIC, ZS_VERSION, ZS_HELLO, 4, 1 };
	expect_dropped("truncated HELLO", &m, sizeof(m.h) + 4, 0);
	expect_alive("truncated HELLO");

	/* The pid a hello names is not believed (in a container it names
	 * another process here): the sender is who its pidfd says. */
	m.h = (struct zs_hdr){ ZS_MAGIC, ZS_VERSION, ZS_HELLO, sizeof(struct zs_hello), 1 };
	memcpy(m.body, &(struct zs_hello){ .pid = 1 }, sizeof(struct zs_hello));
	expect_own_hello("HELLO naming pid 1", &m, sizeof(m.h) + sizeof(struct zs_hello));
	expect_alive("HELLO naming another pid");

	not_a_uffd();
	expect_alive("a pipe sent as a uffd");

	m.h = (struct zs_hdr){ ZS_MAGIC, ZS_VERSION, ZS_EVICT_DONE, 20, 1 };
	memset(m.body, 0, 20);
	m.body[8] = 1; /* nruns = 1 */
	expect_dropped("EVICT_DONE out of order", &m, sizeof(m.h) + 20, 0);
	expect_alive("out-of-order EVICT_DONE");

	m.h = (struct zs_hdr){ ZS_MAGIC, ZS_VERSION, 200, 0, 1 };
	expect_dropped("unknown type", &m, sizeof(m.h), 0);
	expect_alive("unknown type");

	memset(big, 0x41, sizeof(big));
	expect_dropped("70000-byte datagram", big, sizeof(big), 0);
	expect_alive("oversized datagram");

	/* Thousands of connections that never speak: more than a default
	 * RLIMIT_NOFILE of 1024 on either side. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	many = calloc(NMANY, sizeof(*many));
	for (int i = 0; i < NMANY; i++)
		many[i] = conn();
	expect_alive("3000 idle connections");
	for (int i = 0; i < NMANY; i++)
		close(many[i]);
	expect_alive("3000 connections closed");
	free(many);
	close(silent);
	printf("badclient: %s\n", failures ? "FAILED" : "zswapd survived every bad client");
	return failures ? 1 : 0;
}
