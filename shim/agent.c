// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent.c - the thread zswapd keeps inside each served process.
 *
 * It does the one thing the daemon cannot do from outside: drop pages of
 * this mm (process_madvise refuses MADV_DONTNEED on another process).  For
 * each ZS_EVICT it copies the runs, which zswapd has write-protected, into
 * the shared staging area and drops them, then answers ZS_EVICT_DONE.  The
 * copy uses process_vm_readv on ourselves, not memcpy: if the app unmapped a
 * run meanwhile, that is an EFAULT we report, not a SIGSEGV in someone
 * else's program.
 *
 * It blocks every signal (the app's handlers must not run on it), uses only
 * its own mapped stack and buffer (excluded from eviction), and allocates
 * nothing.  If zswapd vanishes without ZS_BYE, the pages it held are gone:
 * the agent then refuses to let the app read zeros in their place, and
 * aborts the process at its first fault on a registered page, saying why.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "proto.h"
#include "shim.h"

static uint64_t *agent_buf(void)
{
	return (uint64_t *)(shim.area + SHIM_AGENT_STACK);
}

/* Copies then drops one run; returns the pages dropped or -errno. */
static int32_t agent_evict_run(const struct zs_run *run)
{
	size_t len = (size_t)run->npages * SHIM_PAGE;
	struct iovec local, remote;
	ssize_t n;

	if ((size_t)run->staging_slot * SHIM_PAGE + len > shim.staging_len)
		return -EINVAL;
	local.iov_base = shim.staging + (size_t)run->staging_slot * SHIM_PAGE;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)run->addr;
	remote.iov_len = len;
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	n /= SHIM_PAGE;
	/* Report what we copied even if the drop fails part way: zswapd then
	 * holds an entry for a page that may still be mapped, which is
	 * harmless, while the opposite would lose it. */
	if (n > 0)
		madvise(remote.iov_base, (size_t)n * SHIM_PAGE, MADV_DONTNEED);
	return (int32_t)n;
}

static int agent_evict(const struct zs_hdr *h)
{
	const struct zs_evict *ev = proto_payload(h);
	/* The reply goes where the request was: the buffer is ours alone. */
	struct {
		struct zs_evict_done done;
		int32_t result[(ZS_MSG_MAX - sizeof(struct zs_hdr) - sizeof(struct zs_evict)) /
			       sizeof(struct zs_run)];
	} *reply = (void *)((uint8_t *)agent_buf() + ZS_MSG_MAX);
	uint32_t nruns = ev->nruns;
	uint64_t batch = ev->batch;

	for (uint32_t i = 0; i < nruns; i++)
		reply->result[i] = agent_evict_run(&ev->runs[i]);
	reply->done.batch = batch;
	reply->done.nruns = nruns;
	reply->done.pad = 0;
	return proto_send(shim.sock, ZS_EVICT_DONE, h->seq, reply,
			  sizeof(struct zs_evict_done) + nruns * sizeof(int32_t), NULL, 0);
}

/* zswapd died holding our pages: never let the app read zeros instead. */
static void agent_orphaned(void)
{
	struct pollfd pfd = { .fd = shim.uffd, .events = POLLIN };
	struct uffd_msg msg;
	static const char text[] =
		"libzswap: zswapd exited without returning this process's evicted memory; "
		"aborting rather than letting it read zeros\n";

	for (;;) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return;
		if (read(shim.uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		switch (msg.event) {
		case UFFD_EVENT_PAGEFAULT:
			(void)!write(STDERR_FILENO, text, sizeof(text) - 1);
			abort();
		case UFFD_EVENT_FORK:
			/* Nobody will serve the child: let its uffd go. */
			close((int)msg.arg.fork.ufd);
			break;
		default:
			break; /* reading REMOVE/UNMAP/REMAP is what unblocks the app */
		}
	}
}

static void *agent_main(void *arg)
{
	struct {
		struct zs_agent a;
		struct zs_range excl[2];
	} hello = {
		.a = { .tid = (uint32_t)syscall(SYS_gettid), .nexcl = 2 },
		.excl = {
			{ (uint64_t)(uintptr_t)shim.area, SHIM_AGENT_AREA },
			{ (uint64_t)(uintptr_t)shim.beacon, SHIM_PAGE },
		},
	};
	const struct zs_hdr *h = (const struct zs_hdr *)agent_buf();
	int fds[PROTO_MAX_FDS], nfds;
	struct timeval tv = { 0 };
	ssize_t n;

	(void)arg;
	/* Requests may be minutes apart: no receive timeout from now on. */
	setsockopt(shim.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (proto_send(shim.sock, ZS_AGENT, 3, &hello, sizeof(hello), NULL, 0) < 0)
		return NULL;
	for (;;) {
		n = proto_recv(shim.sock, agent_buf(), ZS_MSG_MAX, fds, PROTO_MAX_FDS, &nfds);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n <= 0)
			break;
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (h->type == ZS_EVICT) {
			if (agent_evict(h) < 0)
				break;
		} else if (h->type == ZS_BYE) {
			shim_log("zswapd stopped and returned every page");
			close(shim.uffd);
			shim.uffd = -1;
			return NULL;
		}
	}
	shim_log("zswapd went away");
	agent_orphaned();
	return NULL;
}

int shim_agent_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, shim.area, SHIM_AGENT_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Created with every signal blocked, so none is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&tid, &attr, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return r;
}
