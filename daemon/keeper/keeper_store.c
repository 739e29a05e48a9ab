// SPDX-License-Identifier: GPL-2.0-only
/*
 * keeper_store.c - the keeper's store of descriptors (see keeper_store.h,
 * and keeper.c for the protocol it serves and where it follows systemd).
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "keeper_store.h"
#include "log.h"

/* As systemd's fdname_is_valid(): printable ASCII but ':' (LISTEN_FDNAMES's
 * separator), at most 255 characters; the empty name is valid. */
bool keeper_fdname_valid(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (c < ' ' || c >= 127 || c == ':')
			return false;
	}
	return n <= KEEPER_FDNAME_MAX;
}

/* The same open file (not merely the same inode), as systemd's same_fd();
 * without kcmp (CONFIG_KCMP) both are kept. */
static bool keeper_store_holds(const struct keeper_fd *s, int fd, const struct stat *st)
{
	pid_t self = getpid();

	return s->dev == st->st_dev && s->ino == st->st_ino &&
	       syscall(SYS_kcmp, self, self, KCMP_FILE, s->fd, fd) == 0;
}

static void keeper_store_close_one(struct keeper_store *ks, struct keeper_fd *s)
{
	/* Before close(): the child holds the same open file, which would
	 * keep the registration, and its events, alive. */
	if (s->polled)
		epoll_ctl(ks->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	ks->names_len -= strlen(s->name) + 1;
	free(s->name);
}

/*
 * Takes fd whatever happens: stores it, or closes it.  Returns 1 if stored,
 * 0 if that open file was already, -EXFULL if the store is full, -E2BIG if
 * the names are, -errno.
 */
static int keeper_store_add(struct keeper_store *ks, int fd, const char *name, bool watch)
{
	struct epoll_event ev = { .events = 0, .data.fd = fd }; /* EPOLLHUP|EPOLLERR come anyway */
	size_t len = strlen(name) + 1;
	struct keeper_fd *s;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (ks->n >= KEEPER_STORE_MAX) {
		r = -EXFULL;
		goto fail;
	}
	if (sizeof(KEEPER_LISTEN_FDNAMES) - 1 + ks->names_len + len > KEEPER_ENV_STR_MAX) {
		r = -E2BIG;
		goto fail;
	}
	for (size_t i = 0; i < ks->n; i++) {
		if (keeper_store_holds(&ks->fds[i], fd, &st)) {
			log_debug("keeper: descriptor %d is \"%s\" again, not stored twice", fd,
				  ks->fds[i].name);
			close(fd);
			return 0;
		}
	}
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 16;
		struct keeper_fd *grown = realloc(ks->fds, cap * sizeof(*grown));

		if (!grown) {
			r = -ENOMEM;
			goto fail;
		}
		ks->fds = grown;
		ks->cap = cap;
	}
	s = &ks->fds[ks->n];
	*s = (struct keeper_fd){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino, .name = strdup(name) };
	if (!s->name) {
		r = -ENOMEM;
		goto fail;
	}
	if (watch) {
		if (epoll_ctl(ks->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
			s->polled = true;
		} else if (errno != EPERM) { /* EPERM: not pollable (a memfd), kept as systemd does */
			r = -errno;
			free(s->name);
			goto fail;
		}
	}
	ks->n++;
	ks->names_len += len;
	return 1;
fail:
	close(fd);
	return r;
}

/* FDSTORE=1: takes every one of fds, stored or closed. */
void keeper_store_add_all(struct keeper_store *ks, int *fds, size_t n, const char *name, bool watch)
{
	size_t added = 0;

	for (size_t i = 0; i < n; i++) {
		int r = keeper_store_add(ks, fds[i], name, watch);

		if (r == -EXFULL || r == -E2BIG) {
			log_warning("keeper: the store is full (%zu descriptors, %zu bytes of names): "
				    "closing %zu descriptors named \"%s\"",
				    ks->n, ks->names_len, n - i, name);
			for (size_t j = i + 1; j < n; j++)
				close(fds[j]);
			break;
		}
		if (r < 0)
			log_warning_errno(r, "keeper: cannot store a descriptor named \"%s\": %m, closing it",
					  name);
		added += r > 0;
	}
	log_debug("keeper: stored %zu descriptors as \"%s\"%s, %zu in the store", added, name,
		  watch ? "" : " (not polled)", ks->n);
}

bool keeper_store_find(const struct keeper_store *ks, const char *name)
{
	for (size_t i = 0; i < ks->n; i++)
		if (strcmp(ks->fds[i].name, name) == 0)
			return true;
	return false;
}

/* FDSTOREREMOVE=1: closes every descriptor of that name, in one pass. */
void keeper_store_remove(struct keeper_store *ks, const char *name)
{
	size_t kept = 0, n = ks->n;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(ks->fds[i].name, name) == 0)
			keeper_store_close_one(ks, &ks->fds[i]);
		else
			ks->fds[kept++] = ks->fds[i];
	}
	ks->n = kept;
	log_debug("keeper: removed %zu descriptors named \"%s\", %zu in the store", n - kept, name,
		  kept);
}

/*
 * Forgets the polled descriptors that report a hang-up or an error, asking
 * each with poll() rather than trusting an epoll event, which may name a
 * number closed and reused since.  Also run before each start, so that what
 * died is never handed over.
 */
void keeper_store_sweep(struct keeper_store *ks)
{
	struct pollfd *p;
	size_t kept = 0, n = ks->n;

	if (!n)
		return;
	p = calloc(n, sizeof(*p));
	if (!p)
		return; /* swept at the next event */
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = ks->fds[i].polled ? ks->fds[i].fd : -1 };
	if (poll(p, n, 0) <= 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (p[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			log_info("keeper: stored descriptor \"%s\" reported %s, closing it",
				 ks->fds[i].name, p[i].revents & POLLERR ? "EPOLLERR" : "EPOLLHUP");
			keeper_store_close_one(ks, &ks->fds[i]);
		} else {
			ks->fds[kept++] = ks->fds[i];
		}
	}
	ks->n = kept;
out:
	free(p);
}

void keeper_store_free(struct keeper_store *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		keeper_store_close_one(ks, &ks->fds[i]);
	free(ks->fds);
	ks->fds = NULL;
	ks->n = ks->cap = 0;
}
