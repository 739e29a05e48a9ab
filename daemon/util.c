// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - small helpers for clocks and /proc that several modules share.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

uint64_t now_nsec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t now_usec(void)
{
	return now_nsec() / 1000u;
}

/* Reads a whole (proc) file, NUL-terminated.  /proc files report size 0, so grow. */
int read_full_file(const char *path, char **ret_buf, size_t *ret_len)
{
	size_t cap = 16384, len = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		r = -ENOMEM;
		goto fail;
	}
	for (;;) {
		if (cap - len < 4096) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				r = -ENOMEM;
				goto fail;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
fail:
	free(buf);
	close(fd);
	return r;
}

/* Looks up "Key:" in /proc/PID/status; the value's first number. */
static int proc_status_field(pid_t pid, const char *key, uint64_t *ret)
{
	char path[64], *buf, *p;
	size_t klen = strlen(key);
	int r;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	r = read_full_file(path, &buf, NULL);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			*ret = strtoull(p + klen + 1, NULL, 10);
			r = 0;
			break;
		}
	}
	free(buf);
	return r;
}

int proc_tgid_of(pid_t tid, pid_t *ret_tgid)
{
	uint64_t v;
	int r;

	r = proc_status_field(tid, "Tgid", &v);
	if (r < 0)
		return r;
	*ret_tgid = (pid_t)v;
	return 0;
}

int proc_status_kb(pid_t pid, const char *key, uint64_t *ret_kb)
{
	return proc_status_field(pid, key, ret_kb);
}

/* Up to len bytes of /proc/PID/<file> from off on: how many, or -errno. */
static ssize_t proc_pread(pid_t pid, const char *file, void *buf, size_t len, off_t off)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, off);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

int proc_comm(pid_t pid, char *buf, size_t len)
{
	ssize_t n = proc_pread(pid, "comm", buf, len - 1, 0);

	if (n < 0)
		return (int)n;
	while (n > 0 && (buf[n - 1] == '\n'))
		n--;
	buf[n] = '\0';
	return 0;
}

int proc_pages_populated(pid_t pid, uint64_t addr, uint32_t n, uint8_t *populated)
{
	uint64_t pm[512];

	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < 512 ? n - done : 512;
		ssize_t got = proc_pread(pid, "pagemap", pm, k * sizeof(pm[0]),
					 (off_t)((addr / ZS_PAGE_SIZE + done) * sizeof(pm[0])));

		if (got != (ssize_t)(k * sizeof(pm[0])))
			return got < 0 ? (int)got : -EIO;
		for (uint32_t i = 0; i < k; i++)
			populated[done + i] = (pm[i] >> 62) != 0; /* bit 63: present, 62: swapped */
		done += k;
	}
	return 0;
}

int proc_pagemap(pid_t pid, uint64_t addr, uint32_t n, uint64_t *pm)
{
	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < 512 ? n - done : 512;
		ssize_t got = proc_pread(pid, "pagemap", pm + done, k * sizeof(pm[0]),
					 (off_t)((addr / ZS_PAGE_SIZE + done) * sizeof(pm[0])));

		if (got != (ssize_t)(k * sizeof(pm[0])))
			return got < 0 ? (int)got : -EIO;
		done += k;
	}
	return 0;
}

int proc_page_owed(pid_t pid, uint64_t addr)
{
	uint64_t pm;
	int r = proc_pagemap(pid, addr, 1, &pm);

	return r < 0 ? r : PAGEMAP_OWED(pm);
}

int proc_page_present(pid_t pid, uint64_t addr)
{
	uint64_t pm;
	ssize_t n = proc_pread(pid, "pagemap", &pm, sizeof(pm),
			       (off_t)((addr / ZS_PAGE_SIZE) * sizeof(pm)));

	if (n != (ssize_t)sizeof(pm))
		return n < 0 ? (int)n : -EIO;
	return (pm >> 63) & 1; /* bit 63: present */
}

/*
 * Through /proc/PID/mem, not process_vm_readv: its page lookup may not wait
 * for a userfault (no FAULT_FLAG_ALLOW_RETRY), so a page missing in a
 * registered range is EIO at once, where process_vm_readv would wait on a
 * fault that only we can serve.
 */
int proc_mem_read_page(int memfd, uint64_t addr, void *buf)
{
	ssize_t n;

	if (memfd < 0)
		return -ESRCH;
	n = pread(memfd, buf, ZS_PAGE_SIZE, (off_t)addr);
	if (n != (ssize_t)ZS_PAGE_SIZE)
		return n < 0 ? -errno : -EIO;
	return 0;
}

int proc_vma_next(pid_t pid, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && end > addr) {
			*ret_start = start;
			*ret_end = end;
			r = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return r;
}
