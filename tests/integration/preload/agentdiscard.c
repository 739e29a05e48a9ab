// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentdiscard.so - preloaded with the shim under agent_move = no, it plays
 * the app changing its memory at the worst moment: right before each agent
 * MADV_DONTNEED of three pages or more inside the area the test names
 * (agentdiscard_area), by turns it drops the first page of that range
 * itself, or unmaps its middle page.  A discard makes two REMOVE events
 * start at one address: the app's, one page, and the agent's; a hole makes
 * the agent's drop two events with a gap between.  The discarded page must
 * read zeros and every other page of the range its data; matching events
 * by address alone lost the rest of the range, and an event past a gap had
 * no announcement of its own.  The test asks which pages it dropped and
 * unmapped (agentdiscard_pages), and leaves the holes alone.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose.h"

void agentdiscard_area(void *start, size_t len);
size_t agentdiscard_pages(const uint64_t **pages, const uint64_t **unmapped, size_t *nunmapped);

#define AGENTDISCARD_MAX 64

static uint64_t area_start, area_end;
static uint64_t dropped[AGENTDISCARD_MAX], holes[AGENTDISCARD_MAX];
static size_t ndropped, nholes, ndrops_seen;

/* Default visibility: the tests' preloads build with -fvisibility=hidden, like the shim. */
__attribute__((visibility("default"))) void agentdiscard_area(void *start, size_t len)
{
	__atomic_store_n(&area_end, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&area_start, (uint64_t)(uintptr_t)start, __ATOMIC_SEQ_CST);
	__atomic_store_n(&area_end, (uint64_t)(uintptr_t)start + len, __ATOMIC_SEQ_CST);
}

__attribute__((visibility("default"))) size_t agentdiscard_pages(const uint64_t **pages,
								   const uint64_t **unmapped,
								   size_t *nunmapped)
{
	*pages = dropped;
	*unmapped = holes;
	*nunmapped = __atomic_load_n(&nholes, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&ndropped, __ATOMIC_ACQUIRE);
}

__attribute__((visibility("default"))) long syscall(long nr, ...)
{
	long a[6];

	INTERPOSE_ARGS(nr, a);
	if (nr == SYS_madvise && a[2] == MADV_DONTNEED && (unsigned long)a[1] >= 3 * 4096) {
		uint64_t start = (uint64_t)a[0], end = start + (uint64_t)a[1];
		uint64_t hole = start + ((uint64_t)a[1] / 4096 / 2) * 4096;
		size_t nd = __atomic_load_n(&ndropped, __ATOMIC_RELAXED);
		size_t nh = __atomic_load_n(&nholes, __ATOMIC_RELAXED);

		if (start >= __atomic_load_n(&area_start, __ATOMIC_SEQ_CST) &&
		    end <= __atomic_load_n(&area_end, __ATOMIC_SEQ_CST)) {
			if (ndrops_seen++ % 2 == 0) {
				if (nd < AGENTDISCARD_MAX &&
				    real_syscall(SYS_madvise, a[0], 4096L, (long)MADV_DONTNEED, 0L, 0L,
						 0L) == 0) {
					dropped[nd] = start;
					__atomic_store_n(&ndropped, nd + 1, __ATOMIC_RELEASE);
				}
			} else if (nh < AGENTDISCARD_MAX &&
				   real_syscall(SYS_munmap, (long)hole, 4096L, 0L, 0L, 0L, 0L) == 0) {
				holes[nh] = hole;
				__atomic_store_n(&nholes, nh + 1, __ATOMIC_RELEASE);
			}
		}
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
