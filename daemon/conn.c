// SPDX-License-Identifier: GPL-2.0-only
/*
 * conn.c - connections on the control socket: who is speaking, and what
 * each may say.
 *
 * The peer's credentials come from SO_PEERCRED at accept, never from what
 * it says, and its pidfd (SO_PEERPIDFD) binds them to one process: a
 * connection whose process has exited (a helper may hold it open) speaks
 * for nobody.  A process registers only itself (identity.h proves its uffd
 * serves its own mm), a forked child only with a connection of its own
 * (target_claim), and a zswapctl that is not root acts only on processes
 * of its own uid.  A malformed message, or one out of order for the connection's
 * state, drops that connection and nothing else (proto_errors).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "identity.h"
#include "log.h"
#include "users.h"
#include "persist/persist.h"
#include "proto.h"
#include "persist/journal.h"

static void conn_ready(struct daemon *d, struct watch *w, uint32_t events);

/*
 * Out of descriptors: the pending connection stays in the backlog and the
 * listening socket stays readable, so the loop would spin.  Drop the oldest
 * connection that has said nothing yet (a silent client cannot hold the
 * daemon hostage) and log it once per burst.
 */
static void conn_shed(struct daemon *d)
{
	struct conn *victim = NULL;

	for (struct conn *c = d->conns.list; c; c = c->next)
		if (!c->dead && c->kind == CONN_NEW)
			victim = c; /* the list is newest first: the last is the oldest */
	if (victim) {
		log_warning("out of file descriptors: dropping an idle connection of pid %d",
			    (int)victim->cred.pid);
		conn_close(victim, "shed");
	} else {
		log_error("out of file descriptors and no idle connection to drop");
	}
}

/* A connection on socket fd (closed on failure), its peer from SO_PEERCRED. */
int conn_new(struct daemon *d, int fd, struct conn **ret_conn)
{
	socklen_t len;
	struct conn *c;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->d = d;
	c->w.fd = fd;
	c->w.fn = conn_ready;
	c->pidfd = -1;
	c->seq = ++d->conns.seq;
	len = sizeof(c->cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0 ||
	    (c->pidfd = identity_peer_pidfd(fd, c->cred.pid)) < 0 ||
	    watch_add(d->epfd, &c->w, EPOLLIN) < 0) {
		int r = c->pidfd < -1 ? c->pidfd : -errno;

		if (c->pidfd >= 0)
			close(c->pidfd);
		close(fd);
		free(c);
		return r;
	}
	c->pidns = identity_pidns(c->cred.pid);
	if (c->pidns == identity_pidns(getpid()))
		c->pidns = 0;
	c->next = d->conns.list;
	d->conns.list = c;
	*ret_conn = c;
	return 0;
}

void conn_accept(struct daemon *d, struct watch *w, uint32_t events)
{
	struct conn *c;
	int fd;

	(void)events;
	for (;;) {
		fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				conn_shed(d);
			else if (errno != EAGAIN && errno != EINTR)
				log_warning_errno(-errno, "accept failed: %m, ignoring");
			return;
		}
		if (conn_new(d, fd, &c) == 0 && !users_conn_ok(d, c))
			conn_close(c, "its user is at its bound of connections");
	}
}

void conn_close(struct conn *c, const char *why)
{
	struct target *t = c->target;

	if (c->dead)
		return;
	c->dead = true;
	log_debug("connection of pid %d closed: %s", (int)c->cred.pid, why);
	watch_del(c->d->epfd, &c->w);
	close(c->w.fd);
	c->w.fd = -1;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	for (struct target *o = c->d->targets; o; o = o->next)
		if (o->reclaim && o->reclaim->conn == c)
			o->reclaim->conn = NULL;
	restore_forget_conn(c->d, c);
	if (t) {
		/* The shim's socket is close-on-exec and held only by the process
		 * (its children reconnect): it closes at exec or exit.  If the mm
		 * lives on, the app closed it: keep serving faults, stop evicting. */
		c->target = NULL;
		journal_conn_gone(t);
		t->conn = NULL;
		t->agent.tid = 0;
		evict_abort(t);
		reclaim_end(t, -ENOTCONN);
		if (!target_mm_alive(t))
			target_kill(t, "exec or exit");
		else	/* unusual: the app closed our socket; say so */
			log_info("pid %d: agent connection closed (%s); serving faults, no more evictions",
				 (int)t->pid, why);
	}
}

void conn_reap(struct daemon *d)
{
	struct conn **pp = &d->conns.list, *c;

	while ((c = *pp)) {
		if (c->dead) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
}

/*
 * A process, or a forked child, says who it is.  What it says of its pid is
 * not used: in a pid namespace it names another process here, and the
 * peer's own is known (SO_PEERCRED, bound by its pidfd).
 */
static int conn_hello(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_hello *hello = proto_payload(h);
	struct daemon *d = c->d;
	struct target *t;

	if (c->kind != CONN_NEW)
		return -EBADMSG;
	if (!identity_alive(c->pidfd)) {
		d->st.denied++;
		log_warning("a connection of pid %d spoke after that process exited, refusing",
			    (int)c->cred.pid);
		proto_send_error(c->w.fd, h->seq, -ESRCH, "the process that connected has exited");
		return -ESRCH;
	}
	if (d->stop.active) {
		ctl_refuse_stopping(c, h->seq);
		return -ESHUTDOWN;
	}
	c->kind = CONN_SHIM;
	c->hello_flags = hello->flags;
	if (hello->flags & ZS_HELLO_FORKED) {
		/* Our child target may have had its beacon fault already. */
		for (t = d->targets; t; t = t->next) {
			int r = target_claim(t, c);

			if (r != 0)
				return r < 0 ? r : 0;
		}
		return 0;
	}
	if (!users_process_ok(d, c->cred.uid)) {
		proto_send_error(c->w.fd, h->seq, -EUSERS,
				 "this user has as many processes served as zswapd allows");
		return -EUSERS;
	}
	/* The same pid again: its old image exec'd (the peer is alive, so
	 * the pid is still its), unless that mm still lives and is connected. */
	t = target_by_pid(d, c->cred.pid);
	while (t) {
		if (target_mm_alive(t) && t->conn) {
			proto_send_error(c->w.fd, h->seq, -EEXIST, "this process is registered already");
			return -EEXIST;
		}
		target_kill(t, "exec'd");
		t = target_by_pid(d, c->cred.pid);
	}
	return proto_send(c->w.fd, ZS_DEVFD, h->seq, NULL, 0, &d->devuffd_fd, 1);
}

static int conn_uffd(struct conn *c, const struct zs_hdr *h, int *fds, int nfds)
{
	const struct zs_uffd *u = proto_payload(h);
	struct target *t;
	int r;

	if (c->kind != CONN_SHIM || c->target || (c->hello_flags & ZS_HELLO_FORKED) || nfds != 1)
		return -EBADMSG;
	r = target_new(c->d, c, fds[0], u->beacon, fault_uffd_ready, &t);
	fds[0] = -1; /* target_new owns it now, success or not */
	return r;
}

static int conn_agent(struct conn *c, const struct zs_hdr *h)
{
	const struct zs_agent *a = proto_payload(h);
	struct target *t = c->target;
	pid_t host_tid;

	if (!t || t->agent.tid)
		return -EBADMSG;
	/* Its tid as the process's own pid namespace names it, as its faults do. */
	if ((pid_t)a->tid <= 0 || identity_thread(t->pid, (pid_t)a->tid, &host_tid) < 0)
		return -EPERM;
	t->agent.nexcl = a->nexcl;
	memcpy(t->agent.excl, a->excl, a->nexcl * sizeof(a->excl[0]));
	t->agent.tid = (pid_t)a->tid;
	log_debug("pid %d: agent thread %u ready", (int)t->pid, a->tid);
	if (t->reclaim && !t->evict.batch)
		reclaim_progress(t); /* it arrived before the agent did */
	return 0;
}

static int conn_dispatch(struct conn *c, const struct zs_hdr *h, int *fds, int nfds)
{
	/* Only ZS_UFFD carries a descriptor. */
	if (nfds && h->type != ZS_UFFD)
		return -EBADMSG;
	switch (h->type) {
	case ZS_HELLO:
		return conn_hello(c, h);
	case ZS_UFFD:
		return conn_uffd(c, h, fds, nfds);
	case ZS_AGENT: {
		int r = conn_agent(c, h);

		if (r == 0 && c->target)
			journal_target(c->target); /* its agent's ranges, never to evict */
		return r;
	}
	case ZS_EVICT_DONE:
		if (!c->target)
			return -EBADMSG;
		return evict_done(c->target, proto_payload(h));
	case ZS_STATS:
	case ZS_LIST:
	case ZS_RECLAIM:
	case ZS_LIMIT:
	case ZS_RESTORE:
	case ZS_GROUP:
	case ZS_GROUPS:
	case ZS_UPGRADE:
		if (c->kind == CONN_SHIM)
			return -EBADMSG;
		c->kind = CONN_CTL;
		return ctl_handle(c, h);
	default:
		return -EBADMSG;
	}
}

/*
 * A loop turn reads at most CONN_REQUESTS_PER_WAKE requests of a
 * connection that is not a served process's (zswapctl, a hello), and
 * CONN_MSGS_PER_WAKE of one that is (its agent's replies): the rest wait
 * for the next turn (epoll reports them again), whose faults are served
 * first (uffd watches are urgent, watch.h).  A client pipelining requests
 * without end cannot keep zswapd reading it.
 */
#define CONN_REQUESTS_PER_WAKE 4
#define CONN_MSGS_PER_WAKE 16

static void conn_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct conn *c = watch_owner(w, struct conn, w);
	uint64_t buf[ZS_MSG_MAX / sizeof(uint64_t)];
	int fds[PROTO_MAX_FDS], nfds;
	ssize_t n;
	int r;

	if (c->dead)
		return;
	for (unsigned msgs = 0;; msgs++) {
		if (msgs == (c->target ? CONN_MSGS_PER_WAKE : CONN_REQUESTS_PER_WAKE))
			return; /* the rest at the next turn: epoll says it again */
		n = proto_recv(c->w.fd, buf, sizeof(buf), fds, PROTO_MAX_FDS, &nfds);
		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			if (n < 0 && n != -ECONNRESET) {
				d->st.proto_errors++;
				log_warning_errno((int)n, "pid %d: bad message: %m, dropping connection",
						  (int)c->cred.pid);
			}
			conn_close(c, n == 0 ? "peer closed" : "receive failed");
			return;
		}
		r = conn_dispatch(c, (const struct zs_hdr *)buf, fds, nfds);
		if (r < 0 && r != -EBADMSG && c->target)
			log_warning_errno(r, "pid %d: message type %u failed: %m", (int)c->cred.pid,
					  ((const struct zs_hdr *)buf)->type);
		for (int i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (r < 0 && !c->dead) {
			if (r == -EBADMSG) {
				d->st.proto_errors++;
				log_warning("pid %d: message type %u out of place, dropping connection",
					    (int)c->cred.pid, ((const struct zs_hdr *)buf)->type);
			}
			conn_close(c, "request failed");
			return;
		}
		if (c->dead)
			return;
	}
	if (events & (EPOLLHUP | EPOLLERR))
		conn_close(c, "hangup");
}
