// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentslow.so - preloaded with the shim, it makes the agent pause for
 * AGENTSLOW_USEC (20000) right after each UFFDIO_MOVE that takes pages out
 * of the app, before the agent copies them: in a move-first batch those
 * pages are then only in its scratch area for that long, and whatever the
 * app does meanwhile (memtest fork_orphan: fork, then exit) meets them
 * there.  It stands in for a preempted or stopped agent.  With
 * AGENTSLOW_MOVE_FIRST set it pauses only after the moves of move-first
 * batches (those without UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES), so that a
 * process's first batch, write-protected, goes at full speed.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compat.h" /* UFFDIO_MOVE, which Debian 12's headers lack */
#include "interpose.h"

static long pause_usec = 20000;
static bool move_first_only;

__attribute__((constructor)) static void agentslow_init(void)
{
	const char *v = getenv("AGENTSLOW_USEC");

	if (v)
		pause_usec = strtol(v, NULL, 10);
	move_first_only = getenv("AGENTSLOW_MOVE_FIRST") != NULL;
}

__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6], r;

	INTERPOSE_ARGS(nr, a);
	r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr == SYS_ioctl && (unsigned long)a[1] == UFFDIO_MOVE) {
		const struct uffdio_move *mv = (const struct uffdio_move *)a[2];
		/* The agent's moves out do not wake; its moves back do. */
		struct timespec ts = { pause_usec / 1000000, pause_usec % 1000000 * 1000 };

		if ((mv->mode & UFFDIO_MOVE_MODE_DONTWAKE) && (r == 0 || mv->move > 0) &&
		    !(move_first_only && (mv->mode & UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES))) {
			int saved = errno; /* the move's, which the agent reads */

			real_syscall(SYS_nanosleep, &ts, NULL);
			errno = saved;
		}
	}
	return r;
}
