// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentwrite.so - preloaded with the shim, it stands in for what sits
 * between an agent and the kernel in real programs (a sanitizer, a tracing
 * library): right before each UFFDIO_MOVE that takes pages out of the app,
 * it writes to the last page of the range.  In a batch zswapd locked with
 * write-protection (a process's first) that page is protected for the very
 * batch the agent is working on: zswapd must veto it without the agent
 * waiting on itself, and the page must stay, with that write in it (a
 * vetoed page moved out anyway has no entry and reads back as zeros).  In
 * a move-first batch the write lands in the page the move then takes, and
 * must come back with it.
 * The write stores what the page already holds, so memtest's byte check
 * sees any loss and nothing else.  At exit it says how many it wrote.
 *
 * With AGENTWRITE_AFTER set it also writes, right after each move out that
 * moved something, to the first page moved: in a move-first batch that page
 * is then only in the agent's scratch, not copied yet, and zswapd must put
 * it back from there (evict_scratch_reads) rather than from a stale staging
 * slot.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h" /* UFFDIO_MOVE, which Debian 12's headers lack */
#include "interpose.h"

static unsigned long writes, writes_after;
static bool after;

__attribute__((constructor)) static void agentwrite_init(void)
{
	after = getenv("AGENTWRITE_AFTER") != NULL;
}

__attribute__((destructor)) static void agentwrite_fini(void)
{
	fprintf(stderr, "agentwrite: %lu pages written by the agent right before its move\n",
		__atomic_load_n(&writes, __ATOMIC_RELAXED));
	if (after)
		fprintf(stderr, "agentwrite: %lu pages written by the agent right after its move\n",
			__atomic_load_n(&writes_after, __ATOMIC_RELAXED));
}

/* Default visibility: the tests' preloads build with -fvisibility=hidden, like the shim. */
__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6], r;

	INTERPOSE_ARGS(nr, a);
	if (nr == SYS_ioctl && (unsigned long)a[1] == UFFDIO_MOVE) {
		const struct uffdio_move *mv = (const struct uffdio_move *)a[2];

		/* The agent's moves out do not wake; its moves back do. */
		if ((mv->mode & UFFDIO_MOVE_MODE_DONTWAKE) && mv->len >= 4096) {
			volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)(mv->src + mv->len - 4096);

			*p = *p;
			__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
		}
	}
	r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (after && nr == SYS_ioctl && (unsigned long)a[1] == UFFDIO_MOVE) {
		const struct uffdio_move *mv = (const struct uffdio_move *)a[2];

		if ((mv->mode & UFFDIO_MOVE_MODE_DONTWAKE) && (r == 0 || mv->move > 0)) {
			volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)mv->src;
			int saved = errno;

			*p = *p; /* moved out: the agent faults on its own page */
			__atomic_add_fetch(&writes_after, 1, __ATOMIC_RELAXED);
			errno = saved;
		}
	}
	return r;
}
