// SPDX-License-Identifier: GPL-2.0-only
/*
 * identity.c - pidfds of peers, and uffds proven to be theirs (identity.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "daemon.h"
#include "identity.h"
#include "uffd.h"

int identity_peer_pidfd(int sock, pid_t pid)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
		return fd;
	/* Before Linux 6.5: the pid SO_PEERCRED gave at connect, which its
	 * process may have left since; every use checks the pidfd is alive and
	 * binds what matters (the uffd, /proc/PID/mem) by a nonce, not by pid. */
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : fd;
}

/* Signal 0 checks only: EPERM (another user's, and we keep no CAP_KILL) is alive too. */
bool identity_alive(int pidfd)
{
	return pidfd >= 0 &&
	       (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 || errno == EPERM);
}

int identity_open_mem(pid_t pid, int pidfd)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Alive now, so it had pid all along: no other process had it when we opened. */
	if (!identity_alive(pidfd)) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

int identity_nonce(uint8_t nonce[IDENTITY_NONCE_LEN])
{
	ssize_t n = getrandom(nonce, IDENTITY_NONCE_LEN, 0);

	return n == IDENTITY_NONCE_LEN ? 0 : n < 0 ? -errno : -EIO;
}

int identity_plant(int uffd, uint64_t addr, const uint8_t nonce[IDENTITY_NONCE_LEN])
{
	uint8_t page[ZS_PAGE_SIZE] = { 0 };

	memcpy(page, nonce, IDENTITY_NONCE_LEN);
	return uffd_copy(uffd, addr, page, true);
}

/* Never a wait: a page missing in a registered range reads EIO (util.c). */
int identity_check(int memfd, uint64_t addr, const uint8_t nonce[IDENTITY_NONCE_LEN])
{
	uint8_t buf[IDENTITY_NONCE_LEN];
	ssize_t n = pread(memfd, buf, sizeof(buf), (off_t)addr);

	if (n < 0)
		return errno == EIO ? 0 : -errno;
	return n == (ssize_t)sizeof(buf) && memcmp(buf, nonce, sizeof(buf)) == 0;
}

/* The last number of a "NSpid:" line: the id in the innermost namespace. */
static pid_t identity_innermost(const char *status)
{
	const char *p = strstr(status, "\nNSpid:");
	long v = -1;

	if (!p)
		return -1;
	for (p += 7; *p && *p != '\n';) {
		char *end;
		long n = strtol(p, &end, 10);

		if (end == p)
			break;
		v = n;
		p = end;
	}
	return (pid_t)v;
}

int identity_thread(pid_t pid, pid_t tid, pid_t *ret_host_tid)
{
	char path[96];
	struct dirent *de;
	DIR *dir;
	int r = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char *status = NULL;
		size_t len;
		pid_t host = (pid_t)atoi(de->d_name);

		if (host <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)host);
		if (read_full_file(path, &status, &len) < 0)
			continue;
		if (identity_innermost(status) == tid) {
			*ret_host_tid = host;
			r = 0;
		}
		free(status);
		if (r == 0)
			break;
	}
	closedir(dir);
	return r;
}

uint64_t identity_pidns(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

pid_t identity_inner_pid(pid_t pid)
{
	char path[64], *status = NULL;
	size_t len;
	pid_t inner;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_full_file(path, &status, &len) < 0)
		return -1;
	inner = identity_innermost(status);
	free(status);
	return inner;
}
