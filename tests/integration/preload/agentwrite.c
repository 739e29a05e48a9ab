// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentwrite.so - preloaded with the shim, it stands in for what sits
 * between an agent and the kernel in real programs (a sanitizer, a tracing
 * library): right before each UFFDIO_MOVE that takes pages out of the app,
 * it writes to the last page of the range, which is write-protected for the
 * very batch the agent is working on.  zswapd must veto that page without
 * the agent waiting on itself, and the page must stay, with that write in
 * it: a vetoed page moved out anyway has no entry and reads back as zeros.
 * The write stores what the page already holds, so memtest's byte check
 * sees any loss and nothing else.  At exit it says how many it wrote.
 */
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h" /* UFFDIO_MOVE, which Debian 12's headers lack */
#include "interpose.h"

static unsigned long writes;

__attribute__((destructor)) static void agentwrite_fini(void)
{
	fprintf(stderr, "agentwrite: %lu pages written by the agent right before its move\n",
		__atomic_load_n(&writes, __ATOMIC_RELAXED));
}

/* Default visibility: the tests' preloads build with -fvisibility=hidden, like the shim. */
__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6];

	INTERPOSE_ARGS(nr, a);
	if (nr == SYS_ioctl && (unsigned long)a[1] == UFFDIO_MOVE) {
		const struct uffdio_move *mv = (const struct uffdio_move *)a[2];

		/* The agent's moves out allow holes; its moves back do not. */
		if ((mv->mode & UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES) && mv->len >= 4096) {
			volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)(mv->src + mv->len - 4096);

			*p = *p;
			__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
		}
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
