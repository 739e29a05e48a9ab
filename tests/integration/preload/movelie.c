// SPDX-License-Identifier: GPL-2.0-only
/*
 * movelie.so - preloaded with the shim, it makes every fifth UFFDIO_MOVE
 * that takes pages out of the app move only its first page and then say
 * that nothing moved (-1, EBUSY, move = -EBUSY): what the agent saw in the
 * single-page losses of 2026-12-03.  An agent that believed it would veto
 * a page that sits in its scratch area, which it then drops: the page
 * reads back as zeros.  It must find the page there and count it as moved
 * (agent_move_misreports).  At exit it says how many times it lied.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h" /* UFFDIO_MOVE, which Debian 12's headers lack */
#include "interpose.h"

#define MOVELIE_EVERY 5

static unsigned long moves, lies;

__attribute__((destructor)) static void movelie_fini(void)
{
	fprintf(stderr, "movelie: %lu moves said failed after moving a page\n",
		__atomic_load_n(&lies, __ATOMIC_RELAXED));
}

/* Default visibility: the tests' preloads build with -fvisibility=hidden, like the shim. */
__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6];

	INTERPOSE_ARGS(nr, a);
	if (nr == SYS_ioctl && (unsigned long)a[1] == UFFDIO_MOVE) {
		struct uffdio_move *mv = (struct uffdio_move *)a[2];

		/* The agent's moves out do not wake; its moves back do. */
		if ((mv->mode & UFFDIO_MOVE_MODE_DONTWAKE) &&
		    __atomic_add_fetch(&moves, 1, __ATOMIC_RELAXED) % MOVELIE_EVERY == 0) {
			struct uffdio_move first = *mv;
			long r;

			first.len = 4096;
			first.mode = 0; /* a hole is not a page moved: no lie then */
			r = real_syscall(nr, a[0], a[1], (long)&first, a[3], a[4], a[5]);
			if (r == 0 && first.move == 4096) {
				__atomic_add_fetch(&lies, 1, __ATOMIC_RELAXED);
				mv->move = -EBUSY;
				errno = EBUSY;
				return -1;
			}
			/* Nothing moved (a hole, a busy page): say so, as it was. */
			mv->move = first.move;
			return r;
		}
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
