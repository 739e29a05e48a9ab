// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup.c - memory cgroups: membership, limit, usage, pressure events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"

/* v1's memory hierarchy where Debian and systemd mount it, and v2's. */
#define CGROUP_V1_ROOT "/sys/fs/cgroup/memory"
#define CGROUP_V2_ROOT "/sys/fs/cgroup"

/*
 * A PSI trigger's window: a whole number of 2 s is what the kernel allows a
 * process without CAP_SYS_RESOURCE, which zswapd drops once started.
 */
#define CGROUP_PSI_WINDOW_USEC 2000000u

static int cgroup_copy(const char *from, size_t n, char *path, size_t len)
{
	if (n == 0 || n >= len)
		return n ? -ENAMETOOLONG : -ENOENT;
	memcpy(path, from, n);
	path[n] = '\0';
	return 0;
}

int cgroup_parse_proc(const char *text, char *path, size_t len)
{
	const char *line = text, *v2 = NULL;
	size_t v2len = 0;

	while (line && *line) {
		const char *end = strchr(line, '\n'), *c1 = strchr(line, ':'), *c2;
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (c1 && c1 < line + n && (c2 = memchr(c1 + 1, ':', (size_t)(line + n - c1 - 1)))) {
			const char *ctl = c1 + 1, *p = ctl;
			size_t rest = (size_t)(line + n - c2 - 1);

			if (ctl == c2 && c1 - line == 1 && line[0] == '0') {
				v2 = c2 + 1;
				v2len = rest;
			}
			/* controllers are comma separated: "memory", "cpu,memory" */
			while (p < c2) {
				const char *comma = memchr(p, ',', (size_t)(c2 - p));
				const char *e = comma ? comma : c2;

				if (e - p == 6 && !memcmp(p, "memory", 6))
					return cgroup_copy(c2 + 1, rest, path, len);
				p = e + 1;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return v2 ? cgroup_copy(v2, v2len, path, len) : -ENOENT;
}

int cgroup_parse_bytes(const char *text, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!strncmp(text, "max", 3) && (text[3] == '\0' || text[3] == '\n')) {
		*ret = CGROUP_NO_LIMIT;
		return 0;
	}
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || (*end && *end != '\n'))
		return -EINVAL;
	*ret = v >= (1ull << 62) ? CGROUP_NO_LIMIT : v;
	return 0;
}

bool cgroup_under(const char *path, const char *cgroup)
{
	size_t n = strlen(cgroup);

	if (n == 1 && cgroup[0] == '/')
		return true;
	while (n > 1 && cgroup[n - 1] == '/')
		n--;
	return !strncmp(path, cgroup, n) && (path[n] == '\0' || path[n] == '/');
}

/* A small file's text (one read: /proc and cgroupfs files are read whole), NUL terminated. */
static int cgroup_read_text(const char *file, char *buf, size_t len)
{
	ssize_t n;
	int fd, r;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		buf[n] = '\0';
	return r;
}

int cgroup_of_pid(pid_t pid, char *path, size_t len)
{
	char file[64], buf[4096];
	int r;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	r = cgroup_read_text(file, buf, sizeof(buf));
	return r < 0 ? r : cgroup_parse_proc(buf, path, len);
}

static bool cgroup_v1(void)
{
	struct stat st;

	return stat(CGROUP_V1_ROOT "/memory.limit_in_bytes", &st) == 0;
}

/* The file name in cgroup's directory, in the hierarchy this machine has. */
static int cgroup_file(const char *cgroup, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s/%s", cgroup_v1() ? CGROUP_V1_ROOT : CGROUP_V2_ROOT,
			 strcmp(cgroup, "/") ? cgroup : "", name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int cgroup_read_bytes(const char *cgroup, const char *name, uint64_t *ret)
{
	char file[CGROUP_PATH_MAX + 96], buf[64];
	int r;

	r = cgroup_file(cgroup, name, file, sizeof(file));
	if (r == 0)
		r = cgroup_read_text(file, buf, sizeof(buf));
	return r < 0 ? r : cgroup_parse_bytes(buf, ret);
}

bool cgroup_exists(const char *cgroup)
{
	char dir[CGROUP_PATH_MAX + 96];
	struct stat st;

	if (cgroup[0] != '/' || strstr(cgroup, "/..") || cgroup_file(cgroup, "", dir, sizeof(dir)) < 0)
		return false;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int cgroup_limit(const char *cgroup, uint64_t *ret_limit)
{
	uint64_t high = CGROUP_NO_LIMIT, max = CGROUP_NO_LIMIT;
	int r;

	if (cgroup_v1())
		return cgroup_read_bytes(cgroup, "memory.limit_in_bytes", ret_limit);
	/* v2: memory.high is where the kernel starts to throttle; keep under it. */
	r = cgroup_read_bytes(cgroup, "memory.high", &high);
	if (r < 0 && r != -ENOENT)
		return r;
	r = cgroup_read_bytes(cgroup, "memory.max", &max);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret_limit = high < max ? high : max;
	return 0;
}

int cgroup_usage(const char *cgroup, uint64_t *ret_usage)
{
	return cgroup_read_bytes(cgroup, cgroup_v1() ? "memory.usage_in_bytes" : "memory.current",
				 ret_usage);
}

static int cgroup_write(const char *file, const char *text)
{
	size_t n = strlen(text);
	ssize_t w;
	int fd, r;

	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, text, n);
	r = w < 0 ? -errno : (size_t)w != n ? -EIO : 0;
	close(fd);
	return r;
}

/* v1: an eventfd signalled at memory.pressure_level "low" (the kernel reclaims). */
static int cgroup_pressure_v1(const char *cgroup)
{
	char file[CGROUP_PATH_MAX + 96], ctl[CGROUP_PATH_MAX + 96], cmd[64];
	int efd = -1, pfd = -1, r;

	r = cgroup_file(cgroup, "memory.pressure_level", file, sizeof(file));
	if (r < 0)
		return r;
	r = cgroup_file(cgroup, "cgroup.event_control", ctl, sizeof(ctl));
	if (r < 0)
		return r;
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	pfd = open(file, O_RDONLY | O_CLOEXEC);
	if (pfd < 0) {
		r = -errno;
		goto fail;
	}
	snprintf(cmd, sizeof(cmd), "%d %d low", efd, pfd);
	r = cgroup_write(ctl, cmd);
	if (r < 0)
		goto fail;
	/* The registration holds its own reference to the level file. */
	close(pfd);
	return efd;
fail:
	if (pfd >= 0)
		close(pfd);
	close(efd);
	return r;
}

/* v2 (and the host's /proc/pressure/memory with cgroup "/"): a PSI trigger. */
static int cgroup_pressure_psi(const char *file, unsigned stall_ms)
{
	char trigger[64];
	int fd, r, n;
	ssize_t w;

	if (!stall_ms)
		return -ENOTSUP; /* PSI triggers turned off */
	n = snprintf(trigger, sizeof(trigger), "some %u %u", stall_ms * 1000u, CGROUP_PSI_WINDOW_USEC);
	fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, trigger, (size_t)n + 1);
	if (w < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int cgroup_pressure_fd(const char *cgroup, unsigned stall_ms, bool *ret_pri)
{
	char file[CGROUP_PATH_MAX + 96];
	int r;

	if (!strcmp(cgroup, "/")) {
		*ret_pri = true;
		return cgroup_pressure_psi("/proc/pressure/memory", stall_ms);
	}
	if (cgroup_v1()) {
		*ret_pri = false;
		return cgroup_pressure_v1(cgroup);
	}
	r = cgroup_file(cgroup, "memory.pressure", file, sizeof(file));
	if (r < 0)
		return r;
	*ret_pri = true;
	return cgroup_pressure_psi(file, stall_ms);
}
