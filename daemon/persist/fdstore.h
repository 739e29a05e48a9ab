/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fdstore.h - descriptors kept for us by systemd's file-descriptor store
 * (FDSTORE=1, a unit with FileDescriptorStoreMax=), or by zswapd's keeper,
 * which speaks the same protocol (keeper.c): what a zswapd started after
 * this one died needs to serve on (journal.h).
 *
 * Every descriptor is stored with FDPOLL=0: systemd would otherwise drop
 * one that polls POLLHUP or POLLERR, and a client's connection does that
 * for as long as its process is gone and not yet reaped.  We drop what we
 * no longer need ourselves, by name (FDSTOREREMOVE=1).
 */
#ifndef ZSWAPD_FDSTORE_H
#define ZSWAPD_FDSTORE_H

#include <stdbool.h>

struct daemon;

/* What the store handed us at start (LISTEN_FDS, LISTEN_FDNAMES); 0 if nothing. */
int fdstore_load(struct daemon *d);
/* The descriptor stored under name (removed from what we were handed), or -1. */
int fdstore_take(struct daemon *d, const char *name);
/*
 * Socket activation: the one listening AF_UNIX SOCK_SEQPACKET socket among
 * what we were handed (under any name: the socket unit's).  1 and *ret_fd,
 * 0 if there is none, -EINVAL if there is more than one.
 */
int fdstore_take_listener(struct daemon *d, int *ret_fd);
/* Calls cb for each descriptor not taken yet whose name starts with prefix. */
void fdstore_each(struct daemon *d, const char *prefix,
		  void (*cb)(struct daemon *d, const char *name, int fd, void *arg), void *arg);
/* Closes what nobody took, and drops it from the store. */
void fdstore_forget_rest(struct daemon *d);

/* Stores fd under name, in place of whatever had that name. */
int fdstore_put(struct daemon *d, const char *name, int fd);
void fdstore_drop(struct daemon *d, const char *name);

#endif
