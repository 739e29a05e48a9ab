/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * keeper_store.h - the keeper's store of descriptors (keeper.c): what
 * zswapd stored with FDSTORE=1, each under its name, in order of arrival,
 * with systemd's rules for what is refused, merged and forgotten.
 */
#ifndef ZSWAPD_KEEPER_STORE_H
#define ZSWAPD_KEEPER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KEEPER_STORE_MAX 65536	/* descriptors (FileDescriptorStoreMax=); RLIMIT_NOFILE may cap lower */
#define KEEPER_FDNAME_MAX 255	/* systemd's FDNAME_MAX */
#define KEEPER_ENV_STR_MAX (32 * 4096) /* MAX_ARG_STRLEN: execve() refuses a longer string */
#define KEEPER_LISTEN_FDNAMES "LISTEN_FDNAMES="

struct keeper_fd {
	int fd;
	bool polled; /* in epoll, for EPOLLHUP and EPOLLERR */
	dev_t dev;   /* a duplicate is looked for (kcmp) only among the same inode */
	ino_t ino;
	char *name;
};

struct keeper_store {
	int epfd; /* the keeper's, where polled descriptors report a hang-up */
	struct keeper_fd *fds; /* in order of arrival */
	size_t n, cap;
	size_t names_len; /* bytes of LISTEN_FDNAMES's value, with its NUL */
};

/* As systemd's fdname_is_valid(). */
bool keeper_fdname_valid(const char *s);
/*
 * FDSTORE=1: takes every one of fds, stored or closed (one already stored
 * is not stored twice; over KEEPER_STORE_MAX descriptors, or names too long
 * for LISTEN_FDNAMES, the rest are closed).  watch: FDPOLL is not 0, so a
 * hang-up forgets it (keeper_store_sweep()).
 */
void keeper_store_add_all(struct keeper_store *ks, int *fds, size_t n, const char *name, bool watch);
/* Whether a descriptor of that name is stored. */
bool keeper_store_find(const struct keeper_store *ks, const char *name);
/* FDSTOREREMOVE=1: closes every descriptor of that name. */
void keeper_store_remove(struct keeper_store *ks, const char *name);
/* Closes and forgets the polled descriptors that report a hang-up or an error. */
void keeper_store_sweep(struct keeper_store *ks);
/* Closes everything stored. */
void keeper_store_free(struct keeper_store *ks);

#endif
