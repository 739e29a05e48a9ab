/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup.h - a process's memory cgroup, and that cgroup's limit, usage and
 * pressure events, on cgroup v1 and v2.
 *
 * A group (group.c) is the served processes of one memory cgroup.  Where
 * the cgroup has a limit (v2 memory.high, else memory.max; v1
 * memory.limit_in_bytes), zswapd keeps its usage under it by evicting the
 * members' cold pages into its pool, which is charged to zswapd, not to
 * them.  Paths are as /proc/PID/cgroup gives them, relative to the memory
 * hierarchy's root ("/system.slice/foo.service"); the hierarchy is looked
 * for where systemd and Debian mount it.  The parsers are pure.
 */
#ifndef ZSWAPD_CGROUP_H
#define ZSWAPD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CGROUP_PATH_MAX 256
#define CGROUP_NO_LIMIT UINT64_MAX

/*
 * From /proc/PID/cgroup text: the path of the memory controller's cgroup
 * (a v1 line naming "memory" among its controllers, else the v2 line
 * "0::PATH").  -ENOENT if neither is there, -ENAMETOOLONG.
 */
int cgroup_parse_proc(const char *text, char *path, size_t len);
/*
 * A limit file's contents: a number of bytes, or "max" (v2).  v1 says
 * "no limit" with a huge number (PAGE_COUNTER_MAX pages): anything at or
 * over 2^62 is CGROUP_NO_LIMIT too.  -EINVAL if it is neither.
 */
int cgroup_parse_bytes(const char *text, uint64_t *ret);
/*
 * Whether path names cgroup or one below it ("/a" is under "/a" and
 * "/a/b", not "/ab").  "/" holds everything.
 */
bool cgroup_under(const char *path, const char *cgroup);

/* The memory cgroup of pid. */
int cgroup_of_pid(pid_t pid, char *path, size_t len);
/* Whether cgroup exists in the memory hierarchy. */
bool cgroup_exists(const char *cgroup);
/* Its limit (CGROUP_NO_LIMIT if none) and its usage now, in bytes. */
int cgroup_limit(const char *cgroup, uint64_t *ret_limit);
int cgroup_usage(const char *cgroup, uint64_t *ret_usage);
/*
 * An fd that becomes readable (v1: an eventfd, via cgroup.event_control and
 * memory.pressure_level "low") or POLLPRI (v2: a PSI trigger on
 * memory.pressure, some task stalled stall_ms within 2 s) when the
 * cgroup is under memory pressure; cgroup "/" is the host's
 * /proc/pressure/memory.  *ret_pri: whether to watch for POLLPRI.
 * -ENOTSUP for a PSI trigger with stall_ms 0; -errno if the kernel offers
 * neither.
 */
int cgroup_pressure_fd(const char *cgroup, unsigned stall_ms, bool *ret_pri);

#endif
