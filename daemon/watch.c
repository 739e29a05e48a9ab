// SPDX-License-Identifier: GPL-2.0-only
/*
 * watch.c - epoll, and nothing else: adding, removing, waiting, dispatching.
 */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "watch.h"

int watch_add(int epfd, struct watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0 ? -errno : 0;
}

void watch_del(int epfd, struct watch *w)
{
	if (w->fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

int watch_wait(int epfd, struct epoll_event *evs, int max, uint64_t timeout_usec)
{
	struct timespec ts = { (time_t)(timeout_usec / 1000000), (long)(timeout_usec % 1000000) * 1000 };
	int n;

	/* epoll_pwait2: a retry 50 us away must not sleep a whole millisecond. */
	n = timeout_usec ? epoll_pwait2(epfd, evs, max, &ts, NULL) : epoll_wait(epfd, evs, max, 0);
	return n < 0 ? -errno : n;
}

/*
 * Two passes: a thread waits in every fault an urgent watch (a uffd) has,
 * and must not wait behind a control request that came in the same wait.
 * A handler may close what a later event of the same wait names: the
 * owners mark themselves dead and free only at the end of the turn.
 */
void watch_dispatch(struct daemon *d, const struct epoll_event *evs, int n)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;

			if (w->urgent == (pass == 0))
				w->fn(d, w, evs[i].events);
		}
	}
}
