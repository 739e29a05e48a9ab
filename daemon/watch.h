/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * watch.h - the event-loop primitives: descriptors watched with epoll, each
 * with the handler its owner gave it.  Knows nothing of what the daemon
 * does with an event (loop.c runs the turns), as redis's ae.c knows nothing
 * of server.c.
 */
#ifndef ZSWAPD_WATCH_H
#define ZSWAPD_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct daemon;

/* Something the loop watches: fn runs when fd reports events. */
struct watch {
	int fd;
	void (*fn)(struct daemon *d, struct watch *w, uint32_t events);
	bool urgent; /* dispatched before the others of the same wait */
};

/* The struct a watch is embedded in, from the watch's address. */
#define watch_owner(w, type, member) ((type *)((char *)(w) - offsetof(type, member)))

int watch_add(int epfd, struct watch *w, uint32_t events);
/* Stops watching w (an fd of -1 is not watched: nothing to do). */
void watch_del(int epfd, struct watch *w);
/*
 * Waits up to timeout_usec for events, filling evs[0..max); how many, or
 * -errno (-EINTR when a signal came).  A timeout of 0 polls.
 */
int watch_wait(int epfd, struct epoll_event *evs, int max, uint64_t timeout_usec);
/* Calls the handler of each event returned by watch_wait(), the urgent ones first. */
void watch_dispatch(struct daemon *d, const struct epoll_event *evs, int n);

#endif
