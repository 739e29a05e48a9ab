// SPDX-License-Identifier: GPL-2.0-only
/*
 * caps.c - keep only the capabilities the running daemon uses.
 *
 *   CAP_SYS_PTRACE  UFFDIO_API with UFFD_FEATURE_EVENT_FORK (the kernel
 *                   checks it in the caller), and reading /proc/PID/smaps
 *                   and pagemap of other users' processes.
 *   CAP_IPC_LOCK    mlockall() of the pool beyond RLIMIT_MEMLOCK.
 *   CAP_DAC_READ_SEARCH  /proc/PID/pagemap is mode 0400 and owned by the
 *                   target's uid: root without it cannot open another
 *                   user's (ptrace access alone is not enough).
 *
 * /dev/userfaultfd is opened, the socket bound and the nice value set
 * (CAP_SYS_NICE) before this runs, so
 * nothing else is needed: everything else leaves the bounding set too, so
 * not even an exec could get it back.
 */
#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "daemon.h"
#include "log.h"

static const cap_value_t caps_kept[] = { CAP_SYS_PTRACE, CAP_IPC_LOCK, CAP_DAC_READ_SEARCH };

#define CAPS_N ((int)(sizeof(caps_kept) / sizeof(caps_kept[0])))

int caps_drop(void)
{
	cap_t caps;
	int r = 0;

	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		bool keep = false;

		for (int i = 0; i < CAPS_N; i++)
			keep |= caps_kept[i] == c;
		if (!keep && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return log_error_errno(-errno, "Failed to drop capability %d from the bounding set: %m", c);
	}
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if (cap_set_flag(caps, CAP_PERMITTED, CAPS_N, caps_kept, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, CAPS_N, caps_kept, CAP_SET) < 0 || cap_set_proc(caps) < 0) {
		/* Not root (a test, a user's own instance): nothing to drop. */
		r = errno == EPERM ? 0 : log_error_errno(-errno, "Failed to drop capabilities: %m");
	}
	cap_free(caps);
	return r;
}
