// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentdiscard.so - preloaded with the shim under agent_move = no, it plays
 * the app discarding a page of a run in flight at the worst moment: right
 * before each agent MADV_DONTNEED of two pages or more inside the area the
 * test names (agentdiscard_area), it drops the first page of that range
 * itself.  Two REMOVE events then start at the same address: the app's,
 * one page, and the agent's, the whole range.  The page must read zeros
 * (the app discarded it) and every other page of the range its data; taking
 * the first event for the agent's lost the rest of the range.  The test
 * asks which pages it dropped (agentdiscard_pages).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose.h"

void agentdiscard_area(void *start, size_t len);
size_t agentdiscard_pages(const uint64_t **pages);

#define AGENTDISCARD_MAX 64

static uint64_t area_start, area_end;
static uint64_t dropped[AGENTDISCARD_MAX];
static size_t ndropped;

/* Default visibility: the tests' preloads build with -fvisibility=hidden, like the shim. */
__attribute__((visibility("default"))) void agentdiscard_area(void *start, size_t len)
{
	__atomic_store_n(&area_end, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&area_start, (uint64_t)(uintptr_t)start, __ATOMIC_SEQ_CST);
	__atomic_store_n(&area_end, (uint64_t)(uintptr_t)start + len, __ATOMIC_SEQ_CST);
}

__attribute__((visibility("default"))) size_t agentdiscard_pages(const uint64_t **pages)
{
	*pages = dropped;
	return __atomic_load_n(&ndropped, __ATOMIC_ACQUIRE);
}

__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6];

	INTERPOSE_ARGS(nr, a);
	if (nr == SYS_madvise && a[2] == MADV_DONTNEED && (unsigned long)a[1] >= 2 * 4096) {
		uint64_t start = (uint64_t)a[0], end = start + (uint64_t)a[1];
		size_t n = __atomic_load_n(&ndropped, __ATOMIC_RELAXED);

		if (start >= __atomic_load_n(&area_start, __ATOMIC_SEQ_CST) &&
		    end <= __atomic_load_n(&area_end, __ATOMIC_SEQ_CST) && n < AGENTDISCARD_MAX &&
		    real_syscall(SYS_madvise, a[0], 4096L, (long)MADV_DONTNEED, 0L, 0L, 0L) == 0) {
			dropped[n] = start;
			__atomic_store_n(&ndropped, n + 1, __ATOMIC_RELEASE);
		}
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
